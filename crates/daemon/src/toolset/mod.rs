//! What the daemon offers the model: the registry of every tool it could bind (built-in, MCP,
//! skills and references) with the ranked index built from it, and the skills read from disk.

pub mod registry;
pub mod skills;

pub use registry::ToolRegistry;
