//! `[telemetry]`: where traces are exported, if anywhere. The exporter is [`crate::server::telemetry`].

use std::collections::BTreeMap;

use serde::Deserialize;

use super::values::http_url;
use crate::error::ConfigError;

/// `service.name` when `[telemetry] service_name` is unset.
pub const DEFAULT_SERVICE_NAME: &str = "codarisd";
/// The OTLP/HTTP path of traces beneath the collector's base URL.
const TRACES_PATH: &str = "/v1/traces";

/// `[telemetry]` as written.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryToml {
    /// The collector's OTLP/HTTP base URL, e.g. `http://127.0.0.1:4318` (traces go to
    /// `<it>/v1/traces`; a URL that already ends so is used as it is).
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the resource (default `codarisd`).
    pub service_name: Option<String>,
    /// Headers sent with every export, e.g. `{ authorization = "Bearer …" }`.
    pub headers: Option<BTreeMap<String, String>>,
}

/// The resolved `[telemetry]` table: present only when an endpoint is configured. Header values
/// (often a token) are never printed by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct TelemetryConfig {
    /// Where traces are posted: the full `…/v1/traces` URL.
    pub traces_url: String,
    pub service_name: String,
    pub headers: Vec<(String, String)>,
}

impl TelemetryConfig {
    /// The traces URL without the credentials it may carry (`http://user:secret@host`, a
    /// `?token=` query), for logs: masked as a permission card masks an address.
    pub fn shown_url(&self) -> String {
        codaris_tools::preview::masked_url(&self.traces_url)
    }
}

impl std::fmt::Debug for TelemetryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("TelemetryConfig")
            .field("traces_url", &self.shown_url())
            .field("service_name", &self.service_name)
            .field("headers", &names)
            .finish()
    }
}

/// Resolves `[telemetry]`: `None` when no endpoint is set (the other keys then have no use and
/// are refused, so a half-written table is not silently inert).
pub fn resolve(
    toml: Option<TelemetryToml>,
    origin: &dyn Fn(&str) -> String,
) -> Result<Option<TelemetryConfig>, ConfigError> {
    let Some(toml) = toml else { return Ok(None) };
    let Some(endpoint) = toml.otlp_endpoint else {
        if toml.service_name.is_some() || toml.headers.is_some() {
            return Err(ConfigError::Invalid {
                key: origin("telemetry"),
                reason: "sets no `otlp_endpoint`, so nothing would be exported; name the collector's URL or remove the table".to_owned(),
            });
        }
        return Ok(None);
    };
    let base = http_url(&origin("telemetry.otlp_endpoint"), &endpoint)?;
    let traces_url = if base.trim_end_matches('/').ends_with(TRACES_PATH) {
        base
    } else {
        format!("{}{TRACES_PATH}", base.trim_end_matches('/'))
    };
    let service_name = match toml.service_name.map(|name| name.trim().to_owned()) {
        None => DEFAULT_SERVICE_NAME.to_owned(),
        Some(name) if name.is_empty() => {
            return Err(ConfigError::Invalid {
                key: origin("telemetry.service_name"),
                reason: "is empty".to_owned(),
            });
        }
        Some(name) => name,
    };
    let mut headers = Vec::new();
    for (name, value) in toml.headers.unwrap_or_default() {
        let invalid = |what: &str| ConfigError::Invalid {
            key: origin("telemetry.headers"),
            // The name only: the value is often a token.
            reason: format!("header `{name}` has an invalid {what}"),
        };
        http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid("name"))?;
        http::HeaderValue::from_str(&value).map_err(|_| invalid("value"))?;
        headers.push((name, value));
    }
    Ok(Some(TelemetryConfig {
        traces_url,
        service_name,
        headers,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(key: &str) -> String {
        format!("`{key}` in /c.toml")
    }

    #[test]
    fn no_table_or_no_endpoint_builds_nothing() {
        assert_eq!(resolve(None, &origin).unwrap(), None);
        assert_eq!(
            resolve(Some(TelemetryToml::default()), &origin).unwrap(),
            None
        );
        let half = TelemetryToml {
            service_name: Some("x".into()),
            ..TelemetryToml::default()
        };
        assert!(resolve(Some(half), &origin).is_err());
    }

    #[test]
    fn the_endpoint_is_a_base_url_and_traces_go_beneath_it() {
        let with = |url: &str| TelemetryToml {
            otlp_endpoint: Some(url.into()),
            ..TelemetryToml::default()
        };
        let config = resolve(Some(with("http://127.0.0.1:4318")), &origin)
            .unwrap()
            .unwrap();
        assert_eq!(config.traces_url, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(config.service_name, "codarisd");
        let config = resolve(Some(with("https://otel.example.org/v1/traces")), &origin)
            .unwrap()
            .unwrap();
        assert_eq!(config.traces_url, "https://otel.example.org/v1/traces");
        let err = resolve(Some(with("grpc://127.0.0.1:4317")), &origin)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`telemetry.otlp_endpoint` in /c.toml"),
            "{err}"
        );
    }

    #[test]
    fn a_header_value_is_never_printed() {
        let toml = TelemetryToml {
            otlp_endpoint: Some("http://127.0.0.1:4318".into()),
            service_name: None,
            headers: Some(BTreeMap::from([(
                "authorization".to_owned(),
                "Bearer sk-very-secret".to_owned(),
            )])),
        };
        let config = resolve(Some(toml), &origin).unwrap().unwrap();
        assert!(!format!("{config:?}").contains("sk-very-secret"));
        let with_password = resolve(
            Some(TelemetryToml {
                otlp_endpoint: Some("https://user:pw-secret@otel.example.org".into()),
                ..TelemetryToml::default()
            }),
            &origin,
        )
        .unwrap()
        .unwrap();
        assert!(!with_password.shown_url().contains("pw-secret"));
        assert!(!format!("{with_password:?}").contains("pw-secret"));
        let bad = TelemetryToml {
            otlp_endpoint: Some("http://127.0.0.1:4318".into()),
            service_name: None,
            headers: Some(BTreeMap::from([(
                "x-token".to_owned(),
                "sk-secret\nInjected: 1".to_owned(),
            )])),
        };
        let err = resolve(Some(bad), &origin).unwrap_err().to_string();
        assert!(!err.contains("sk-secret"), "{err}");
    }
}
