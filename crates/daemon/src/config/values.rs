//! Shapes more than one section uses: an http(s) URL, a tool output's limits, where a value
//! came from.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutputLimitsToml {
    pub max_bytes: Option<usize>,
    pub max_lines: Option<usize>,
}

/// `url` trimmed, when it parses as an http:// or https:// URL with a host; else why not, under
/// `key`.
pub fn http_url(key: &str, url: &str) -> Result<String, ConfigError> {
    let url = url.trim();
    let parsed = url::Url::parse(url).map_err(|err| ConfigError::Invalid {
        key: key.to_owned(),
        reason: format!("`{url}` is not a URL ({err})"),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(ConfigError::Invalid {
            key: key.to_owned(),
            reason: format!("`{url}` is not an http:// or https:// URL"),
        });
    }
    Ok(url.to_owned())
}

/// What set a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    Default,
    File,
    Environment,
    Flag,
    /// `codaris login` (`<state>/credentials.toml`).
    Login,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::File => "file",
            Self::Environment => "environment",
            Self::Flag => "flag",
            Self::Login => "login",
        }
    }
}

/// A key or token: blank means none; control characters are refused without echoing it.
pub fn secret(key: &str, value: Option<String>) -> Result<Option<String>, ConfigError> {
    match value.map(|value| value.trim().to_owned()) {
        None => Ok(None),
        Some(value) if value.is_empty() => Ok(None),
        Some(value) if value.chars().any(char::is_control) => Err(ConfigError::Invalid {
            key: key.to_owned(),
            reason: "holds a control character (the value is not shown)".to_owned(),
        }),
        Some(value) => Ok(Some(value)),
    }
}
