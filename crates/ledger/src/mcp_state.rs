//! The MCP handle: what the daemon keeps about MCP servers across restarts, as JSON documents
//! whose shape is the daemon's — the servers registered at run time (tree `mcp_servers`), each
//! server's switch (`mcp_switches`, `on` / `off`) and the definitions approved for its tools
//! (`mcp_pins`). Every write is durable before it returns ([`Disk::sync`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::disk::Disk;
use crate::error::{Corrupt, LedgerError};

pub(crate) const REGISTRATIONS: &str = "mcp_servers";
pub(crate) const SWITCHES: &str = "mcp_switches";
pub(crate) const PINS: &str = "mcp_pins";

/// Run-time registrations, switches and approvals of MCP servers, by server name.
#[derive(Debug, Clone)]
pub struct McpState {
    registrations: sled::Tree,
    switches: sled::Tree,
    pins: sled::Tree,
    disk: Arc<Disk>,
}

/// What one tree holds, by name, and the entries that do not read.
pub type Documents<T> = (BTreeMap<String, T>, Vec<Corrupt>);

impl McpState {
    pub(crate) fn new(db: &sled::Db, disk: Arc<Disk>) -> Result<Self, LedgerError> {
        Ok(Self {
            registrations: db.open_tree(REGISTRATIONS)?,
            switches: db.open_tree(SWITCHES)?,
            pins: db.open_tree(PINS)?,
            disk,
        })
    }

    /// Every server registered at run time.
    pub fn registrations<T: DeserializeOwned>(&self) -> Result<Documents<T>, LedgerError> {
        read_all(&self.registrations, REGISTRATIONS)
    }

    /// Records (or replaces) a run-time registration.
    pub fn put_registration(&self, name: &str, value: &impl Serialize) -> Result<(), LedgerError> {
        self.put(&self.registrations, name, value)
    }

    /// Forgets a server: its registration, switch and approvals. True when it was registered.
    pub fn remove(&self, name: &str) -> Result<bool, LedgerError> {
        let was = self.registrations.remove(name.as_bytes())?.is_some();
        self.switches.remove(name.as_bytes())?;
        self.pins.remove(name.as_bytes())?;
        self.disk.sync(&self.registrations)?;
        Ok(was)
    }

    /// Forgets a server's approvals and switch, keeping its registration: a server added anew
    /// under an old name starts unapproved and switched on.
    pub fn forget_approvals(&self, name: &str) -> Result<(), LedgerError> {
        self.switches.remove(name.as_bytes())?;
        self.pins.remove(name.as_bytes())?;
        self.disk.sync(&self.pins)
    }

    /// Servers switched on (`true`) or off by the person, overriding their registration.
    pub fn switches(&self) -> Result<Documents<bool>, LedgerError> {
        read_all(&self.switches, SWITCHES)
    }

    pub fn set_switch(&self, name: &str, enabled: bool) -> Result<(), LedgerError> {
        self.put(&self.switches, name, &enabled)
    }

    /// The approved definitions of every server that has any.
    pub fn pins<T: DeserializeOwned>(&self) -> Result<Documents<T>, LedgerError> {
        read_all(&self.pins, PINS)
    }

    pub fn put_pins(&self, name: &str, value: &impl Serialize) -> Result<(), LedgerError> {
        self.put(&self.pins, name, value)
    }

    fn put(
        &self,
        tree: &sled::Tree,
        name: &str,
        value: &impl Serialize,
    ) -> Result<(), LedgerError> {
        let bytes = serde_json::to_vec(value).map_err(LedgerError::Encode)?;
        let before = tree.insert(name.as_bytes(), bytes.as_slice())?;
        let synced = self.disk.sync(tree);
        if synced.is_err() {
            // A write the caller is told failed must not reach the device with the next flush.
            let _ = tree.compare_and_swap(name.as_bytes(), Some(bytes.as_slice()), before);
        }
        synced
    }
}

fn read_all<T: DeserializeOwned>(
    tree: &sled::Tree,
    place: &str,
) -> Result<Documents<T>, LedgerError> {
    let mut documents = BTreeMap::new();
    let mut corrupt = Vec::new();
    for entry in tree.iter() {
        let (key, value) = entry?;
        let name = String::from_utf8_lossy(&key).into_owned();
        match serde_json::from_slice(&value) {
            Ok(document) => {
                documents.insert(name, document);
            }
            Err(err) => corrupt.push(Corrupt {
                place: place.to_owned(),
                key: name,
                reason: err.to_string(),
            }),
        }
    }
    Ok((documents, corrupt))
}

#[cfg(test)]
mod tests {
    use crate::Ledger;
    use pretty_assertions::assert_eq;
    use std::collections::BTreeMap;

    #[test]
    fn registrations_switches_and_pins_survive_a_reopen_and_go_with_remove() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("ledger");
        {
            let state = Ledger::open(&path).unwrap().mcp_state().unwrap();
            state
                .put_registration("fs", &serde_json::json!({"command": "srv"}))
                .unwrap();
            state
                .put_registration("time", &serde_json::json!({"command": "t"}))
                .unwrap();
            state.set_switch("fs", false).unwrap();
            state
                .put_pins("fs", &serde_json::json!({"echo": "abc"}))
                .unwrap();
            assert!(state.remove("time").unwrap());
            assert!(!state.remove("time").unwrap());
        }
        let state = Ledger::open(&path).unwrap().mcp_state().unwrap();
        let (registered, corrupt) = state.registrations::<serde_json::Value>().unwrap();
        assert_eq!(registered.keys().collect::<Vec<_>>(), ["fs"]);
        assert!(corrupt.is_empty());
        assert_eq!(
            state.switches().unwrap().0,
            BTreeMap::from([("fs".to_owned(), false)])
        );
        assert_eq!(state.pins::<serde_json::Value>().unwrap().0.len(), 1);
    }

    #[test]
    fn an_unreadable_document_is_reported() {
        let temp = tempfile::tempdir().unwrap();
        let state = Ledger::open(&temp.path().join("ledger"))
            .unwrap()
            .mcp_state()
            .unwrap();
        state.registrations.insert("bad", b"{".as_slice()).unwrap();
        let (registered, corrupt) = state.registrations::<serde_json::Value>().unwrap();
        assert!(registered.is_empty());
        assert_eq!(corrupt[0].key, "bad");
    }
}
