//! Undoing a turn: the checkpoint each turn's write tools keep (sealed when the turn ends),
//! and `UndoTurn`, which puts a sealed turn back once the ledger holds the decision.
//!
//! A turn's checkpoint lives in `<state>/checkpoints/<session>/<turn>/`, outside the session's
//! workspace: the fence keeps the state directory secret from every tool but that workspace,
//! and commands' sandbox hides it whole, so nothing the model runs can read or change a copy.
//! Undo works on a live session (waiting, like a new turn, for the last turn to let go of the
//! conversation) and on an ended one.

use std::path::{Path, PathBuf};

use codaris_ledger::{UndoFile, UndoRecord};
use codaris_tools::files::checkpoint::{self, Change, Manifest};

use super::checkpoints::{checkpoints_dir, turn_store};
use super::live::{ENDING_TURN_GRACE, Turns};
use crate::error::DaemonError;
use crate::sessions::store::now_ms;

/// How long an undo waits for a finished turn to seal its checkpoint (it reads back every
/// file the turn changed).
const SEAL_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What an undo did, or in a dry run would do.
#[derive(Debug, Clone)]
pub struct Undone {
    pub session_id: String,
    /// From 0.
    pub turn: u32,
    pub dry_run: bool,
    pub changes: Vec<Change>,
    pub commands: Vec<String>,
    /// The ledger record; `None` for a dry run.
    pub record_id: Option<String>,
    pub sentence: String,
}

impl Turns {
    /// Undoes `turn` of `session_id` (default: its last turn that changed files and is not
    /// undone). The decision is recorded before anything is put back; a refusal is recorded
    /// too, and returned as [`DaemonError::UndoRefused`]. A dry run records nothing.
    pub async fn undo(
        &self,
        session_id: &str,
        turn: Option<u32>,
        dry_run: bool,
    ) -> Result<Undone, DaemonError> {
        let record = self.sessions.get(session_id)?;
        // A live session's turn must be over (and sealed): wait for it as a new turn would,
        // and hold the conversation so no turn starts while files are put back.
        let _held = match self.live_of(&record.id) {
            Some(session) => Some(
                tokio::time::timeout(ENDING_TURN_GRACE, session.conversation.clone().lock_owned())
                    .await
                    .map_err(|_| DaemonError::TurnRunning {
                        id: record.id.clone(),
                    })?,
            ),
            None => None,
        };
        // An ended session's last turn may still be sealing its checkpoint.
        let _sealed = tokio::time::timeout(SEAL_WAIT, self.sealing_of(&record.id).lock_owned())
            .await
            .map_err(|_| DaemonError::TurnRunning {
                id: record.id.clone(),
            })?;
        let state_dir = self.config.get().state_dir.clone();
        let workspace = record.workspace.clone();
        let id = record.id.clone();
        let ledger = self.ledger.clone();
        let undone = tokio::task::spawn_blocking(move || {
            undo_blocking(&ledger, &state_dir, &workspace, &id, turn, dry_run)
        })
        .await
        .map_err(|e| DaemonError::Io {
            path: PathBuf::from(session_id),
            source: std::io::Error::other(e),
        })??;
        if !dry_run && let Some(session) = self.live_of(&record.id) {
            // The model learns at its next turn that its changes are gone.
            session.note(format!(
                "[the person undid turn {}: {} path(s) put back as they were before it]",
                u64::from(undone.turn) + 1,
                undone.changes.len()
            ));
        }
        Ok(undone)
    }
}

fn undo_blocking(
    ledger: &codaris_ledger::Ledger,
    state_dir: &Path,
    workspace: &Path,
    session_id: &str,
    turn: Option<u32>,
    dry_run: bool,
) -> Result<Undone, DaemonError> {
    let (turn, manifest) = match turn {
        Some(turn) => (turn, load_turn(state_dir, session_id, turn)?),
        None => last_undoable(state_dir, session_id)?,
    };
    let store = turn_store(state_dir, session_id, turn);
    // What no tool may change (`.git`, the state directory but for the workspace) is never
    // put back either, whatever a manifest says.
    let fence = codaris_tools::Fence::new(Vec::new())
        .with_state_dir(state_dir, workspace)
        .with_protected([state_dir.join("ledger")]);
    let survey = checkpoint::survey(&manifest, &fence);
    let files: Vec<UndoFile> = survey
        .files
        .into_iter()
        .map(|f| UndoFile {
            path: f.path.display().to_string(),
            left: f.left,
            found: f.found,
        })
        .collect();
    let mut undo = UndoRecord::decided(
        session_id,
        turn,
        now_ms(),
        files,
        manifest.commands.clone(),
        manifest.undone,
    );
    if dry_run {
        if !undo.decision.allowed {
            return Err(refused(undo, None));
        }
        let changes = checkpoint::restore(&manifest, &store, true)?;
        return Ok(Undone {
            session_id: session_id.to_owned(),
            turn,
            dry_run,
            changes,
            commands: manifest.commands,
            record_id: None,
            sentence: undo.decision.sentence,
        });
    }
    // Durable first: the ledger holds the decision before any file is put back.
    let record_id = ledger.append_undo(&undo)?;
    undo.id = record_id.clone();
    if !undo.decision.allowed {
        return Err(refused(undo, Some(record_id)));
    }
    let changes = checkpoint::restore(&manifest, &store, false)?;
    checkpoint::mark_undone(&store)?;
    Ok(Undone {
        session_id: session_id.to_owned(),
        turn,
        dry_run,
        changes,
        commands: manifest.commands,
        record_id: Some(record_id),
        sentence: undo.decision.sentence,
    })
}

fn refused(undo: UndoRecord, record_id: Option<String>) -> DaemonError {
    DaemonError::UndoRefused {
        sentence: undo.decision.sentence,
        code: undo.decision.code,
        record_id,
    }
}

fn load_turn(state_dir: &Path, session_id: &str, turn: u32) -> Result<Manifest, DaemonError> {
    let store = turn_store(state_dir, session_id, turn);
    match std::fs::symlink_metadata(&store) {
        Ok(meta) if meta.is_dir() => Ok(checkpoint::load(&store)?),
        _ => Err(DaemonError::NoCheckpoint {
            id: session_id.to_owned(),
            turn: Some(turn),
        }),
    }
}

/// The session's last turn that changed files through its tools and is not undone yet: a
/// second `undo` goes one turn further back.
fn last_undoable(state_dir: &Path, session_id: &str) -> Result<(u32, Manifest), DaemonError> {
    let dir = checkpoints_dir(state_dir, session_id);
    let mut turns: Vec<u32> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect(),
        Err(_) => Vec::new(),
    };
    turns.sort_unstable_by(|a, b| b.cmp(a));
    for turn in turns {
        let manifest = load_turn(state_dir, session_id, turn)?;
        if !manifest.undone && manifest.changed().next().is_some() {
            return Ok((turn, manifest));
        }
    }
    Err(DaemonError::NoCheckpoint {
        id: session_id.to_owned(),
        turn: None,
    })
}
