//! The E-utilities client: configuration, the shared throttle, and one request with its
//! retries. The utilities themselves (`esearch`, `esummary`, `efetch`) build on
//! [`Eutils::call`].

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::StatusCode;
use url::Url;

use crate::error::NcbiError;
use crate::throttle::{
    REQUESTS_PER_SECOND_WITH_KEY, REQUESTS_PER_SECOND_WITHOUT_KEY, Throttle, interval_for,
};

/// NCBI's own address for the E-utilities.
pub const DEFAULT_BASE_URL: &str = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/";
/// The `tool` parameter NCBI asks every client to send.
pub const DEFAULT_TOOL: &str = "codaris";
/// Above this many ids a request goes as a POST form, as NCBI asks for long id lists.
pub const POST_ABOVE_IDS: usize = 200;
/// Bytes of an answer read at most (a hundred PubMed records in XML are a few MB).
const MAX_BODY: usize = 32 * 1024 * 1024;
/// The longest `Retry-After` honoured; a server asking for more gets this.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);

/// How to reach the E-utilities: `[ncbi]` of the daemon's configuration.
#[derive(Clone, PartialEq, Eq)]
pub struct EutilsConfig {
    /// Where `esearch.fcgi` and the others live; a missing final `/` is added.
    pub base_url: String,
    /// The `tool` parameter: the application's name, no spaces.
    pub tool: String,
    /// The `email` parameter NCBI uses to reach a client's developer before blocking it.
    pub email: Option<String>,
    /// Raises the limit from 3 to 10 requests a second. Never printed.
    pub api_key: Option<String>,
    /// Retries of an answer 429 before the call fails.
    pub max_retries: u32,
    /// The wait before the first retry, doubled before each next one (when the answer names
    /// no `Retry-After`).
    pub retry_base_delay: Duration,
    /// How long one request may take.
    pub timeout: Duration,
}

impl Default for EutilsConfig {
    fn default() -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.to_owned(),
            tool: DEFAULT_TOOL.to_owned(),
            email: None,
            api_key: None,
            max_retries: 3,
            retry_base_delay: Duration::from_millis(500),
            timeout: Duration::from_secs(30),
        }
    }
}

impl fmt::Debug for EutilsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EutilsConfig")
            .field("base_url", &self.base_url)
            .field("tool", &self.tool)
            .field("email", &self.email)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("max_retries", &self.max_retries)
            .field("retry_base_delay", &self.retry_base_delay)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl EutilsConfig {
    /// The requests a second NCBI allows this configuration.
    pub fn requests_per_second(&self) -> u32 {
        if self.api_key.is_some() {
            REQUESTS_PER_SECOND_WITH_KEY
        } else {
            REQUESTS_PER_SECOND_WITHOUT_KEY
        }
    }
}

/// A handle on the E-utilities. Clones share one HTTP client and one throttle, so the whole
/// daemon stays under NCBI's limit together.
#[derive(Clone)]
pub struct Eutils {
    inner: Arc<Inner>,
}

struct Inner {
    /// Built on the first request, not with the client: building it reads and parses the
    /// system's certificate store, a fifth of a daemon's start, which a daemon that never
    /// searches NCBI should not pay for (nor keep in memory).
    http: OnceLock<reqwest::Client>,
    base: Url,
    config: EutilsConfig,
    throttle: Throttle,
}

impl Inner {
    /// The HTTP client, built by the first request that needs it.
    fn http(&self) -> Result<&reqwest::Client, NcbiError> {
        if let Some(http) = self.http.get() {
            return Ok(http);
        }
        let built = crate::tls::client_builder()
            .user_agent(concat!("codaris/", env!("CARGO_PKG_VERSION")))
            .timeout(self.config.timeout)
            .redirect(same_origin_redirects())
            .build()
            .map_err(|error| NcbiError::Client {
                detail: error.without_url().to_string(),
            })?;
        // Two first requests at once may both build one; the first one kept is shared.
        Ok(self.http.get_or_init(|| built))
    }
}

impl fmt::Debug for Eutils {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Eutils")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// How a request's parameters travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    /// A form body, for long id lists.
    Post,
}

impl Eutils {
    pub fn new(config: EutilsConfig) -> Result<Self, NcbiError> {
        let bad_url = || NcbiError::BadBaseUrl {
            base_url: config.base_url.clone(),
        };
        let mut text = config.base_url.trim().to_owned();
        if !text.ends_with('/') {
            text.push('/');
        }
        let base = Url::parse(&text).map_err(|_| bad_url())?;
        if !matches!(base.scheme(), "http" | "https")
            || base.host_str().is_none()
            || base.query().is_some()
        {
            return Err(bad_url());
        }
        let tool_ok = !config.tool.is_empty()
            && config
                .tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !tool_ok {
            return Err(NcbiError::BadTool {
                tool: config.tool.clone(),
            });
        }
        let throttle = Throttle::new(interval_for(config.requests_per_second()));
        Ok(Self {
            inner: Arc::new(Inner {
                http: OnceLock::new(),
                base,
                config,
                throttle,
            }),
        })
    }

    pub fn config(&self) -> &EutilsConfig {
        &self.inner.config
    }

    /// One utility call (`esearch.fcgi`, …) with `params`, the identifying parameters added,
    /// throttled, a 429 retried; the body of a 200 answer.
    pub(crate) async fn call(
        &self,
        utility: &'static str,
        params: Vec<(&'static str, String)>,
        method: Method,
    ) -> Result<String, NcbiError> {
        let inner = &self.inner;
        let url =
            inner
                .base
                .join(&format!("{utility}.fcgi"))
                .map_err(|_| NcbiError::BadBaseUrl {
                    base_url: inner.config.base_url.clone(),
                })?;
        let params = self.with_identity(params);
        let http = inner.http()?;
        let mut retry = 0;
        loop {
            inner.throttle.wait().await;
            let request = match method {
                Method::Get => http.get(url.clone()).query(&params),
                Method::Post => http.post(url.clone()).form(&params),
            };
            let mut response = request
                .send()
                .await
                .map_err(|error| self.transport_error(utility, error))?;
            let status = response.status();
            if status == StatusCode::TOO_MANY_REQUESTS {
                let wait = retry_after(&response);
                let body = read_body(&mut response, utility)
                    .await
                    .map_err(|error| self.scrub(error))?;
                if retry >= inner.config.max_retries {
                    return Err(NcbiError::RateLimited {
                        utility,
                        retries: retry,
                        limit: rate_limit_note(&body),
                    });
                }
                let backoff = inner
                    .config
                    .retry_base_delay
                    .checked_mul(2u32.saturating_pow(retry))
                    .unwrap_or(MAX_RETRY_WAIT);
                tokio::time::sleep(wait.unwrap_or(backoff).min(MAX_RETRY_WAIT)).await;
                retry += 1;
                continue;
            }
            let body = read_body(&mut response, utility)
                .await
                .map_err(|error| self.scrub(error))?;
            if !status.is_success() {
                return Err(NcbiError::Status {
                    utility,
                    status: status.as_u16(),
                    detail: self.redact(&one_line(&body, 200)),
                });
            }
            return Ok(body);
        }
    }

    /// `params` with `tool`, `email` and `api_key` appended, as NCBI asks of every request.
    fn with_identity(
        &self,
        mut params: Vec<(&'static str, String)>,
    ) -> Vec<(&'static str, String)> {
        let config = &self.inner.config;
        params.push(("tool", config.tool.clone()));
        if let Some(email) = &config.email {
            params.push(("email", email.clone()));
        }
        if let Some(key) = &config.api_key {
            params.push(("api_key", key.clone()));
        }
        params
    }

    fn transport_error(&self, utility: &'static str, error: reqwest::Error) -> NcbiError {
        if error.is_timeout() {
            return NcbiError::Timeout {
                utility,
                seconds: self.inner.config.timeout.as_secs(),
            };
        }
        // The URL carries the key in its query: drop it, then name every cause, since
        // reqwest's own message ("error sending request") says nothing a person can act on.
        let error = error.without_url();
        let mut detail = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            detail.push_str(": ");
            detail.push_str(&cause.to_string());
            source = cause.source();
        }
        NcbiError::Request {
            utility,
            detail: self.redact(&detail),
        }
    }

    /// `text` with the API key, wherever it appears, replaced: NCBI echoes the key in its 429
    /// body, and a hostile or broken server may echo anything.
    pub fn redact(&self, text: &str) -> String {
        match &self.inner.config.api_key {
            Some(key) if !key.is_empty() => text.replace(key.as_str(), "<api_key>"),
            _ => text.to_owned(),
        }
    }

    pub(crate) fn scrub(&self, error: NcbiError) -> NcbiError {
        match error {
            NcbiError::Request { utility, detail } => NcbiError::Request {
                utility,
                detail: self.redact(&detail),
            },
            NcbiError::Malformed {
                utility,
                expected,
                detail,
            } => NcbiError::Malformed {
                utility,
                expected,
                detail: self.redact(&detail),
            },
            NcbiError::Reported { utility, message } => NcbiError::Reported {
                utility,
                message: self.redact(&message),
            },
            other => other,
        }
    }
}

/// Redirects followed only within the configured origin: the key travels in the query, so a
/// redirect elsewhere would hand it to another server. Anything else ends as a 3xx error.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if same_origin && attempt.previous().len() <= 5 {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// `Retry-After` in seconds (the only form an API server sends in practice).
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?;
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// ` (limit 3 requests a second)` from NCBI's 429 body
/// `{"error":"API rate limit exceeded","api-key":"…","count":"26","limit":"3"}`; the key it
/// echoes is left out.
pub(crate) fn rate_limit_note(body: &str) -> String {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
        return String::new();
    };
    let number = |name: &str| match &value[name] {
        serde_json::Value::String(text) => text.trim().parse::<u64>().ok(),
        other => other.as_u64(),
    };
    match (number("limit"), number("count")) {
        (Some(limit), Some(count)) => {
            format!(" (limit {limit} requests a second, {count} counted)")
        }
        (Some(limit), None) => format!(" (limit {limit} requests a second)"),
        _ => String::new(),
    }
}

async fn read_body(
    response: &mut reqwest::Response,
    utility: &'static str,
) -> Result<String, NcbiError> {
    let mut body = Vec::new();
    loop {
        let chunk = response.chunk().await.map_err(|error| NcbiError::Request {
            utility,
            detail: error.without_url().to_string(),
        })?;
        let Some(chunk) = chunk else { break };
        if body.len() + chunk.len() > MAX_BODY {
            return Err(NcbiError::TooLarge {
                utility,
                limit: MAX_BODY,
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// The first `max` characters of `text` on one line, for an error message.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &flat[..end]),
        None if flat.is_empty() => "an empty body".to_owned(),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_429_body_names_the_limit_and_not_the_key() {
        let body = r#"{"error":"API rate limit exceeded","api-key":"203.0.113.7","count":"26","limit":"3"}"#;
        assert_eq!(
            rate_limit_note(body),
            " (limit 3 requests a second, 26 counted)"
        );
        assert_eq!(rate_limit_note("<html>busy</html>"), "");
        let error = NcbiError::RateLimited {
            utility: "esearch",
            retries: 3,
            limit: rate_limit_note(body),
        };
        let text = error.to_string();
        assert!(
            text.starts_with("NCBI rate limit exceeded on esearch after 3 retries (limit 3"),
            "{text}"
        );
        assert!(!text.contains("203.0.113.7"));
    }

    #[test]
    fn debug_never_shows_the_key() {
        let config = EutilsConfig {
            api_key: Some("s3cr3t-key-value".into()),
            email: Some("a@b.org".into()),
            ..EutilsConfig::default()
        };
        let client = Eutils::new(config.clone()).unwrap();
        for printed in [format!("{config:?}"), format!("{client:?}")] {
            assert!(!printed.contains("s3cr3t"), "{printed}");
            assert!(printed.contains("<redacted>"), "{printed}");
        }
        assert_eq!(
            client.redact("key s3cr3t-key-value echoed"),
            "key <api_key> echoed"
        );
    }

    #[test]
    fn bad_settings_are_refused_in_one_line() {
        for base_url in ["ftp://x/", "not a url", "http://", "https://x/?a=b"] {
            let error = Eutils::new(EutilsConfig {
                base_url: base_url.into(),
                ..EutilsConfig::default()
            })
            .unwrap_err();
            assert!(matches!(error, NcbiError::BadBaseUrl { .. }), "{base_url}");
        }
        let error = Eutils::new(EutilsConfig {
            tool: "my tool".into(),
            ..EutilsConfig::default()
        })
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "the NCBI `tool` name must be letters, digits, `_`, `-` or `.` (got `my tool`)"
        );
        // A base without its final slash still reaches the utilities beneath it.
        let client = Eutils::new(EutilsConfig {
            base_url: "http://127.0.0.1:9/entrez/eutils".into(),
            ..EutilsConfig::default()
        })
        .unwrap();
        assert_eq!(
            client.inner.base.join("esearch.fcgi").unwrap().as_str(),
            "http://127.0.0.1:9/entrez/eutils/esearch.fcgi"
        );
    }

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\n  b\tc", 10), "a b c");
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("  ", 3), "an empty body");
    }
}
