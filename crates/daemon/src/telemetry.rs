//! OpenTelemetry traces over OTLP/HTTP (protobuf), only when `[telemetry] otlp_endpoint` is set.
//!
//! What is exported: the spans `turn` (`session.id`, `turn`, `provider`, `model`), `model_request`
//! (`provider`, `model`) and `tool_call` (`tool.name`, `tool.call_id`), and inside a tool call
//! the event `dispatch decision` with `decision.code`, `decision.verdict`, `decision.seq`,
//! `tool.name` and `session.id`. A call's arguments, a model's text and the provider keys are
//! never attributes: what leaves is what the ledger's decision codes already say.
//!
//! Without an endpoint no exporter is built and nothing leaves the machine; the `OTEL_*`
//! environment variables alone never turn export on. Spans are batched on the SDK's own thread
//! with a blocking HTTP client, so the daemon's runtime never waits on the collector (spans a
//! collector that is down cannot take are dropped); [`Telemetry::shutdown`] flushes what is
//! pending when the daemon stops. Spans are info-level: `RUST_LOG` below info has none to
//! export.
//!
//! Non-goals: metrics and logs over OTLP (the log file and its JSON lines serve those), and
//! gRPC export.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde::Deserialize;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

use crate::error::ConfigError;

/// `service.name` when `[telemetry] service_name` is unset.
pub const DEFAULT_SERVICE_NAME: &str = "codarisd";
/// The OTLP/HTTP path of traces beneath the collector's base URL.
const TRACES_PATH: &str = "/v1/traces";
/// How long one export may take before the SDK gives it up.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

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
    let base = crate::config::http_url(&origin("telemetry.otlp_endpoint"), &endpoint)?;
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

/// Why the exporter could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the OTLP exporter for {url}: {reason}")]
pub struct TelemetryError {
    url: String,
    reason: String,
}

/// The running trace pipeline; [`Telemetry::shutdown`] flushes it.
#[derive(Debug)]
pub struct Telemetry {
    provider: SdkTracerProvider,
}

impl Telemetry {
    /// Builds the exporter and the batch processor. Call outside any async runtime: the
    /// blocking HTTP client must not be made or dropped on one.
    pub fn start(config: &TelemetryConfig) -> Result<Self, TelemetryError> {
        let headers: HashMap<String, String> = config.headers.iter().cloned().collect();
        let client = ExportClient::new().map_err(|err| TelemetryError {
            url: config.shown_url(),
            reason: err.to_string(),
        })?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(config.traces_url.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .with_headers(headers)
            .build()
            .map_err(|err| TelemetryError {
                url: config.shown_url(),
                reason: err.to_string(),
            })?;
        let resource = Resource::builder()
            .with_service_name(config.service_name.clone())
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        Ok(Self { provider })
    }

    /// The layer that turns the daemon's spans and their events into OpenTelemetry spans:
    /// Codaris's own crates only, at info and above, so neither the HTTP stack's spans nor
    /// the exporter's own requests are exported.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'span> LookupSpan<'span>,
    {
        let tracer = self.provider.tracer("codarisd");
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                meta.target().starts_with("codaris") && *meta.level() <= tracing::Level::INFO
            }))
    }

    /// Exports what is still batched and stops the exporter.
    pub fn shutdown(self) {
        if let Err(err) = self.provider.shutdown() {
            tracing::warn!(%err, "the last traces were not exported");
        }
    }
}

/// The exporter's HTTP client: a blocking reqwest client (the SDK's batch thread has no async
/// runtime), the workspace's reqwest rather than the exporter's own, which is built on an
/// older one. What `opentelemetry-http` does for its own reqwest, on this one.
#[derive(Debug)]
struct ExportClient(reqwest::blocking::Client);

impl ExportClient {
    /// Call outside any async runtime, as [`Telemetry::start`] is.
    fn new() -> Result<Self, reqwest::Error> {
        // reqwest brings no crypto provider (the workspace Cargo.toml says why): ring, once
        // for the process; an error only says one is installed already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::blocking::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map(Self)
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for ExportClient {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let mut response = self.0.execute(request.try_into()?)?.error_for_status()?;
        let headers = std::mem::take(response.headers_mut());
        let mut answer = http::Response::builder()
            .status(response.status())
            .body(response.bytes()?)?;
        *answer.headers_mut() = headers;
        Ok(answer)
    }
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
