use std::path::PathBuf;

/// A stored record that could not be read. It is reported, never trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corrupt {
    /// `grants`, `cards`, `decisions`, `sessions`, `tool_state`, `conversations`, or
    /// `export line N`.
    pub place: String,
    /// The record's key as text.
    pub key: String,
    pub reason: String,
}

impl std::fmt::Display for Corrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} record `{}` does not decode: {}",
            self.place, self.key, self.reason
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("the ledger at {} is in use by a running codarisd; stop it, or replay `codaris ledger export` output with --from", path.display())]
    Locked { path: PathBuf },
    #[error("cannot open the ledger at {}: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: sled::Error,
    },
    #[error("ledger storage failed: {0}")]
    Storage(#[from] sled::Error),
    #[error("cannot make the ledger durable ({}): {source}", path.display())]
    Sync {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot encode a ledger record: {0}")]
    Encode(serde_json::Error),
    #[error("{0}")]
    Corrupt(Corrupt),
    #[error("no grant `{id}`")]
    GrantNotFound { id: String },
    #[error("{place} record `{key}` exists already")]
    KeyExists { place: &'static str, key: String },
    /// A key the store cannot take (a conversation's id becomes a file name).
    #[error(
        "{key:?} cannot name a {place} record: ids are letters, digits, `-` and `_`, at most 64"
    )]
    InvalidKey { place: &'static str, key: String },
    #[error("cannot {action} {}: {source}", path.display())]
    File {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read ledger export: {0}")]
    Read(#[source] std::io::Error),
    /// The group commit that carried this append failed; nothing of it was recorded. Shared by
    /// every writer of the batch, hence the `Arc`.
    #[error("the ledger could not record this durably, so nothing of it was recorded: {source}")]
    Commit {
        #[source]
        source: std::sync::Arc<LedgerError>,
    },
    /// A group commit whose records are durable in the journal but that sled refused: they are
    /// not readable now, and the next open replays them. The batch could not be cut back out
    /// of the journal, because the next batch may already have been journalled after it.
    #[error(
        "this was recorded durably in the journal but could not be applied to the ledger's store ({source}); it takes effect when the ledger is reopened (restart codarisd), and until then the ledger records nothing more"
    )]
    Unapplied {
        #[source]
        source: std::sync::Arc<LedgerError>,
    },
    /// Refused because an earlier commit was durable but could not be applied (see
    /// [`LedgerError::Unapplied`]): nothing more is recorded until the ledger is reopened.
    #[error(
        "the ledger stopped recording after durable records could not be applied to its store ({source}); reopen it (restart codarisd) to replay them"
    )]
    Halted {
        #[source]
        source: std::sync::Arc<LedgerError>,
    },
}

/// Why a ledger records nothing more until it is opened again ([`crate::Ledger::wedged`]). sled
/// 0.34 keeps the first I/O error it meets for the life of its handle, so once space is back
/// only a new open (which replays the journal) writes again: the daemon then stops with
/// a status the service manager restarts it for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Wedged {
    /// A batch durable in the journal could not be applied to sled ([`LedgerError::Halted`]).
    #[error("a batch durable in the journal could not be applied to its store")]
    Halted,
    /// A flush of sled never finished (see `disk.rs`).
    #[error("sled did not finish writing its log")]
    FlushStuck,
    /// A flush of sled failed: sled refuses every write after it.
    #[error("sled's storage failed, and sled keeps that error for the life of its handle")]
    StorageFailed,
}
