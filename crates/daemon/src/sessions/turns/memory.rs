//! The memory subagent: with `[memory] enabled`, each turn of a person's session starts a child
//! session in the background whose only tools are the `codaris_memory_*` ones (the policy
//! withholds everything else from its task, `task.memory`, and the memory tools from every
//! other task). An ask-mode turn's child only recalls (`MemoryRole::Recall`: search, list,
//! read); every other turn's child also keeps notes.
//!
//! It is started after the main turn's own task, and nothing of the main turn waits for it (nor
//! does the parent's end cut it short: it is bounded by its own timeout instead, and stopped
//! when the turn is cancelled): the child's session is made and its turn run on a task of its
//! own. A turn that a background child's report woke starts none: it has no message of the
//! person's to recall for. When it ends, what it said
//! last is kept on the parent's live session as a recall (`Session::recall`), and the parent's
//! host hands it to the main model with its next request (`TurnHost::round_notes`), marked as
//! memory; a recall that arrives after the main turn ended goes with the next turn's first
//! request. Its decisions are recorded under its own session, like any subagent's.

use std::sync::Arc;
use std::time::Duration;

use codaris_policy::{Activity, MemoryRole};
use codaris_proto::v1;
use tokio::sync::{mpsc, watch};

use super::services::Services;
use super::session::Session;
use crate::sessions::store::{ChildOf, NewSession, SessionRecord};

/// The agent name a memory subagent's session is listed under.
pub(super) const MEMORY_AGENT: &str = "memory";

/// How long a memory subagent may run before it is cancelled: recall is worth something only
/// while the main turn still runs, or soon after, and keeping a note takes a few rounds.
const MEMORY_TIMEOUT: Duration = Duration::from_secs(300);

/// What a memory subagent is told, beside the session's system prompt.
const KEEP_INSTRUCTIONS: &str = "You are the memory of this agent. Your tools reach the notes it keeps between sessions: Markdown files under `user:` (the person's, for every project) and `project:` (this project's), addressed `scope:relative/path.md`.\n\
First recall: search the notes for what bears on the person's message and read the ones that do. Your last answer is handed to the main agent as memory: say in a few lines only what the notes say that helps with this message (name each note), or answer `nothing relevant` when they say nothing.\n\
Then keep: when the message tells something worth knowing in a later session (how the cluster behaves, the profile that works, a preference of the person or a reviewer), save it as a short note or update the note it belongs in. Never save secrets, tokens or passwords.";

const RECALL_INSTRUCTIONS: &str = "You are the memory of this agent. Your tools reach the notes it keeps between sessions: Markdown files under `user:` (the person's, for every project) and `project:` (this project's), addressed `scope:relative/path.md`. This is an ask-mode turn: you only recall, you change no note.\n\
Search the notes for what bears on the person's message and read the ones that do. Your last answer is handed to the main agent as memory: say in a few lines only what the notes say that helps with this message (name each note), or answer `nothing relevant` when they say nothing.";

/// The role of the memory subagent of a turn in `activity`: an ask-mode turn's only recalls.
pub(super) fn role_of(activity: Activity) -> MemoryRole {
    if activity == Activity::Ask {
        MemoryRole::Recall
    } else {
        MemoryRole::Keep
    }
}

/// Starts the memory subagent of `parent`'s turn `turn` (the `turn`-th, 0-based) on what the
/// person wrote, in the background; returns at once.
pub(super) fn start(
    services: &Arc<Services>,
    parent: &Arc<Session>,
    record: &SessionRecord,
    turn: u32,
    prompt: &str,
) {
    let (services, parent, record) = (services.clone(), parent.clone(), record.clone());
    let title = crate::sessions::store::title_of(prompt);
    let prompt = format!("The person's message to the main agent:\n\n{prompt}");
    let stop = parent.memory_stop();
    tokio::spawn(async move {
        if let Err(why) = run(&services, &parent, &record, turn, prompt, title, stop).await {
            tracing::warn!(session = %record.id, turn, %why, "the memory subagent did not run");
        }
    });
}

async fn run(
    services: &Arc<Services>,
    parent: &Arc<Session>,
    record: &SessionRecord,
    turn: u32,
    prompt: String,
    title: String,
    stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let family = services
        .family
        .get()
        .ok_or("this daemon runs no subagents")?;
    if *stop.borrow() {
        // The turn was cancelled before its memory subagent got going.
        return Ok(());
    }
    let role = role_of(record.activity);
    let child = services
        .sessions
        .create(new_child(record, turn, role, title))
        .map_err(|err| err.to_string())?;
    let events = family
        .start(&child.id, prompt)
        .await
        .map_err(|err| err.to_string())?;
    // Not among the parent's running children: a one-shot `codaris run` ends its session as
    // soon as the turn ends, and what the child keeps must not be cut off with it. It is held
    // to [`MEMORY_TIMEOUT`] instead, stopped when the turn is cancelled (`stop`), and the
    // daemon's stop closes it with every session.
    tracing::info!(parent = %record.id, child = %child.id, turn, role = ?role, "memory subagent started");
    let recalled = follow(events, family.as_ref(), &child.id, stop).await;
    family.release(&child.id);
    // Nothing continues a memory subagent (each turn starts its own): its session ends, its
    // record and decisions stay.
    if let Err(err) = services.sessions.end_if_active(&child.id) {
        tracing::warn!(child = %child.id, %err, "could not end the memory subagent's session");
    }
    if let Some(text) = recalled {
        parent.recall(format!(
            "[memory (subagent `{}`) recalled for this message:\n{text}]",
            child.id
        ));
    }
    Ok(())
}

/// The child's session: the parent's directory, roots, provider and model; agent-mode activity
/// for a child that keeps notes (they are its own to change, even in a plan-mode turn), ask
/// for one that only recalls.
fn new_child(parent: &SessionRecord, turn: u32, role: MemoryRole, title: String) -> NewSession {
    let (activity, instructions) = match role {
        MemoryRole::Recall => (Activity::Ask, RECALL_INSTRUCTIONS),
        MemoryRole::Keep => (Activity::Agent, KEEP_INSTRUCTIONS),
    };
    NewSession {
        cwd: parent.cwd.clone(),
        activity,
        permission_mode: parent.permission_mode,
        provider: parent.provider,
        model: parent.model.clone(),
        script: parent.script.clone(),
        base_url: parent.base_url.clone(),
        instructions: parent.instructions.clone(),
        additional_dirs: parent.additional_dirs.clone(),
        child: Some(ChildOf {
            parent: parent.id.clone(),
            root: parent
                .child
                .as_ref()
                .map_or_else(|| parent.id.clone(), |c| c.root.clone()),
            depth: parent.child.as_ref().map_or(0, |c| c.depth) + 1,
            agent: MEMORY_AGENT.to_owned(),
            description: format!("recall for turn {turn}"),
            instructions: instructions.to_owned(),
            narrowed: None,
            // The scripted provider: turn `k`'s memory subagent plays the script's `memory[k]`.
            script_path: vec![turn as usize],
            memory: Some(role),
            job: None,
        }),
        reasoning: None,
        title,
    }
}

/// Follows the child's turn to its end (cancelling it past [`MEMORY_TIMEOUT`], or when `stop`
/// says the turn it remembers for was cancelled); what it said last when it ended on its own
/// with something to say.
async fn follow(
    mut events: mpsc::Receiver<v1::TurnEvent>,
    family: &dyn super::family::Family,
    child: &str,
    mut stop: watch::Receiver<bool>,
) -> Option<String> {
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + MEMORY_TIMEOUT;
    let stopped = async move {
        // A sender let go (the parent's live state went) is no stop: only `true` is.
        if stop.wait_for(|stop| *stop).await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    tokio::pin!(stopped);
    loop {
        let event = tokio::select! {
            received = tokio::time::timeout_at(deadline, events.recv()) => match received {
                Ok(Some(event)) => event,
                Ok(None) => return None,
                Err(_) => {
                    tracing::info!(
                        child,
                        "the memory subagent ran past its time; cancelling it"
                    );
                    family.cancel(child);
                    return None;
                }
            },
            () = &mut stopped => {
                tracing::info!(child, "the turn was cancelled; cancelling its memory subagent");
                family.cancel(child);
                return None;
            }
        };
        match event.event {
            Some(v1::turn_event::Event::Text(delta)) => text.push_str(&delta.text),
            // What came before a call was the child thinking aloud, not its recall.
            Some(v1::turn_event::Event::ToolCall(_)) => text.clear(),
            Some(v1::turn_event::Event::TurnEnded(ended)) => {
                let text = text.trim();
                return (ended.reason == "end_turn" && !text.is_empty()).then(|| text.to_owned());
            }
            _ => {}
        }
    }
}
