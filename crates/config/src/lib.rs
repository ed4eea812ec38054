//! `codaris-config`: the keys of Codaris's configuration file as data ([`KEYS`]), and
//! [`check`], which judges a file's text against them and reports every problem with its line;
//! and the agent definitions subagents run under ([`agents`]), read from their text.
//!
//! Both binaries link it: `codaris config check` judges a file offline with no `codarisd` at
//! hand, and `codarisd check-config` reports the same problems before it resolves the file
//! itself. The daemon's own types (`ConfigToml` and the tables under it) stay the authority on
//! what a key means; its tests hold [`KEYS`] to the keys those types take, so the two cannot
//! drift apart.
//!
//! Pure: it takes text and returns values. Non-goals: reading files, the environment, and the
//! checks that need the daemon's libraries (what an MCP server's settings add up to, whether a
//! provider answers); those are `codarisd check-config`'s and the daemon's at start.

pub mod agents;
mod check;
pub mod edit;
pub mod front_matter;
mod hooks;
pub mod jobs;
mod keys;

pub use check::Problem;
pub use check::check;
pub use check::key_lines;
pub use hooks::DEFAULT_HOOK_TIMEOUT_SECONDS;
pub use hooks::hook_matcher;
pub use keys::KEYS;
pub use keys::Key;
pub use keys::Kind;
pub use keys::MAPS;
pub use keys::REQUIRED;
pub use keys::TABLE_ARRAYS;
pub use keys::WITHHELD_VARIABLES;
pub use keys::key_named;
