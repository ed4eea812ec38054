//! The HTTP half shared by both providers: posting with retries, turning an error status into a
//! one-line error, and driving the response body through an SSE decoder and a wire decoder with
//! an idle timeout. Dropping the returned stream drops the response body, which closes the
//! connection.

use std::collections::VecDeque;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde_json::Value;
use tracing::{debug, instrument, warn};

use super::EventStream;
use super::config::{ProviderConfig, ProviderKind, RetryPolicy, Secret, Timeouts};
use super::error::{Origin, ProviderError, TimeoutPhase, one_line};
use super::retry::{
    draw_jitter, is_retryable_connect, is_retryable_status, parse_retry_after, retry_delay,
};
use super::sse::{SseDecoder, SseEvent};
use super::types::{Retrying, StreamEvent};

/// The most of an error body read for its message.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// What a wire decoder says after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep reading.
    More,
    /// The message is complete; stop reading.
    Done,
}

/// Turns one wire format's SSE events into [`StreamEvent`]s.
pub(crate) trait WireDecoder: Send + 'static {
    /// Handles one event, pushing what it completes onto `out`.
    fn event(
        &mut self,
        event: SseEvent,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<Flow, ProviderError>;

    /// The body ended before [`Flow::Done`]: finish if the format allows it, else error.
    fn eof(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError>;
}

/// A request ready to post: the URL, the headers (the key among them, marked sensitive) and the
/// encoded body.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub(crate) url: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// The client and the settings of one provider.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    client: reqwest::Client,
    timeouts: Timeouts,
    retry: RetryPolicy,
    key: Option<Secret>,
    pub(crate) origin: Origin,
}

impl Transport {
    /// Builds the client. Loopback base URLs bypass any proxy from the environment.
    pub(crate) fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        let origin = Origin {
            provider: config.kind,
            model: config.model.clone(),
        };
        let mut builder = crate::tls::client_builder().connect_timeout(config.timeouts.connect);
        if is_loopback_url(&config.base_url) {
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|source| ProviderError::Client {
            provider: origin.provider,
            model: origin.model.clone(),
            source,
        })?;
        Ok(Self {
            client,
            timeouts: config.timeouts,
            retry: config.retry,
            key: config.api_key.clone(),
            origin,
        })
    }

    /// The client for `config` speaking `kind`'s API, and the URL its requests go to.
    pub(crate) fn for_kind(
        config: &ProviderConfig,
        kind: ProviderKind,
    ) -> Result<(Self, String), ProviderError> {
        let config = ProviderConfig {
            kind,
            ..config.clone()
        };
        Ok((Self::new(&config)?, config.endpoint()))
    }

    /// A streamed JSON request to `url`: the encoded body and the headers every provider sends;
    /// the caller adds its own (version, auth).
    pub(crate) fn prepare(
        &self,
        url: &str,
        body: &impl serde::Serialize,
    ) -> Result<Prepared, ProviderError> {
        let body = serde_json::to_vec(body).map_err(|source| ProviderError::Encode {
            provider: self.origin.provider,
            model: self.origin.model.clone(),
            source,
        })?;
        let mut headers = HeaderMap::new();
        insert(&mut headers, "content-type", "application/json");
        insert(&mut headers, "accept", "text/event-stream");
        Ok(Prepared {
            url: url.to_owned(),
            headers,
            body: Bytes::from(body),
        })
    }

    /// The key, for the provider's auth header.
    pub(crate) fn key(&self) -> Option<&Secret> {
        self.key.as_ref()
    }

    /// Posts `prepared`, retrying 429, 5xx and connection errors, and streams the body through
    /// `decoder`.
    pub(crate) fn stream<D: WireDecoder>(&self, prepared: Prepared, decoder: D) -> EventStream {
        let driver = Driver {
            connect: Some((self.clone(), prepared)),
            attempts: 0,
            wait: None,
            body: None,
            sse: SseDecoder::default(),
            decoder,
            pending: VecDeque::new(),
            finished: false,
            idle: self.timeouts.idle,
            origin: self.origin.clone(),
            key: self.key.clone(),
        };
        Box::pin(futures_util::stream::unfold(driver, Driver::next))
    }

    /// Makes attempt number `attempt` (from 1): the response, or the wait before the next
    /// attempt when this one failed in a way worth retrying, or the error that ends the round.
    #[instrument(skip_all, fields(provider = %self.origin.provider, model = %self.origin.model, attempt = attempt))]
    async fn attempt(&self, prepared: &Prepared, attempt: u32) -> Result<Attempt, ProviderError> {
        debug!(attempt, url = %prepared.url, "posting model request");
        let request = self
            .client
            .post(&prepared.url)
            .headers(prepared.headers.clone())
            .body(prepared.body.clone())
            .send();
        let (retry_after, failure) =
            match tokio::time::timeout(self.timeouts.request, request).await {
                Err(_) => {
                    return Err(self
                        .origin
                        .timeout(TimeoutPhase::Request, self.timeouts.request));
                }
                Ok(Ok(response)) if response.status().is_success() => {
                    return Ok(Attempt::Answered(response));
                }
                Ok(Ok(response)) => {
                    let retry_after = response
                        .headers()
                        .get(RETRY_AFTER)
                        .and_then(|value| value.to_str().ok())
                        .and_then(parse_retry_after);
                    (retry_after, Failure::Status(response))
                }
                Ok(Err(source)) => (None, Failure::Connect(source)),
            };
        let retryable = match &failure {
            Failure::Status(response) => is_retryable_status(response.status().as_u16()),
            Failure::Connect(source) => is_retryable_connect(source),
        };
        let delay = (retryable && attempt <= self.retry.max_retries)
            .then(|| retry_delay(&self.retry, attempt - 1, retry_after, draw_jitter()))
            .flatten();
        let Some(delay) = delay else {
            return Err(self.give_up(failure, attempt, retry_after).await);
        };
        warn!(attempt, ?delay, reason = %failure, "model request failed; retrying");
        Ok(Attempt::Retry(Retrying {
            attempt,
            max_attempts: self.retry.max_retries,
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            reason: failure.for_a_person(),
        }))
    }

    async fn give_up(
        &self,
        failure: Failure,
        attempts: u32,
        retry_after: Option<std::time::Duration>,
    ) -> ProviderError {
        let origin = &self.origin;
        match failure {
            Failure::Connect(source) => ProviderError::Connect {
                provider: origin.provider,
                model: origin.model.clone(),
                attempts,
                source,
            },
            Failure::Status(response) => {
                let status = response.status();
                let body = tokio::time::timeout(self.timeouts.request, read_capped(response))
                    .await
                    .unwrap_or_default();
                let mut message = api_message(&body)
                    .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned());
                if let Some(key) = self
                    .key
                    .as_ref()
                    .map(Secret::expose)
                    .filter(|k| !k.is_empty())
                {
                    message = message.replace(key, "***");
                }
                ProviderError::Status {
                    provider: origin.provider,
                    model: origin.model.clone(),
                    status: status.as_u16(),
                    message: one_line(&message),
                    attempts,
                    retry_after,
                }
            }
        }
    }
}

/// What one attempt came to.
enum Attempt {
    Answered(reqwest::Response),
    /// Failed; try again after the wait it names.
    Retry(Retrying),
}

/// Why an attempt failed.
enum Failure {
    Status(reqwest::Response),
    Connect(reqwest::Error),
}

impl Failure {
    /// What failed, in a few words for the status line; no URL, header or body, so nothing
    /// the request carried can show.
    fn for_a_person(&self) -> String {
        match self {
            Self::Status(response) => {
                let status = response.status().as_u16();
                match status {
                    429 | 503 | 529 => format!("busy ({status})"),
                    _ => format!("server error ({status})"),
                }
            }
            Self::Connect(source) if source.is_timeout() => "connection timed out".to_owned(),
            Self::Connect(_) => "connection failed".to_owned(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Status(response) => write!(f, "HTTP {}", response.status().as_u16()),
            Self::Connect(source) => write!(f, "{source}"),
        }
    }
}

/// A header value that `Debug` and logs print as `Sensitive`.
pub(crate) fn sensitive(value: &str) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(value).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// Inserts a static header.
pub(crate) fn insert(headers: &mut HeaderMap, name: &'static str, value: &'static str) {
    headers.insert(
        HeaderName::from_static(name),
        HeaderValue::from_static(value),
    );
}

/// Reads at most [`MAX_ERROR_BODY`] bytes of an error response.
async fn read_capped(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            body.truncate(MAX_ERROR_BODY);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The API's own message from an error body: `{"error": {"type", "message"}}` (Anthropic,
/// OpenAI, vLLM), `{"error": "..."}` (Ollama, llama.cpp), `{"message"}` or `{"detail"}`; else
/// the body's text.
fn api_message(body: &str) -> Option<String> {
    let text = body.trim();
    if text.is_empty() {
        return None;
    }
    let Ok(json) = serde_json::from_str::<Value>(text) else {
        return Some(text.to_owned());
    };
    let error = json.get("error");
    let message = error
        .and_then(|e| e.get("message"))
        .or_else(|| error.filter(|e| e.is_string()))
        .or_else(|| json.get("message"))
        .or_else(|| json.get("detail"));
    let kind = error.and_then(|e| e.get("type")).and_then(Value::as_str);
    let message = match message {
        Some(Value::String(message)) => message.clone(),
        Some(other) => other.to_string(),
        None => return Some(text.to_owned()),
    };
    Some(match kind {
        Some(kind) if !kind.is_empty() => format!("{kind}: {message}"),
        _ => message,
    })
}

/// Whether a base URL names this machine: an http(s) URL whose host, as the URL parser reads
/// it, is in 127.0.0.0/8, is `::1`, or is `localhost`. Parsed, never matched as text, so
/// `http://127.0.0.1.evil.example` (a name) and `http://localhost@evil.example` (a user name
/// before the host) are not this machine.
pub fn is_loopback_url(base_url: &str) -> bool {
    let Ok(url) = url::Url::parse(base_url.trim()) else {
        return false;
    };
    if !matches!(url.scheme(), "http" | "https") {
        return false;
    }
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

type Body = std::pin::Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// The state of one streamed response, advanced by `unfold`.
struct Driver<D> {
    connect: Option<(Transport, Prepared)>,
    /// Attempts made so far.
    attempts: u32,
    /// The wait before the next attempt, once its retry was reported.
    wait: Option<std::time::Duration>,
    body: Option<Body>,
    sse: SseDecoder,
    decoder: D,
    pending: VecDeque<StreamEvent>,
    finished: bool,
    idle: std::time::Duration,
    origin: Origin,
    /// Scrubbed out of every error the stream yields: an API may echo it anywhere.
    key: Option<Secret>,
}

type Item = Result<StreamEvent, ProviderError>;

impl<D: WireDecoder> Driver<D> {
    async fn next(mut self) -> Option<(Item, Self)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some((Ok(event), self));
            }
            if self.finished {
                return None;
            }
            match self.advance().await {
                Ok(()) => {}
                Err(error) => {
                    self.fail();
                    let error = match &self.key {
                        Some(key) => error.scrubbed(key.expose()),
                        None => error,
                    };
                    return Some((Err(error), self));
                }
            }
        }
    }

    /// Connects, or reads one piece of the body and decodes it into `pending`.
    async fn advance(&mut self) -> Result<(), ProviderError> {
        if let Some((transport, prepared)) = self.connect.take() {
            // The retry was reported (yielded) before this wait, so the person sees it while
            // it lasts.
            if let Some(wait) = self.wait.take() {
                tokio::time::sleep(wait).await;
            }
            self.attempts += 1;
            match transport.attempt(&prepared, self.attempts).await? {
                Attempt::Answered(response) => {
                    self.body = Some(Box::pin(response.bytes_stream()));
                }
                Attempt::Retry(retry) => {
                    self.wait = Some(std::time::Duration::from_millis(retry.delay_ms));
                    self.pending.push_back(StreamEvent::Retrying(retry));
                    self.connect = Some((transport, prepared));
                }
            }
            return Ok(());
        }
        let Some(body) = self.body.as_mut() else {
            self.finished = true;
            return Ok(());
        };
        let chunk = match tokio::time::timeout(self.idle, body.next()).await {
            Err(_) => return Err(self.origin.timeout(TimeoutPhase::Idle, self.idle)),
            Ok(Some(Err(source))) => {
                return Err(ProviderError::Stream {
                    provider: self.origin.provider,
                    model: self.origin.model.clone(),
                    source,
                });
            }
            Ok(Some(Ok(chunk))) => chunk,
            Ok(None) => {
                let last = self.sse.finish();
                self.body = None;
                self.finished = true;
                if let Some(event) = last
                    && self.decoder.event(event, &mut self.pending)? == Flow::Done
                {
                    return Ok(());
                }
                return self.decoder.eof(&mut self.pending);
            }
        };
        let events = self
            .sse
            .push(&chunk)
            .map_err(|error| self.origin.malformed(error))?;
        for event in events {
            if self.decoder.event(event, &mut self.pending)? == Flow::Done {
                debug!(provider = %self.origin.provider, "model stream complete");
                self.body = None;
                self.finished = true;
                break;
            }
        }
        Ok(())
    }

    /// After an error nothing more is yielded, and the connection is closed.
    fn fail(&mut self) {
        self.pending.clear();
        self.body = None;
        self.connect = None;
        self.finished = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_messages_from_each_servers_error_shape() {
        let anthropic = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert_eq!(
            api_message(anthropic).as_deref(),
            Some("authentication_error: invalid x-api-key")
        );
        let openai = r#"{"error":{"message":"The model `x` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#;
        assert_eq!(
            api_message(openai).as_deref(),
            Some("invalid_request_error: The model `x` does not exist")
        );
        let ollama = r#"{"error":"model \"llama9\" not found, try pulling it first"}"#;
        assert_eq!(
            api_message(ollama).as_deref(),
            Some("model \"llama9\" not found, try pulling it first")
        );
        assert_eq!(
            api_message(r#"{"detail":"Not Found"}"#).as_deref(),
            Some("Not Found")
        );
        assert_eq!(
            api_message("upstream down").as_deref(),
            Some("upstream down")
        );
        assert_eq!(api_message("  "), None);
    }

    #[test]
    fn loopback_bases_are_recognised() {
        assert!(is_loopback_url("http://127.0.0.1:8080/v1"));
        assert!(is_loopback_url("http://localhost:11434/v1"));
        assert!(is_loopback_url("http://[::1]:8000"));
        assert!(!is_loopback_url("https://api.anthropic.com"));
        assert!(!is_loopback_url("not a url"));
        assert!(is_loopback_url("http://127.8.9.10:1/v1"));
        assert!(is_loopback_url("http://LOCALHOST:8080/v1"));
        // The URL parser, not a prefix match, decides: a name that starts like an address, a
        // user name before the real host, a look-alike domain, another scheme.
        for remote in [
            "http://127.0.0.1.evil.example/v1",
            "http://localhost@evil.example/v1",
            "http://127.0.0.1@evil.example/v1",
            "http://localhost.evil.example/v1",
            "http://evil.example/127.0.0.1",
            "http://evil.example/?host=localhost",
            "http://[::ffff:8.8.8.8]/v1",
            "http://10.0.0.1:8080/v1",
            "file://localhost/etc/passwd",
            "",
        ] {
            assert!(!is_loopback_url(remote), "{remote}");
        }
    }
}
