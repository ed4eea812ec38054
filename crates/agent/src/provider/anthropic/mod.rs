//! The Anthropic Messages API: `POST {base}/v1/messages` with `x-api-key` and
//! `anthropic-version: 2023-06-01`, streamed as server-sent events.

mod decode;
mod request;

use super::config::{ProviderConfig, ProviderKind};
use super::error::ProviderError;
use super::transport::{Prepared, Transport, insert, sensitive};
use super::types::ModelRequest;
use super::{EventStream, ModelProvider, failed};

/// The API version every request names.
pub(crate) const API_VERSION: &str = "2023-06-01";

/// The beta that lets tools carry `defer_loading` and tool results carry `tool_reference`
/// blocks; sent only on requests with deferred tools.
pub(crate) const TOOL_SEARCH_BETA: &str = "advanced-tool-use-2025-11-20";

/// Both betas, as one header lists several: comma-separated.
const BOTH_BETAS: &str = "advanced-tool-use-2025-11-20,compact-2026-01-12";

/// A provider speaking the Anthropic Messages API.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    transport: Transport,
    endpoint: String,
    max_output_tokens: u32,
}

impl AnthropicProvider {
    /// Builds the HTTP client for `config`, whatever its `kind` says.
    pub fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        let (transport, endpoint) = Transport::for_kind(config, ProviderKind::Anthropic)?;
        Ok(Self {
            transport,
            endpoint,
            max_output_tokens: config.max_output_tokens,
        })
    }

    fn prepare(&self, request: &ModelRequest) -> Result<Prepared, ProviderError> {
        let body = request::body(
            &self.transport.origin.model,
            request,
            self.max_output_tokens,
        );
        let mut prepared = self.transport.prepare(&self.endpoint, &body)?;
        let headers = &mut prepared.headers;
        insert(headers, "anthropic-version", API_VERSION);
        let beta = match (
            request::uses_tool_search(request),
            request.server_compaction.is_some(),
        ) {
            (true, true) => Some(BOTH_BETAS),
            (true, false) => Some(TOOL_SEARCH_BETA),
            (false, true) => Some(request::COMPACTION_BETA),
            (false, false) => None,
        };
        if let Some(beta) = beta {
            insert(headers, "anthropic-beta", beta);
        }
        if let Some(key) = self.transport.key().and_then(|key| sensitive(key.expose())) {
            headers.insert("x-api-key", key);
        }
        Ok(prepared)
    }
}

impl ModelProvider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.transport.origin.model
    }

    fn max_output_tokens(&self) -> Option<u32> {
        Some(self.max_output_tokens)
    }

    fn stream(&self, request: &ModelRequest) -> EventStream {
        match self.prepare(request) {
            Ok(prepared) => {
                let decoder = decode::Decoder::new(self.transport.origin.clone());
                self.transport.stream(prepared, decoder)
            }
            Err(error) => failed(error),
        }
    }
}
