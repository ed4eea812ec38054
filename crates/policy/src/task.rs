//! The task state a decision depends on: activity, permission mode, where the fence is, what
//! this turn bound and typed. All of it is input; nothing is read from the environment.

use serde::{Deserialize, Deserializer, Serialize};

use crate::capability::Capability;
use crate::guard::RepeatedSearch;
use crate::hook::HookOutcome;
use crate::path::BadPath;

/// What the session is doing this turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activity {
    /// Unrestricted work.
    #[default]
    Agent,
    /// Planning: the plan mode allowlist, read-only.
    Plan,
    /// Answering questions: the ask mode allowlist, read-only.
    Ask,
    /// Reviewing a pipeline or code: agent tools, read-only.
    Review,
    /// Researching: agent tools, read-only.
    Research,
    /// A compliance audit: agent tools, read-only.
    Audit,
}

impl Activity {
    /// The operating mode whose tool list applies: plan and ask have their own allowlists; the
    /// other activities use agent mode's and are restricted by being read-only instead.
    pub fn operating_mode(self) -> OperatingMode {
        match self {
            Activity::Plan => OperatingMode::Plan,
            Activity::Ask => OperatingMode::Ask,
            Activity::Agent | Activity::Review | Activity::Research | Activity::Audit => {
                OperatingMode::Agent
            }
        }
    }

    /// True for the activities that may read but not change anything without a grant.
    pub fn is_read_only(self) -> bool {
        self != Activity::Agent
    }

    /// The snake-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Activity::Agent => "agent",
            Activity::Plan => "plan",
            Activity::Ask => "ask",
            Activity::Review => "review",
            Activity::Research => "research",
            Activity::Audit => "audit",
        }
    }
}

/// The catalogue's operating modes, each with its own tool list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatingMode {
    /// Every tool.
    Agent,
    /// Reading and planning tools.
    Plan,
    /// Read-only tools.
    Ask,
}

impl OperatingMode {
    /// The snake-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            OperatingMode::Agent => "agent",
            OperatingMode::Plan => "plan",
            OperatingMode::Ask => "ask",
        }
    }
}

/// How much the person wants to be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionMode {
    /// Prompt for everything the catalogue says prompts.
    #[default]
    Ask,
    /// Approve file writes without a card.
    AcceptEdits,
    /// Approve every class except `always` without a card. Never widens the fence, never
    /// lifts a read-only activity, never unlocks a protected path.
    Bypass,
}

impl PermissionMode {
    /// The snake-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Ask => "ask",
            PermissionMode::AcceptEdits => "accept_edits",
            PermissionMode::Bypass => "bypass",
        }
    }
}

/// Why the daemon added a path to a call's [`Task::implied`] paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImpliedBy {
    /// A file the call's patch adds, updates, moves from or to, or deletes: judged like a
    /// changed path argument (protected paths, fence, permission class).
    PatchTarget,
    /// A `.git` (any letter case, any depth, symlinks not followed) inside a tree the call
    /// removes recursively: the removal is refused like a change to that `.git`.
    RemovedGit,
    /// A tree the call removes recursively that holds more entries than the daemon checks for
    /// a `.git`: refused, since what it holds is unknown.
    RemovalUnchecked,
    /// A `file:` URI in an argument of a tool the policy knows only by a carried spec (an MCP
    /// tool): judged like a path argument, read by a read-only tool and changed by any other.
    FileUri,
    /// A string in an argument of such a tool that names a path by what it is (absolute, `~`,
    /// `$VAR`) or by what the tool's input schema says of it, expanded and resolved by the
    /// daemon: judged like a `file_uri` path.
    ArgumentPath,
    /// An argument of such a tool (from a server that is not trusted) that names a path the
    /// daemon cannot judge, and why: the call is refused (`bad_path`). `path` holds the value.
    Unjudged(BadPath),
}

/// One path a call changes beyond its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Implied {
    /// Absolute (symlinks resolved), or relative to `cwd`.
    pub path: String,
    /// Why the call changes it.
    pub by: ImpliedBy,
    /// The argument it came from, as a JSON pointer (`/repo_path`, `/items/0/target`), when the
    /// daemon found it in the call's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arg: Option<String>,
}

/// The task state of one turn, as the daemon knows it when a call is dispatched.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// What the session is doing; `agent` when absent.
    #[serde(default)]
    pub activity: Activity,
    /// How much to ask; `ask` when absent.
    #[serde(default)]
    pub permission_mode: PermissionMode,
    /// The absolute directory relative path arguments are resolved against.
    pub cwd: String,
    /// Absolute roots the fence allows (`CODARIS_ALLOWED_DIRS`); relative entries are ignored.
    #[serde(default, deserialize_with = "null_as_default")]
    pub allowed_roots: Vec<String>,
    /// How many of `allowed_roots`, at their end, the operator's configuration gave
    /// (`allowed_dirs`); the ones before are the session's own. The policy never reads it: it
    /// tells a replay under a candidate configuration which roots the candidate replaces.
    /// Absent in a task recorded before it existed (such a replay then only adds roots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configured_roots: Option<usize>,
    /// The session's own workspace, also inside the fence.
    #[serde(default)]
    pub workspace: Option<String>,
    /// This turn's surface; `None` means every known tool.
    #[serde(default)]
    pub bound: Option<Vec<String>>,
    /// Slash commands typed this turn (as parsed by the agent, e.g. `/fix`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub slash: Vec<String>,
    /// Paths no tool may change, beside every `.git`: Codaris's ledger and config. Absolute,
    /// or relative to `cwd`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub protected: Vec<String>,
    /// Paths no tool may read or change: Codaris's API token and a configuration file that can
    /// hold provider keys. Absolute, or relative to `cwd`. Absent from a request that has none.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub secret: Vec<String>,
    /// Codaris's state directory (ledger, socket, pid file, token, every session's workspace):
    /// nothing in it may be read or changed except the session's own `workspace`, which lies
    /// inside it. Absolute, or relative to `cwd`. Absent from a request that has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_dir: Option<String>,
    /// Paths this call changes beyond its path arguments, found by the daemon when it resolved
    /// the call (symlinks followed): every file a patch adds, updates, moves or deletes, and
    /// every `.git` beneath a tree a recursive removal takes. Per call; absent when none.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub implied: Vec<Implied>,
    /// Tools switched off for this task (`codaris tools disable`, the Tools panel).
    #[serde(default, deserialize_with = "null_as_default")]
    pub withheld: Vec<String>,
    /// The loop guard's finding that this call repeats an earlier search of the turn. Per
    /// call; absent when the guard let the call through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeated_search: Option<RepeatedSearch>,
    /// The capability the person refused at this call's card for this call only (`deny_once`:
    /// Ctrl-C at the card). The call is refused (`denied_by_user`) whatever else holds; no grant
    /// stands behind the refusal, so the next call that needs the same asks again. Per call;
    /// absent when the person did not answer so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_at_card: Option<Capability>,
    /// True in an extension workspace, which has no session checklist.
    #[serde(default)]
    pub extension: bool,
    /// True in a subagent's session (a child another session spawned): the tools withheld
    /// from a subagent ([`crate::Withholding::Subagent`]) are neither offered nor run. The
    /// daemon sets it from the session's kind; absent (false) in every task before children.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub subagent: bool,
    /// What the agent definition a subagent runs under leaves it of the parent's tools
    /// ([`crate::Withholding::Definition`]): it only ever removes names. Absent outside a
    /// child, and in a child whose definition narrows nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub narrowed: Option<Narrowed>,
    /// True in a session as deep as `subagents.max_depth` allows: it may not spawn another
    /// child ([`crate::Withholding::DepthLimit`]). Absent (false) everywhere else.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_max_depth: bool,
    /// Set in a memory subagent's session (the child the daemon starts at a user turn with
    /// `[memory] enabled`): it has the `codaris_memory_*` tools and nothing else, the last three
    /// only when it is not [`MemoryRole::Recall`] ([`crate::Withholding::NotMemory`],
    /// [`crate::Withholding::RecallOnly`]). Absent in every other task, which is never offered a
    /// memory tool ([`crate::Withholding::MemoryChild`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryRole>,
    /// Container registries the operator lets built images be pushed to (`[seqera]
    /// registries`); a `push` class call naming any other is refused. Absent when none.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub push_registries: Vec<String>,
    /// Seqera Platform compute environments a launch may name (`[seqera] compute_envs`, ids or
    /// names); when any are listed, a `launch` class call naming another, or none, is refused.
    /// Absent when the operator restricts none.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub compute_envs: Vec<String>,
    /// The local samplesheets of a `launch` class call that have a samplesheet gate that holds,
    /// as the policy makes them absolute (found by the daemon before the decision). Per call;
    /// absent when none.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub gated_sheets: Vec<String>,
    /// Tools the model can reach beside the built-in ones (the connected MCP servers' tools,
    /// `server__tool`), given by the daemon only for a call it found no tool for, so the
    /// `unknown_tool` refusal can name the closest. Per call; absent when none.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub other_tools: Vec<String>,
    /// What the operator's PreToolUse hooks answered about this call (`[[hooks.pre_tool_use]]`,
    /// run by the daemon before the decision): a hook's `deny` refuses it, `ask` raises a card
    /// whatever the permission mode, `allow` skips the permission prompt. Per call; absent when
    /// no hook matched the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<HookOutcome>,
}

impl Task {
    /// An `agent` task in permission mode `ask` working in `cwd`, with `cwd` as its only root.
    pub fn new(cwd: impl Into<String>) -> Task {
        let cwd = cwd.into();
        Task {
            allowed_roots: vec![cwd.clone()],
            cwd,
            ..Task::default()
        }
    }

    /// True when one of `commands` was typed this turn. Slash commands compare without regard
    /// to letter case, and only the command word of an entry counts (`/review --quick`).
    pub fn typed_any(&self, commands: &[&str]) -> bool {
        self.slash.iter().any(|typed| {
            let word = typed.split_whitespace().next().unwrap_or("");
            commands.iter().any(|c| word.eq_ignore_ascii_case(c))
        })
    }
}

/// The tools an agent definition leaves a subagent: with `tools`, only those (the loop's own
/// tools always stay, so the child can still search and ask for a capability); never any in
/// `disallowed`. Names are exact (`read_file`, `server__tool`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Narrowed {
    /// The definition's name (`general`, `reviewer`), for the record.
    pub agent: String,
    /// Only these; `None`: every tool the parent has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Never these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disallowed: Vec<String>,
}

impl Narrowed {
    /// True when the definition takes `tool` away.
    pub fn removes(&self, tool: &str) -> bool {
        if self.disallowed.iter().any(|d| d == tool) {
            return true;
        }
        let kept = |tools: &Vec<String>| {
            tools.iter().any(|t| t == tool)
                || codaris_catalogue::LOOP_TOOLS.iter().any(|e| e.name == tool)
        };
        self.tools.as_ref().is_some_and(|tools| !kept(tools))
    }
}

/// What a memory subagent may do with the notes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryRole {
    /// An ask-mode turn's child: it searches, lists and reads, and changes nothing.
    Recall,
    /// Every other turn's child: it may also make folders, save and delete notes.
    Keep,
}

/// Reads `null` like an absent field, so `"slash": null` means "none typed".
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn defaults_fill_an_absent_activity_mode_and_lists() {
        let parsed: Result<Task, _> =
            serde_json::from_value(json!({"cwd": "/w", "slash": null, "bound": null}));
        let expected = Task {
            cwd: "/w".into(),
            ..Task::default()
        };
        assert_eq!(parsed.ok(), Some(expected));
    }

    #[test]
    fn only_agent_is_not_read_only_and_only_plan_and_ask_have_own_lists() {
        use Activity::*;
        for a in [Agent, Plan, Ask, Review, Research, Audit] {
            assert_eq!(a.is_read_only(), a != Agent);
            let own = matches!(a, Plan | Ask);
            assert_eq!(a.operating_mode() != OperatingMode::Agent, own);
        }
    }

    #[test]
    fn slash_commands_match_by_word_in_any_case() {
        let mut task = Task::new("/w");
        task.slash = vec!["/Review --quick".into(), "/FIX".into()];
        assert!(task.typed_any(&["/fix"]));
        assert!(task.typed_any(&["/review"]));
        assert!(!task.typed_any(&["/remediate", "/autofix"]));
    }

    #[test]
    fn a_task_without_a_refusal_at_its_card_reads_and_writes_as_before() {
        // A task as recorded before the field existed: it reads with the field absent, and
        // writes back the same bytes, so an old record's digest and replay are unchanged.
        let old = r#"{"activity":"agent","permission_mode":"ask","cwd":"/w","allowed_roots":["/w"],"workspace":null,"bound":null,"slash":[],"protected":[],"withheld":[],"extension":false}"#;
        let task: Task = serde_json::from_str(old).unwrap();
        assert_eq!(task.refused_at_card, None);
        assert_eq!(serde_json::to_string(&task).unwrap(), old);
        let refused = Task {
            refused_at_card: Some(Capability::new(
                crate::capability::CapabilityName::Write,
                Some("/w/a".to_owned()),
            )),
            ..task
        };
        let text = serde_json::to_string(&refused).unwrap();
        assert!(
            text.contains(r#""refused_at_card":{"name":"write","path":"/w/a"}"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Task>(&text).ok(), Some(refused));
    }

    #[test]
    fn misspelled_task_fields_are_rejected() {
        let parsed: Result<Task, _> =
            serde_json::from_value(json!({"cwd": "/w", "permision_mode": "bypass"}));
        assert!(parsed.is_err());
    }
}
