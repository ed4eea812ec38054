//! Carrying out a `spawn_agent` call: a subagent is a child session of the same daemon, with
//! its own turn and stored conversation, linked to its parent (the tool read and checked the
//! arguments).
//!
//! What a child may do is fixed here and in its task (`live.rs`): the parent's directory,
//! operating and permission mode; the parent's tools less what the policy withholds from any
//! subagent and what its agent definition removes; the grants of the person's session the
//! family descends from (its dispatcher decides there, `Lineage`). Its cards are shown on that
//! session's stream, marked as the child's (`host/asking.rs`).
//!
//! In the foreground the parent's call waits for the child's report, its progress shown as the
//! call's progress; in the background the call answers at once and the report wakes the parent
//! when the child ends (or waits for its next turn). Either way a timeout cancels the child, and
//! cancelling the parent's turn cancels its running children.

use std::sync::Arc;
use std::time::Duration;

use codaris_agent::ToolRun;
use codaris_proto::v1;
use codaris_tools::SpawnRequest;
use tokio::sync::mpsc;

use super::family::Family;
use super::model::model_named;
use super::services::Services;
use super::session::{RunningChild, Session};
use crate::sessions::ids::SessionId;
use crate::sessions::store::{ChildOf, NewSession, SessionRecord};

const TOOL: &str = "spawn_agent";

/// How long a cancelled child is given to end its turn before its report is written anyway.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// Where the child's progress goes: the parent's call, as `tool_progress` lines.
pub(super) type Progress = Arc<dyn Fn(&str) + Send + Sync>;

/// Carries out `request` for `parent`: the child's report, or why there is none.
pub(super) async fn spawn(
    services: &Arc<Services>,
    parent: &Arc<Session>,
    request: &SpawnRequest,
    progress: Progress,
) -> ToolRun {
    let Some(family) = services.family.get() else {
        return refused("this daemon runs no subagents");
    };
    let parent_record = match services.sessions.get(parent.id().as_str()) {
        Ok(record) => record,
        Err(err) => return refused(err),
    };
    let child = match &request.resume {
        Some(id) => resumable(services, family.as_ref(), &parent_record, id),
        None => create_child(services, &parent_record, request).await,
    };
    let child = match child {
        Ok(child) => child,
        Err(run) => return run,
    };
    let events = match family.start(&child.id, request.prompt.clone()).await {
        Ok(events) => events,
        Err(err) => return refused(format!("`{}` could not start: {err}", child.id)),
    };
    let child_id = SessionId::new(&child.id);
    let named = Named::of(&child);
    parent.child_started(RunningChild {
        id: child_id.clone(),
        label: named.label(),
        background: request.background,
        started: std::time::Instant::now(),
    });
    tracing::info!(parent = %parent.id(), child = %child.id, agent = %named.agent, background = request.background, resumed = request.resume.is_some(), "subagent started");
    let timeout = Duration::from_secs(request.timeout_seconds);
    if request.background {
        let services = services.clone();
        let parent = parent.clone();
        let notify = request.notify_on_finish;
        let named_bg = named.clone();
        tokio::spawn(async move {
            let Some(family) = services.family.get() else {
                return;
            };
            let report = follow(events, timeout, family.as_ref(), &named_bg, None).await;
            parent.child_ended(&child_id);
            family.release(child_id.as_str());
            let notice = format!("[{}]", report.text(&named_bg));
            if notify {
                family.wake(parent.id().as_str(), notice);
            } else {
                parent.note(notice);
            }
        });
        return ToolRun::ok(format!(
            "{TOOL}: subagent `{}` ({}) runs in the background; {}. Its session is `{}`; `spawn_agent` with `resume` continues it once it ended",
            named.id,
            named.label(),
            if request.notify_on_finish {
                "its report wakes you when it ends"
            } else {
                "its report waits for your next turn"
            },
            named.id,
        ));
    }
    // Dropped with the parent's call (the parent's turn cancelled or gone): the child stops.
    let mut guard = CancelOnDrop {
        family: family.as_ref(),
        child: &child.id,
        armed: true,
    };
    let report = follow(events, timeout, family.as_ref(), &named, Some(progress)).await;
    guard.armed = false;
    parent.child_ended(&child_id);
    family.release(&child.id);
    let text = report.text(&named);
    if report.ordinary() {
        ToolRun::ok(text)
    } else {
        ToolRun::error(text)
    }
}

/// The child `id`, when it is this parent's and has finished, to be resumed.
fn resumable(
    services: &Services,
    family: &dyn Family,
    parent: &SessionRecord,
    id: &str,
) -> Result<SessionRecord, ToolRun> {
    let not_its = || {
        refused(format!(
            "`{id}` is not a child of this session; its children: {}",
            listed(&parent.children)
        ))
    };
    let record = services.sessions.get(id).map_err(|_| not_its())?;
    if record.child.as_ref().is_none_or(|c| c.parent != parent.id) {
        return Err(not_its());
    }
    if family.live(id).is_some_and(|s| s.running()) {
        return Err(refused(format!(
            "`{id}` is still running; wait for its report before you resume it"
        )));
    }
    if record.state == crate::sessions::store::SessionState::Ended {
        return Err(refused(format!("`{id}` has ended and cannot be resumed")));
    }
    Ok(record)
}

/// Makes the child's session: the parent's directory, modes, provider and project, its own
/// conversation, the definition's narrowing and model.
async fn create_child(
    services: &Services,
    parent: &SessionRecord,
    request: &SpawnRequest,
) -> Result<SessionRecord, ToolRun> {
    let depth = parent.child.as_ref().map_or(0, |c| c.depth) + 1;
    if depth > services.config.get().subagents_max_depth {
        // The policy withholds `spawn_agent` at the limit; this is the daemon holding it too.
        return Err(refused(format!(
            "this session is as deep as `subagents.max_depth` ({}) allows",
            services.config.get().subagents_max_depth
        )));
    }
    let agents_dir = services.config.get().agents_dir.clone();
    let cwd = parent.cwd.clone();
    let found = tokio::task::spawn_blocking(move || {
        crate::toolset::agents::find(agents_dir.as_deref(), &cwd)
    })
    .await
    .map_err(|err| refused(format!("reading the agent definitions failed: {err}")))?;
    for problem in &found.problems {
        tracing::warn!(%problem, "an agent definition was left out");
    }
    let Some(definition) = found.get(&request.agent) else {
        let names: Vec<String> = found.agents.iter().map(|a| a.name.clone()).collect();
        return Err(refused(format!(
            "no agent definition is named `{}`; known: {} (`codaris agents list`)",
            request.agent,
            listed(&names)
        )));
    };
    let model = match request.model.as_ref().or(definition.model.as_ref()) {
        Some(wanted) => Some(
            model_named(wanted, parent.model.as_deref(), &services.config.get())
                .map_err(refused)?,
        ),
        None => parent.model.clone(),
    };
    let narrowed =
        (definition.tools.is_some() || !definition.disallowed_tools.is_empty()).then(|| {
            codaris_policy::Narrowed {
                agent: definition.name.clone(),
                tools: definition.tools.clone(),
                disallowed: definition.disallowed_tools.clone(),
            }
        });
    let root = parent
        .child
        .as_ref()
        .map_or_else(|| parent.id.clone(), |c| c.root.clone());
    let new = NewSession {
        cwd: parent.cwd.clone(),
        activity: parent.activity,
        permission_mode: parent.permission_mode,
        provider: parent.provider,
        model,
        script: parent.script.clone(),
        base_url: parent.base_url.clone(),
        instructions: parent.instructions.clone(),
        // The parent's own roots (an editor's `additionalDirectories`) are the child's fence too.
        additional_dirs: parent.additional_dirs.clone(),
        child: Some(ChildOf {
            parent: parent.id.clone(),
            root,
            depth,
            agent: definition.name.clone(),
            description: request.description.clone(),
            instructions: definition.instructions.clone(),
            narrowed,
            script_path: Vec::new(),
            job: None,
            memory: None,
        }),
        reasoning: request
            .reasoning
            .filter(|r| *r != codaris_catalogue::Reasoning::Default),
        title: crate::sessions::store::title_of(&request.prompt),
    };
    // The N-th child plays the N-th entry of the family's script: taken as the parent's count
    // now, and checked once the child is listed there (two spawned at once may race for it).
    let script_path = |index: usize| {
        let mut path = parent
            .child
            .as_ref()
            .map(|c| c.script_path.clone())
            .unwrap_or_default();
        path.push(index);
        path
    };
    let mut new = new;
    if let Some(child) = new.child.as_mut() {
        child.script_path = script_path(parent.children.len());
    }
    let created = services.sessions.create(new).map_err(refused)?;
    let index = services
        .sessions
        .add_child(&parent.id, &created.id)
        .map_err(refused)?;
    if index == parent.children.len() {
        return Ok(created);
    }
    services
        .sessions
        .change_active(&created.id, |record| {
            let mut next = record.clone();
            if let Some(child) = next.child.as_mut() {
                child.script_path = script_path(index);
            }
            next
        })
        .map_err(refused)
}

/// What the parent reads of a child: its id, definition and task.
#[derive(Debug, Clone)]
struct Named {
    id: String,
    agent: String,
    description: String,
}

impl Named {
    fn of(record: &SessionRecord) -> Named {
        let (agent, description) = record
            .child
            .as_ref()
            .map(|c| (c.agent.clone(), c.description.clone()))
            .unwrap_or_default();
        Named {
            id: record.id.clone(),
            agent,
            description,
        }
    }

    /// `general: lint the pipeline`
    fn label(&self) -> String {
        format!("{}: {}", self.agent, self.description)
    }
}

/// How a child's turn ended, and what it said last.
#[derive(Debug, Default)]
struct Report {
    /// The text of its last round: its report when it ended on its own.
    text: String,
    /// `turn_ended`'s reason; empty when the stream ended without one.
    reason: String,
    error: String,
    /// It ran past its `timeout_seconds` and was cancelled.
    timed_out: Option<u64>,
}

impl Report {
    fn ordinary(&self) -> bool {
        self.timed_out.is_none() && self.reason == "end_turn"
    }

    /// What the parent's model reads: the first line says who reported and how it ended.
    fn text(&self, named: &Named) -> String {
        let head = match (self.timed_out, self.reason.as_str()) {
            (Some(seconds), _) => format!(
                "subagent `{}` ({}) ran past its {seconds} s and was cancelled",
                named.id,
                named.label()
            ),
            (None, "end_turn") => format!("subagent `{}` ({}) reported", named.id, named.label()),
            (None, "") => format!(
                "subagent `{}` ({}) stopped without ending its turn",
                named.id,
                named.label()
            ),
            (None, "error") => format!(
                "subagent `{}` ({}) failed: {}",
                named.id,
                named.label(),
                self.error
            ),
            (None, reason) => format!(
                "subagent `{}` ({}) ended `{reason}` before it finished",
                named.id,
                named.label()
            ),
        };
        let body = self.text.trim();
        if body.is_empty() {
            format!("{head}, and said nothing.")
        } else if self.ordinary() {
            format!("{head}:\n{body}")
        } else {
            format!("{head}; what it said last:\n{body}")
        }
    }
}

/// Follows a child's turn to its end (cancelling it past `timeout`), passing its tool calls on
/// as the parent call's progress.
async fn follow(
    mut events: mpsc::Receiver<v1::TurnEvent>,
    timeout: Duration,
    family: &dyn Family,
    named: &Named,
    progress: Option<Progress>,
) -> Report {
    let mut report = Report::default();
    let mut deadline = tokio::time::Instant::now() + timeout;
    loop {
        let event = match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(_) if report.timed_out.is_none() => {
                report.timed_out = Some(timeout.as_secs());
                family.cancel(&named.id);
                deadline = tokio::time::Instant::now() + CANCEL_GRACE;
                continue;
            }
            Err(_) => break,
        };
        match event.event {
            Some(v1::turn_event::Event::Text(delta)) => report.text.push_str(&delta.text),
            Some(v1::turn_event::Event::ToolCall(call)) => {
                // What came before a call was the child thinking aloud, not its report.
                report.text.clear();
                if let Some(progress) = &progress {
                    progress(&format!("{} ({}): {}", named.id, named.agent, call.tool));
                }
            }
            Some(v1::turn_event::Event::TurnEnded(ended)) => {
                report.reason = ended.reason;
                report.error = ended.error;
                break;
            }
            _ => {}
        }
    }
    report
}

/// Cancels the child when the parent's waiting call is dropped before it ended.
struct CancelOnDrop<'a> {
    family: &'a dyn Family,
    child: &'a str,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            tracing::info!(child = %self.child, "the parent's call went away; cancelling its subagent");
            self.family.cancel(self.child);
        }
    }
}

fn refused(why: impl std::fmt::Display) -> ToolRun {
    ToolRun::error(format!("{TOOL}: {why}"))
}

fn listed(names: &[String]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `background_list`'s answer with the session's background children added, one line each
/// (`agent ID  running  Ns  AGENT: DESCRIPTION`), so the model finds them where it looks for
/// its background work.
pub(super) fn with_background_children(listed: String, parent: &Session) -> String {
    let children: Vec<String> = parent
        .running_children()
        .into_iter()
        .filter(|c| c.background)
        .map(|c| {
            format!(
                "agent {}  running  {}s  {}",
                c.id,
                c.started.elapsed().as_secs(),
                c.label
            )
        })
        .collect();
    if children.is_empty() {
        return listed;
    }
    let lines = children.join("\n");
    if listed.starts_with("no background tasks") {
        lines
    } else {
        format!("{listed}\n{lines}")
    }
}
