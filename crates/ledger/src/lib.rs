//! `codaris-ledger`: the durable record of every grant, card and dispatch decision, in sled.
//!
//! The daemon owns the ledger while it runs; the CLI opens a stopped daemon's ledger offline to
//! replay it. A grant is acknowledged only once it is on the device: sled 0.34's `flush` issues
//! `sync_file_range`, which does not flush the device cache, so every commit also `fdatasync`s
//! the data file. Appends from concurrent writers share one commit (group commit).
//!
//! Every grant names what backs it ([`Backing`]), and every record version appended is a link
//! of a hash chain ([`Link`]); [`audit`] replays the decisions, flags grants nothing backs, and
//! walks the chain, from a ledger or from an export ([`Evidence`]).
//!
//! Each record carries a schema version. A record that does not decode is reported as
//! [`Corrupt`] and never read as an allow: a grant that cannot be read grants nothing.
//!
//! Non-goals: deciding (that is `codaris-policy`), resolving paths, clocks (times are inputs),
//! logging (errors and reports are returned to the caller).

mod backing;
mod chain;
mod commit;
mod error;
mod export;
mod journal;
mod record;
mod replay;
mod store;

pub use backing::GrantFinding;
pub use backing::GrantProblem;
pub use chain::ChainFinding;
pub use chain::ChainProblem;
pub use chain::Link;
pub use chain::RecordKind;
pub use error::Corrupt;
pub use error::LedgerError;
pub use export::ExportLine;
pub use export::read_export;
pub use record::Backing;
pub use record::COMMAND_ALLOWLIST;
pub use record::CardAnswer;
pub use record::CardRecord;
pub use record::DecisionRecord;
pub use record::GrantRecord;
pub use record::HTTP_ALLOWLIST;
pub use record::SCHEMA;
pub use record::standing_grant_id;
pub use replay::Difference;
pub use replay::Evidence;
pub use replay::ReplayReport;
pub use replay::audit;
pub use replay::replay;
pub use store::GrantView;
pub use store::Ledger;
pub use store::unique_id;
