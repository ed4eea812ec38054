//! How to reach a model: which API, which model, the key, the base URL, timeouts and retries.
//!
//! Plain data. Resolving it from the environment and the config file is the daemon's job; the
//! names of the variables it reads are here so that every caller spells them the same way, and
//! so is [`ProviderChoice`], the provider a session runs with, so nothing matches its name.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// The Anthropic Messages API.
    Anthropic,
    /// OpenAI Chat Completions, and the servers that speak it (llama.cpp, Ollama, vLLM,
    /// Perplexity).
    #[serde(rename = "openai")]
    OpenAi,
}

impl ProviderKind {
    /// Every wire format, e.g. for the environment variables that may hold a key.
    pub const ALL: [ProviderKind; 2] = [ProviderKind::Anthropic, ProviderKind::OpenAi];

    /// The name used in `CODARIS_PROVIDER`, errors and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
        }
    }

    /// The environment variable holding the key: the one list of key variables the daemon
    /// reads and takes out of its environment.
    pub fn api_key_env(self) -> &'static str {
        match self {
            Self::Anthropic => "ANTHROPIC_API_KEY",
            Self::OpenAi => "OPENAI_API_KEY",
        }
    }

    /// The environment variable holding the base URL.
    pub fn base_url_env(self) -> &'static str {
        match self {
            Self::Anthropic => "ANTHROPIC_BASE_URL",
            Self::OpenAi => "OPENAI_BASE_URL",
        }
    }

    /// The public endpoint. Anthropic's base has no `/v1` (requests go to `{base}/v1/messages`);
    /// OpenAI's includes it (requests go to `{base}/chat/completions`), as each vendor's SDKs
    /// read their `*_BASE_URL`.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Anthropic => "https://api.anthropic.com",
            Self::OpenAi => "https://api.openai.com/v1",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which model answers a session: the scripted stand-in that replays a script file (tests, the
/// demo), or an HTTP API of one [`ProviderKind`]. Stored and sent by the names of
/// `CODARIS_PROVIDER`: `scripted`, `anthropic`, `openai`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderChoice {
    /// The scripted provider: no model, a script's rounds replayed.
    Scripted,
    /// A model behind an HTTP API.
    Api(ProviderKind),
}

impl ProviderChoice {
    /// Every choice, in the order the names are listed to people.
    pub const ALL: [ProviderChoice; 3] = [
        ProviderChoice::Scripted,
        ProviderChoice::Api(ProviderKind::Anthropic),
        ProviderChoice::Api(ProviderKind::OpenAi),
    ];

    /// The names a person may give, for error messages.
    pub const NAMES: &'static str = "scripted, anthropic, openai";

    /// The name used in `CODARIS_PROVIDER`, `[provider] name`, the API and stored sessions.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderChoice::Scripted => "scripted",
            ProviderChoice::Api(kind) => kind.as_str(),
        }
    }

    /// The choice `name` names, exactly as [`ProviderChoice::as_str`] spells it.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|choice| choice.as_str() == name)
    }
}

impl fmt::Display for ProviderChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ProviderChoice {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProviderChoice {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Self::parse(&name).ok_or_else(|| {
            serde::de::Error::unknown_variant(&name, &["scripted", "anthropic", "openai"])
        })
    }
}

/// An API key. It prints as `***` in `Debug`, has no `Display` and no `Serialize`, and only this
/// module's HTTP code can read it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a key.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The key, for a request header.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// How long to wait, and for what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the TCP (and TLS) connection.
    pub connect: Duration,
    /// From sending the request to the response headers, per attempt.
    pub request: Duration,
    /// The longest silence allowed between two pieces of the streamed body. Anthropic sends
    /// `ping` events, so a healthy stream is never this quiet.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            request: Duration::from_secs(120),
            idle: Duration::from_secs(120),
        }
    }
}

/// Retries of a request that failed before its stream started: 429, 500–599 and connection
/// errors. A stream that fails after it started is not retried (its events were delivered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// The backoff before the first retry; it doubles each time.
    pub initial_backoff: Duration,
    /// The cap of the exponential backoff.
    pub max_backoff: Duration,
    /// The longest `retry-after` honoured; a server asking for more ends the retries at once.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// The most tokens one model answer may have when the configuration says nothing
/// (`[openai] max_output_tokens`, `[anthropic] max_output_tokens`), for every provider.
///
/// Why a cap at all: without one, an OpenAI-compatible server generates until its context is
/// full (a small local model answering "say hello in five words" ran five minutes and 7,978
/// tokens). Why 8192: it was already the Anthropic route's value (its API requires one), it
/// holds a whole-file `write` of several hundred lines in one tool call, and it is within the
/// output limit of every current hosted model, so no request is refused for asking too much.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 8192;

/// Everything a provider needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The wire format.
    pub kind: ProviderKind,
    /// The model name sent to the API.
    pub model: String,
    /// The key; local servers often need none.
    pub api_key: Option<Secret>,
    /// See [`ProviderKind::default_base_url`] for the form each kind expects.
    pub base_url: String,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Retries.
    pub retry: RetryPolicy,
    /// The output cap of every answer whose request sets none ([`DEFAULT_MAX_OUTPUT_TOKENS`]
    /// unless configured); at least 1.
    pub max_output_tokens: u32,
    /// The reasoning level the session set (`switch_model`): sent as `reasoning_effort` to
    /// Chat Completions; the Anthropic route has no setting for it (its extended thinking is
    /// not sent), so it is not read there. `None`: the model's own.
    pub reasoning: Option<codaris_catalogue::Reasoning>,
}

impl ProviderConfig {
    /// A config for the public endpoint of `kind` with default timeouts and retries.
    pub fn new(kind: ProviderKind, model: impl Into<String>, api_key: Option<Secret>) -> Self {
        Self {
            kind,
            model: model.into(),
            api_key,
            base_url: kind.default_base_url().to_owned(),
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            reasoning: None,
        }
    }

    /// The same config with a reasoning level (see [`ProviderConfig::reasoning`]).
    #[must_use]
    pub fn with_reasoning(mut self, reasoning: Option<codaris_catalogue::Reasoning>) -> Self {
        self.reasoning = reasoning;
        self
    }

    /// The same config with another output cap (0 is taken as 1: a cap of nothing is no answer).
    #[must_use]
    pub fn with_max_output_tokens(mut self, max_output_tokens: u32) -> Self {
        self.max_output_tokens = max_output_tokens.max(1);
        self
    }

    /// The same config pointed at another base URL.
    #[must_use]
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        match self.kind {
            ProviderKind::Anthropic => format!("{base}/v1/messages"),
            ProviderKind::OpenAi => format!("{base}/chat/completions"),
        }
    }
}

/// The model name prefixes guessed to take pictures when the configuration does not say
/// (`[[models]] multimodal`): Claude, and OpenAI's GPT-4o, GPT-4.1, GPT-5, o3 and o4 families.
pub const MULTIMODAL_PREFIXES: &[&str] = &["claude-", "gpt-4o", "gpt-4.1", "gpt-5", "o3", "o4"];

/// Whether a model takes pictures, guessed from its name alone: its last `/`-separated segment
/// (so a router's `anthropic/claude-…` counts), case-insensitively, starts with one of
/// [`MULTIMODAL_PREFIXES`]. Anything else, local models included, is guessed not to.
pub fn multimodal_by_name(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    MULTIMODAL_PREFIXES
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_multimodal_guess_knows_claude_and_the_openai_vision_families() {
        for model in [
            "claude-sonnet-4-5",
            "claude-3-5-haiku-latest",
            "Claude-Opus-4-1",
            "anthropic/claude-sonnet-4",
            "gpt-4o",
            "gpt-4o-mini",
            "gpt-4.1-nano",
            "gpt-5",
            "gpt-5-mini",
            "o3",
            "o3-mini",
            "o4-mini",
        ] {
            assert!(multimodal_by_name(model), "{model}");
        }
        for model in [
            "",
            "local-model",
            "llama3.1:8b",
            "qwen2.5-coder",
            "gpt-4",
            "gpt-3.5-turbo",
            "o1-mini",
            "my-claude-finetune",
        ] {
            assert!(!multimodal_by_name(model), "{model}");
        }
    }

    #[test]
    fn endpoints_follow_each_sdks_base_url_convention() {
        let anthropic = ProviderConfig::new(ProviderKind::Anthropic, "m", None);
        assert_eq!(
            anthropic.endpoint(),
            "https://api.anthropic.com/v1/messages"
        );
        let openai = ProviderConfig::new(ProviderKind::OpenAi, "m", None)
            .with_base_url("http://localhost:11434/v1/");
        assert_eq!(
            openai.endpoint(),
            "http://localhost:11434/v1/chat/completions"
        );
    }

    #[test]
    fn a_secret_never_prints() {
        let config = ProviderConfig::new(
            ProviderKind::OpenAi,
            "m",
            Some(Secret::new("sk-very-secret")),
        );
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-very-secret"), "{shown}");
        assert!(shown.contains("Secret(***)"), "{shown}");
    }

    #[test]
    fn kinds_round_trip_their_names() {
        for kind in ProviderKind::ALL {
            let json = serde_json::to_string(&kind).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
    }

    #[test]
    fn choices_round_trip_the_names_of_codaris_provider() {
        let names: Vec<&str> = ProviderChoice::ALL.map(ProviderChoice::as_str).to_vec();
        assert_eq!(names.join(", "), ProviderChoice::NAMES);
        for choice in ProviderChoice::ALL {
            let json = serde_json::to_string(&choice).unwrap_or_default();
            assert_eq!(json, format!("\"{choice}\""));
            let back: Option<ProviderChoice> = serde_json::from_str(&json).ok();
            assert_eq!(back, Some(choice));
            assert_eq!(ProviderChoice::parse(choice.as_str()), Some(choice));
        }
        assert_eq!(ProviderChoice::parse("Anthropic"), None);
        assert!(serde_json::from_str::<ProviderChoice>("\"gemini\"").is_err());
    }

    #[test]
    fn each_kind_names_its_own_variables() {
        let keys = ProviderKind::ALL.map(ProviderKind::api_key_env);
        assert_eq!(keys, ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]);
        let urls = ProviderKind::ALL.map(ProviderKind::base_url_env);
        assert_eq!(urls, ["ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"]);
    }
}
