//! Codaris's own documentation as tools: `codaris_docs_search` ranks its sections,
//! `codaris_docs_read` reads a page or a section in parts, or lists the contents. The pages
//! are compiled in (`pages`), so the answer never depends on the machine's files.

mod index;
mod pages;
mod sections;
mod tools;

pub use index::{DocsIndex, docs};
pub use tools::{DocsRead, DocsSearch, PART_LINES, search};
