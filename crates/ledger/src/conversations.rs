//! The conversations handle: one JSON document per session (its conversation so far), so a
//! session restored after a restart continues its history.
//!
//! Each document is a file `<ledger>.conversations/<session id>.json` beside the ledger's sled
//! directory (as the journal is), not a sled record: a conversation is rewritten whole after
//! every turn and soon outgrows the size at which sled 0.34 moves a value into a separate blob
//! file, which its `flush` never syncs. A save writes a new file, `fdatasync`s it, renames it
//! over the old one and syncs the directory: when it returns the new document is on the device,
//! and a crash at any moment leaves the old document or the new one, whole, never a mix.
//!
//! A document that is missing loads as `None`; one that does not decode is an error naming its
//! session, never an empty conversation.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Corrupt, LedgerError};

/// Names the documents in errors and in [`Corrupt`] reports.
const PLACE: &str = "conversations";
/// The longest session id a document can be stored under (the daemon's own ids are shorter).
const MAX_KEY_LEN: usize = 64;
/// Ends the name of a save not yet renamed into place (what a crash mid-save leaves).
const PARTIAL: &str = ".partial";

/// Where the documents of the ledger at `ledger` (its sled directory) are: read offline too,
/// by `codaris tools eval --from-ledger`, which never opens the ledger itself.
pub fn conversations_dir(ledger: &Path) -> PathBuf {
    let mut name = ledger.as_os_str().to_owned();
    name.push(".conversations");
    PathBuf::from(name)
}

/// Session conversations, one document each.
#[derive(Debug, Clone)]
pub struct Conversations {
    dir: PathBuf,
    /// Numbers each save's temporary file, so that two saves of one session never share one.
    saves: Arc<AtomicU64>,
}

impl Conversations {
    /// The documents of the ledger at `ledger` (its sled directory). Removes what saves cut
    /// short by a crash left behind; only the ledger's one owner (who holds sled's lock) calls
    /// this, so no save is running.
    pub(crate) fn open(ledger: &Path) -> Result<Self, LedgerError> {
        let dir = conversations_dir(ledger);
        match std::fs::read_dir(&dir) {
            Ok(entries) => {
                for entry in entries.flatten() {
                    if entry.file_name().to_string_lossy().ends_with(PARTIAL) {
                        std::fs::remove_file(entry.path()).map_err(|source| LedgerError::File {
                            action: "remove",
                            path: entry.path(),
                            source,
                        })?;
                    }
                }
            }
            // Made by the first save: a ledger opened only to be read gains nothing.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(LedgerError::File {
                    action: "read",
                    path: dir,
                    source,
                });
            }
        }
        Ok(Self {
            dir,
            saves: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Replaces the session's document with `document`; on the device when it returns.
    pub fn save<T: Serialize + ?Sized>(
        &self,
        session_id: &str,
        document: &T,
    ) -> Result<(), LedgerError> {
        let path = self.path(session_id)?;
        let bytes = serde_json::to_vec(document).map_err(LedgerError::Encode)?;
        self.make_dir()?;
        let save = self.saves.fetch_add(1, Ordering::Relaxed);
        let partial = self.dir.join(format!(".{session_id}.{save}{PARTIAL}"));
        let written = write_synced(&partial, &bytes).and_then(|()| {
            std::fs::rename(&partial, &path).map_err(|source| LedgerError::File {
                action: "rename into place",
                path: path.clone(),
                source,
            })
        });
        if written.is_err() {
            // Nothing of a failed save stays (it would only be removed at the next open).
            let _ = std::fs::remove_file(&partial);
            return written;
        }
        // The rename is durable only once the directory is.
        sync_dir(&self.dir)
    }

    /// The session's document; `None` when it has none.
    pub fn load<T: DeserializeOwned>(&self, session_id: &str) -> Result<Option<T>, LedgerError> {
        let path = self.path(session_id)?;
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(LedgerError::File {
                    action: "read",
                    path,
                    source,
                });
            }
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|err| {
            LedgerError::Corrupt(Corrupt {
                place: PLACE.to_owned(),
                key: session_id.to_owned(),
                reason: err.to_string(),
            })
        })
    }

    /// The document's file. The id becomes a file name, so only ids that cannot name another
    /// file (no `/`, no `..`, no hidden or partial names) are taken.
    fn path(&self, session_id: &str) -> Result<PathBuf, LedgerError> {
        let fine = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        if session_id.is_empty() || session_id.len() > MAX_KEY_LEN || !session_id.chars().all(fine)
        {
            return Err(LedgerError::InvalidKey {
                place: PLACE,
                key: session_id.to_owned(),
            });
        }
        Ok(self.dir.join(format!("{session_id}.json")))
    }

    /// Creates the directory (0700) at the first save, durably.
    fn make_dir(&self) -> Result<(), LedgerError> {
        if self.dir.is_dir() {
            return Ok(());
        }
        match DirBuilder::new().mode(0o700).create(&self.dir) {
            Ok(()) => {}
            // Another save made it first.
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
            Err(source) => {
                return Err(LedgerError::File {
                    action: "create",
                    path: self.dir.clone(),
                    source,
                });
            }
        }
        match self.dir.parent() {
            Some(parent) => sync_dir(parent),
            None => Ok(()),
        }
    }
}

/// Writes a new file (0600) and syncs its data.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), LedgerError> {
    let error = |source| LedgerError::File {
        action: "write",
        path: path.to_path_buf(),
        source,
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(error)?;
    file.write_all(bytes).map_err(error)?;
    file.sync_data().map_err(error)
}

fn sync_dir(dir: &Path) -> Result<(), LedgerError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| LedgerError::File {
            action: "sync",
            path: dir.to_path_buf(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use crate::{Ledger, LedgerError};
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    fn conversation(turns: usize) -> Value {
        json!({"messages": (0..turns).map(|n| json!({"role": "user", "text": format!("turn {n}")})).collect::<Vec<_>>()})
    }

    #[test]
    fn a_saved_conversation_loads_back_after_a_reopen_and_a_missing_one_is_none() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("ledger");
        {
            let ledger = Ledger::open(&path).unwrap();
            let conversations = ledger.conversations();
            assert_eq!(conversations.load::<Value>("s1").unwrap(), None);
            conversations.save("s1", &conversation(1)).unwrap();
            conversations.save("s1", &conversation(2)).unwrap();
            conversations.save("s2", &conversation(1)).unwrap();
        }
        let ledger = Ledger::open(&path).unwrap();
        let conversations = ledger.conversations();
        assert_eq!(conversations.load("s1").unwrap(), Some(conversation(2)));
        assert_eq!(conversations.load("s2").unwrap(), Some(conversation(1)));
        assert_eq!(conversations.load::<Value>("s3").unwrap(), None);
    }

    #[test]
    fn a_corrupt_conversation_is_an_error_naming_its_session() {
        let temp = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(&temp.path().join("ledger")).unwrap();
        let conversations = ledger.conversations();
        conversations.save("s1", &conversation(1)).unwrap();
        let file = temp.path().join("ledger.conversations").join("s1.json");
        let whole = std::fs::read(&file).unwrap();
        std::fs::write(&file, &whole[..whole.len() / 2]).unwrap();
        let loaded = conversations.load::<Value>("s1");
        assert!(
            matches!(&loaded, Err(LedgerError::Corrupt(bad)) if bad.place == "conversations" && bad.key == "s1"),
            "{loaded:?}"
        );
        assert!(loaded.unwrap_err().to_string().contains("`s1`"));
    }

    #[test]
    fn an_id_that_could_name_another_file_is_refused() {
        let temp = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(&temp.path().join("ledger")).unwrap();
        let conversations = ledger.conversations();
        let long = "s".repeat(65);
        for id in ["", "../ledger", "a/b", ".s1", "s1.json", long.as_str()] {
            assert!(
                matches!(
                    conversations.save(id, &conversation(1)),
                    Err(LedgerError::InvalidKey { .. })
                ),
                "{id}"
            );
            assert!(
                matches!(
                    conversations.load::<Value>(id),
                    Err(LedgerError::InvalidKey { .. })
                ),
                "{id}"
            );
        }
        assert!(!temp.path().join("ledger.conversations").exists());
    }

    #[test]
    fn racing_saves_of_one_session_leave_one_whole_document_and_no_partial_files() {
        let temp = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(&temp.path().join("ledger")).unwrap();
        let conversations = ledger.conversations();
        std::thread::scope(|scope| {
            for turns in 1..=4 {
                let conversations = conversations.clone();
                scope.spawn(move || {
                    for _ in 0..5 {
                        conversations.save("s1", &conversation(turns)).unwrap();
                    }
                });
            }
        });
        let loaded: Value = conversations.load("s1").unwrap().unwrap();
        assert!((1..=4).any(|turns| loaded == conversation(turns)));
        let names: Vec<String> = std::fs::read_dir(temp.path().join("ledger.conversations"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["s1.json"]);
    }

    #[test]
    fn a_save_cut_short_by_a_crash_is_cleared_at_open() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("ledger");
        let dir = temp.path().join("ledger.conversations");
        {
            let ledger = Ledger::open(&path).unwrap();
            ledger.conversations().save("s1", &conversation(1)).unwrap();
        }
        std::fs::write(dir.join(".s1.0.partial"), b"{\"mess").unwrap();
        let ledger = Ledger::open(&path).unwrap();
        assert!(!dir.join(".s1.0.partial").exists());
        assert_eq!(
            ledger.conversations().load("s1").unwrap(),
            Some(conversation(1))
        );
    }
}
