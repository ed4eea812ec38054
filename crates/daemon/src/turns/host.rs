//! The daemon's side of a turn: decisions through the dispatcher and the ledger, permission
//! cards, the tools this daemon can run, and events to the client.

use std::sync::Arc;

use codaris_agent::{CallRequest, HostFuture, ToolRun, ToolSpec, TurnEvent, TurnHost};
use codaris_index::{KindFilter, render};
use codaris_ledger::{CardAnswer, CardRecord};
use codaris_policy::{
    Capability, CapabilityName, Cover, Decision, Grant, Lifetime, Scope, Task, Verdict,
};
use codaris_proto::v1;
use serde_json::Value;
use tokio::sync::mpsc;

use super::cards::NotRecorded;
use super::{Live, Turns};
use crate::convert::{capability_wire, turn_event_wire};
use crate::dispatch::ToolCall;
use crate::sessions::now_ms;

pub struct DaemonHost {
    turns: Arc<Turns>,
    live: Arc<Live>,
    session_id: String,
    events: mpsc::UnboundedSender<v1::TurnEvent>,
    /// Paths outside the roots that a grant opened for a call, by call id: the tool's own
    /// fence must let exactly those through.
    granted: std::sync::Mutex<std::collections::HashMap<String, Vec<String>>>,
}

impl DaemonHost {
    pub fn new(
        turns: Arc<Turns>,
        live: Arc<Live>,
        session_id: String,
        events: mpsc::UnboundedSender<v1::TurnEvent>,
    ) -> Self {
        Self {
            turns,
            live,
            session_id,
            events,
            granted: std::sync::Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// The paths a grant opened for this call (taken: they serve one run).
    fn take_granted(&self, call_id: &str) -> Vec<String> {
        self.granted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(call_id)
            .unwrap_or_default()
    }

    /// Reports that the turn was cancelled.
    pub fn cancelled(&self, turn: u32) {
        self.emit(TurnEvent::TurnEnded {
            turn,
            reason: codaris_agent::EndReason::Cancelled,
            error: None,
        });
    }

    fn send(&self, event: v1::turn_event::Event) {
        // A client that went away no longer reads; the turn finishes regardless.
        let _ = self.events.send(v1::TurnEvent { event: Some(event) });
    }

    /// The call's task, in the directory the session moved to during this turn, if it did.
    fn task_of(&self, call: &CallRequest) -> Task {
        let mut task = call.task.clone();
        if let Some(cwd) = self.live.moved_cwd() {
            task.cwd = cwd;
        }
        task
    }

    /// Moves the session: the rest of this turn through the live state, later turns through
    /// its record.
    fn move_to(&self, cwd: &std::path::Path) {
        self.live.move_cwd(cwd.display().to_string());
        if let Err(err) = self.turns.sessions.set_cwd(&self.session_id, cwd) {
            tracing::error!(session = %self.session_id, %err, "could not record the session's new directory");
        }
        tracing::info!(session = %self.session_id, cwd = %cwd.display(), "session moved");
    }

    async fn decide_once(&self, call: &CallRequest) -> Result<Decision, String> {
        let dispatcher = self.turns.dispatcher();
        let tool_call = ToolCall {
            session_id: self.session_id.clone(),
            tool: call.tool.clone(),
            args: call.args.clone(),
            task: self.task_of(call),
            spec: None,
        };
        match tokio::task::spawn_blocking(move || dispatcher.decide(tool_call)).await {
            Ok(Ok(record)) => {
                let opened = outside_paths(&record);
                self.granted
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(call.id.clone(), opened);
                Ok(record.decision)
            }
            Ok(Err(err)) => Err(format!(
                "the ledger could not record a decision, so the call did not run: {err}"
            )),
            Err(err) => Err(format!("deciding a call failed: {err}")),
        }
    }

    /// Shows a card and waits for its answer; a yes or a no is recorded as a grant, durably,
    /// before this returns, and only then is the answer's sender told it was accepted.
    /// `programs` are what a program-wide answer grants (empty: the card offers none).
    /// A capability a recorded deny of the session covers is refused at once, with no card.
    async fn ask(
        &self,
        capability: Option<Capability>,
        programs: Vec<String>,
        sentence: String,
        tool_call_id: &str,
    ) -> Asked {
        if let Some(capability) = &capability
            && let Cover::Denied { .. } = self.cover(capability).await
        {
            return Asked::DeniedBefore;
        }
        let ledger = self.turns.ledger.clone();
        let Ok(number) = ledger.next_id() else {
            return Asked::Unanswered;
        };
        let id = format!("c{number:06}");
        let card = CardRecord::asked(
            id.clone(),
            self.session_id.clone(),
            capability.clone(),
            sentence.clone(),
            programs.clone(),
            now_ms(),
        );
        let opened = match self.live.cards.open(&id, !programs.is_empty()) {
            Ok(opened) => opened,
            Err(err) => {
                tracing::error!(%err, "no random source for a card's answer secret; nothing was asked");
                return Asked::Unanswered;
            }
        };
        let stored = {
            let ledger = ledger.clone();
            tokio::task::spawn_blocking(move || ledger.append_card(&card)).await
        };
        if !matches!(stored, Ok(Ok(()))) {
            self.live.cards.forget(&id);
            return Asked::Unanswered;
        }
        self.send(v1::turn_event::Event::Card(v1::Card {
            id: id.clone(),
            capability: capability.as_ref().map(capability_wire),
            sentence,
            tool_call_id: tool_call_id.to_owned(),
            programs: programs.clone(),
            answer_secret: opened.secret.reveal().to_owned(),
        }));
        let (answer, reply) =
            match tokio::time::timeout(self.turns.card_timeout, opened.answer).await {
                Ok(Ok(given)) => (given.answer, Some(given.reply)),
                Ok(Err(_)) => (CardAnswer::SessionEnded, None),
                Err(_) => {
                    self.live.cards.forget(&id);
                    (CardAnswer::TimedOut, None)
                }
            };
        let grants: Vec<Grant> = match (answer, capability) {
            (CardAnswer::AllowOnce, Some(c)) => {
                vec![Grant::new(c.name, c.path.as_deref(), Lifetime::Once)]
            }
            (CardAnswer::AllowSession, Some(c)) => {
                vec![Grant::new(c.name, c.path.as_deref(), Lifetime::Session)]
            }
            (CardAnswer::Deny, Some(c)) => {
                vec![Grant::new(c.name, c.path.as_deref(), Lifetime::Deny)]
            }
            (CardAnswer::AllowPrograms, _) => programs
                .iter()
                .map(|p| Grant::new(CapabilityName::RunProgram, Some(p), Lifetime::Session))
                .collect(),
            _ => Vec::new(),
        };
        // The reply is sent from the blocking task itself, so a turn cancelled meanwhile
        // still tells the answer's sender what became of it.
        let recorded = tokio::task::spawn_blocking(move || {
            // One commit: the answer and its grants are durable together or not at all.
            let record = || {
                let recorded = ledger.answer_card(&id, answer, grants, now_ms())?;
                let ids = recorded
                    .unwrap_or_default()
                    .into_iter()
                    .map(|g| g.id)
                    .collect::<Vec<_>>();
                Ok::<_, codaris_ledger::LedgerError>(ids)
            };
            let outcome = record();
            if let Err(err) = &outcome {
                tracing::error!(%err, "recording a card's answer failed; nothing was granted");
            }
            let ok = outcome.is_ok();
            if let Some(reply) = reply {
                // An answer's sender that stopped waiting needs no reply.
                let _ = reply.send(outcome.map_err(NotRecorded::Ledger));
            }
            ok
        })
        .await;
        match recorded {
            Ok(true) if !matches!(answer, CardAnswer::TimedOut | CardAnswer::SessionEnded) => {
                Asked::Answered(answer)
            }
            Ok(_) => Asked::Unanswered,
            Err(err) => {
                tracing::error!(%err, "recording a card's answer failed; nothing was granted");
                Asked::Unanswered
            }
        }
    }

    /// What the session's recorded grants say about `capability` now.
    async fn cover(&self, capability: &Capability) -> Cover {
        let ledger = self.turns.ledger.clone();
        let session = self.session_id.clone();
        let capability = capability.clone();
        let looked = tokio::task::spawn_blocking(move || {
            ledger
                .grant_view(&session)
                .map(|view| view.grant_set().covering(&capability))
        })
        .await;
        match looked {
            Ok(Ok(cover)) => cover,
            Ok(Err(err)) => {
                tracing::error!(%err, "reading the session's grants failed");
                Cover::None
            }
            Err(err) => {
                tracing::error!(%err, "reading the session's grants failed");
                Cover::None
            }
        }
    }

    async fn search(&self, args: &Value) -> ToolRun {
        let Some(query) = args.get("query").and_then(Value::as_str) else {
            return error_run(
                "search_tools needs `query`: what the tool should do, in a few plain words",
            );
        };
        let kind = match args
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("any")
            .parse::<KindFilter>()
        {
            Ok(kind) => kind,
            Err(_) => return error_run("`kind` is one of any, tool, core, mcp, skill, reference"),
        };
        let outcome = self
            .turns
            .tools
            .search(query, kind, codaris_index::DEFAULT_LIMIT);
        ToolRun {
            output: render(&outcome),
            bound: outcome.bindable().into_iter().map(str::to_owned).collect(),
            ..ToolRun::default()
        }
    }

    async fn request_capability(&self, call: &CallRequest) -> ToolRun {
        let name = call.args.get("capability").cloned().unwrap_or(Value::Null);
        let Ok(name) = serde_json::from_value::<CapabilityName>(name) else {
            return error_run(
                "request_capability needs `capability`: one of read_outside_fence, mutate_outside_fence, write, run_command, change_config, send_http, use_tool (as a refusal names it), or run_program with a command prefix such as `cargo test` as its path",
            );
        };
        let raw = call.args.get("path").and_then(Value::as_str);
        let path = match (name.scope(), raw) {
            (Scope::Unscoped, _) => None,
            // Grants compare normalised absolute paths: a card for anything else would grant
            // nothing while seeming to.
            (Scope::Path, Some(raw)) => match codaris_policy::normalize_absolute(raw) {
                Some(path) => Some(path.into_owned()),
                None => {
                    return error_run(format!(
                        "`path` must be an absolute path for `{}`, not `{raw}`",
                        name.as_str()
                    ));
                }
            },
            (_, Some(raw)) if !raw.trim().is_empty() => Some(raw.to_owned()),
            _ => {
                return error_run(format!(
                    "request_capability for `{}` needs `path`: the path, origin, tool or command prefix the refusal named",
                    name.as_str()
                ));
            }
        };
        let reason = call
            .args
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("no reason given");
        let capability = Capability::new(name, path.clone());
        let target = path.map(|p| format!(" on `{p}`")).unwrap_or_default();
        let sentence = format!("the model asks for `{}`{target}: {reason}", name.as_str());
        let refused = || {
            error_run(format!(
                "the person refused `{}`{target}; do not ask again",
                name.as_str()
            ))
        };
        let answer = match self
            .ask(Some(capability.clone()), Vec::new(), sentence, &call.id)
            .await
        {
            Asked::DeniedBefore => return refused(),
            Asked::Unanswered => {
                return error_run("nobody answered the card; nothing was granted");
            }
            Asked::Answered(answer) => answer,
        };
        // What the model is told is what the grants in force say now, not what the card
        // said: an older refusal outweighs a yes, and a grant can cover nothing.
        match (self.cover(&capability).await, answer) {
            (Cover::Denied { .. }, _) => refused(),
            (Cover::Allowed { .. }, CardAnswer::AllowOnce) => ok_run(format!(
                "granted `{}`{target} for the next call",
                name.as_str()
            )),
            (Cover::Allowed { .. }, _) => ok_run(format!(
                "granted `{}`{target} for this session",
                name.as_str()
            )),
            (Cover::None, _) => error_run(format!(
                "no grant covers `{}`{target}; nothing was granted",
                name.as_str()
            )),
        }
    }
}

/// What became of a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    /// A recorded deny of the session covers the capability: no card was shown.
    DeniedBefore,
    /// Answered, and the answer (and any grant) is durable.
    Answered(CardAnswer),
    /// Nobody answered, or the answer could not be recorded: nothing was granted.
    Unanswered,
}

impl TurnHost for DaemonHost {
    fn spec(&self, tool: &str) -> Option<ToolSpec> {
        codaris_agent::loop_tool_spec(tool).or_else(|| self.turns.builtins.spec(tool))
    }

    fn decide<'a>(&'a self, call: &'a CallRequest) -> HostFuture<'a, Result<Decision, String>> {
        Box::pin(async move {
            let decision = self.decide_once(call).await?;
            if decision.verdict != Verdict::Ask {
                return Ok(decision);
            }
            match self
                .ask(
                    decision.capability.clone(),
                    programs_of(call, &decision),
                    decision.sentence.clone(),
                    &call.id,
                )
                .await
            {
                // The answer is a grant now; decide again with it in force.
                Asked::Answered(_) => self.decide_once(call).await,
                Asked::DeniedBefore | Asked::Unanswered => Ok(decision),
            }
        })
    }

    fn run<'a>(&'a self, call: &'a CallRequest) -> HostFuture<'a, ToolRun> {
        Box::pin(async move {
            let run = match call.tool.as_str() {
                "search_tools" => self.search(&call.args).await,
                "request_capability" => self.request_capability(call).await,
                other => match self
                    .turns
                    .builtins
                    .run(
                        &self.session_id,
                        &self.task_of(call),
                        &self.take_granted(&call.id),
                        other,
                        &call.args,
                        &self.live.pictures,
                    )
                    .await
                {
                    Some(builtin) => {
                        if let Some(cwd) = &builtin.session_cwd {
                            self.move_to(cwd);
                        }
                        builtin.run
                    }
                    None => error_run(format!("`{other}` is not available in this codarisd")),
                },
            };
            self.turns.builtins.limit(run)
        })
    }

    fn emit(&self, event: TurnEvent) {
        match &event {
            TurnEvent::Binding {
                turn,
                round,
                surface,
            } => {
                tracing::info!(session = %self.session_id, turn, round, "{}", surface.line());
                if !surface.missing.is_empty() {
                    tracing::debug!(session = %self.session_id, missing = ?surface.missing, "tools the surface names that do not run here");
                }
            }
            TurnEvent::Usage { turn, usage } => {
                tracing::info!(session = %self.session_id, turn, "{}", usage.line());
            }
            _ => {}
        }
        if let Some(event) = turn_event_wire(event) {
            self.send(event);
        }
    }
}

/// The programs a card for this command may grant program-wide: the first word of each simple
/// command, once each, when the prompt is the `command` class one and the line reads cleanly.
fn programs_of(call: &CallRequest, decision: &Decision) -> Vec<String> {
    let is_command_prompt = decision
        .capability
        .as_ref()
        .is_some_and(|c| c.name == CapabilityName::RunCommand)
        && decision.code == codaris_policy::Code::NeedsApproval;
    let line = call.args.get("command").and_then(Value::as_str);
    let commands = match (is_command_prompt, line) {
        (true, Some(line)) => codaris_policy::simple_commands(line).unwrap_or_default(),
        _ => Vec::new(),
    };
    let mut programs: Vec<String> = Vec::new();
    for program in commands
        .into_iter()
        .filter_map(|words| words.into_iter().next())
    {
        // Offered only when granting every program would cover the line, and each names a
        // program found on the PATH: `./build.sh` in another directory is another program.
        // A grant names its program as a one-word command line, so a word must read back as
        // itself (a quoted `'a b'` does not).
        let reads_back = codaris_policy::prefix_words(&program)
            .is_some_and(|w| w == std::slice::from_ref(&program));
        if !reads_back || program.contains('/') {
            return Vec::new();
        }
        if !programs.contains(&program) {
            programs.push(program);
        }
    }
    programs
}

/// The paths outside the roots that the grants this decision relied on opened.
fn outside_paths(record: &codaris_ledger::DecisionRecord) -> Vec<String> {
    record
        .decision
        .used_grants
        .iter()
        .filter_map(|used| record.request.grants.get(used.index))
        .filter(|grant| {
            matches!(
                grant.capability,
                CapabilityName::ReadOutsideFence | CapabilityName::MutateOutsideFence
            )
        })
        .filter_map(|grant| grant.path.clone())
        .collect()
}

fn ok_run(output: String) -> ToolRun {
    ToolRun {
        output,
        ..ToolRun::default()
    }
}

fn error_run(output: impl Into<String>) -> ToolRun {
    ToolRun {
        output: output.into(),
        is_error: true,
        ..ToolRun::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn offered(command: &str) -> Vec<String> {
        let call = CallRequest {
            id: "c1".to_owned(),
            tool: "run_command".to_owned(),
            args: json!({"command": command}),
            task: Task::new("/w"),
        };
        let decision = codaris_policy::Request {
            tool: call.tool.clone(),
            args: call.args.clone(),
            task: call.task.clone(),
            grants: Vec::new(),
            spec: None,
        }
        .evaluate();
        programs_of(&call, &decision)
    }

    #[test]
    fn a_requested_path_is_made_lexically_normal_and_a_relative_one_is_refused() {
        // The policy's own normalisation, so a card's capability compares as grants do.
        let normal = |raw| codaris_policy::normalize_absolute(raw).map(|p| p.into_owned());
        assert_eq!(normal("/etc/./ssl/../hosts").as_deref(), Some("/etc/hosts"));
        assert_eq!(normal("//a///b/").as_deref(), Some("/a/b"));
        assert_eq!(normal("/../..").as_deref(), Some("/"));
        assert_eq!(normal("etc/hosts"), None);
        assert_eq!(normal("/etc/ho\0sts"), None);
    }

    #[test]
    fn a_command_card_offers_its_programs_only_when_granting_them_covers_the_line() {
        assert_eq!(
            offered("cargo test && cargo fmt | tee log"),
            ["cargo", "tee"]
        );
        assert!(
            offered("./build.sh && make").is_empty(),
            "a path is not a program"
        );
        assert!(offered("'my tool' x").is_empty());
        assert!(offered("echo $(id)").is_empty(), "an unreadable line");
    }
}
