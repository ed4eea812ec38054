//! Opening a ledger written before the decision and chain files: its `decisions` and `chain`
//! trees are moved into the files once, at its first open by this build.
//!
//! Each move is durable in one order: the file written and synced, its length recorded in
//! `meta` (and sled synced), and only then the tree dropped. A crash before the length is
//! recorded leaves the tree, and the next open starts the move again on an emptied file (the
//! file is opened empty while no length is recorded); a crash after it only drops the tree.

use super::Ledger;
use super::recover::{CHAIN_DURABLE, DECISIONS_DURABLE};
use crate::chain::Link;
use crate::chain_log::StoredLink;
use crate::error::LedgerError;

/// Entries moved from a tree into a file per write.
const BATCH: usize = 4096;

/// An older tree's entries, a batch at a time.
type Entries = [(sled::IVec, sled::IVec)];

impl Ledger {
    /// Moves an older ledger's `chain` tree into the chain file. Entries that do not decode
    /// are kept as they were stored, with their key, and reported as before.
    pub(super) fn move_chain_tree(&self, moved: bool) -> Result<(), LedgerError> {
        self.move_tree("chain", moved, CHAIN_DURABLE, |entries| {
            let records: Vec<StoredLink> = entries
                .iter()
                .map(|(key, bytes)| match serde_json::from_slice::<Link>(bytes) {
                    Ok(link) => StoredLink::Link(link),
                    Err(_) => StoredLink::Json {
                        key: key.to_vec(),
                        bytes: bytes.to_vec(),
                    },
                })
                .collect();
            self.chain().append(&records)?;
            self.chain().sync()
        })
    }

    /// Moves an older ledger's `decisions` tree into the decisions file and builds the session
    /// index again with each record's offset (an older index has none, and ledgers before it
    /// had no index at all). Records that do not decode are moved as they were stored (and
    /// reported as before), without an index entry.
    pub(super) fn move_decisions_tree(&self, moved: bool) -> Result<(), LedgerError> {
        #[derive(serde::Deserialize)]
        struct SessionOf {
            session_id: String,
        }
        if !moved {
            self.session_index.clear()?;
        }
        self.move_tree("decisions", moved, DECISIONS_DURABLE, |entries| {
            let records: Vec<(u64, &[u8])> = entries
                .iter()
                .filter_map(|(key, bytes)| {
                    let seq = u64::from_be_bytes(<[u8; 8]>::try_from(key.as_ref()).ok()?);
                    Some((seq, bytes.as_ref()))
                })
                .collect();
            let offsets = self.decision_log().append(records.iter().copied())?;
            for ((seq, json), at) in records.iter().zip(offsets) {
                if let Ok(of) = serde_json::from_slice::<SessionOf>(json) {
                    self.session_index.put(&of.session_id, *seq, at)?;
                }
            }
            self.decision_log().sync()
        })
    }

    /// Moves tree `name` into its file a batch at a time through `append`, which returns the
    /// file's synced length (an empty batch only syncs), unless it was `moved` already; records
    /// the length under `durable_key`; then drops the tree.
    fn move_tree(
        &self,
        name: &str,
        moved: bool,
        durable_key: &[u8],
        mut append: impl FnMut(&Entries) -> Result<u64, LedgerError>,
    ) -> Result<(), LedgerError> {
        let had_tree = self
            .db
            .tree_names()
            .iter()
            .any(|tree| tree.as_ref() == name.as_bytes());
        if !moved {
            let mut batch = Vec::with_capacity(BATCH);
            if had_tree {
                for entry in self.db.open_tree(name)?.iter() {
                    batch.push(entry?);
                    if batch.len() == BATCH {
                        append(&batch)?;
                        batch.clear();
                    }
                }
            }
            let durable = append(&batch)?;
            self.meta.insert(durable_key, &durable.to_be_bytes())?;
            self.disk.sync(&self.meta)?;
        }
        if had_tree {
            self.db.drop_tree(name)?;
            self.disk.sync(&self.meta)?;
        }
        Ok(())
    }
}
