//! Resuming a stored session and switching a session's model or modes.
//!
//! A resumed session continues its saved conversation: the live state is rebuilt from the
//! record and the conversation the ledger kept (see [`Turns::session`]), so this works the
//! same after a daemon restart. Reopening an ended session first revokes every grant the
//! end left standing in the ledger: ending a session lapses its grants, and a resume must
//! never bring one back (the person answered those cards for the session as it was then).

use codaris_agent::{Conversation, Event};
use codaris_ledger::GrantRecord;
use codaris_policy::{Activity, Lifetime, PermissionMode};

use super::live::Turns;
use super::model::model_for;
use crate::error::DaemonError;
use crate::sessions::store::{SessionRecord, SessionState, now_ms};

/// The longest model name a switch accepts.
const MAX_MODEL_LEN: usize = 200;

/// What `UpdateSession` asks to change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionChange {
    pub model: Option<String>,
    pub activity: Option<Activity>,
    pub permission_mode: Option<PermissionMode>,
}

impl Turns {
    /// Reopens the session so its next turn continues its conversation, in its own cwd. An
    /// active session is returned as it is; an ended one has its lapsed grants revoked for
    /// good, then becomes active again.
    pub fn resume(&self, session_id: &str) -> Result<SessionRecord, DaemonError> {
        let record = self.sessions.get(session_id)?;
        if record.state == SessionState::Active {
            return Ok(record);
        }
        // The session runs in its own directory: one that is gone would fail every tool call
        // later and less clearly.
        if !record.cwd.is_dir() {
            return Err(DaemonError::InvalidArgument {
                field: "id",
                reason: format!(
                    "session {} cannot resume: its directory `{}` is gone",
                    record.id,
                    record.cwd.display()
                ),
            });
        }
        let revoked = self.revoke_lapsed(&record.id)?;
        let (record, reopened) = self.sessions.reopen(&record.id)?;
        if reopened {
            tracing::info!(session = %record.id, revoked, "session resumed; its lapsed grants stay lapsed");
        }
        Ok(record)
    }

    /// Revokes the session's grants that still stand in the ledger (what its end lapsed),
    /// durably, before anything can use them again; returns how many. Its deny grants stay:
    /// a refusal the person recorded only ever narrows what the session may do.
    fn revoke_lapsed(&self, session_id: &str) -> Result<usize, DaemonError> {
        let (grants, corrupt) = self.ledger.grants(Some(session_id))?;
        for bad in &corrupt {
            // A record that does not decode grants nothing (the dispatcher says the same).
            tracing::warn!(%bad, session = %session_id, "a grant record does not decode; it stays as it is");
        }
        let standing: Vec<&GrantRecord> = grants
            .iter()
            .filter(|g| g.is_active() && g.grant.lifetime != Lifetime::Deny)
            .collect();
        let at_ms = now_ms();
        for grant in &standing {
            self.ledger.revoke(&grant.id, at_ms)?;
        }
        self.ledger.forget_grant_view(session_id);
        Ok(standing.len())
    }

    /// Switches the session's model, activity or permission mode from its next turn on.
    /// Refused for an ended session and while a turn runs; a model the daemon cannot build a
    /// provider for is refused and changes nothing.
    pub async fn update(
        &self,
        session_id: &str,
        change: SessionChange,
    ) -> Result<SessionRecord, DaemonError> {
        if let Some(model) = &change.model {
            check_model(model)?;
        }
        let record = self.sessions.get(session_id)?;
        if record.state == SessionState::Ended {
            return Err(DaemonError::SessionEnded {
                id: record.id.clone(),
            });
        }
        let live = self.live_of(&record.id);
        // A turn that is sealing its checkpoint and keeping its conversation is over but for
        // that: wait the moment a new turn waits (`start`), and hold the conversation so no
        // turn starts while the session changes.
        let _held = match &live {
            Some(session) => Some(
                tokio::time::timeout(
                    super::live::ENDING_TURN_GRACE,
                    session.conversation.clone().lock_owned(),
                )
                .await
                .map_err(|_| DaemonError::TurnRunning {
                    id: record.id.clone(),
                })?,
            ),
            None => None,
        };
        let apply = |record: &SessionRecord| SessionRecord {
            model: change.model.clone().or_else(|| record.model.clone()),
            activity: change.activity.unwrap_or(record.activity),
            permission_mode: change.permission_mode.unwrap_or(record.permission_mode),
            ..record.clone()
        };
        // The scripted provider plays its script whatever the model is called: rebuilding it
        // would start the script over, so only an API model is built anew.
        let switch = change.model.is_some()
            && change.model != record.model
            && record.provider != codaris_agent::ProviderChoice::Scripted;
        let model = switch
            .then(|| {
                model_for(
                    &apply(&record),
                    &self.providers.current(),
                    &self.config.get(),
                )
            })
            .transpose()?;
        let updated = self.sessions.change_active(&record.id, apply)?;
        if let (Some(model), Some(live)) = (model, live) {
            live.set_model(model);
        }
        Ok(updated)
    }
}

/// One message of a session's history as a person reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryEntry {
    /// `user` or `assistant`; `compaction` where the history was folded into a summary.
    pub role: &'static str,
    pub text: String,
}

impl Turns {
    /// The session's saved conversation, oldest first: what was typed and what the model
    /// wrote (tool calls, their results and empty texts left out); the latest `limit` when it
    /// is not 0. Read from what the ledger kept after the last turn, never from a turn in
    /// progress.
    pub fn history(&self, session_id: &str, limit: u32) -> Result<Vec<HistoryEntry>, DaemonError> {
        let record = self.sessions.get(session_id)?;
        let Some(value) = self.sessions.load_conversation(&record.id)? else {
            return Ok(Vec::new());
        };
        let conversation: Conversation =
            serde_json::from_value(value).map_err(|err| DaemonError::CorruptRecord {
                detail: format!("the kept conversation of session {}: {err}", record.id),
                count: 1,
            })?;
        let mut entries: Vec<HistoryEntry> = conversation
            .events()
            .iter()
            .filter_map(|event| match event {
                // As it was sent: what was typed, then the notes that rode along.
                Event::User { text, notes } => Some(HistoryEntry {
                    role: "user",
                    text: if notes.is_empty() {
                        text.clone()
                    } else {
                        format!("{text}\n\n{}", notes.join("\n"))
                    },
                }),
                Event::Assistant { text, .. } if !text.trim().is_empty() => Some(HistoryEntry {
                    role: "assistant",
                    text: text.clone(),
                }),
                Event::Compaction(compaction) => Some(HistoryEntry {
                    role: "compaction",
                    text: format!(
                        "context compacted ({}): {} earlier events folded into a summary ({} → {} tokens)\n{}",
                        compaction.trigger.as_str(),
                        compaction.folded,
                        compaction.tokens_before,
                        compaction.tokens_after,
                        compaction.summary
                    ),
                }),
                _ => None,
            })
            .collect();
        let keep = usize::try_from(limit).unwrap_or(usize::MAX);
        if keep > 0 && entries.len() > keep {
            entries.drain(..entries.len() - keep);
        }
        Ok(entries)
    }
}

/// Refuses a model name no provider could mean before it is stored or echoed.
fn check_model(model: &str) -> Result<(), DaemonError> {
    let reason = if model.trim().is_empty() {
        "is empty".to_owned()
    } else if model.len() > MAX_MODEL_LEN {
        format!("is {} bytes; at most {MAX_MODEL_LEN}", model.len())
    } else if model.chars().any(|c| c.is_control() || c.is_whitespace()) {
        "contains a space or a control character".to_owned()
    } else {
        return Ok(());
    };
    Err(DaemonError::InvalidArgument {
        field: "model",
        reason,
    })
}
