//! The staged commands: kept in the state directory (`config/staged.json`), so a restart of
//! the daemon loses none, and applied to the file's text as it is when they are read, so a
//! hand edit made since staging is kept.

use std::path::{Path, PathBuf};

use codaris_config::edit::{Command, EditError, apply, parse_document};
use serde::{Deserialize, Serialize};

/// One staged command and who staged it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Staged {
    /// The command as written back (`set tools.background=false`).
    pub command: String,
    /// The session whose call staged it; empty for a person's `codaris config set`.
    #[serde(default)]
    pub session_id: String,
    pub staged_at_ms: u64,
}

/// Where the staged commands and the last commit's snapshot live.
#[derive(Debug, Clone)]
pub struct Files {
    dir: PathBuf,
}

/// The name of the snapshot of a file that did not exist before the commit.
const ABSENT_MARK: &str = "previous.absent";
const SNAPSHOT: &str = "previous.toml";
const STAGED: &str = "staged.json";

impl Files {
    pub fn new(state_dir: &Path) -> Self {
        Self {
            dir: state_dir.join("config"),
        }
    }

    /// The staged commands, oldest first; none when nothing was staged. A file that does not
    /// read is an error, never an empty list: a commit must not silently drop commands.
    pub fn staged(&self) -> Result<Vec<Staged>, String> {
        match std::fs::read(self.dir.join(STAGED)) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|err| format!("the staged commands do not read ({err}); discard them with `codaris config revert`")),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(err) => Err(format!(
                "cannot read the staged commands: {}",
                crate::error::io_reason(&err)
            )),
        }
    }

    /// Keeps `staged` (none: the file goes).
    pub fn keep(&self, staged: &[Staged]) -> Result<(), String> {
        let path = self.dir.join(STAGED);
        if staged.is_empty() {
            return match std::fs::remove_file(&path) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(format!(
                    "cannot discard the staged commands: {}",
                    crate::error::io_reason(&err)
                )),
                _ => Ok(()),
            };
        }
        let bytes = serde_json::to_vec_pretty(staged).map_err(|err| err.to_string())?;
        write_private(&self.dir, &path, &bytes)
    }

    /// The text the last commit replaced (`Some(None)`: there was no file), if a snapshot is
    /// kept.
    pub fn snapshot(&self) -> Result<Option<Option<String>>, String> {
        if self.dir.join(ABSENT_MARK).exists() {
            return Ok(Some(None));
        }
        match std::fs::read_to_string(self.dir.join(SNAPSHOT)) {
            Ok(text) => Ok(Some(Some(text))),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(format!(
                "cannot read the snapshot: {}",
                crate::error::io_reason(&err)
            )),
        }
    }

    /// Keeps `before` (the file's text, `None`: no file) as the snapshot a rollback puts back.
    pub fn keep_snapshot(&self, before: Option<&str>) -> Result<(), String> {
        self.forget_snapshot()?;
        match before {
            Some(text) => write_private(&self.dir, &self.dir.join(SNAPSHOT), text.as_bytes()),
            None => write_private(&self.dir, &self.dir.join(ABSENT_MARK), b""),
        }
    }

    /// Drops the snapshot (a rollback used it).
    pub fn forget_snapshot(&self) -> Result<(), String> {
        for name in [SNAPSHOT, ABSENT_MARK] {
            if let Err(err) = std::fs::remove_file(self.dir.join(name))
                && err.kind() != std::io::ErrorKind::NotFound
            {
                return Err(format!(
                    "cannot drop the snapshot: {}",
                    crate::error::io_reason(&err)
                ));
            }
        }
        Ok(())
    }
}

/// Writes `bytes` to `path` in `dir` (made, owner only) through a temporary file renamed over it.
fn write_private(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|err| {
            format!(
                "cannot make `{}`: {}",
                dir.display(),
                crate::error::io_reason(&err)
            )
        })?;
    super::write::atomically(path, bytes, 0o600)
}

/// The file's text with `staged` applied in order; the first that no longer applies (the file
/// was edited by hand since) is named with its place.
pub fn applied(before: Option<&str>, staged: &[Staged]) -> Result<String, String> {
    let mut doc = parse_document(before.unwrap_or_default())
        .map_err(|err| format!("the configuration file: {err}"))?;
    for (at, one) in staged.iter().enumerate() {
        let command = Command::parse(&one.command).map_err(|err| staged_error(at, one, &err))?;
        apply(&mut doc, &command).map_err(|err| staged_error(at, one, &err))?;
    }
    Ok(doc.to_string())
}

fn staged_error(at: usize, staged: &Staged, err: &EditError) -> String {
    let command = Command::parse(&staged.command)
        .map(|c| codaris_config::edit::redact_command(&c))
        .unwrap_or_else(|_| staged.command.clone());
    format!(
        "staged command {} `{command}` no longer applies to the file: {err}",
        at + 1
    )
}
