//! The samplesheet gates the Nextflow tools keep, stored in the ledger.

/// The samplesheet gates in the ledger's store.
#[derive(Debug, Clone)]
pub struct LedgerGates(pub codaris_ledger::Gates);

impl codaris_tools::nextflow::GateStore for LedgerGates {
    fn put(&self, key: &str, gate: &codaris_tools::nextflow::GateRecord) -> Result<(), String> {
        self.0.put(key, gate).map_err(|err| err.to_string())
    }

    fn get(&self, key: &str) -> Result<Option<codaris_tools::nextflow::GateRecord>, String> {
        self.0.get(key).map_err(|err| err.to_string())
    }

    fn remove(&self, key: &str) -> Result<(), String> {
        self.0.remove(key).map_err(|err| err.to_string())
    }
}
