//! The tool-state handle: which tools a person switched on or off, by name, in the sled tree
//! `tool_state` (`on` / `off`), so the choice survives a restart.
//!
//! A switch is a plain overwrite (the last switch is the state) and is durable before it
//! returns ([`Disk::sync`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::disk::Disk;
use crate::error::{Corrupt, LedgerError};

/// The sled tree of switched tools (the name predates the handle: existing ledgers keep it).
pub(crate) const TREE: &str = "tool_state";

const ON: &[u8] = b"on";
const OFF: &[u8] = b"off";

/// Tools switched on or off, by name.
#[derive(Debug, Clone)]
pub struct ToolState {
    tree: sled::Tree,
    disk: Arc<Disk>,
}

impl ToolState {
    pub(crate) fn new(tree: sled::Tree, disk: Arc<Disk>) -> Self {
        Self { tree, disk }
    }

    /// Every switched tool (`true`: switched on), and the entries that do not read as a name
    /// with `on` or `off` (reported; the caller decides what an unreadable switch means).
    pub fn switched(&self) -> Result<(BTreeMap<String, bool>, Vec<Corrupt>), LedgerError> {
        let mut switched = BTreeMap::new();
        let mut corrupt = Vec::new();
        for entry in self.tree.iter() {
            let (key, value) = entry?;
            let name = String::from_utf8(key.to_vec());
            match (name, value.as_ref()) {
                (Ok(name), ON) => {
                    switched.insert(name, true);
                }
                (Ok(name), OFF) => {
                    switched.insert(name, false);
                }
                (name, value) => corrupt.push(Corrupt {
                    place: TREE.to_owned(),
                    key: match name {
                        Ok(name) => name,
                        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
                    },
                    reason: format!(
                        "`{}` is neither `on` nor `off`",
                        String::from_utf8_lossy(value)
                    ),
                }),
            }
        }
        Ok((switched, corrupt))
    }

    /// Records that `name` is switched on (`true`) or off. Durable when it returns; on failure
    /// the state before is put back.
    pub fn set(&self, name: &str, enabled: bool) -> Result<(), LedgerError> {
        let value = if enabled { ON } else { OFF };
        let before = self.tree.insert(name.as_bytes(), value)?;
        let synced = self.disk.sync(&self.tree);
        if synced.is_err() {
            // What the caller is told failed must not reach the device with the next flush.
            let _ = self
                .tree
                .compare_and_swap(name.as_bytes(), Some(value), before);
        }
        synced
    }
}

#[cfg(test)]
mod tests {
    use crate::Ledger;
    use pretty_assertions::assert_eq;
    use std::collections::BTreeMap;

    #[test]
    fn switches_survive_a_reopen_and_the_last_one_counts() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("ledger");
        {
            let ledger = Ledger::open(&path).unwrap();
            let state = ledger.tool_state().unwrap();
            state.set("grep", false).unwrap();
            state.set("web_fetch", false).unwrap();
            state.set("web_fetch", true).unwrap();
        }
        let ledger = Ledger::open(&path).unwrap();
        let (switched, corrupt) = ledger.tool_state().unwrap().switched().unwrap();
        assert_eq!(
            switched,
            BTreeMap::from([("grep".to_owned(), false), ("web_fetch".to_owned(), true)])
        );
        assert!(corrupt.is_empty());
    }

    #[test]
    fn an_unreadable_switch_is_reported_not_read_as_on() {
        let temp = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(&temp.path().join("ledger")).unwrap();
        let state = ledger.tool_state().unwrap();
        state.set("grep", true).unwrap();
        state.tree.insert("write", b"yes".as_slice()).unwrap();
        state.tree.insert(b"\xff\xfe", b"on".as_slice()).unwrap();
        let (switched, corrupt) = state.switched().unwrap();
        assert_eq!(switched, BTreeMap::from([("grep".to_owned(), true)]));
        let keys: Vec<&str> = corrupt.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["write", "\u{fffd}\u{fffd}"]);
    }
}
