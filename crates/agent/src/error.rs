//! The crate's error types. Only reading a scripted-provider file can fail in the pure core:
//! slash parsing, classification, the surface and the loop guard are total. A turn that ends
//! early says why with a [`TurnError`], typed up to the daemon's wire.

use std::fmt;
use std::time::Duration;

use crate::host::HostError;
use crate::provider::{ProviderError, ProviderFailure};

/// Where in a script file a problem is: the whole file, one turn, or one round of a turn, as
/// the JSON path a person would look for (`turns[1].rounds[0]`). Indexes are 0-based, like the
/// arrays they index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptPlace {
    /// The top-level object.
    File,
    /// `turns[turn]`.
    Turn {
        /// 0-based index into `turns`.
        turn: usize,
    },
    /// `turns[turn].rounds[round]`.
    Round {
        /// 0-based index into `turns`.
        turn: usize,
        /// 0-based index into that turn's `rounds`.
        round: usize,
    },
}

impl fmt::Display for ScriptPlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScriptPlace::File => f.write_str("the file"),
            ScriptPlace::Turn { turn } => write!(f, "turns[{turn}]"),
            ScriptPlace::Round { turn, round } => write!(f, "turns[{turn}].rounds[{round}]"),
        }
    }
}

/// Why a scripted-provider file could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// The file is not JSON at all.
    #[error("script: not valid JSON at line {line}, column {column}: {detail}")]
    ScriptSyntax {
        /// 1-based line of the first error.
        line: usize,
        /// 1-based column of the first error.
        column: usize,
        /// What the JSON reader found.
        detail: String,
    },
    /// A part of the file does not have the shape of the format.
    #[error("script: {place}: {detail}")]
    ScriptShape {
        /// Which part.
        place: ScriptPlace,
        /// What serde found wrong (a missing or unknown field, a wrong type).
        detail: String,
    },
    /// A child's script (`children[index]`) is wrong; `detail` is its own error's text.
    #[error("script: children[{index}]: {}", detail.strip_prefix("script: ").unwrap_or(detail))]
    ScriptChild {
        /// 0-based index into `children`.
        index: usize,
        /// What is wrong in it, as its own error says it.
        detail: String,
    },
    /// A memory subagent's script (`memory[index]`) is wrong; `detail` is its own error's text.
    #[error("script: memory[{index}]: {}", detail.strip_prefix("script: ").unwrap_or(detail))]
    ScriptMemory {
        /// 0-based index into `memory`.
        index: usize,
        /// What is wrong in it, as its own error says it.
        detail: String,
    },
    /// A tool call in a round has an empty name.
    #[error("script: turns[{turn}].rounds[{round}].tool_calls[{call}]: the name is empty")]
    ScriptEmptyToolName {
        /// 0-based index into `turns`.
        turn: usize,
        /// 0-based index into the turn's `rounds`.
        round: usize,
        /// 0-based index into the round's `tool_calls`.
        call: usize,
    },
}

/// What a turn's end says beyond its reason: the model API failed (`error`), the host could not
/// decide a call (`error`), or the answer stopped at its output cap (`max_tokens`). Carried typed
/// to `turn_ended`, whose `error` is this value's one line and whose other fields are its kind,
/// HTTP status, retryability and the wait the API asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnError {
    /// The model API failed the round's request (after the provider's retries).
    #[error("{0}")]
    Provider(ProviderFailure),
    /// The host could not decide a call: nothing unrecorded ran.
    #[error(transparent)]
    Host(#[from] HostError),
    /// Not a failure: the answer stopped at its output cap, and the sentence names the key that
    /// raises it (the provider's section of the configuration file is named after it).
    #[error("{}", capped_sentence(provider, *cap))]
    OutputCapped {
        /// The provider's name (`openai`, `anthropic`, `scripted`).
        provider: String,
        /// The cap the request was sent with, when there is one to raise.
        cap: Option<u32>,
    },
}

impl TurnError {
    /// The snake-case name of what went wrong, on the wire: a provider error's kind
    /// (`provider_status`, …), the host's (`host_not_recorded`, `host_internal`), or
    /// `output_capped`.
    pub fn kind(&self) -> &'static str {
        match self {
            TurnError::Provider(failure) => failure.kind.as_str(),
            TurnError::Host(host) => host.kind(),
            TurnError::OutputCapped { .. } => "output_capped",
        }
    }

    /// The HTTP status the model API answered with, when it answered with one.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            TurnError::Provider(failure) => failure.status,
            TurnError::Host(_) | TurnError::OutputCapped { .. } => None,
        }
    }

    /// Whether the same turn may succeed if tried again later (a rate limit, a server error,
    /// a connection that failed): see [`ProviderError::is_retryable`].
    pub fn is_retryable(&self) -> bool {
        match self {
            TurnError::Provider(failure) => failure.retryable,
            TurnError::Host(_) | TurnError::OutputCapped { .. } => false,
        }
    }

    /// The wait the model API asked for before trying again (`retry-after`), when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            TurnError::Provider(failure) => failure.retry_after,
            TurnError::Host(_) | TurnError::OutputCapped { .. } => None,
        }
    }
}

impl From<&ProviderError> for TurnError {
    fn from(error: &ProviderError) -> Self {
        TurnError::Provider(error.failure())
    }
}

/// What the person is told when an answer stopped at its output cap: the cap, and the key
/// that raises it.
fn capped_sentence(provider: &str, cap: Option<u32>) -> String {
    match cap {
        Some(cap) => format!(
            "the model hit the output cap of {cap} tokens; its partial answer is kept; raise `{provider}.max_output_tokens` for longer answers"
        ),
        None => "the model hit its output limit; its partial answer is kept".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ProviderErrorKind, ProviderKind, TimeoutPhase};

    fn status(status: u16, retry_after: Option<Duration>) -> ProviderError {
        ProviderError::Status {
            provider: ProviderKind::OpenAi,
            model: "m".into(),
            status,
            message: "slow down".into(),
            attempts: 4,
            retry_after,
        }
    }

    #[test]
    fn a_provider_status_keeps_its_kind_status_retryability_and_wait_and_its_line() {
        let limited = status(429, Some(Duration::from_millis(1500)));
        let error = TurnError::from(&limited);
        assert_eq!(error.to_string(), limited.to_string());
        assert_eq!(
            error.to_string(),
            "openai model `m`: HTTP 429 after 4 attempt(s): slow down"
        );
        assert_eq!(error.kind(), "provider_status");
        assert_eq!(error.http_status(), Some(429));
        assert!(error.is_retryable());
        assert_eq!(error.retry_after(), Some(Duration::from_millis(1500)));
        for (code, retryable) in [(500, true), (529, true), (400, false), (401, false)] {
            let error = TurnError::from(&status(code, None));
            assert_eq!(error.is_retryable(), retryable, "{code}");
            assert_eq!(error.http_status(), Some(code));
            assert_eq!(error.retry_after(), None);
        }
    }

    #[test]
    fn errors_without_a_status_say_their_kind_and_are_not_retried() {
        let timeout = ProviderError::Timeout {
            provider: ProviderKind::Anthropic,
            model: "m".into(),
            phase: TimeoutPhase::Idle,
            after: Duration::from_secs(1),
        };
        let error = TurnError::from(&timeout);
        assert_eq!(error.kind(), "provider_timeout");
        assert_eq!(
            error,
            TurnError::Provider(crate::provider::ProviderFailure {
                kind: ProviderErrorKind::Timeout,
                status: None,
                retryable: false,
                retry_after: None,
                message: timeout.to_string(),
            })
        );
        let api = ProviderError::Api {
            provider: ProviderKind::Anthropic,
            model: "m".into(),
            kind: "overloaded_error".into(),
            message: "busy".into(),
        };
        assert_eq!(TurnError::from(&api).kind(), "provider_api");
    }

    #[test]
    fn a_host_error_keeps_its_kind_and_its_line() {
        let host = HostError::NotRecorded {
            reason: "disk full".into(),
        };
        let error = TurnError::from(host.clone());
        assert_eq!(error.to_string(), host.to_string());
        assert_eq!(error.kind(), "host_not_recorded");
        assert_eq!(error.http_status(), None);
        assert!(!error.is_retryable());
        let internal = TurnError::from(HostError::Internal {
            reason: "panicked".into(),
        });
        assert_eq!(internal.kind(), "host_internal");
        assert_eq!(
            internal.to_string(),
            "deciding a call failed inside the daemon: panicked"
        );
    }

    #[test]
    fn an_answer_at_its_cap_names_the_cap_and_the_key() {
        let capped = TurnError::OutputCapped {
            provider: "openai".into(),
            cap: Some(300),
        };
        assert_eq!(
            capped.to_string(),
            "the model hit the output cap of 300 tokens; its partial answer is kept; raise `openai.max_output_tokens` for longer answers"
        );
        assert_eq!(capped.kind(), "output_capped");
        let uncapped = TurnError::OutputCapped {
            provider: "scripted".into(),
            cap: None,
        };
        assert_eq!(
            uncapped.to_string(),
            "the model hit its output limit; its partial answer is kept"
        );
    }
}
