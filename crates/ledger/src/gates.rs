//! The samplesheet gates: the last passing check of each pipeline's samplesheet, as a JSON
//! document whose shape is the daemon's (tree `samplesheet_gates`), keyed by pipeline and
//! sheet. A run is launched on a sheet only while its gate holds (the sheet's and the schema's
//! SHA-256 still those the gate passed). Every write is durable before it returns.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::disk::Disk;
use crate::error::LedgerError;

pub(crate) const TREE: &str = "samplesheet_gates";

/// The gates, by key.
#[derive(Debug, Clone)]
pub struct Gates {
    tree: sled::Tree,
    disk: Arc<Disk>,
}

impl Gates {
    pub(crate) fn new(tree: sled::Tree, disk: Arc<Disk>) -> Self {
        Self { tree, disk }
    }

    /// Records (or replaces) the gate under `key`.
    pub fn put(&self, key: &str, gate: &impl Serialize) -> Result<(), LedgerError> {
        let bytes = serde_json::to_vec(gate).map_err(LedgerError::Encode)?;
        let before = self.tree.insert(key.as_bytes(), bytes.as_slice())?;
        let synced = self.disk.sync(&self.tree);
        if synced.is_err() {
            // A write the caller is told failed must not reach the device with the next flush.
            let _ = self
                .tree
                .compare_and_swap(key.as_bytes(), Some(bytes.as_slice()), before);
        }
        synced
    }

    /// The gate under `key`; `Ok(None)` when there is none, an error when it does not read.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, LedgerError> {
        let Some(bytes) = self.tree.get(key.as_bytes())? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|err| {
            LedgerError::Corrupt(crate::error::Corrupt {
                place: TREE.to_owned(),
                key: key.to_owned(),
                reason: err.to_string(),
            })
        })
    }

    /// Every key, in key order (a launch elsewhere looks for the gates of one sheet, whatever
    /// local pipeline it passed for).
    pub fn keys(&self) -> Result<Vec<String>, LedgerError> {
        self.tree
            .iter()
            .keys()
            .map(|key| Ok(String::from_utf8_lossy(&key?).into_owned()))
            .collect()
    }

    /// Forgets the gate under `key` (a later check of the sheet failed).
    pub fn remove(&self, key: &str) -> Result<(), LedgerError> {
        if self.tree.remove(key.as_bytes())?.is_some() {
            self.disk.sync(&self.tree)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::Ledger;

    #[test]
    fn a_gate_is_kept_across_a_reopen_and_forgotten_on_remove()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        {
            let ledger = Ledger::open(dir.path())?;
            let gates = ledger.gates()?;
            gates.put(
                "/p\u{0}/p/sheet.csv",
                &serde_json::json!({"sheet_sha256": "ab"}),
            )?;
        }
        let ledger = Ledger::open(dir.path())?;
        let gates = ledger.gates()?;
        let kept: Option<serde_json::Value> = gates.get("/p\u{0}/p/sheet.csv")?;
        assert_eq!(kept, Some(serde_json::json!({"sheet_sha256": "ab"})));
        assert_eq!(gates.keys()?, ["/p\u{0}/p/sheet.csv"]);
        gates.remove("/p\u{0}/p/sheet.csv")?;
        assert_eq!(gates.get::<serde_json::Value>("/p\u{0}/p/sheet.csv")?, None);
        Ok(())
    }
}
