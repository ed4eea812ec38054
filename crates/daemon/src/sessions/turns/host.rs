//! The daemon's side of a turn: decisions through the dispatcher and the ledger (an allowed
//! call comes back as the dispatcher's permit), permission cards, the tools this daemon runs,
//! the index the loop's `search_tools` searches, and events to the turn's log.

use std::sync::Arc;

use codaris_agent::{
    CallRequest, CapabilityAnswer, CapabilityRequest, Decided, HostError, HostFuture, Registry,
    RegistryTool, ToolDefinition, ToolId, ToolIndex, ToolRun, TurnEvent, TurnHost,
};
use codaris_index::{KindFilter, SearchOutcome};
use codaris_ledger::CardAnswer;
use codaris_policy::{Activity, CapabilityName, CommandLine, Decision};
use codaris_proto::v1;

use super::log::TurnLog;
use super::services::Services;
use super::session::Session;
use crate::calls::builtins::Builtins;
use crate::calls::dispatch::{Dispatched, Permit, SessionCall};
use crate::error::DaemonError;
use crate::server::convert::turn_event_wire;
use crate::sessions::ids::CallId;
use crate::toolset::registry::ToolRegistry;

mod asking;
mod hooking;
mod launching;
mod own_index;

pub struct DaemonHost {
    turns: Arc<Services>,
    session: Arc<Session>,
    log: Arc<TurnLog>,
    index: DaemonIndex,
    /// What the turn's write tools change, kept so the turn can be undone.
    checkpoint: codaris_tools::files::Checkpoint,
    /// The turn's `turn_ended`, held back until the turn is sealed and kept
    /// ([`DaemonHost::release_end`]).
    held_end: std::sync::Mutex<Option<v1::turn_event::Event>>,
    /// The model a `switch_model` call of this turn switched to, asked from the next request
    /// and shown pictures as it takes them.
    switched: std::sync::Mutex<Option<super::session::Model>>,
}

impl DaemonHost {
    pub fn new(
        turns: Arc<Services>,
        session: Arc<Session>,
        log: Arc<TurnLog>,
        checkpoint: codaris_tools::files::Checkpoint,
    ) -> Self {
        let index = DaemonIndex {
            tools: turns.tools.clone(),
            builtins: turns.builtins.clone(),
            built: std::sync::Mutex::new(None),
            // A subagent has its family's person's editor servers, as it has the rest of the
            // parent's tools.
            own: turns.mcp.session(session.id().as_str()).or_else(|| {
                session
                    .lineage()
                    .and_then(|lineage| turns.mcp.session(&lineage.root))
            }),
            joined: std::sync::Mutex::new(None),
        };
        Self {
            turns,
            session,
            log,
            index,
            checkpoint,
            held_end: std::sync::Mutex::new(None),
            switched: std::sync::Mutex::new(None),
        }
    }

    fn session_id(&self) -> &str {
        self.session.id().as_str()
    }

    fn switched(&self) -> std::sync::MutexGuard<'_, Option<super::session::Model>> {
        self.switched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the model this turn asks now does with pictures: the switched one's, else the
    /// session's.
    fn pictures(&self) -> crate::calls::builtins::Pictures {
        match self.switched().as_ref() {
            Some(model) => model.pictures.clone(),
            None => self.session.pictures(),
        }
    }

    /// Reports that the turn was cancelled.
    pub fn cancelled(&self, turn: u32) {
        self.emit(TurnEvent::TurnEnded {
            turn,
            reason: codaris_agent::EndReason::Cancelled,
            error: None,
        });
    }

    /// Appends `event` to the turn's log; `turn_ended` waits for [`DaemonHost::release_end`],
    /// so that a client acting on it (the next turn, ending the session, reading it, an undo)
    /// finds the turn's checkpoint sealed and its conversation and count kept.
    fn send(&self, event: v1::turn_event::Event) {
        if matches!(event, v1::turn_event::Event::TurnEnded(_)) {
            *self
                .held_end
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(event);
            return;
        }
        self.log.push(event);
    }

    /// Sends the `turn_ended` held back: the turn is sealed and kept.
    pub fn release_end(&self) {
        let held = self
            .held_end
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(event) = held {
            self.log.push(event);
        }
    }

    /// Records the session's new directory for later turns; this turn moves through the run's
    /// `moved_to`.
    fn record_move(&self, cwd: &std::path::Path) {
        if let Err(err) = self.turns.sessions.set_cwd(self.session_id(), cwd) {
            tracing::error!(session = %self.session_id(), %err, "could not record the session's new directory");
        }
        tracing::info!(session = %self.session_id(), cwd = %cwd.display(), "session moved");
    }

    /// Takes the session from plan to agent mode from its next turn on (`plan_exit`, agreed on
    /// its card): its record's activity, which every turn's task is built from, as `/mode
    /// agent` changes it. This turn keeps the task it started with.
    fn leave_plan_mode(&self) -> Result<(), DaemonError> {
        let record = self
            .turns
            .sessions
            .change_active(self.session_id(), |record| {
                let mut next = record.clone();
                if next.activity == Activity::Plan {
                    next.activity = Activity::Agent;
                }
                next
            })?;
        tracing::info!(session = %self.session_id(), activity = record.activity.as_str(), "session left plan mode");
        Ok(())
    }

    async fn decide_once(&self, call: &CallRequest) -> Result<Dispatched, HostError> {
        let dispatcher = self.session.dispatcher();
        // An MCP tool is decided under its `server__tool` name (`mcp__server__tool` read as
        // it) with the spec its server's registration and definition give it, all from one
        // lookup of the parts of the name read where the call entered the loop.
        let mut task = call.task.clone();
        // The session's own servers first: their names are kept apart from the daemon's.
        let known = call.tool.mcp().and_then(|t| match self.index.own_for(t) {
            Some(own) => own.decision_input(t),
            None => self.turns.mcp.decision_input(t),
        });
        let (tool, spec, marks) = match known {
            Some(input) => {
                let name = input.tool.prefixed();
                // A switched-off server's tools are withheld like switched-off tools.
                if input.switched_off && !task.withheld.iter().any(|w| w == name) {
                    task.withheld.push(name.to_owned());
                }
                (ToolId::Mcp(input.tool), Some(input.spec), Some(input.marks))
            }
            None => (call.tool.clone(), None, None),
        };
        // No tool answers to the name: the refusal names the closest, MCP tools among them.
        let found = match &tool {
            ToolId::Builtin(builtin) => builtin.entry().is_some(),
            ToolId::Mcp(_) => spec.is_some(),
            ToolId::Unknown(_) => false,
        };
        if !found {
            task.other_tools = self.turns.mcp.tool_names();
            if let Some(own) = &self.index.own {
                task.other_tools.extend(own.tool_names());
                task.other_tools.sort();
            }
        }
        let tool_call = SessionCall {
            session_id: self.session.id().clone(),
            call_id: CallId::new(&call.id),
            tool,
            args: call.args.clone(),
            task,
            cwd: call.cwd.clone(),
            spec,
            marks,
        };
        // The decision's event belongs to the call's span, which a blocking thread lacks.
        let span = tracing::Span::current();
        match tokio::task::spawn_blocking(move || span.in_scope(|| dispatcher.decide(tool_call)))
            .await
        {
            Ok(Ok(dispatched)) => Ok(dispatched),
            Ok(Err(err)) => Err(HostError::NotRecorded {
                reason: err.to_string(),
            }),
            Err(err) => Err(HostError::Internal {
                reason: err.to_string(),
            }),
        }
    }
}

impl TurnHost for DaemonHost {
    type Permit = Permit;

    fn spec(&self, tool: &str) -> Option<ToolDefinition> {
        codaris_agent::loop_tool_spec(tool)
            .or_else(|| self.turns.builtins.spec(tool))
            .or_else(|| self.index.mcp_spec(&self.turns.mcp, tool))
    }

    fn index(&self) -> &dyn ToolIndex {
        &self.index
    }

    fn decide<'a>(
        &'a self,
        call: &'a CallRequest,
    ) -> HostFuture<'a, Result<Decided<Permit>, HostError>> {
        Box::pin(async move {
            // The hooks answer once, before the first decision; every decision of the call
            // judges their answers and the arguments they left.
            let hooked = self.hooked(call).await;
            let call = hooked.as_ref().unwrap_or(call);
            // A launch on Platform is decided on what it will really send.
            let resolved = self.resolved_launch(call).await;
            let call = resolved.as_ref().unwrap_or(call);
            let pending = match self.decide_once(call).await? {
                Dispatched::Run(permit) => return Ok(Decided::Run(permit)),
                Dispatched::Refused(record) => return Ok(Decided::Refused(record.decision)),
                Dispatched::Ask(pending) => pending,
            };
            // A call that would fail its tool's own checks is answered with that failure: a
            // card (and a grant) for a run that cannot start would only mislead.
            if let Some(reason) = crate::mcp::launch::unresolved_reason(&call.tool, &call.args) {
                return Ok(Decided::Failed {
                    decision: pending.record.decision,
                    run: ToolRun::error(format!(
                        "{}: {reason}",
                        codaris_seqera::launch::LAUNCH_PIPELINE
                    )),
                });
            }
            let text = match self.card_text(call, &pending).await {
                Ok(text) => text,
                Err(failed) => {
                    return Ok(Decided::Failed {
                        decision: pending.record.decision,
                        run: failed,
                    });
                }
            };
            let asked = pending.record.decision;
            let answered = self
                .ask(
                    asked.capability.clone(),
                    programs_of(pending.prepared.command(), &asked),
                    text,
                    &CallId::new(&call.id),
                )
                .await;
            if asked.code == codaris_policy::Code::AskedByHook {
                return self.answered_for_hook(call, asked, answered).await;
            }
            match answered {
                Asked::Answered(CardAnswer::DenyOnce) => {
                    return self.refused_at_card(call, asked).await;
                }
                Asked::Answered(_) => {}
                Asked::DeniedBefore | Asked::Unanswered => return Ok(Decided::Refused(asked)),
            }
            // The answer is a grant now; decide again with it in force. A second `ask` (the
            // grant did not cover the call) is final: the person was asked once.
            Ok(match self.decide_once(call).await? {
                Dispatched::Run(permit) => Decided::Run(permit),
                Dispatched::Ask(pending) => Decided::Refused(pending.record.decision),
                Dispatched::Refused(record) => Decided::Refused(record.decision),
            })
        })
    }

    fn run(&self, permit: Permit) -> HostFuture<'_, ToolRun> {
        Box::pin(async move {
            let builtins = &self.turns.builtins;
            if let Some(what) = super::checkpoints::not_undone(
                permit.tool().as_str(),
                permit.args(),
                permit.record().request.spec.as_ref(),
            ) {
                self.checkpoint.note_command(what);
            }
            let log = self.log.clone();
            let (id, tool) = (permit.call_id().to_string(), permit.tool().to_string());
            let progress: codaris_tools::progress::ProgressSink = Arc::new(move |line: &str| {
                log.push(v1::turn_event::Event::ToolProgress(v1::ToolProgress {
                    id: id.clone(),
                    tool: tool.clone(),
                    message: line.to_owned(),
                }));
            });
            match builtins
                .run(
                    self.session_id(),
                    &permit,
                    &self.pictures(),
                    progress,
                    Some(&self.checkpoint),
                )
                .await
            {
                Some(builtin) => {
                    let mut run = builtin.run;
                    if let Some(cwd) = builtin.session_cwd {
                        self.record_move(&cwd);
                        run.moved_to = Some(cwd);
                    }
                    if builtin.leaves_plan_mode
                        && let Err(err) = self.leave_plan_mode()
                    {
                        run = ToolRun::error(format!(
                            "plan_exit: the session stays in plan mode: {err}"
                        ));
                    }
                    if let Some(switch) = &builtin.switch_model {
                        let switched =
                            super::switch::switch_model(&self.turns, &self.session, switch);
                        if let Some(model) = switched.model {
                            *self.switched() = Some(model);
                        }
                        run = switched.run;
                    }
                    if let Some(asked) = &builtin.question {
                        run = self.ask_questions(asked, permit.call_id()).await;
                    }
                    if permit.tool().as_str() == "background_list" && !run.is_error {
                        run.output =
                            super::children::with_background_children(run.output, &self.session);
                    }
                    if let Some(request) = &builtin.spawn {
                        let log = self.log.clone();
                        let id = permit.call_id().to_string();
                        let progress: super::children::Progress = Arc::new(move |line: &str| {
                            log.push(v1::turn_event::Event::ToolProgress(v1::ToolProgress {
                                id: id.clone(),
                                tool: "spawn_agent".to_owned(),
                                message: line.to_owned(),
                            }));
                        });
                        run = super::children::spawn(&self.turns, &self.session, request, progress)
                            .await;
                    }
                    run
                }
                None => match permit.tool() {
                    ToolId::Mcp(called) => match self.index.own_for(called) {
                        Some(own) => {
                            own.run(called, permit.args(), &permit.task().cwd, &self.pictures())
                                .await
                        }
                        None => {
                            self.turns
                                .mcp
                                .run(called, permit.args(), &permit.task().cwd, &self.pictures())
                                .await
                        }
                    },
                    other => ToolRun::error(format!("`{other}` is not available in this codarisd")),
                },
            }
        })
    }

    fn limit(&self, tool: &ToolId, run: ToolRun) -> ToolRun {
        let limits = tool.mcp().and_then(|t| match self.index.own_for(t) {
            Some(own) => own.output_limits(t),
            None => self.turns.mcp.output_limits(t),
        });
        match limits {
            Some(own) => self.turns.builtins.limit_with(run, own),
            None => self.turns.builtins.limit(run),
        }
    }

    fn request_capability<'a>(
        &'a self,
        request: &'a CapabilityRequest,
    ) -> HostFuture<'a, CapabilityAnswer> {
        Box::pin(self.ask_capability(request))
    }

    fn survivors(&self) -> HostFuture<'_, Vec<codaris_agent::ContextSection>> {
        Box::pin(async move {
            let Ok(record) = self.turns.sessions.get(self.session_id()) else {
                return Vec::new();
            };
            let pool = self
                .turns
                .builtins
                .pools()
                .and_then(|pools| pools.pool(self.session_id()).ok());
            let workspace = record.workspace.clone();
            // Small reads of plain files, off the runtime's threads all the same.
            tokio::task::spawn_blocking(move || {
                super::survivors::sections(&workspace, pool.as_deref())
            })
            .await
            .unwrap_or_default()
        })
    }

    fn summariser<'a>(
        &'a self,
        model: &'a str,
    ) -> HostFuture<'a, Result<Box<dyn codaris_agent::ModelProvider>, String>> {
        Box::pin(async move {
            let record = self
                .turns
                .sessions
                .get(self.session_id())
                .map_err(|err| err.to_string())?;
            let name = super::model::model_named(
                model,
                record.model.as_deref(),
                &self.turns.config.get(),
            )?;
            let mut named = record.clone();
            named.model = Some(name);
            super::model::provider_for(&named, &self.turns.providers.current())
                .map_err(|err| err.to_string())
        })
    }

    fn switched_model(&self) -> Option<Arc<dyn codaris_agent::ModelProvider>> {
        self.switched().as_ref().map(|model| model.provider.clone())
    }

    fn round_notes(&self) -> Vec<String> {
        self.session.take_recalled()
    }

    fn emit(&self, event: TurnEvent) {
        match &event {
            TurnEvent::Binding {
                turn,
                round,
                surface,
            } => {
                tracing::info!(session = %self.session_id(), turn, round, "{}", surface.line());
                if !surface.missing.is_empty() {
                    tracing::debug!(session = %self.session_id(), missing = ?surface.missing, "tools the surface names that do not run here");
                }
            }
            TurnEvent::Usage { turn, usage, .. } => {
                tracing::info!(session = %self.session_id(), turn, "{}", usage.line());
            }
            TurnEvent::Compacted {
                turn,
                round,
                trigger,
                folded,
                tokens_before,
                tokens_after,
            } => {
                tracing::info!(session = %self.session_id(), turn, round, trigger = trigger.as_str(), folded, tokens_before, tokens_after, "context compacted");
            }
            _ => {}
        }
        if let Some(event) = turn_event_wire(event) {
            self.send(event);
        }
    }
}

/// The index as a turn sees it: the loop's own tools and the built-in tools that run here,
/// each with its switched state as of now, and the daemon's ranked search.
struct DaemonIndex {
    tools: Arc<ToolRegistry>,
    builtins: Builtins,
    /// The registry last built and the index snapshot it was built from: rebuilt only when a
    /// switch swapped the index.
    built: std::sync::Mutex<Option<(Arc<codaris_index::Index>, Arc<Registry>)>>,
    /// The session's own MCP servers (an editor's), when it has any: their tools are indexed
    /// for this session only, beside the daemon's ([`own_index`]).
    own: Option<Arc<crate::mcp::session::SessionMcp>>,
    /// The daemon's index and the own servers' generation the session's index was last
    /// joined from, and that index.
    joined: std::sync::Mutex<Option<own_index::Joined>>,
}

impl DaemonIndex {
    /// The schema of a bound MCP tool, found by its index entry (which names its server): the
    /// surface's names are the index's own, so nothing is parsed here.
    fn mcp_spec(&self, hub: &crate::mcp::McpHub, name: &str) -> Option<ToolDefinition> {
        let index = self.snapshot();
        let entry = index
            .get(name)
            .filter(|e| e.kind == codaris_index::Kind::Mcp)?;
        let server = entry.server.as_deref()?;
        self.own
            .as_deref()
            .and_then(|own| own.listed_spec(server, &entry.name))
            .or_else(|| hub.listed_spec(server, &entry.name))
    }

    /// The session's own servers, when `called` names one of them (its calls go there, never
    /// to a daemon server: the names are kept apart when the session is made).
    fn own_for(
        &self,
        called: &codaris_mcp::names::McpTool,
    ) -> Option<&crate::mcp::session::SessionMcp> {
        self.own.as_deref().filter(|own| own.has_server(called))
    }

    /// The index this session searches and binds from: the daemon's, joined with its own
    /// servers' tools when it has any.
    fn snapshot(&self) -> Arc<codaris_index::Index> {
        let daemon = self.tools.snapshot();
        match &self.own {
            Some(own) => own_index::joined(&self.joined, &daemon, &self.tools, own),
            None => daemon,
        }
    }
}

impl ToolIndex for DaemonIndex {
    fn registry(&self) -> Arc<Registry> {
        let index = self.snapshot();
        let mut built = self
            .built
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((from, registry)) = built.as_ref()
            && Arc::ptr_eq(from, &index)
        {
            return registry.clone();
        }
        // The loop's own tools, the built-in tools that run here, then the MCP servers' tools.
        // A loop tool beyond the always-on two is offered only when the index holds it
        // (`compact_context` is left out with compaction off).
        let builtin = codaris_catalogue::LOOP_TOOLS
            .iter()
            .map(|entry| entry.name)
            .filter(|name| codaris_policy::ALWAYS_ON.contains(name) || index.get(name).is_some())
            .chain(self.builtins.names())
            .map(|name| {
                let mut tool = RegistryTool::builtin(name);
                tool.enabled = index.get(name).is_none_or(|entry| entry.enabled);
                tool
            });
        let mcp = index
            .entries()
            .iter()
            .filter(|entry| entry.kind == codaris_index::Kind::Mcp)
            .map(|entry| RegistryTool {
                name: entry.name.clone(),
                server: entry.server.clone(),
                enabled: entry.enabled,
                takes_url: entry.args.iter().any(|a| a == "url"),
            });
        let mut servers = self.tools.servers();
        if let Some(own) = &self.own {
            servers.extend(own.entries().1);
        }
        let registry = Arc::new(Registry::new(builtin.chain(mcp), &servers));
        *built = Some((index, registry.clone()));
        registry
    }

    fn search(&self, query: &str, kind: KindFilter, limit: usize) -> SearchOutcome {
        match &self.own {
            Some(_) => own_index::search(&self.snapshot(), query, kind, limit),
            None => self.tools.search(query, kind, limit),
        }
    }
}

/// The programs a card for this command may grant program-wide: the first word of each simple
/// command, once each, when the prompt is the `command` class one and the line (as read when
/// the call was prepared) reads cleanly.
fn programs_of(line: Option<&CommandLine>, decision: &Decision) -> Vec<String> {
    let is_command_prompt = decision
        .capability
        .as_ref()
        .is_some_and(|c| c.name == CapabilityName::RunCommand)
        && decision.code == codaris_policy::Code::NeedsApproval;
    let commands = match (is_command_prompt, line.and_then(CommandLine::commands)) {
        (true, Some(commands)) => commands,
        _ => &[],
    };
    let mut programs: Vec<String> = Vec::new();
    for program in commands.iter().filter_map(|words| words.first()) {
        // Offered only when granting every program would cover the line, and each names a
        // program found on the PATH: `./build.sh` in another directory is another program.
        // A grant names its program as a one-word command line, so a word must read back as
        // itself (a quoted `'a b'` does not).
        let reads_back = codaris_policy::prefix_words(program)
            .is_some_and(|w| w == std::slice::from_ref(program));
        if !reads_back || program.contains('/') {
            return Vec::new();
        }
        if !programs.contains(program) {
            programs.push(program.clone());
        }
    }
    programs
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn offered(command: &str) -> Vec<String> {
        let call = CallRequest {
            id: "c1".to_owned(),
            tool: ToolId::parse("run_command"),
            args: json!({"command": command}),
            task: codaris_policy::Task::new("/w"),
            cwd: None,
        };
        let decision = codaris_policy::Request {
            tool: call.tool.clone(),
            args: call.args.clone(),
            task: call.task.clone(),
            grants: Vec::new(),
            spec: None,
        }
        .evaluate();
        programs_of(Some(&CommandLine::read(command)), &decision)
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
