//! `codaris-ledger`: the durable record of every grant, card and dispatch decision (grants and
//! cards in sled, decisions and the hash chain in append-only files beside it, see
//! `log_file.rs`), and the only owner of that store.
//!
//! The daemon owns the ledger while it runs; the CLI opens a stopped daemon's ledger offline to
//! replay it. Nobody else holds the `sled::Db`: the daemon's own state goes through typed
//! handles — [`Ledger::next_id`] for ids, [`Sessions`] (JSON records of the caller's type,
//! changed only by compare-and-swap), [`ToolState`] and [`Conversations`] — each durable before
//! it returns, so every durable write follows one discipline.
//!
//! A grant is acknowledged only once it is on the device and readable: each commit appends its
//! records to the journal with one `write` and one `fdatasync`, appends from concurrent writers
//! share one commit (group commit), and the commit's records are applied to sled after they are
//! durable, outside the committing section, while the next commit journals. sled is never
//! relied on for durability between folds: sled 0.34's `flush` issues `sync_file_range`, which
//! does not flush the device cache, so whatever is made durable in sled itself (the journal
//! folded in, a handle's write, a new stride of ids) is flushed and then has sled's data file
//! `fdatasync`ed. A commit that is durable but that sled refuses halts the ledger until it is
//! reopened ([`LedgerError::Unapplied`]).
//!
//! Every grant names what backs it ([`Backing`]), and every record version appended is a link
//! of a hash chain ([`Link`]); [`audit`] replays the decisions, flags grants nothing backs, and
//! walks the chain, from a ledger or from an export ([`Evidence`]); [`Ledger::audit`] makes the
//! same report of a live ledger a batch of decisions at a time, never holding them all.
//!
//! Each record carries a schema version. A record that does not decode is reported as
//! [`Corrupt`] and never read as an allow: a grant that cannot be read grants nothing.
//!
//! Non-goals: deciding (that is `codaris-policy`), resolving paths, clocks (times are inputs),
//! logging (errors and reports are returned to the caller), knowing the shape of the daemon's
//! sessions or conversations (it stores their JSON).

mod backing;
mod candidate;
mod canonical;
mod chain;
mod chain_log;
mod commit;
mod config_change;
mod conversations;
mod decision_log;
mod disk;
mod error;
mod export;
mod gates;
mod grant_sets;
mod head;
mod job_approval;
mod journal;
mod log_file;
mod mcp_state;
mod record;
mod replay;
mod sessions;
mod store;
mod tool_state;
mod undo;

pub use backing::GrantFinding;
pub use backing::GrantProblem;
pub use candidate::Candidate;
pub use candidate::CandidateHook;
pub use candidate::Change;
pub use candidate::Group;
pub use candidate::OperatorInputs;
pub use candidate::Replaced;
pub use candidate::RootsReplaced;
pub use candidate::Subject;
pub use candidate::VerdictChanges;
pub use candidate::decide_under;
pub use candidate::replaced_inputs;
pub use candidate::replay_under;
pub use candidate::shadow_changes;
pub use candidate::summarize;
pub use candidate::under_candidate;
pub use chain::ChainFinding;
pub use chain::ChainProblem;
pub use chain::Link;
pub use chain::RecordKind;
pub use chain_log::MAGIC as CHAIN_MAGIC;
pub use chain_log::StoredLink;
pub use chain_log::read_chain_file;
pub use chain_log::write_chain_file;
pub use config_change::{ABSENT, ConfigAction, ConfigChangeRecord, text_digest};
pub use conversations::{Conversations, conversations_dir};
pub use decision_log::MAGIC as DECISIONS_MAGIC;
pub use decision_log::StoredDecision;
pub use decision_log::read_decisions_file;
pub use decision_log::write_decisions_file;
pub use error::Corrupt;
pub use error::LedgerError;
pub use error::Wedged;
pub use export::ExportLine;
pub use export::read_export;
pub use gates::Gates;
pub use head::ChainHead;
pub use head::ChainKey;
pub use head::HEAD_FILE;
pub use head::KEY_FILE;
pub use job_approval::JobApprovalRecord;
pub use journal::AHEAD as JOURNAL_AHEAD;
pub use mcp_state::{Documents, McpState};
pub use record::Backing;
pub use record::COMMAND_ALLOWLIST;
pub use record::CardAnswer;
pub use record::CardRecord;
pub use record::DecisionRecord;
pub use record::GrantRecord;
pub use record::GrantSetRecord;
pub use record::GrantSetRef;
pub use record::HTTP_ALLOWLIST;
pub use record::SCHEMA;
pub use record::ShadowDecision;
pub use record::standing_grant_id;
pub use replay::Difference;
pub use replay::Evidence;
pub use replay::ReplayReport;
pub use replay::audit;
pub use replay::replay;
pub use sessions::Sessions;
pub use sessions::Updated;
pub use store::DEFAULT_CACHE_BYTES;
pub use store::GrantLease;
pub use store::GrantView;
pub use store::Ledger;
pub use store::LedgerOptions;
pub use tool_state::ToolState;
pub use undo::UndoCode;
pub use undo::UndoDecision;
pub use undo::UndoFile;
pub use undo::UndoFinding;
pub use undo::UndoProblem;
pub use undo::UndoRecord;
pub use undo::decide_undo;
pub use undo::verify_undos;
