//! The one error type of the providers. Every variant names the provider and the model; none
//! carries the API key (the API's own message is scrubbed of it).

use std::time::Duration;

use super::config::ProviderKind;
use super::retry::{is_retryable_connect, is_retryable_status};

/// Which wait ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// Waiting for the response headers.
    Request,
    /// Waiting for the next piece of the streamed body.
    Idle,
}

impl std::fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Request => "waiting for the response",
            Self::Idle => "waiting for the next stream event",
        })
    }
}

/// What can go wrong talking to a model. Each message is one line.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The HTTP client could not be built (a TLS backend problem, say).
    #[error("{provider} model `{model}`: cannot build the HTTP client: {source}")]
    Client {
        /// The provider.
        provider: ProviderKind,
        /// The model.
        model: String,
        /// What reqwest said.
        #[source]
        source: reqwest::Error,
    },
    /// The request body could not be encoded.
    #[error("{provider} model `{model}`: cannot encode the request: {source}")]
    Encode {
        /// The provider.
        provider: ProviderKind,
        /// The model.
        model: String,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// The API answered with an error status: a 4xx at once, a 429 or 5xx after the retries.
    #[error("{provider} model `{model}`: HTTP {status} after {attempts} attempt(s): {message}")]
    Status {
        /// The provider.
        provider: ProviderKind,
        /// The model.
        model: String,
        /// The HTTP status.
        status: u16,
        /// The API's own error message, on one line.
        message: String,
        /// How many requests were made.
        attempts: u32,
        /// The wait the last answer's `retry-after` header asked for, when it gave one in
        /// seconds: kept so a client can wait that long before trying the turn again.
        retry_after: Option<Duration>,
    },
    /// The server could not be reached, or the connection failed before the response, after the
    /// retries.
    #[error("{provider} model `{model}`: connection failed after {attempts} attempt(s): {source}")]
    Connect {
        /// The provider.
        provider: ProviderKind,
        /// The model.
        model: String,
        /// How many requests were made.
        attempts: u32,
        /// What reqwest said.
        #[source]
        source: reqwest::Error,
    },
    /// A wait ran out.
    #[error("{provider} model `{model}`: timed out after {after:?} {phase}")]
    Timeout {
        /// The provider.
        provider: ProviderKind,
        /// The model.
        model: String,
        /// Which wait.
        phase: TimeoutPhase,
        /// How long it waited.
        after: Duration,
    },
    /// Reading the streamed body failed (the connection broke mid-stream).
    #[error("{provider} model `{model}`: the stream broke: {source}")]
    Stream {
        /// The provider.
        provider: ProviderKind,
        /// The model.
        model: String,
        /// What reqwest said.
        #[source]
        source: reqwest::Error,
    },
    /// The stream ended before the API's end-of-message event.
    #[error("{provider} model `{model}`: the stream ended before the message was complete")]
    Truncated {
        /// The provider.
        provider: ProviderKind,
        /// The model.
        model: String,
    },
    /// The stream carried something that is not the wire format.
    #[error("{provider} model `{model}`: malformed stream: {detail}")]
    Malformed {
        /// The provider.
        provider: ProviderKind,
        /// The model.
        model: String,
        /// What was wrong, on one line.
        detail: String,
    },
    /// The API reported an error inside the stream (Anthropic's `error` event, say).
    #[error("{provider} model `{model}`: the API reported {kind}: {message}")]
    Api {
        /// The provider.
        provider: ProviderKind,
        /// The model.
        model: String,
        /// The API's error type (`overloaded_error`, …), or `error` when it gave none.
        kind: String,
        /// The API's message, on one line.
        message: String,
    },
}

impl ProviderError {
    /// The HTTP status, when the API answered with one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// What kind of failure this is, without its words.
    pub fn kind(&self) -> ProviderErrorKind {
        match self {
            Self::Client { .. } => ProviderErrorKind::Client,
            Self::Encode { .. } => ProviderErrorKind::Encode,
            Self::Status { .. } => ProviderErrorKind::Status,
            Self::Connect { .. } => ProviderErrorKind::Connect,
            Self::Timeout { .. } => ProviderErrorKind::Timeout,
            Self::Stream { .. } => ProviderErrorKind::Stream,
            Self::Truncated { .. } => ProviderErrorKind::Truncated,
            Self::Malformed { .. } => ProviderErrorKind::Malformed,
            Self::Api { .. } => ProviderErrorKind::Api,
        }
    }

    /// Whether the request failed in a way the transport retries (a 429 or 5xx, a connection
    /// that failed before any answer): the same request may well succeed later, even though
    /// this one used up its attempts. The one rule both the retries and a client read.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Status { status, .. } => is_retryable_status(*status),
            Self::Connect { source, .. } => is_retryable_connect(source),
            Self::Client { .. }
            | Self::Encode { .. }
            | Self::Timeout { .. }
            | Self::Stream { .. }
            | Self::Truncated { .. }
            | Self::Malformed { .. }
            | Self::Api { .. } => false,
        }
    }

    /// The wait the API asked for before another attempt (`retry-after`), when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// What a turn keeps of this error once it ends with it: kind, status, retryability and
    /// the wait asked for, beside the one-line message. Cloneable, unlike the error (whose
    /// sources are reqwest's), so it can travel in the turn's events.
    pub fn failure(&self) -> ProviderFailure {
        ProviderFailure {
            kind: self.kind(),
            status: self.status(),
            retryable: self.is_retryable(),
            retry_after: self.retry_after(),
            message: self.to_string(),
        }
    }

    /// The same error with every occurrence of `secret` in the API's own words replaced by
    /// `***`: the one pass every error leaving a provider stream goes through.
    pub fn scrubbed(self, secret: &str) -> Self {
        if secret.is_empty() {
            return self;
        }
        let scrub = |text: String| text.replace(secret, "***");
        match self {
            Self::Status {
                provider,
                model,
                status,
                message,
                attempts,
                retry_after,
            } => Self::Status {
                provider,
                model,
                status,
                message: scrub(message),
                attempts,
                retry_after,
            },
            Self::Malformed {
                provider,
                model,
                detail,
            } => Self::Malformed {
                provider,
                model,
                detail: scrub(detail),
            },
            Self::Api {
                provider,
                model,
                kind,
                message,
            } => Self::Api {
                provider,
                model,
                kind: scrub(kind),
                message: scrub(message),
            },
            // The rest carry no text from the API (reqwest's errors name the URL, never a header).
            other => other,
        }
    }

    /// The provider the error came from.
    pub fn provider(&self) -> ProviderKind {
        match self {
            Self::Client { provider, .. }
            | Self::Encode { provider, .. }
            | Self::Status { provider, .. }
            | Self::Connect { provider, .. }
            | Self::Timeout { provider, .. }
            | Self::Stream { provider, .. }
            | Self::Truncated { provider, .. }
            | Self::Malformed { provider, .. }
            | Self::Api { provider, .. } => *provider,
        }
    }
}

/// The kinds of [`ProviderError`], by variant: what a client can act on without reading words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderErrorKind {
    Client,
    Encode,
    Status,
    Connect,
    Timeout,
    Stream,
    Truncated,
    Malformed,
    Api,
}

impl ProviderErrorKind {
    /// The snake-case name used on the wire, after `provider_` (`provider_status`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Client => "provider_client",
            Self::Encode => "provider_encode",
            Self::Status => "provider_status",
            Self::Connect => "provider_connect",
            Self::Timeout => "provider_timeout",
            Self::Stream => "provider_stream",
            Self::Truncated => "provider_truncated",
            Self::Malformed => "provider_malformed",
            Self::Api => "provider_api",
        }
    }
}

/// A provider's error as a turn keeps it (see [`ProviderError::failure`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderFailure {
    pub kind: ProviderErrorKind,
    /// The HTTP status the API answered with, if it answered with one.
    pub status: Option<u16>,
    /// See [`ProviderError::is_retryable`].
    pub retryable: bool,
    /// The wait the API asked for, if it said.
    pub retry_after: Option<Duration>,
    /// The error's own one line, key scrubbed.
    pub message: String,
}

impl std::fmt::Display for ProviderFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Which provider and model a request is for; builds the errors.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    pub(crate) provider: ProviderKind,
    pub(crate) model: String,
}

impl Origin {
    pub(crate) fn truncated(&self) -> ProviderError {
        ProviderError::Truncated {
            provider: self.provider,
            model: self.model.clone(),
        }
    }

    pub(crate) fn malformed(&self, detail: impl std::fmt::Display) -> ProviderError {
        ProviderError::Malformed {
            provider: self.provider,
            model: self.model.clone(),
            detail: one_line(&detail.to_string()),
        }
    }

    pub(crate) fn api(&self, kind: &str, message: &str) -> ProviderError {
        ProviderError::Api {
            provider: self.provider,
            model: self.model.clone(),
            kind: one_line(kind),
            message: one_line(message),
        }
    }

    pub(crate) fn timeout(&self, phase: TimeoutPhase, after: Duration) -> ProviderError {
        ProviderError::Timeout {
            provider: self.provider,
            model: self.model.clone(),
            phase,
            after,
        }
    }
}

/// Collapses whitespace runs (newlines included) to one space and caps the length, so an error
/// stays on one line.
pub(crate) fn one_line(text: &str) -> String {
    const MAX_CHARS: usize = 500;
    let mut out = String::with_capacity(text.len().min(MAX_CHARS));
    for (count, word) in text.split_whitespace().enumerate() {
        if count > 0 {
            out.push(' ');
        }
        out.push_str(word);
        if out.chars().count() > MAX_CHARS {
            let cut: String = out.chars().take(MAX_CHARS).collect();
            return format!("{cut}…");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_collapses_newlines_and_caps_length() {
        assert_eq!(one_line("  bad\n request\t\r\nhere "), "bad request here");
        let long = "x ".repeat(400);
        let short = one_line(&long);
        assert!(short.chars().count() <= 501, "{}", short.len());
        assert!(short.ends_with('…'));
    }

    #[test]
    fn scrubbing_removes_the_key_from_the_apis_words() {
        let error = ProviderError::Api {
            provider: ProviderKind::OpenAi,
            model: "m".into(),
            kind: "sk-live-1 error".into(),
            message: "bad key sk-live-1, really sk-live-1".into(),
        }
        .scrubbed("sk-live-1");
        let text = error.to_string();
        assert!(!text.contains("sk-live-1"), "{text}");
        assert!(text.contains("bad key ***, really ***"), "{text}");
        let malformed = ProviderError::Malformed {
            provider: ProviderKind::Anthropic,
            model: "m".into(),
            detail: "unexpected `sk-live-1`".into(),
        }
        .scrubbed("sk-live-1");
        assert!(!malformed.to_string().contains("sk-live-1"));
    }

    #[test]
    fn a_status_error_is_one_line_naming_provider_and_model() {
        let error = ProviderError::Status {
            provider: ProviderKind::Anthropic,
            model: "claude-x".into(),
            status: 401,
            message: "invalid x-api-key".into(),
            attempts: 1,
            retry_after: None,
        };
        assert_eq!(
            error.to_string(),
            "anthropic model `claude-x`: HTTP 401 after 1 attempt(s): invalid x-api-key"
        );
        assert_eq!(error.status(), Some(401));
        assert_eq!(error.provider(), ProviderKind::Anthropic);
    }
}
