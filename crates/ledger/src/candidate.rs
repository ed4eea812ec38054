//! Replay under a candidate configuration: every recorded decision decided again with the
//! operator's inputs (allowed roots, allowlists, push registries) taken from a candidate file
//! instead of the recorded ones, everything else (the call, the model's arguments, the grants
//! people gave, the working directory, the modes) as recorded; and the decisions whose verdict
//! would change, grouped ([`summarize`]).
//!
//! The same grouping lists what a shadow configuration decided differently beside live
//! decisions ([`shadow_changes`]), and is what a staged configuration change will be judged by.

use std::collections::HashMap;

use codaris_policy::{
    Call, CapabilityName, Code, Decision, Grant, GrantSet, Lifetime, Request, Task, ToolId,
    Verdict, evaluate_read,
};
use serde::{Deserialize, Serialize};

use crate::error::Corrupt;
use crate::record::{
    Backing, COMMAND_ALLOWLIST, DecisionRecord, HTTP_ALLOWLIST, ShadowDecision, standing_grant_id,
};

/// What the operator's configuration gives a decision, as the daemon resolves it: the fields
/// of the policy's task and the standing grants that come from the file. Everything else a
/// decision depends on comes from the session, the turn, the call or a person.
///
/// Not replaced (kept as recorded): `protected`, `secret` and `state_dir` (where Codaris keeps
/// its own files, not a policy choice), `withheld` (`codaris tools disable`, held in the
/// ledger, not the file), and the permission mode and activity (the session's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorInputs {
    /// `allowed_dirs`, absolute, resolved through symlinks as the daemon resolves a task's
    /// roots: the tail of every task's `allowed_roots`.
    #[serde(default)]
    pub allowed_dirs: Vec<String>,
    /// `tools.http_allowlist`: standing `send_http` grants.
    #[serde(default)]
    pub http_allowlist: Vec<String>,
    /// `tools.command_allowlist`: standing `run_program` grants.
    #[serde(default)]
    pub command_allowlist: Vec<String>,
    /// `seqera.registries`: the task's `push_registries`.
    #[serde(default)]
    pub push_registries: Vec<String>,
    /// `[[hooks.pre_tool_use]]`, each as its answers record it: a recorded answer stands
    /// under the candidate only where it keeps that hook (the same matcher and command).
    #[serde(default)]
    pub hooks: Vec<CandidateHook>,
}

/// A PreToolUse hook as a recorded answer names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CandidateHook {
    pub matcher: String,
    pub command: Vec<String>,
}

impl OperatorInputs {
    /// The allowlists as the standing grants the daemon puts first in every request, each with
    /// the id that names its entry ([`standing_grant_id`]).
    pub fn standing_grants(&self) -> Vec<Grant> {
        let http = self.http_allowlist.iter().map(|origin| {
            Grant::new(
                CapabilityName::SendHttp,
                Some(&codaris_policy::http_origin(origin)),
                Lifetime::Session,
            )
            .with_id(standing_grant_id(HTTP_ALLOWLIST, origin))
        });
        let commands = self.command_allowlist.iter().map(|prefix| {
            Grant::new(CapabilityName::RunProgram, Some(prefix), Lifetime::Session)
                .with_id(standing_grant_id(COMMAND_ALLOWLIST, prefix))
        });
        http.chain(commands).collect()
    }
}

/// A candidate configuration's operator inputs, with its standing grants built once.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    inputs: OperatorInputs,
    standing: Vec<Grant>,
}

impl Candidate {
    pub fn new(inputs: OperatorInputs) -> Candidate {
        let standing = inputs.standing_grants();
        Candidate { inputs, standing }
    }

    pub fn inputs(&self) -> &OperatorInputs {
        &self.inputs
    }
}

/// How a candidate's `allowed_dirs` take the place of a task's configured roots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootsReplaced {
    /// The task says how many of its roots, at the end, the configuration gave: those are
    /// swapped for the candidate's.
    Tail(usize),
    /// A task recorded before it said so: the candidate's roots are added, none taken away
    /// (a widened root is judged, a narrowed one cannot be).
    Added,
}

/// Which of a recorded decision's operator inputs a candidate replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replaced {
    pub roots: RootsReplaced,
    /// The standing grants (`config:` ids) give way to the candidate's allowlists.
    pub allowlists: bool,
    /// `push_registries` gives way to the candidate's.
    pub registries: bool,
    /// Recorded hook answers stand only where the candidate keeps their hook.
    pub hooks: bool,
}

/// The seam that decides which recorded operator inputs a candidate replaces in one recorded
/// request; everything it does not name stays as recorded.
///
/// Recorded hook answers (PreToolUse hooks, recorded with each decision) are operator inputs
/// too: one stands where the candidate keeps its hook (the same matcher and command) and is
/// dropped where the candidate removes it ([`under_candidate`]); a hook the candidate adds has
/// no recorded answer, so it cannot be judged. Replay never runs a hook either way.
pub fn replaced_inputs(request: &Request) -> Replaced {
    Replaced {
        roots: match request.task.configured_roots {
            Some(count) => RootsReplaced::Tail(count),
            None => RootsReplaced::Added,
        },
        allowlists: true,
        registries: true,
        hooks: true,
    }
}

/// The task of `task` under `candidate`: the inputs `replaced` names taken from it.
pub fn under_candidate(task: &Task, candidate: &Candidate, replaced: Replaced) -> Task {
    let mut task = task.clone();
    let dirs = &candidate.inputs.allowed_dirs;
    match replaced.roots {
        RootsReplaced::Tail(count) => {
            let own = task.allowed_roots.len().saturating_sub(count);
            task.allowed_roots.truncate(own);
            task.allowed_roots.extend(dirs.iter().cloned());
            task.configured_roots = Some(dirs.len());
        }
        RootsReplaced::Added => {
            for dir in dirs {
                if !task.allowed_roots.contains(dir) {
                    task.allowed_roots.push(dir.clone());
                }
            }
        }
    }
    if replaced.registries {
        task.push_registries
            .clone_from(&candidate.inputs.push_registries);
    }
    if replaced.hooks
        && let Some(outcome) = task.hook.as_mut()
    {
        let kept = |answer: &codaris_policy::HookAnswer| {
            candidate
                .inputs
                .hooks
                .iter()
                .any(|h| h.matcher == answer.matcher && h.command == answer.command)
        };
        outcome.answers.retain(kept);
        if outcome.answers.is_empty() {
            task.hook = None;
        }
    }
    task
}

/// The arguments a call is judged on under the candidate: the model's own when the hook whose
/// `updatedInput` replaced them is not among the candidate's, else the recorded ones.
fn args_under<'a>(request: &'a Request, task: &Task) -> &'a serde_json::Value {
    let rewrite_kept = task
        .hook
        .as_ref()
        .is_some_and(|h| h.answers.iter().any(|a| a.updated_input));
    match request
        .task
        .hook
        .as_ref()
        .and_then(|h| h.original_args.as_ref())
    {
        Some(original) if !rewrite_kept => original,
        _ => &request.args,
    }
}

/// True for a grant the configuration gave (an allowlist entry), not a person.
fn is_standing(grant: &Grant) -> bool {
    grant
        .id
        .as_deref()
        .is_some_and(|id| Backing::of_standing_id(id).is_some())
}

/// The grants in force under `candidate`: its standing grants first, as the daemon orders
/// them, then the people's grants of `grants` (a request's, standing ones skipped) and `more`.
fn candidate_grants(candidate: &Candidate, grants: &[Grant], more: &[Grant]) -> GrantSet {
    GrantSet::from_grants(
        candidate
            .standing
            .iter()
            .chain(grants.iter().filter(|g| !is_standing(g)))
            .chain(more)
            .cloned(),
    )
}

/// Decides `request` with `task` and `grants` in place of its own.
fn decide(request: &Request, task: &Task, grants: &GrantSet) -> Decision {
    let spec = request
        .spec
        .as_ref()
        .map(|s| s.to_tool_spec(request.tool.as_str()));
    let call = Call {
        tool: &request.tool,
        args: args_under(request, task),
        spec: spec.as_ref(),
    };
    evaluate_read(&call, grants, task, None)
}

/// The decision of a live call under a shadow `candidate`: `request` as the dispatcher builds
/// it (its grants the standing ones), `session` the session's grants in force after them.
pub fn decide_under(request: &Request, session: &[Grant], candidate: &Candidate) -> Decision {
    let replaced = replaced_inputs(request);
    let task = under_candidate(&request.task, candidate, replaced);
    let grants = if replaced.allowlists {
        candidate_grants(candidate, &request.grants, session)
    } else {
        GrantSet::from_grants(request.grants.iter().chain(session).cloned())
    };
    decide(request, &task, &grants)
}

/// What a change is about, for grouping: the program of a command, the host of a web call,
/// the root a path lies under.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Subject {
    Program(String),
    Host(String),
    Root(String),
}

impl Subject {
    /// The subject of `request`'s call: its command's first program, its URL's host, or the
    /// longest of `roots` its first path argument lies in (else the path's directory).
    pub fn of(request: &Request, roots: &[&[String]]) -> Option<Subject> {
        let args = request.args.as_object()?;
        if let Some(line) = args.get("command").and_then(serde_json::Value::as_str) {
            let program = codaris_policy::simple_commands(line)
                .and_then(|commands| commands.into_iter().next())
                .and_then(|words| words.into_iter().next())
                .unwrap_or_else(|| line.split_whitespace().next().unwrap_or("").to_owned());
            return Some(Subject::Program(program));
        }
        if let Some(url) = args.get("url").and_then(serde_json::Value::as_str) {
            let origin = codaris_policy::http_origin(url);
            let host = origin
                .split_once("://")
                .map_or(origin.as_str(), |(_, host)| host);
            return Some(Subject::Host(host.to_owned()));
        }
        let path = path_argument(request, args)?;
        let root = roots
            .iter()
            .flat_map(|list| list.iter())
            .filter(|root| lies_under(&path, root))
            .max_by_key(|root| root.len());
        Some(Subject::Root(match root {
            Some(root) => root.clone(),
            None => std::path::Path::new(&path)
                .parent()
                .map_or_else(|| path.clone(), |p| p.display().to_string()),
        }))
    }

    /// How a group's line names it: `of cargo`, `to api.github.com`, `under /data`.
    fn phrase(&self) -> String {
        match self {
            Subject::Program(program) => format!("of {program}"),
            Subject::Host(host) => format!("to {host}"),
            Subject::Root(root) => format!("under {root}"),
        }
    }
}

/// The first path argument the call gave, by its tool's spec.
fn path_argument(
    request: &Request,
    args: &serde_json::Map<String, serde_json::Value>,
) -> Option<String> {
    let names: Vec<String> = match (&request.tool, &request.spec) {
        (ToolId::Builtin(tool), _) => codaris_policy::builtin_spec(*tool)
            .paths
            .iter()
            .map(|p| p.name.to_string())
            .collect(),
        (_, Some(spec)) => spec.paths.iter().map(|p| p.name.to_string()).collect(),
        _ => Vec::new(),
    };
    names
        .iter()
        .find_map(|name| args.get(name).and_then(serde_json::Value::as_str))
        .map(str::to_owned)
}

/// `path` is `root` or lies beneath it (compared by whole components).
fn lies_under(path: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    path == root
        || path
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
        || root.is_empty()
}

/// One decision whose verdict differs under another configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub seq: u64,
    pub session_id: String,
    pub tool: String,
    pub subject: Option<Subject>,
    /// The recorded (live) decision's verdict and code.
    pub recorded: Verdict,
    pub recorded_code: Code,
    /// The other configuration's verdict, code and sentence.
    pub candidate: Verdict,
    pub candidate_code: Code,
    pub sentence: String,
}

/// Changes alike: the same verdicts before and after, tool and subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    pub recorded: Verdict,
    pub candidate: Verdict,
    pub tool: String,
    pub subject: Option<Subject>,
    pub count: usize,
    /// The decisions' sequence numbers, in ledger order.
    pub seqs: Vec<u64>,
}

impl std::fmt::Display for Group {
    /// `allow → ask: 41 run_command calls of cargo`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} → {}: {} {} call{}",
            self.recorded.as_str(),
            self.candidate.as_str(),
            self.count,
            self.tool,
            if self.count == 1 { "" } else { "s" }
        )?;
        match &self.subject {
            Some(subject) => write!(f, " {}", subject.phrase()),
            None => Ok(()),
        }
    }
}

/// `changes` grouped by verdict before and after, tool and subject: the most frequent first,
/// ties in a fixed order (verdicts, tool, subject), so the same history gives the same list.
pub fn summarize(changes: &[Change]) -> Vec<Group> {
    type Key<'a> = (Verdict, Verdict, &'a str, &'a Option<Subject>);
    let mut groups: HashMap<Key, Vec<u64>> = HashMap::new();
    for change in changes {
        groups
            .entry((
                change.recorded,
                change.candidate,
                change.tool.as_str(),
                &change.subject,
            ))
            .or_default()
            .push(change.seq);
    }
    let mut groups: Vec<Group> = groups
        .into_iter()
        .map(|((recorded, candidate, tool, subject), seqs)| Group {
            recorded,
            candidate,
            tool: tool.to_owned(),
            subject: subject.clone(),
            count: seqs.len(),
            seqs,
        })
        .collect();
    groups.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| (a.recorded, a.candidate).cmp(&(b.recorded, b.candidate)))
            .then_with(|| a.tool.cmp(&b.tool))
            .then_with(|| a.subject.cmp(&b.subject))
    });
    groups
}

/// What replaying under a candidate (or listing a shadow's differences) found. The JSON of
/// `codaris audit replay --config --json` and `codaris audit shadow --json`: fields are only
/// ever added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerdictChanges {
    /// Decisions judged.
    pub decisions: usize,
    /// Of them, decided with another verdict.
    pub changed: usize,
    /// The changes grouped, most frequent first.
    pub groups: Vec<Group>,
    /// Every change, in ledger order.
    pub changes: Vec<Change>,
    /// Records that could not be read: they were not judged.
    pub corrupt: Vec<String>,
}

impl VerdictChanges {
    /// The last line of a summary: `43 of 120 decisions would change`, or a clear statement
    /// that none would.
    pub fn count_line(&self) -> String {
        match (self.changed, self.decisions) {
            (0, 1) => "the 1 decision would not change".to_owned(),
            (0, all) => format!("none of the {all} decisions would change"),
            (changed, all) => format!(
                "{changed} of {all} decision{} would change",
                if all == 1 { "" } else { "s" }
            ),
        }
    }

    /// The summary a person reads: each group on a line, most frequent first, then
    /// [`VerdictChanges::count_line`].
    pub fn summary(&self) -> Vec<String> {
        self.groups
            .iter()
            .map(ToString::to_string)
            .chain(std::iter::once(self.count_line()))
            .collect()
    }

    fn new(decisions: usize, changes: Vec<Change>, corrupt: &[Corrupt]) -> VerdictChanges {
        VerdictChanges {
            decisions,
            changed: changes.len(),
            groups: summarize(&changes),
            changes,
            corrupt: corrupt.iter().map(ToString::to_string).collect(),
        }
    }
}

/// The change of `record`'s verdict to `other`'s, if any. Verdicts are compared, not whole
/// decisions: under other allowlists the same verdict comes with other grant indexes.
fn change(record: &DecisionRecord, other: &Decision, roots: &[&[String]]) -> Option<Change> {
    (other.verdict != record.decision.verdict).then(|| Change {
        seq: record.seq,
        session_id: record.session_id.clone(),
        tool: record.request.tool.to_string(),
        subject: Subject::of(&record.request, roots),
        recorded: record.decision.verdict,
        recorded_code: record.decision.code,
        candidate: other.verdict,
        candidate_code: other.code,
        sentence: other.sentence.clone(),
    })
}

/// Decides every record again under `candidate` (its requests as a ledger or an evidence
/// gives them, grants filled in) and lists the decisions whose verdict changes against the
/// recorded one.
pub fn replay_under(
    records: &[DecisionRecord],
    corrupt: &[Corrupt],
    candidate: &Candidate,
) -> VerdictChanges {
    let mut changes = Vec::new();
    // As in `replay`: a session's decisions mostly see the same grants one after another, so
    // the candidate's grant set is built once per change of them, not per decision.
    let mut built: HashMap<&str, (&[Grant], GrantSet)> = HashMap::new();
    for record in records {
        let request = &record.request;
        let replaced = replaced_inputs(request);
        let grants = request.grants.as_slice();
        let set = match built.get(record.session_id.as_str()) {
            Some((seen, set)) if *seen == grants => set,
            _ => {
                let set = if replaced.allowlists {
                    candidate_grants(candidate, grants, &[])
                } else {
                    request.grant_set()
                };
                &built
                    .entry(record.session_id.as_str())
                    .insert_entry((grants, set))
                    .into_mut()
                    .1
            }
        };
        let task = under_candidate(&request.task, candidate, replaced);
        let decision = decide(request, &task, set);
        let roots = [
            candidate.inputs.allowed_dirs.as_slice(),
            request.task.allowed_roots.as_slice(),
        ];
        changes.extend(change(record, &decision, &roots));
    }
    VerdictChanges::new(records.len(), changes, corrupt)
}

/// The shadow's differences recorded beside `records` ([`DecisionRecord::shadow`]).
pub fn shadow_changes(records: &[DecisionRecord], corrupt: &[Corrupt]) -> VerdictChanges {
    let changes = records
        .iter()
        .filter_map(|record| {
            let ShadowDecision { decision, .. } = record.shadow.as_ref()?;
            change(
                record,
                decision,
                &[record.request.task.allowed_roots.as_slice()],
            )
        })
        .collect();
    VerdictChanges::new(records.len(), changes, corrupt)
}

#[cfg(test)]
#[path = "candidate_tests.rs"]
mod tests;
