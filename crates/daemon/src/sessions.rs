//! Sessions as durable records in sled, each with its own workspace directory.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use codaris_agent::ProviderChoice;
use codaris_policy::{Activity, PermissionMode};
use serde::{Deserialize, Serialize};

use crate::error::DaemonError;
use crate::state::create_private_dir;

/// The version of [`SessionRecord`]'s stored shape.
const SESSION_SCHEMA: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    Active,
    Ended,
}

/// One session as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub schema: u32,
    pub id: String,
    pub state: SessionState,
    pub created_at_ms: u64,
    pub ended_at_ms: Option<u64>,
    pub cwd: PathBuf,
    pub workspace: PathBuf,
    /// Stored as `agent`, `plan`, `ask`, `review`, `research` or `audit`.
    pub activity: Activity,
    /// Stored as `ask`, `accept_edits` or `bypass`.
    pub permission_mode: PermissionMode,
    /// Stored as `scripted`, `anthropic` or `openai`.
    pub provider: ProviderChoice,
    pub model: Option<String>,
    pub script: Option<PathBuf>,
    pub turns: u32,
}

/// What a client asks for when it creates a session, already validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    pub cwd: PathBuf,
    pub activity: Activity,
    pub permission_mode: PermissionMode,
    pub provider: ProviderChoice,
    pub model: Option<String>,
    pub script: Option<PathBuf>,
}

/// The sessions tree of the ledger database.
#[derive(Debug, Clone)]
pub struct SessionStore {
    db: sled::Db,
    tree: sled::Tree,
    sessions_dir: PathBuf,
}

impl SessionStore {
    pub fn open(db: &sled::Db, sessions_dir: &Path) -> Result<Self, DaemonError> {
        Ok(Self {
            db: db.clone(),
            tree: db.open_tree("sessions")?,
            sessions_dir: sessions_dir.to_path_buf(),
        })
    }

    /// Creates the record and the workspace `sessions/<id>/` (0700).
    pub fn create(&self, new: NewSession) -> Result<SessionRecord, DaemonError> {
        // sled ids are unique and increasing across restarts, so ids sort by creation.
        let id = format!("s{:06}", codaris_ledger::unique_id(&self.db)?);
        let workspace = self.sessions_dir.join(&id);
        create_private_dir(&workspace).map_err(|source| DaemonError::Io {
            path: workspace.clone(),
            source,
        })?;
        let record = SessionRecord {
            schema: SESSION_SCHEMA,
            id: id.clone(),
            state: SessionState::Active,
            created_at_ms: now_ms(),
            ended_at_ms: None,
            cwd: new.cwd,
            workspace,
            activity: new.activity,
            permission_mode: new.permission_mode,
            provider: new.provider,
            model: new.model,
            script: new.script,
            turns: 0,
        };
        self.put(&record)?;
        Ok(record)
    }

    pub fn get(&self, id: &str) -> Result<SessionRecord, DaemonError> {
        check_id(id)?;
        match self.tree.get(id.as_bytes())? {
            Some(bytes) => Ok(serde_json::from_slice(&bytes)?),
            None => Err(DaemonError::SessionNotFound { id: id.to_owned() }),
        }
    }

    /// Every session in creation order; ended ones only when asked.
    pub fn list(&self, include_ended: bool) -> Result<Vec<SessionRecord>, DaemonError> {
        let mut sessions = Vec::new();
        for entry in self.tree.iter() {
            let (_, bytes) = entry?;
            let record: SessionRecord = serde_json::from_slice(&bytes)?;
            if include_ended || record.state == SessionState::Active {
                sessions.push(record);
            }
        }
        Ok(sessions)
    }

    /// Marks the session ended; ending an ended session is a no-op that returns it.
    pub fn end(&self, id: &str) -> Result<SessionRecord, DaemonError> {
        let mut record = self.get(id)?;
        if record.state == SessionState::Active {
            record.state = SessionState::Ended;
            record.ended_at_ms = Some(now_ms());
            self.put(&record)?;
        }
        Ok(record)
    }

    /// Moves the session's working directory (into a worktree).
    pub fn set_cwd(&self, id: &str, cwd: &Path) -> Result<(), DaemonError> {
        let mut record = self.get(id)?;
        record.cwd = cwd.to_path_buf();
        self.put(&record)
    }

    /// Counts one more turn of the session.
    pub fn count_turn(&self, id: &str) -> Result<(), DaemonError> {
        let mut record = self.get(id)?;
        record.turns = record.turns.saturating_add(1);
        self.put(&record)
    }

    /// (active, total) counts for the status line.
    pub fn counts(&self) -> Result<(u32, u32), DaemonError> {
        let sessions = self.list(true)?;
        let active = sessions
            .iter()
            .filter(|s| s.state == SessionState::Active)
            .count();
        Ok((saturate(active), saturate(sessions.len())))
    }

    fn put(&self, record: &SessionRecord) -> Result<(), DaemonError> {
        let bytes = serde_json::to_vec(record)?;
        self.tree.insert(record.id.as_bytes(), bytes)?;
        Ok(())
    }
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The longest session id accepted; the daemon's own are `s` and a dozen digits.
const MAX_ID_LEN: usize = 64;

/// Refuses what cannot be a session id before it is looked up or echoed back.
pub fn check_id(id: &str) -> Result<(), DaemonError> {
    let fine = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if id.is_empty() {
        return Err(DaemonError::InvalidArgument {
            field: "session_id",
            reason: "is empty".to_owned(),
        });
    }
    if id.len() > MAX_ID_LEN || !id.chars().all(fine) {
        return Err(DaemonError::InvalidArgument {
            field: "session_id",
            reason: format!(
                "is not a session id ({} bytes; ids are letters, digits, `-` and `_`, at most {MAX_ID_LEN})",
                id.len()
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn store() -> Result<(tempfile::TempDir, SessionStore), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let db = sled::Config::new()
            .path(temp.path().join("ledger"))
            .open()?;
        let store = SessionStore::open(&db, &temp.path().join("sessions"))?;
        Ok((temp, store))
    }

    fn new_session() -> NewSession {
        NewSession {
            cwd: PathBuf::from("/w"),
            activity: Activity::Agent,
            permission_mode: PermissionMode::Ask,
            provider: ProviderChoice::Scripted,
            model: None,
            script: None,
        }
    }

    #[test]
    fn create_get_list_end() -> Result<(), Box<dyn std::error::Error>> {
        let (_temp, store) = store()?;
        let a = store.create(new_session())?;
        let b = store.create(new_session())?;
        assert!(a.workspace.is_dir());
        assert_eq!(store.get(&a.id)?, a);
        assert_eq!(store.list(false)?, vec![a.clone(), b.clone()]);
        let ended = store.end(&a.id)?;
        assert_eq!(ended.state, SessionState::Ended);
        assert_eq!(store.end(&a.id)?, ended);
        assert_eq!(store.list(false)?, vec![b]);
        assert_eq!(store.counts()?, (1, 2));
        Ok(())
    }

    #[test]
    fn unknown_session_is_not_found() -> Result<(), Box<dyn std::error::Error>> {
        let (_temp, store) = store()?;
        assert!(matches!(
            store.get("s999"),
            Err(DaemonError::SessionNotFound { .. })
        ));
        Ok(())
    }
}
