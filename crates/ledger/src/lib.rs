//! `codaris-ledger`: the durable record of every grant, card and dispatch decision, in sled.
//!
//! The daemon owns the ledger while it runs; the CLI opens a stopped daemon's ledger offline to
//! replay it. A grant is acknowledged only once it is on the device: sled 0.34's `flush` issues
//! `sync_file_range`, which does not flush the device cache, so every commit also `fdatasync`s
//! the data file. Appends from concurrent writers share one commit (group commit).
//!
//! Each record carries a schema version. A record that does not decode is reported as
//! [`Corrupt`] and never read as an allow: a grant that cannot be read grants nothing.
//!
//! Non-goals: deciding (that is `codaris-policy`), resolving paths, clocks (times are inputs),
//! logging (errors and reports are returned to the caller).

mod commit;
mod error;
mod export;
mod journal;
mod record;
mod replay;
mod store;

pub use error::Corrupt;
pub use error::LedgerError;
pub use export::ExportLine;
pub use export::read_export;
pub use record::CardAnswer;
pub use record::CardRecord;
pub use record::DecisionRecord;
pub use record::GrantRecord;
pub use record::SCHEMA;
pub use replay::Difference;
pub use replay::ReplayReport;
pub use replay::replay;
pub use store::GrantView;
pub use store::Ledger;
pub use store::unique_id;
