//! What the daemon offers the model: the registry of every tool it could bind (built-in, MCP,
//! skills and references) with the ranked index built from it, the skills read from disk, and
//! the agent definitions subagents run under.

pub mod agents;
pub mod registry;
pub mod skills;

pub use registry::ToolRegistry;
