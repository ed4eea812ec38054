//! Memory: what the agent keeps between sessions, as Markdown notes the memory subagent reads
//! and writes with the six `codaris_memory_*` tools, and a person reads with `codaris memory`.
//!
//! A note lives under one of two scopes: `user` (`<config dir>/memory`, every project's) and
//! `project` (`<session cwd>/.codaris/memory`). It is addressed `scope:relative/path.md`. An
//! address is read once ([`NotePath::parse`]) and refused unless it names a place beneath its
//! scope's root by plain folder names: no `..`, no absolute path, no `~`, no `$VAR`, no URI, no
//! hidden name. The scope's root is opened as a capability by the fence
//! (`files::fence::scope`), every note operation goes through that handle, and a symbolic link
//! anywhere beneath it is refused, so neither a planted link nor a race leads a note out.

mod path;
mod store;
mod tools;

#[cfg(test)]
mod tests;

pub use path::{BadNotePath, NotePath, Scope};
pub use store::{Listing, MemoryError, Note, Roots, SearchHit};
pub use tools::{MEMORY_TOOLS, memory_tools};
