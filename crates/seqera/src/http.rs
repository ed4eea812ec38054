//! The HTTP side shared by the Wave and Platform clients: one client configuration, and the
//! rule that the token never leaves in words (every message that could quote an answer is
//! passed through [`redact`]).

use std::time::Duration;

use crate::ToolFailure;

/// How long one HTTP request may take (a Wave build is waited for by polling, not by this).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The most of an answer body quoted in an error.
pub const QUOTED_BODY: usize = 300;

/// An HTTP client that names Codaris.
pub fn client() -> Result<reqwest::Client, ToolFailure> {
    crate::tls::client_builder()
        .user_agent(concat!("codaris-seqera/", env!("CARGO_PKG_VERSION")))
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|err| ToolFailure::new(format!("cannot set up an HTTP client: {err}")))
}

/// `text` with every occurrence of the token replaced (an answer may echo what it was sent).
pub fn redact(text: &str, token: Option<&str>) -> String {
    match token {
        Some(token) if !token.is_empty() => text.replace(token, "<redacted>"),
        _ => text.to_owned(),
    }
}

/// Why a request did not get an answer, in words, through [`redact`].
pub fn unreachable(
    service: &str,
    base: &str,
    err: &reqwest::Error,
    token: Option<&str>,
) -> ToolFailure {
    let why = if err.is_timeout() {
        "no answer in time".to_owned()
    } else if err.is_connect() {
        "cannot connect".to_owned()
    } else if err.is_decode() {
        "its answer could not be read".to_owned()
    } else {
        err.to_string()
    };
    ToolFailure::new(redact(&format!("{service} at {base}: {why}"), token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_removes_the_token_everywhere() {
        assert_eq!(
            redact("a tok b tok", Some("tok")),
            "a <redacted> b <redacted>"
        );
        assert_eq!(redact("a tok", None), "a tok");
        assert_eq!(redact("a", Some("")), "a");
    }
}
