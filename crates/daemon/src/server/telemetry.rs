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

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

use crate::config::telemetry::TelemetryConfig;

/// How long one export may take before the SDK gives it up.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

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
