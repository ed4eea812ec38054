//! A stand-in for an OpenTelemetry collector's OTLP/HTTP receiver on loopback: it accepts
//! `POST /v1/traces` with an `application/x-protobuf` body, decodes it as the
//! `ExportTraceServiceRequest` of opentelemetry-proto (the generated messages of the
//! specification's `.proto` files), and answers with an empty `ExportTraceServiceResponse`.
//! Everything else (JSON bodies, metrics, logs, gRPC) is refused with a 404 or 415 that says so.

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;

use crate::fake_http::{FakeHttp, Reply, Seen};

const STAND_IN: &str = "fake-otlp";

/// One span as the collector received it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedSpan {
    pub name: String,
    pub trace_id: Vec<u8>,
    pub span_id: Vec<u8>,
    /// Empty for a root span.
    pub parent_span_id: Vec<u8>,
    /// Attribute values as text (strings as they are, numbers and booleans printed).
    pub attributes: BTreeMap<String, String>,
    pub events: Vec<ExportedEvent>,
    /// The `service.name` of the resource the span came with.
    pub service_name: Option<String>,
}

/// One span event.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedEvent {
    pub name: String,
    pub attributes: BTreeMap<String, String>,
}

/// The running fake collector.
#[derive(Debug)]
pub struct FakeOtlp {
    http: FakeHttp,
}

impl FakeOtlp {
    pub fn start() -> Self {
        Self {
            http: FakeHttp::start(answer),
        }
    }

    /// The OTLP/HTTP base URL (`[telemetry] otlp_endpoint`).
    pub fn url(&self) -> String {
        self.http.url()
    }

    /// Every request received, decodable or not.
    pub fn seen(&self) -> Vec<Seen> {
        self.http.seen()
    }

    /// Every span of every trace export received so far, in arrival order.
    pub fn spans(&self) -> Vec<ExportedSpan> {
        self.seen()
            .iter()
            .filter(|seen| seen.method == "POST" && seen.path() == "/v1/traces")
            .filter_map(|seen| ExportTraceServiceRequest::decode(seen.body.as_slice()).ok())
            .flat_map(|request| request.resource_spans)
            .flat_map(|resource| {
                let service = resource
                    .resource
                    .as_ref()
                    .and_then(|r| attributes(&r.attributes).get("service.name").cloned());
                resource
                    .scope_spans
                    .into_iter()
                    .flat_map(|scope| scope.spans)
                    .map(move |span| ExportedSpan {
                        name: span.name,
                        trace_id: span.trace_id,
                        span_id: span.span_id,
                        parent_span_id: span.parent_span_id,
                        attributes: attributes(&span.attributes),
                        events: span
                            .events
                            .into_iter()
                            .map(|event| ExportedEvent {
                                name: event.name,
                                attributes: attributes(&event.attributes),
                            })
                            .collect(),
                        service_name: service.clone(),
                    })
            })
            .collect()
    }
}

fn answer(seen: &Seen) -> Reply {
    if seen.method != "POST" || seen.path() != "/v1/traces" {
        return Reply::not_implemented(STAND_IN, seen).header("Server", STAND_IN);
    }
    if seen.header("content-type") != Some("application/x-protobuf") {
        return Reply::text(
            415,
            "fake-otlp (a test stand-in) implements OTLP/HTTP with protobuf bodies only",
        )
        .header("Server", STAND_IN);
    }
    match ExportTraceServiceRequest::decode(seen.body.as_slice()) {
        Ok(_) => Reply::new(
            200,
            "application/x-protobuf",
            ExportTraceServiceResponse::default().encode_to_vec(),
        )
        .header("Server", STAND_IN),
        Err(err) => Reply::text(
            400,
            &format!("fake-otlp: not an ExportTraceServiceRequest: {err}"),
        )
        .header("Server", STAND_IN),
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| {
            (
                kv.key.clone(),
                kv.value.as_ref().map(text).unwrap_or_default(),
            )
        })
        .collect()
}

fn text(value: &AnyValue) -> String {
    match &value.value {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}
