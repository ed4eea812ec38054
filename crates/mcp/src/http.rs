//! The HTTP client under rmcp's streamable-HTTP transport: reqwest, with two things rmcp does not
//! do on its own.
//!
//! - **A stale session is a stale session, whatever the status.** rmcp starts a new session
//!   only when a request with a session gets 404. A server that restarted and forgot its
//!   sessions may answer 400 with a JSON-RPC error that has no `id` (server-everything does);
//!   rmcp cannot match that to the request, drops it, and the caller waits for its timeout,
//!   then every later call does the same. Here such an answer to a request sent with a
//!   session reads as an expired session, so rmcp initialises a new one and sends the request
//!   again.
//! - **A new session is a new server.** After rmcp replaced the session, the server may offer
//!   other tools than before, and the notifications it sent in between were lost. `renewed` is
//!   notified then, so the supervisor lists the tools again.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_core::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcError, JsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use tokio::sync::Notify;

type Failure = StreamableHttpError<reqwest::Error>;

/// reqwest for one connection, watching its sessions.
#[derive(Debug, Clone)]
pub(crate) struct SessionWatch {
    inner: reqwest::Client,
    /// `initialize` requests answered: the first is the handshake, each later one a new session.
    initialized: Arc<AtomicUsize>,
    renewed: Arc<Notify>,
}

impl SessionWatch {
    /// Follows no redirects (rmcp's own client follows same-origin 307 and 308 only; a server
    /// that moved is given a new URL in its registration instead), and keeps no idle
    /// connections (rmcp's choice too: a reused connection whose last body was not read to the
    /// end stalls on delayed ACKs).
    pub fn new(renewed: Arc<Notify>) -> Result<SessionWatch, String> {
        let inner = crate::tls::client_builder()
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|err| format!("no HTTP client: {err}"))?;
        Ok(SessionWatch {
            inner,
            initialized: Arc::new(AtomicUsize::new(0)),
            renewed,
        })
    }

    async fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let (request, initialize) = match &message {
            ClientJsonRpcMessage::Request(request) => (
                true,
                matches!(request.request, ClientRequest::InitializeRequest(_)),
            ),
            _ => (false, false),
        };
        let with_session = session_id.is_some();
        let answer = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        if initialize && answer.is_ok() && self.initialized.fetch_add(1, Ordering::Relaxed) > 0 {
            tracing::info!("MCP server's HTTP session was replaced; its tools are listed again");
            self.renewed.notify_one();
        }
        match answer {
            Ok(StreamableHttpPostResponse::Json(
                JsonRpcMessage::Error(JsonRpcError {
                    id: None, error, ..
                }),
                _,
            )) if request && with_session => {
                tracing::info!(code = error.code.0, message = %error.message, "an id-less error answered a request of an HTTP session: taken as an expired session");
                Err(StreamableHttpError::SessionExpired)
            }
            other => other,
        }
    }
}

impl StreamableHttpClient for SessionWatch {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let limits = StreamableHttpResponseLimits::default();
        self.post(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.post(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        self.inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
