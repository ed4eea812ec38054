//! Model providers: one trait, two wire formats (Anthropic Messages, OpenAI Chat Completions and
//! the servers compatible with it), streaming over HTTP with retries and timeouts.
//!
//! A round is a [`ModelRequest`] in and an [`EventStream`] out. The stream yields text deltas,
//! complete tool calls, usage and one stop reason; any error ends it. Dropping the stream (or
//! ending it with `StreamExt::take_until` on a cancellation future) closes the connection, which
//! is how a cancelled turn stops the model.
//!
//! Not here: choosing the provider for a session, reading keys from the environment or the config
//! file (the daemon resolves a [`ProviderConfig`]), and the scripted provider used by tests.

mod anthropic;
mod check;
mod config;
mod error;
mod openai;
mod retry;
mod sse;
mod transport;
mod types;

#[cfg(test)]
mod tests;

use std::fmt;
use std::pin::Pin;

use futures_util::Stream;

pub use anthropic::AnthropicProvider;
pub use check::{CheckProblem, check_provider, list_models, models_url};
pub use config::{
    DEFAULT_MAX_OUTPUT_TOKENS, MULTIMODAL_PREFIXES, ProviderChoice, ProviderConfig, ProviderKind,
    RetryPolicy, Secret, Timeouts, multimodal_by_name,
};
pub use error::{ProviderError, ProviderErrorKind, ProviderFailure, TimeoutPhase};
pub use openai::OpenAiProvider;
pub use transport::is_loopback_url;
pub use types::{
    CacheHints, InvalidToolCall, Message, ModelRequest, Picture, Retrying, StopReason, StreamEvent,
    ToolCall, ToolDefinition, ToolResult, ToolTier,
};

/// The events of one model round. Nothing follows an `Err`.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// A model API.
///
/// `stream` encodes the request at once and returns a stream that connects when first polled; a
/// connection failure, an error status or a broken stream arrive as its `Err` item.
pub trait ModelProvider: fmt::Debug + Send + Sync {
    /// The provider's name, as in `CODARIS_PROVIDER` (`anthropic`, `openai`, `scripted`).
    fn name(&self) -> &str;

    /// The model the requests name.
    fn model(&self) -> &str;

    /// The output cap a request that sets none is sent with; `None` when there is none to
    /// raise (the scripted provider). Named to the person when an answer ends at it.
    fn max_output_tokens(&self) -> Option<u32> {
        None
    }

    /// Sends one round and streams the answer.
    fn stream(&self, request: &ModelRequest) -> EventStream;
}

/// Builds the provider `config.kind` names.
pub fn build_provider(config: &ProviderConfig) -> Result<Box<dyn ModelProvider>, ProviderError> {
    Ok(match config.kind {
        ProviderKind::Anthropic => Box::new(AnthropicProvider::new(config)?),
        ProviderKind::OpenAi => Box::new(OpenAiProvider::new(config)?),
    })
}

/// An [`EventStream`] of one error, for a request that could not even be encoded.
fn failed(error: ProviderError) -> EventStream {
    Box::pin(futures_util::stream::once(async move { Err(error) }))
}
