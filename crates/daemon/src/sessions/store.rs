//! Sessions as durable records in the ledger, each with its own workspace directory and its
//! saved conversation.
//!
//! Every change of a record is a compare-and-swap through the ledger's sessions handle
//! ([`Sessions::update`]), computed from the version it replaces: a turn counted while the session
//! is being ended cannot write it back as active, and two changes never lose one another.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use codaris_agent::ProviderChoice;
use codaris_ledger::{Conversations, Ledger, LedgerError, Sessions, Updated};
use codaris_policy::{Activity, PermissionMode};
use serde::{Deserialize, Serialize};

use crate::error::DaemonError;
use crate::server::state::create_private_dir;

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
    /// The first prompt's first line, cut short ([`title_of`]); empty before the first turn
    /// and in records written before titles were kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// When the last turn ended; `None` before the first one (and in older records), when the
    /// creation time stands in for it ([`SessionRecord::last_activity_ms`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turn_ended_ms: Option<u64>,
    /// The API base URL the provider is asked at; `None`: the provider's public endpoint.
    /// Absent from records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The project's instruction files found when the session was created.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<InstructionFile>,
    /// The tags `session_describe` filed it under, normalised and sorted
    /// ([`codaris_tools::filing`]); absent from records written before tags were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The reasoning level `switch_model` set for the session; `None`: the model's own.
    /// Absent from records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<codaris_catalogue::Reasoning>,
    /// What makes it a subagent's session (`spawn_agent`); `None` for a person's session.
    /// Absent from records written before children existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<ChildOf>,
    /// The children it spawned, in order (the N-th plays a script's `children[N]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<String>,
    /// Directories this session's tools may use besides its cwd, for it only (an editor's
    /// `additionalDirectories`), resolved when it was created; absent from older records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_dirs: Vec<PathBuf>,
}

/// A subagent's session's place in its family, fixed when it is spawned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildOf {
    /// The session that spawned it.
    pub parent: String,
    /// The person's session the family descends from: its grants are in force for every
    /// call of the family, and its stream shows the family's cards.
    pub root: String,
    /// 1 for a person's session's child, 2 for a grandchild, …
    pub depth: u32,
    /// The agent definition it runs under, and what it was asked to do (a few words).
    pub agent: String,
    pub description: String,
    /// The definition's instructions as they were when it was spawned: a resumed child is
    /// told what it was told first.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instructions: String,
    /// What the definition leaves it of the parent's tools; `None`: all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub narrowed: Option<codaris_policy::Narrowed>,
    /// Which entry of the family's script it plays (the scripted provider): `[1]` the
    /// parent's second child, `[1, 0]` that one's first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub script_path: Vec<usize>,
    /// A scheduled job's run (`user:nightly`): nobody watches it, so a card it raises is
    /// answered by the job's rule (denied, and recorded) instead of waiting for a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// Set for a memory subagent (`[memory] enabled`, one per turn of its parent): what it may
    /// do with the notes. Its `script_path` is then `[k]`, the parent's turn, into the script's
    /// `memory` list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<codaris_policy::MemoryRole>,
}

/// One instruction file (`AGENTS.md`, `CODARIS.md`) of a session's project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionFile {
    pub path: PathBuf,
    pub bytes: u64,
}

impl SessionRecord {
    /// When the session was last used: its last turn's end, else its creation.
    pub fn last_activity_ms(&self) -> u64 {
        self.last_turn_ended_ms.unwrap_or(self.created_at_ms)
    }
}

/// How many characters of the first prompt's first line a title keeps.
const TITLE_CHARS: usize = 60;

/// A session's title from its first prompt: the first line that is not blank, its
/// whitespace collapsed, cut to [`TITLE_CHARS`] characters (an ellipsis says it was cut).
/// Control characters are dropped so a title cannot move a terminal's cursor when listed.
pub fn title_of(prompt: &str) -> String {
    let line = prompt
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default();
    let words: Vec<String> = line
        .split_whitespace()
        .map(|word| word.chars().filter(|c| !c.is_control()).collect())
        .filter(|word: &String| !word.is_empty())
        .collect();
    let line = words.join(" ");
    if line.chars().count() <= TITLE_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(TITLE_CHARS - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
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
    pub base_url: Option<String>,
    pub instructions: Vec<InstructionFile>,
    /// Set for a subagent's session.
    pub child: Option<ChildOf>,
    /// The reasoning level it starts with (a child's `spawn_agent` may name one).
    pub reasoning: Option<codaris_catalogue::Reasoning>,
    /// Its title from the start ([`title_of`] its task, for a child); empty: its first
    /// prompt names it.
    pub title: String,
    /// The session's own additional roots, resolved ([`super::extra_roots::admit`]).
    pub additional_dirs: Vec<PathBuf>,
}

/// The session records and conversations, through the ledger's handles.
#[derive(Debug, Clone)]
pub struct SessionStore {
    /// The number the next session's id takes (`s000001`, `s000002`, …): one more than the
    /// highest found at open among the records and the workspaces, so ids are dense and go on
    /// across restarts, after an older ledger's `s2000001` too. Ids were once drawn from the
    /// ledger's id counter, shared with grants and cards and jumping a stride of a million at
    /// each restart; those ids stay valid as they are. Shared by every clone.
    next_number: Arc<AtomicU64>,
    records: Sessions<SessionRecord>,
    conversations: Conversations,
    sessions_dir: PathBuf,
    /// How many sessions there are and how many are active, counted once at open and kept
    /// exact by the calls that change them (see [`Counts`]); shared by every clone.
    counts: Arc<Mutex<Counts>>,
}

/// The status line's session counts, so `Status` reads two numbers instead of decoding every
/// session record.
///
/// Counted from the records once when the store opens (a restart recounts, so nothing has to
/// be kept on disk in step with them), then changed only by this store: `create` adds an
/// active session once its record is durable, and ending one moves it from active exactly
/// once, because only the compare-and-swap that changed it from active to ended counts it.
/// A record that does not decode is in neither count, as in [`SessionStore::list`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    active: usize,
    total: usize,
}

impl SessionStore {
    pub fn open(ledger: Arc<Ledger>, sessions_dir: &Path) -> Result<Self, DaemonError> {
        let records: Sessions<SessionRecord> = ledger.sessions()?;
        let (listed, corrupt) = records.list()?;
        for bad in &corrupt {
            tracing::warn!(%bad, "a session record does not decode; it is not counted");
        }
        let counts = Counts {
            active: listed
                .iter()
                .filter(|s| s.state == SessionState::Active)
                .count(),
            total: listed.len(),
        };
        let highest = records
            .ids()?
            .iter()
            .chain(&workspace_names(sessions_dir))
            .filter_map(|id| session_number(id))
            .max()
            .unwrap_or(0);
        Ok(Self {
            next_number: Arc::new(AtomicU64::new(highest.saturating_add(1))),
            records,
            conversations: ledger.conversations(),
            sessions_dir: sessions_dir.to_path_buf(),
            counts: Arc::new(Mutex::new(counts)),
        })
    }

    fn recount(&self, change: impl FnOnce(&mut Counts)) {
        change(&mut self.counts.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Creates the record and the workspace `sessions/<id>/` (0700), under the next dense id.
    pub fn create(&self, new: NewSession) -> Result<SessionRecord, DaemonError> {
        loop {
            let number = self.next_number.fetch_add(1, Ordering::Relaxed);
            let id = format!("s{number:06}");
            let workspace = self.sessions_dir.join(&id);
            // One daemon owns the state directory and every id comes from the counter, so a
            // taken id means a record written behind its back: skip it, never overwrite.
            if workspace.exists() {
                continue;
            }
            match self.insert(&new, id, workspace) {
                Err(DaemonError::Ledger(LedgerError::KeyExists { .. })) => {}
                done => return done,
            }
        }
    }

    fn insert(
        &self,
        new: &NewSession,
        id: String,
        workspace: PathBuf,
    ) -> Result<SessionRecord, DaemonError> {
        create_private_dir(&workspace).map_err(|source| DaemonError::Io {
            path: workspace.clone(),
            source,
        })?;
        let new = new.clone();
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
            title: new.title.clone(),
            last_turn_ended_ms: None,
            base_url: new.base_url,
            instructions: new.instructions,
            tags: Vec::new(),
            reasoning: new.reasoning,
            child: new.child,
            children: Vec::new(),
            additional_dirs: new.additional_dirs,
        };
        self.records.insert_new(&id, &record)?;
        self.recount(|c| {
            c.active += 1;
            c.total += 1;
        });
        Ok(record)
    }

    pub fn get(&self, id: &str) -> Result<SessionRecord, DaemonError> {
        check_id(id)?;
        self.records
            .get(id)?
            .ok_or_else(|| DaemonError::SessionNotFound { id: id.to_owned() })
    }

    /// Every session in creation order; ended ones only when asked. A record that does not
    /// decode is logged and left out (reading it by id names the damage).
    pub fn list(&self, include_ended: bool) -> Result<Vec<SessionRecord>, DaemonError> {
        let (mut sessions, corrupt) = self.records.list()?;
        for bad in &corrupt {
            tracing::warn!(%bad, "a session record does not decode; it is left out");
        }
        sessions.retain(|s| include_ended || s.state == SessionState::Active);
        // The ledger lists in key order, but ids are `s` and a number padded to six digits
        // that grows wider (past a million sessions, or an older ledger's ids, which jumped a
        // stride of a million at each restart): shorter first is number order, which is
        // creation order.
        sessions.sort_by(|a, b| (a.id.len(), &a.id).cmp(&(b.id.len(), &b.id)));
        Ok(sessions)
    }

    /// Marks the session ended; ending an ended session is a no-op that returns it.
    pub fn end(&self, id: &str) -> Result<SessionRecord, DaemonError> {
        Ok(self.ending(id)?.0)
    }

    /// Ends the session if it is active, and returns it as this call ended it; `None` when it
    /// had ended already (another call ended it, whatever raced).
    pub fn end_if_active(&self, id: &str) -> Result<Option<SessionRecord>, DaemonError> {
        let (record, ended_here) = self.ending(id)?;
        Ok(ended_here.then_some(record))
    }

    fn ending(&self, id: &str) -> Result<(SessionRecord, bool), DaemonError> {
        let at_ms = now_ms();
        let (record, ended_here) = self.update(id, |record| {
            (record.state == SessionState::Active).then(|| SessionRecord {
                state: SessionState::Ended,
                ended_at_ms: Some(at_ms),
                ..record.clone()
            })
        })?;
        if ended_here {
            self.recount(|c| c.active = c.active.saturating_sub(1));
        }
        Ok((record, ended_here))
    }

    /// Names `child` as the next child `parent` spawned, and returns its index among them
    /// (which script entry it plays). Refused once the parent has ended.
    pub fn add_child(&self, parent: &str, child: &str) -> Result<usize, DaemonError> {
        let record = self.change_active(parent, |record| {
            let mut next = record.clone();
            if !next.children.iter().any(|c| c == child) {
                next.children.push(child.to_owned());
            }
            next
        })?;
        Ok(record
            .children
            .iter()
            .position(|c| c == child)
            .unwrap_or_default())
    }

    /// Moves the session's working directory (into a worktree).
    pub fn set_cwd(&self, id: &str, cwd: &Path) -> Result<(), DaemonError> {
        self.update(id, |record| {
            (record.cwd != cwd).then(|| SessionRecord {
                cwd: cwd.to_path_buf(),
                ..record.clone()
            })
        })?;
        Ok(())
    }

    /// Counts one more turn of the session and returns the count. A turn that ends after its
    /// session was ended still counts, and leaves the session ended.
    pub fn count_turn(&self, id: &str) -> Result<u32, DaemonError> {
        let at_ms = now_ms();
        let (record, _) = self.update(id, |record| {
            Some(SessionRecord {
                turns: record.turns.saturating_add(1),
                last_turn_ended_ms: Some(at_ms),
                ..record.clone()
            })
        })?;
        Ok(record.turns)
    }

    /// Names the session after `prompt` ([`title_of`]) unless it has a title already: the
    /// first turn's prompt names it, later ones leave it.
    pub fn name_after(&self, id: &str, prompt: &str) -> Result<(), DaemonError> {
        let title = title_of(prompt);
        self.update(id, |record| {
            (record.title.is_empty() && !title.is_empty()).then(|| SessionRecord {
                title: title.clone(),
                ..record.clone()
            })
        })?;
        Ok(())
    }

    /// Makes an ended session active again and returns it (an active one is returned as it
    /// is); `true` when this call reopened it. The caller revokes what the session's end left
    /// standing *before* calling this ([`crate::sessions::turns::Turns::resume`]).
    pub fn reopen(&self, id: &str) -> Result<(SessionRecord, bool), DaemonError> {
        let (record, reopened) = self.update(id, |record| {
            (record.state == SessionState::Ended).then(|| SessionRecord {
                state: SessionState::Active,
                ended_at_ms: None,
                ..record.clone()
            })
        })?;
        if reopened {
            self.recount(|c| c.active += 1);
        }
        Ok((record, reopened))
    }

    /// Applies `change` to an active session's record (a model, mode or activity switch):
    /// an ended session is refused, so a switch cannot race its end into a record that
    /// looks used after it ended.
    pub fn change_active(
        &self,
        id: &str,
        change: impl Fn(&SessionRecord) -> SessionRecord,
    ) -> Result<SessionRecord, DaemonError> {
        let mut ended = false;
        let (record, _) = self.update(id, |record| {
            ended = record.state == SessionState::Ended;
            (!ended).then(|| change(record)).filter(|new| new != record)
        })?;
        if ended {
            return Err(DaemonError::SessionEnded { id: id.to_owned() });
        }
        Ok(record)
    }

    /// Refiles an active session: `change` gives its new title and tags from the current ones
    /// (`None`: as they are). The record as it now is, and whether this call changed it; an
    /// ended session is refused, as for [`SessionStore::change_active`].
    pub fn refile(
        &self,
        id: &str,
        change: &codaris_tools::filing::Change<'_>,
    ) -> Result<(SessionRecord, bool), DaemonError> {
        let mut ended = false;
        let changed = self.update(id, |record| {
            ended = record.state == SessionState::Ended;
            if ended {
                return None;
            }
            let filing = codaris_tools::filing::Filing {
                title: record.title.clone(),
                tags: record.tags.clone(),
            };
            change(&filing).map(|new| SessionRecord {
                title: new.title,
                tags: new.tags,
                ..record.clone()
            })
        })?;
        if ended {
            return Err(DaemonError::SessionEnded { id: id.to_owned() });
        }
        Ok(changed)
    }

    /// (active, total) counts for the status line, without reading a record ([`Counts`]).
    pub fn counts(&self) -> Result<(u32, u32), DaemonError> {
        let counts = *self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        Ok((saturate(counts.active), saturate(counts.total)))
    }

    /// Saves the session's conversation, replacing the one before; durable when it returns.
    pub fn save_conversation(
        &self,
        id: &str,
        conversation: &serde_json::Value,
    ) -> Result<(), DaemonError> {
        check_id(id)?;
        Ok(self.conversations.save(id, conversation)?)
    }

    /// The session's saved conversation; `None` when it has none yet. One that does not decode
    /// is an error naming the session.
    pub fn load_conversation(&self, id: &str) -> Result<Option<serde_json::Value>, DaemonError> {
        check_id(id)?;
        Ok(self.conversations.load(id)?)
    }

    /// Applies `change` by compare-and-swap (see the module header): the record as it now is,
    /// and whether this call changed it.
    fn update(
        &self,
        id: &str,
        change: impl FnMut(&SessionRecord) -> Option<SessionRecord>,
    ) -> Result<(SessionRecord, bool), DaemonError> {
        check_id(id)?;
        match self.records.update(id, change)? {
            Updated::Missing => Err(DaemonError::SessionNotFound { id: id.to_owned() }),
            Updated::Kept(record) => Ok((record, false)),
            Updated::Changed(record) => Ok((record, true)),
        }
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

/// The number of a session id (`s000042` → 42, an older ledger's `s2000001` → 2000001).
fn session_number(id: &str) -> Option<u64> {
    let digits = id.strip_prefix('s')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The names in the sessions directory: a workspace left by a create that stopped before its
/// record was written still holds its id.
fn workspace_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
