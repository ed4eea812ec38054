//! OpenAI Chat Completions and the servers that speak it: `POST {base}/chat/completions` with a
//! bearer key (when there is one), streamed as server-sent events with usage in the last chunk.

mod decode;
mod request;

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, HeaderMap};

use super::config::{ProviderConfig, ProviderKind};
use super::error::ProviderError;
use super::transport::{Prepared, Transport, insert, sensitive};
use super::types::ModelRequest;
use super::{EventStream, ModelProvider, failed};

/// A provider speaking OpenAI Chat Completions (OpenAI, Perplexity, llama.cpp, Ollama, vLLM).
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    transport: Transport,
    endpoint: String,
}

impl OpenAiProvider {
    /// Builds the HTTP client for `config`, whatever its `kind` says.
    pub fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        let config = ProviderConfig {
            kind: ProviderKind::OpenAi,
            ..config.clone()
        };
        Ok(Self {
            transport: Transport::new(&config)?,
            endpoint: config.endpoint(),
        })
    }

    fn prepare(&self, request: &ModelRequest) -> Result<Prepared, ProviderError> {
        let origin = &self.transport.origin;
        let body = request::body(&origin.model, request);
        let body = serde_json::to_vec(&body).map_err(|source| ProviderError::Encode {
            provider: origin.provider,
            model: origin.model.clone(),
            source,
        })?;
        let mut headers = HeaderMap::new();
        insert(&mut headers, "content-type", "application/json");
        insert(&mut headers, "accept", "text/event-stream");
        if let Some(key) = self
            .transport
            .key()
            .filter(|key| !key.expose().is_empty())
            .and_then(|key| sensitive(&format!("Bearer {}", key.expose())))
        {
            headers.insert(AUTHORIZATION, key);
        }
        Ok(Prepared {
            url: self.endpoint.clone(),
            headers,
            body: Bytes::from(body),
        })
    }
}

impl ModelProvider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.transport.origin.model
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
