//! What can go wrong with a server, each as one sentence the CLI and the model can be shown.

use std::time::Duration;

/// Why a server could not be reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot start `{command}`: {reason}")]
    Spawn { command: String, reason: String },
    #[error("the handshake failed: {0}")]
    Handshake(String),
    #[error("no handshake within {} s", .0.as_secs_f64())]
    StartupTimeout(Duration),
    #[error("the header `{0}` is not a valid HTTP header")]
    Header(String),
}

/// Why a request to a connected server failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("no answer within {} s", .0.as_secs_f64())]
    Timeout(Duration),
    #[error("{0}")]
    Closed(String),
    /// A JSON-RPC error reply.
    #[error("the server answered with error {code}: {message}")]
    Server { code: i32, message: String },
    #[error("the reply did not read as MCP: {0}")]
    Protocol(String),
    #[error("{0}")]
    Listing(String),
}

/// Why a call of an MCP tool did not reach its server, or failed there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("no MCP server is called `{0}`")]
    UnknownServer(String),
    #[error("the MCP server `{server}` offers no tool `{tool}`")]
    UnknownTool { server: String, tool: String },
    #[error("the MCP server `{server}` is {state}{}; its tools are unavailable until it is back", .why.as_deref().map(|w| format!(" ({w})")).unwrap_or_default())]
    Unavailable {
        server: String,
        state: &'static str,
        why: Option<String>,
    },
    #[error("the MCP server `{server}` is switched off")]
    Disabled { server: String },
    #[error("the call to `{tool}` on the MCP server `{server}` failed: {source}")]
    Call {
        server: String,
        tool: String,
        #[source]
        source: CallError,
    },
}
