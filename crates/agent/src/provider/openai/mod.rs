//! OpenAI Chat Completions and the servers that speak it: `POST {base}/chat/completions` with a
//! bearer key (when there is one), streamed as server-sent events with usage in the last chunk.

mod decode;
mod request;

use reqwest::header::AUTHORIZATION;

use super::config::{ProviderConfig, ProviderKind};
use super::error::ProviderError;
use super::transport::{Prepared, Transport, sensitive};
use super::types::ModelRequest;
use super::{EventStream, ModelProvider, failed};
use request::CapField;

/// A provider speaking OpenAI Chat Completions (OpenAI, Perplexity, llama.cpp, Ollama, vLLM).
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    transport: Transport,
    endpoint: String,
    max_output_tokens: u32,
    cap_field: CapField,
    reasoning_effort: Option<&'static str>,
}

impl OpenAiProvider {
    /// Builds the HTTP client for `config`, whatever its `kind` says.
    pub fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        let (transport, endpoint) = Transport::for_kind(config, ProviderKind::OpenAi)?;
        Ok(Self {
            transport,
            endpoint,
            max_output_tokens: config.max_output_tokens,
            cap_field: CapField::for_base_url(&config.base_url),
            reasoning_effort: config.reasoning.and_then(reasoning_effort),
        })
    }

    fn prepare(&self, request: &ModelRequest) -> Result<Prepared, ProviderError> {
        let mut body = request::body(
            &self.transport.origin.model,
            request,
            self.max_output_tokens,
            self.cap_field,
        );
        body.reasoning_effort = self.reasoning_effort;
        let mut prepared = self.transport.prepare(&self.endpoint, &body)?;
        let headers = &mut prepared.headers;
        if let Some(key) = self
            .transport
            .key()
            .filter(|key| !key.expose().is_empty())
            .and_then(|key| sensitive(&format!("Bearer {}", key.expose())))
        {
            headers.insert(AUTHORIZATION, key);
        }
        Ok(prepared)
    }
}

/// The `reasoning_effort` a level is sent as; the model's own level sends none.
fn reasoning_effort(level: codaris_catalogue::Reasoning) -> Option<&'static str> {
    use codaris_catalogue::Reasoning;
    match level {
        Reasoning::Low | Reasoning::Medium | Reasoning::High => Some(level.as_str()),
        Reasoning::Default => None,
    }
}

impl ModelProvider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
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
