//! The sessions handle: one JSON record per session id, in the sled tree `sessions`, changed only
//! by compare-and-swap.
//!
//! The record's type belongs to the caller (the daemon): the ledger stores whatever
//! `T: Serialize + DeserializeOwned` it is given and knows nothing of its fields. Every write is
//! durable before it returns ([`Disk::sync`]). An update is a compare-and-swap against the version
//! it was computed from, retried on conflict: two racing updates never lose one another, so a
//! turn that ends while the session is being ended cannot write it back as active.

use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::disk::Disk;
use crate::error::{Corrupt, LedgerError};

/// The sled tree the session records live in (the name predates the handle: existing ledgers
/// keep their sessions).
pub(crate) const TREE: &str = "sessions";

/// What [`Sessions::update`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Updated<T> {
    /// No record has that id.
    Missing,
    /// The change declined (returned `None`): the record as it stands, untouched.
    Kept(T),
    /// The record as changed, durable.
    Changed(T),
}

/// Session records by id, in key order.
#[derive(Debug)]
pub struct Sessions<T> {
    tree: sled::Tree,
    disk: Arc<Disk>,
    record: PhantomData<fn() -> T>,
}

// By hand: a derived `Clone` would require `T: Clone`, and the handle holds no `T`.
impl<T> Clone for Sessions<T> {
    fn clone(&self) -> Self {
        Self {
            tree: self.tree.clone(),
            disk: self.disk.clone(),
            record: PhantomData,
        }
    }
}

impl<T: Serialize + DeserializeOwned> Sessions<T> {
    pub(crate) fn new(tree: sled::Tree, disk: Arc<Disk>) -> Self {
        Self {
            tree,
            disk,
            record: PhantomData,
        }
    }

    /// The record with this id; `None` when there is none. A record that does not decode is an
    /// error naming it, never a default.
    pub fn get(&self, id: &str) -> Result<Option<T>, LedgerError> {
        match self.tree.get(id.as_bytes())? {
            Some(bytes) => decode(id, &bytes).map(Some).map_err(LedgerError::Corrupt),
            None => Ok(None),
        }
    }

    /// Every record in key order, and those that do not decode (reported, never guessed at).
    pub fn list(&self) -> Result<(Vec<T>, Vec<Corrupt>), LedgerError> {
        let mut records = Vec::new();
        let mut corrupt = Vec::new();
        for entry in self.tree.iter() {
            let (key, bytes) = entry?;
            match decode(&String::from_utf8_lossy(&key), &bytes) {
                Ok(record) => records.push(record),
                Err(bad) => corrupt.push(bad),
            }
        }
        Ok((records, corrupt))
    }

    /// Every record's id, in key order, whether or not its record decodes: a caller picking
    /// a new id must see the ids of damaged records too.
    pub fn ids(&self) -> Result<Vec<String>, LedgerError> {
        self.tree
            .iter()
            .keys()
            .map(|key| Ok(String::from_utf8_lossy(&key?).into_owned()))
            .collect()
    }

    /// Stores a record under an id no record has; [`LedgerError::KeyExists`] when one does.
    /// Durable when it returns.
    pub fn insert_new(&self, id: &str, record: &T) -> Result<(), LedgerError> {
        let bytes = encode(record)?;
        let swapped =
            self.tree
                .compare_and_swap(id.as_bytes(), None::<&[u8]>, Some(bytes.as_slice()))?;
        if swapped.is_err() {
            return Err(LedgerError::KeyExists {
                place: TREE,
                key: id.to_owned(),
            });
        }
        self.sync_or_restore(id, &bytes, None)
    }

    /// Changes the record with this id: `change` gets the current version and returns the new
    /// one, or `None` to leave it as it is. The new version replaces exactly the version it was
    /// computed from; if another writer got there first, `change` runs again on theirs, so it
    /// may run more than once and must decide from its argument alone. Durable when it returns
    /// [`Updated::Changed`].
    pub fn update(
        &self,
        id: &str,
        mut change: impl FnMut(&T) -> Option<T>,
    ) -> Result<Updated<T>, LedgerError> {
        loop {
            let Some(current) = self.tree.get(id.as_bytes())? else {
                return Ok(Updated::Missing);
            };
            let record: T = decode(id, &current).map_err(LedgerError::Corrupt)?;
            let Some(changed) = change(&record) else {
                return Ok(Updated::Kept(record));
            };
            let bytes = encode(&changed)?;
            let swapped = self.tree.compare_and_swap(
                id.as_bytes(),
                Some(&current),
                Some(bytes.as_slice()),
            )?;
            if swapped.is_ok() {
                self.sync_or_restore(id, &bytes, Some(&current))?;
                return Ok(Updated::Changed(changed));
            }
            // Another writer changed the record between our read and our swap: start again
            // from their version, so neither change is lost.
        }
    }

    /// Makes the version just swapped in durable. If that fails the writer is told so, and the
    /// version before is put back (unless another writer has built on it since), so that what
    /// was reported as failed does not reach the device with the next flush.
    fn sync_or_restore(
        &self,
        id: &str,
        written: &[u8],
        before: Option<&sled::IVec>,
    ) -> Result<(), LedgerError> {
        let synced = self.disk.sync(&self.tree);
        if synced.is_err() {
            let _ = self
                .tree
                .compare_and_swap(id.as_bytes(), Some(written), before);
        }
        synced
    }
}

fn encode(record: &impl Serialize) -> Result<Vec<u8>, LedgerError> {
    serde_json::to_vec(record).map_err(LedgerError::Encode)
}

fn decode<T: DeserializeOwned>(id: &str, bytes: &[u8]) -> Result<T, Corrupt> {
    serde_json::from_slice(bytes).map_err(|err| Corrupt {
        place: TREE.to_owned(),
        key: id.to_owned(),
        reason: err.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::{Sessions, Updated};
    use crate::{Ledger, LedgerError};
    use pretty_assertions::assert_eq;
    use serde::{Deserialize, Serialize};

    /// A stand-in for the daemon's session record: the ledger sees only its JSON.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    struct Session {
        id: String,
        ended: bool,
        turns: u32,
    }

    fn session(id: &str) -> Session {
        Session {
            id: id.to_owned(),
            ended: false,
            turns: 0,
        }
    }

    fn open() -> (tempfile::TempDir, Ledger, Sessions<Session>) {
        let temp = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(&temp.path().join("ledger")).unwrap();
        let sessions = ledger.sessions().unwrap();
        (temp, ledger, sessions)
    }

    #[test]
    fn records_round_trip_and_list_in_key_order() {
        let (_temp, _ledger, sessions) = open();
        for id in ["s3", "s1", "s2"] {
            sessions.insert_new(id, &session(id)).unwrap();
        }
        assert_eq!(sessions.get("s2").unwrap(), Some(session("s2")));
        assert_eq!(sessions.get("s9").unwrap(), None);
        let (listed, corrupt) = sessions.list().unwrap();
        assert_eq!(listed, vec![session("s1"), session("s2"), session("s3")]);
        assert!(corrupt.is_empty());
    }

    #[test]
    fn insert_new_refuses_an_id_that_is_taken_and_keeps_the_first() {
        let (_temp, _ledger, sessions) = open();
        sessions.insert_new("s1", &session("s1")).unwrap();
        let mut other = session("s1");
        other.turns = 7;
        let refused = sessions.insert_new("s1", &other);
        assert!(
            matches!(&refused, Err(LedgerError::KeyExists { place: "sessions", key }) if key == "s1"),
            "{refused:?}"
        );
        assert_eq!(sessions.get("s1").unwrap(), Some(session("s1")));
    }

    #[test]
    fn an_update_changes_keeps_or_finds_nothing() {
        let (_temp, _ledger, sessions) = open();
        sessions.insert_new("s1", &session("s1")).unwrap();
        let changed = sessions
            .update("s1", |s| {
                Some(Session {
                    turns: s.turns + 1,
                    ..s.clone()
                })
            })
            .unwrap();
        let one = Session {
            turns: 1,
            ..session("s1")
        };
        assert_eq!(changed, Updated::Changed(one.clone()));
        assert_eq!(sessions.update("s1", |_| None).unwrap(), Updated::Kept(one));
        assert_eq!(
            sessions.update("s9", |s| Some(s.clone())).unwrap(),
            Updated::Missing
        );
    }

    #[test]
    fn racing_updates_lose_none_of_one_another() {
        let (_temp, _ledger, sessions) = open();
        sessions.insert_new("s1", &session("s1")).unwrap();
        let threads = 6;
        let each = 20;
        std::thread::scope(|scope| {
            for _ in 0..threads {
                let sessions = sessions.clone();
                scope.spawn(move || {
                    for _ in 0..each {
                        sessions
                            .update("s1", |s| {
                                Some(Session {
                                    turns: s.turns + 1,
                                    ..s.clone()
                                })
                            })
                            .unwrap();
                    }
                });
            }
        });
        assert_eq!(sessions.get("s1").unwrap().unwrap().turns, threads * each);
    }

    #[test]
    fn a_record_that_does_not_decode_is_named_never_defaulted() {
        let (_temp, _ledger, sessions) = open();
        sessions.insert_new("s1", &session("s1")).unwrap();
        sessions
            .tree
            .insert("s2", b"{\"id\":\"s2\",\"end".as_slice())
            .unwrap();
        sessions
            .tree
            .insert("s3", b"{\"id\":7}".as_slice())
            .unwrap();
        let read = sessions.get("s2");
        assert!(
            matches!(&read, Err(LedgerError::Corrupt(bad)) if bad.place == "sessions" && bad.key == "s2"),
            "{read:?}"
        );
        assert!(read.unwrap_err().to_string().contains("`s2`"));
        // An update cannot be computed from what cannot be read: it fails and writes nothing.
        assert!(sessions.update("s3", |s| Some(s.clone())).is_err());
        assert_eq!(
            sessions.tree.get("s3").unwrap().unwrap().as_ref(),
            b"{\"id\":7}"
        );
        let (listed, corrupt) = sessions.list().unwrap();
        assert_eq!(listed, vec![session("s1")]);
        let keys: Vec<&str> = corrupt.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["s2", "s3"]);
    }

    #[test]
    fn records_are_there_after_a_reopen() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("ledger");
        {
            let ledger = Ledger::open(&path).unwrap();
            let sessions: Sessions<Session> = ledger.sessions().unwrap();
            sessions.insert_new("s1", &session("s1")).unwrap();
            sessions
                .update("s1", |s| {
                    Some(Session {
                        ended: true,
                        ..s.clone()
                    })
                })
                .unwrap();
        }
        let ledger = Ledger::open(&path).unwrap();
        let sessions: Sessions<Session> = ledger.sessions().unwrap();
        assert!(sessions.get("s1").unwrap().unwrap().ended);
    }
}
