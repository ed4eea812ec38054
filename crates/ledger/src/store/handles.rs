//! What the ledger hands out instead of its sled database: ids, and typed handles for the
//! daemon's sessions, tool state and conversations. Each handle writes through one discipline
//! ([`Disk::sync`](crate::disk::Disk::sync), or a synced file for conversations), so no write
//! is acknowledged before it is on the device, and nobody else holds a `sled::Db`.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Ledger;
use crate::conversations::Conversations;
use crate::error::LedgerError;
use crate::sessions::Sessions;
use crate::tool_state::ToolState;

/// sled reserves ids in strides of this many (its `idgen_persist_interval`).
const ID_STRIDE: u64 = 1_000_000;

impl Ledger {
    /// An id never handed out before, larger than every id handed out before, across restarts
    /// and crashes too.
    ///
    /// sled persists the start of each new stride of ids lazily; if the process dies before that
    /// reaches the device, the next run hands out the same stride again. Making sled durable
    /// whenever an id opens a stride closes that window (the journal keeps records durable
    /// without flushing sled, so this cannot be left to other writes). After a restart sled
    /// starts a stride beyond the last one it recorded, so ids keep increasing.
    pub fn next_id(&self) -> Result<u64, LedgerError> {
        let id = self.db.generate_id()?;
        if id % ID_STRIDE == 0 {
            self.disk.sync(&self.db)?;
        }
        Ok(id)
    }

    /// Makes everything written to sled durable: sled flushed and its data file synced. Every
    /// write already is when it returns; this is for an orderly stop, and for tests that need
    /// sled to have nothing left to write.
    pub fn flush(&self) -> Result<(), LedgerError> {
        self.disk.sync(&self.db)
    }

    /// The session records, stored as `T`'s JSON (the type is the caller's), changed only by
    /// compare-and-swap ([`Sessions::update`]).
    pub fn sessions<T: Serialize + DeserializeOwned>(&self) -> Result<Sessions<T>, LedgerError> {
        Ok(Sessions::new(
            self.db.open_tree(crate::sessions::TREE)?,
            self.disk.clone(),
        ))
    }

    /// Which tools are switched on or off.
    pub fn tool_state(&self) -> Result<ToolState, LedgerError> {
        Ok(ToolState::new(
            self.db.open_tree(crate::tool_state::TREE)?,
            self.disk.clone(),
        ))
    }

    /// The samplesheet gates: each pipeline's sheet's last passing check.
    pub fn gates(&self) -> Result<crate::Gates, LedgerError> {
        Ok(crate::Gates::new(
            self.db.open_tree(crate::gates::TREE)?,
            self.disk.clone(),
        ))
    }

    /// What is kept about MCP servers: run-time registrations, switches, approvals.
    pub fn mcp_state(&self) -> Result<crate::McpState, LedgerError> {
        crate::McpState::new(&self.db, self.disk.clone())
    }

    /// Each session's conversation, one document per session.
    pub fn conversations(&self) -> Conversations {
        self.conversations.clone()
    }
}

#[cfg(test)]
mod tests {
    use crate::Ledger;

    #[test]
    fn ids_are_unique_and_increase_across_reopens() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("ledger");
        let mut ids = Vec::new();
        for _ in 0..3 {
            let ledger = Ledger::open(&path).unwrap();
            for _ in 0..3 {
                ids.push(ledger.next_id().unwrap());
            }
            // Records take ids from the same source.
            let grant = ledger
                .append_grant(
                    "s1",
                    codaris_policy::Grant::new(
                        codaris_policy::CapabilityName::MutateOutsideFence,
                        Some("/tmp/out"),
                        codaris_policy::Lifetime::Session,
                    ),
                    crate::Backing::Card {
                        card_id: "c1".to_owned(),
                    },
                    1,
                )
                .unwrap();
            ids.push(grant.id.trim_start_matches('g').parse().unwrap());
        }
        assert!(
            ids.windows(2).all(|pair| pair[0] < pair[1]),
            "ids do not increase: {ids:?}"
        );
    }

    #[test]
    fn racing_callers_never_share_an_id() {
        let temp = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(&temp.path().join("ledger")).unwrap();
        let mut ids: Vec<u64> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        (0..500)
                            .map(|_| ledger.next_id().unwrap())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let taken = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), taken);
    }
}
