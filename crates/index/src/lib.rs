//! `codaris-index`: one immutable, ranked index of every tool Codaris can offer (built-in tools,
//! MCP servers' tools, skills, references), built once and swapped whole.
//!
//! [`Index::build`] turns entries into the index; a [`Searcher`] (one per caller: it owns nucleo's
//! scratch memory) answers a [`SearchRequest`] with a [`SearchOutcome`]; [`render`] turns that
//! into the text `search_tools` gives the model, and [`SearchOutcome::bindable`] says which hits
//! the agent binds. Ranking is word-level BM25F over name, server, keywords, description and
//! argument names, with stemming, a small synonym vocabulary, spelling correction and
//! nucleo-matched partial names; exact names come first and ties go by name. The [`catalog`]
//! formats, [`eval`] metrics and the [`baseline`] BM25 serve `codaris tools search --catalog` and
//! `codaris tools eval`.
//!
//! Non-goals: no I/O, no logging, no clock, no environment (the daemon and the CLI read files and
//! feed entries in); no mutation after build (rebuild and swap instead); no policy (whether a
//! call may run is decided at dispatch by `codaris-policy`, and what a turn withholds is an input
//! here); no embeddings or model calls (measured, they did not earn their cost: docs/search.md); no nucleo over whole descriptions.

pub mod baseline;
pub mod binding;
pub mod catalog;
mod closest;
mod entry;
mod error;
pub mod eval;
mod explain;
mod fuzzy;
mod hash;
mod index;
mod memory;
mod pool;
mod render;
mod request;
mod search;
mod stem;
mod synonyms;
mod text;
mod vocabulary;

pub use baseline::Bm25;
pub use catalog::CatalogLine;
pub use catalog::CatalogParam;
pub use catalog::QueryLine;
pub use catalog::parse_catalog;
pub use catalog::parse_queries;
pub use entry::Entry;
pub use entry::Kind;
pub use entry::KindFilter;
pub use entry::Server;
pub use error::IndexError;
pub use eval::EvalReport;
pub use eval::Metrics;
pub use explain::{Explanation, HitReasons, Meaning, QueryWord, WordMatch, render_explanation};
pub use index::Index;
pub use pool::SearcherPool;
pub use render::render;
pub use render::{Withheld, render_withheld};
pub use request::DEFAULT_LIMIT;
pub use request::Hit;
pub use request::MAX_QUERY_CHARS;
pub use request::SearchOutcome;
pub use request::SearchRequest;
pub use search::Searcher;
