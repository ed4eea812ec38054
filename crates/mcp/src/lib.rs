//! Codaris's MCP client. A [`ServerRegistry`] runs every configured server in the background (stdio
//! children in their own process group with a scrubbed environment, or streamable-HTTP
//! endpoints), keeps each one's full tool list current across `tools/list_changed` and
//! restarts, and calls their tools with a timeout. Names (`server__tool`), definition digests
//! for pinning, and the rendering of results are plain functions beside it.
//!
//! Deciding whether a call may run is not here: the daemon asks the policy first, and only a
//! permitted call reaches [`ServerRegistry::call`].

mod client;
mod env;
mod error;
mod http;
mod lines;
pub mod names;
mod registry;
pub mod render;
mod spec;
mod supervisor;
mod tls;
mod tool;

pub use client::{Connection, PAGE_CAP, PROTOCOL, Roots, TOOL_CAP};
pub use env::server_env;
pub use error::{CallError, ConnectError, ToolError};
pub use lines::MAX_LINE;
pub use names::{NameError, ServerName};
pub use registry::{ServerRegistry, ServerView};
pub use render::{ImageContent, Rendered};
pub use spec::{
    Approval, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, OutputLimitOverrides, ServerSpec,
    Transport, timeout_seconds,
};
pub use supervisor::{State, Status};
pub use tool::ToolDef;
