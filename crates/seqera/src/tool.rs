//! One tool of the server, as the MCP layer sees it: its definition and its call.

use serde_json::Value;

/// Why a call failed, in words for the model (sent as a result with `isError: true`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolFailure(pub String);

impl ToolFailure {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// A tool the `seqera` server offers.
#[async_trait::async_trait]
pub trait SeqeraTool: Send + Sync {
    /// The name the server lists (the daemon offers it as `seqera__<name>`).
    fn name(&self) -> &'static str;
    /// The description the model reads.
    fn description(&self) -> &'static str;
    /// The JSON schema of the arguments (an object schema).
    fn input_schema(&self) -> Value;
    /// Whether the tool only reads (listed with `readOnlyHint: true`).
    fn read_only(&self) -> bool;
    /// Runs the call; the text is the result the model reads.
    async fn call(&self, args: &Value) -> Result<String, ToolFailure>;
}
