//! Retries, error statuses, broken and silent streams, timeouts and cancellation.

use std::time::Duration;

use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::sync::oneshot;

use super::anthropic::{message_end, message_start, text_block};
use super::fake::{After, FakeServer, KEY, PATIENCE, Reply, event};
use super::{drain, request, text_of};
use crate::provider::{
    AnthropicProvider, ModelProvider, OpenAiProvider, ProviderError, ProviderErrorKind,
    ProviderFailure, ProviderKind, Retrying, StopReason, StreamEvent, TimeoutPhase, build_provider,
};

fn status(status: u16, headers: &[(&str, &str)], body: serde_json::Value) -> Reply {
    Reply::Json {
        status,
        headers: headers
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect(),
        body: body.to_string(),
    }
}

fn answer(then: After) -> Reply {
    Reply::Sse {
        pieces: [
            vec![message_start(5, 0, 0)],
            text_block(0, &["fine"]),
            message_end("end_turn", 2),
        ]
        .concat(),
        then,
    }
}

fn anthropic(server: &FakeServer) -> AnthropicProvider {
    AnthropicProvider::new(&server.config(ProviderKind::Anthropic)).unwrap()
}

#[tokio::test]
async fn a_429_and_a_503_are_retried_after_their_retry_after() {
    let overloaded =
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}});
    let server = FakeServer::start(vec![
        status(429, &[("retry-after", "0")], overloaded.clone()),
        status(503, &[("retry-after", "0")], overloaded),
        answer(After::Close),
    ])
    .await;
    let (events, error) = drain(anthropic(&server).stream(&request(Vec::new(), "hi"))).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&events), "fine");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| r.body == requests[0].body));
    // Each retry was reported, in order, before any of the answer.
    let retries: Vec<&StreamEvent> = events
        .iter()
        .take_while(|e| matches!(e, StreamEvent::Retrying(_)))
        .collect();
    assert_eq!(
        retries,
        [
            &StreamEvent::Retrying(Retrying {
                attempt: 1,
                max_attempts: 3,
                delay_ms: 0,
                reason: "busy (429)".to_owned(),
            }),
            &StreamEvent::Retrying(Retrying {
                attempt: 2,
                max_attempts: 3,
                delay_ms: 0,
                reason: "busy (503)".to_owned(),
            }),
        ]
    );
}

#[tokio::test]
async fn retries_give_up_with_the_last_status_and_message() {
    let busy = || status(503, &[], json!({"error": {"message": "upstream busy"}}));
    let server = FakeServer::start(vec![busy(), busy(), busy(), busy(), busy()]).await;
    let provider = OpenAiProvider::new(&server.config(ProviderKind::OpenAi)).unwrap();
    let (events, error) = drain(provider.stream(&request(Vec::new(), "hi"))).await;
    // Nothing of an answer: only the three retries, reported as they were made.
    let retries: Vec<(u32, &str)> = events
        .iter()
        .map(|e| match e {
            StreamEvent::Retrying(r) => (r.attempt, r.reason.as_str()),
            other => panic!("not a retry: {other:?}"),
        })
        .collect();
    assert_eq!(
        retries,
        [(1, "busy (503)"), (2, "busy (503)"), (3, "busy (503)")]
    );
    assert_eq!(
        error.map(|e| e.to_string()),
        Some("openai model `test-model`: HTTP 503 after 4 attempt(s): upstream busy".into())
    );
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn a_retry_after_longer_than_the_policy_allows_ends_at_once() {
    let server = FakeServer::start(vec![status(429, &[("retry-after", "3600")], json!({}))]).await;
    let (_, error) = drain(anthropic(&server).stream(&request(Vec::new(), "hi"))).await;
    assert!(
        matches!(
            error,
            Some(ProviderError::Status {
                status: 429,
                attempts: 1,
                ..
            })
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_429_that_outlasts_the_retries_keeps_its_status_retryability_and_wait() {
    let limited = || {
        status(
            429,
            &[("retry-after", "0")],
            json!({"error": {"message": "slow down"}}),
        )
    };
    let server = FakeServer::start(vec![limited(), limited(), limited(), limited()]).await;
    let provider = OpenAiProvider::new(&server.config(ProviderKind::OpenAi)).unwrap();
    let (_, error) = drain(provider.stream(&request(Vec::new(), "hi"))).await;
    let failure = error.as_ref().map(ProviderError::failure);
    assert_eq!(
        failure,
        Some(ProviderFailure {
            kind: ProviderErrorKind::Status,
            status: Some(429),
            retryable: true,
            retry_after: Some(Duration::ZERO),
            message: "openai model `test-model`: HTTP 429 after 4 attempt(s): slow down".into(),
        })
    );
    // A 400 is the request's own fault: trying it again cannot help, and no wait was asked.
    let server = FakeServer::start(vec![status(400, &[], json!({"error": "bad"}))]).await;
    let provider = OpenAiProvider::new(&server.config(ProviderKind::OpenAi)).unwrap();
    let (_, error) = drain(provider.stream(&request(Vec::new(), "hi"))).await;
    let failure = error.as_ref().map(ProviderError::failure);
    assert_eq!(
        failure.map(|f| (f.kind, f.status, f.retryable, f.retry_after)),
        Some((ProviderErrorKind::Status, Some(400), false, None))
    );
}

#[tokio::test]
async fn a_401_is_one_clear_line_with_the_apis_message_and_never_the_key() {
    let anthropic_body = json!({"type": "error", "error": {"type": "authentication_error",
        "message": format!("invalid x-api-key {KEY}\nsee the docs")}});
    let openai_body = json!({"error": {"message": format!("Incorrect API key provided: {KEY}."),
        "type": "invalid_request_error", "code": "invalid_api_key"}});
    for (kind, body, expected) in [
        (
            ProviderKind::Anthropic,
            anthropic_body,
            "anthropic model `test-model`: HTTP 401 after 1 attempt(s): authentication_error: invalid x-api-key *** see the docs",
        ),
        (
            ProviderKind::OpenAi,
            openai_body,
            "openai model `test-model`: HTTP 401 after 1 attempt(s): invalid_request_error: Incorrect API key provided: ***.",
        ),
    ] {
        let server = FakeServer::start(vec![status(401, &[], body)]).await;
        let provider = build_provider(&server.config(kind)).unwrap();
        let (_, error) = drain(provider.stream(&request(Vec::new(), "hi"))).await;
        let error = error.unwrap();
        assert_eq!(error.status(), Some(401));
        assert_eq!(error.provider(), kind);
        let shown = error.to_string();
        assert_eq!(shown, expected);
        assert!(!format!("{error:?}").contains(KEY));
        assert!(!format!("{provider:?}").contains(KEY));
        assert_eq!(server.requests().len(), 1, "a 401 is not retried");
    }
}

#[tokio::test]
async fn a_404_names_the_model_the_server_does_not_have() {
    let server = FakeServer::start(vec![status(
        404,
        &[],
        json!({"error": "model \"test-model\" not found, try pulling it first"}),
    )])
    .await;
    let provider = OpenAiProvider::new(&server.config(ProviderKind::OpenAi)).unwrap();
    let (_, error) = drain(provider.stream(&request(Vec::new(), "hi"))).await;
    assert_eq!(
        error.map(|e| e.to_string()),
        Some(
            "openai model `test-model`: HTTP 404 after 1 attempt(s): model \"test-model\" not found, try pulling it first"
                .into()
        )
    );
}

#[tokio::test]
async fn a_stream_cut_in_the_middle_is_an_error_not_a_hang() {
    for cut in [
        // Between events.
        [vec![message_start(5, 0, 0)], text_block(0, &["half"])].concat(),
        // Inside an event's data line.
        vec![
            message_start(5, 0, 0),
            "event: content_block_start\ndata: {\"type\": \"content_bl".into(),
        ],
    ] {
        let server = FakeServer::start(vec![Reply::Sse {
            pieces: cut,
            then: After::Close,
        }])
        .await;
        let (_, error) = drain(anthropic(&server).stream(&request(Vec::new(), "hi"))).await;
        assert!(
            matches!(error, Some(ProviderError::Truncated { .. })),
            "{error:?}"
        );
    }
    // The OpenAI route: chunks but no finish_reason.
    let server = FakeServer::start(vec![Reply::Sse {
        pieces: vec![
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n".into(),
        ],
        then: After::Close,
    }])
    .await;
    let provider = OpenAiProvider::new(&server.config(ProviderKind::OpenAi)).unwrap();
    let (_, error) = drain(provider.stream(&request(Vec::new(), "hi"))).await;
    assert!(
        matches!(error, Some(ProviderError::Truncated { .. })),
        "{error:?}"
    );
}

#[tokio::test]
async fn data_that_is_not_json_is_malformed() {
    let server = FakeServer::start(vec![Reply::Sse {
        pieces: vec![
            message_start(5, 0, 0),
            "event: ping\ndata: {not json\n\n".into(),
        ],
        then: After::Close,
    }])
    .await;
    let (_, error) = drain(anthropic(&server).stream(&request(Vec::new(), "hi"))).await;
    assert!(
        matches!(error, Some(ProviderError::Malformed { .. })),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_silent_stream_times_out_and_the_connection_is_closed() {
    let (report, closed) = oneshot::channel();
    let server = FakeServer::start(vec![Reply::Sse {
        pieces: vec![message_start(5, 0, 0)],
        then: After::Hold(report),
    }])
    .await;
    let mut config = server.config(ProviderKind::Anthropic);
    config.timeouts.idle = Duration::from_millis(300);
    let provider = AnthropicProvider::new(&config).unwrap();
    let (_, error) = drain(provider.stream(&request(Vec::new(), "hi"))).await;
    assert!(
        matches!(
            error,
            Some(ProviderError::Timeout {
                phase: TimeoutPhase::Idle,
                ..
            })
        ),
        "{error:?}"
    );
    assert!(closed.await.unwrap(), "the server saw the connection close");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let server = FakeServer::start(vec![Reply::Silent]).await;
    let mut config = server.config(ProviderKind::OpenAi);
    config.timeouts.request = Duration::from_millis(300);
    let provider = OpenAiProvider::new(&config).unwrap();
    let (_, error) = drain(provider.stream(&request(Vec::new(), "hi"))).await;
    assert!(
        matches!(
            error,
            Some(ProviderError::Timeout {
                phase: TimeoutPhase::Request,
                ..
            })
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    let server = FakeServer::start(Vec::new()).await;
    let mut config = server.config(ProviderKind::Anthropic);
    // A port nothing listens on: bind one, note it, let it go.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    config.base_url = format!("http://127.0.0.1:{port}");
    config.retry.max_retries = 2;
    let provider = AnthropicProvider::new(&config).unwrap();
    let (events, error) = drain(provider.stream(&request(Vec::new(), "hi"))).await;
    assert!(
        matches!(error, Some(ProviderError::Connect { attempts: 3, .. })),
        "{error:?}"
    );
    let reasons: Vec<(u32, u32, &str)> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying(r) => Some((r.attempt, r.max_attempts, r.reason.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        reasons,
        [(1, 2, "connection failed"), (2, 2, "connection failed")]
    );
}

/// Starts a stream whose server holds the connection open after the first text, and reads that
/// text. The receiver reports whether the server saw the connection close.
async fn held_open_after_first_text() -> (FakeServer, crate::EventStream, oneshot::Receiver<bool>) {
    let (report, closed) = oneshot::channel();
    let server = FakeServer::start(vec![Reply::Sse {
        pieces: [vec![message_start(5, 0, 0)], text_block(0, &["first"])].concat(),
        then: After::Hold(report),
    }])
    .await;
    let mut stream = anthropic(&server).stream(&request(Vec::new(), "hi"));
    let first = tokio::time::timeout(PATIENCE, stream.next()).await.unwrap();
    assert!(
        matches!(first, Some(Ok(StreamEvent::TextDelta { ref text })) if text == "first"),
        "{first:?}"
    );
    (server, stream, closed)
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let (_server, stream, closed) = held_open_after_first_text().await;
    drop(stream);
    assert!(closed.await.unwrap(), "the server saw the connection close");
}

#[tokio::test]
async fn a_cancelled_turn_ends_the_stream_and_closes_the_connection() {
    let (_server, stream, closed) = held_open_after_first_text().await;
    let (cancel, cancelled) = oneshot::channel::<()>();
    let mut stream = stream.take_until(cancelled);
    cancel.send(()).unwrap();
    let rest = tokio::time::timeout(PATIENCE, stream.next()).await.unwrap();
    assert!(rest.is_none(), "a cancelled stream ends: {rest:?}");
    drop(stream);
    assert!(closed.await.unwrap(), "the server saw the connection close");
}

#[tokio::test]
async fn ping_and_unknown_events_are_skipped() {
    let server = FakeServer::start(vec![Reply::Sse {
        pieces: [
            vec![message_start(5, 0, 0)],
            vec![event("ping", &json!({"type": "ping"}))],
            vec![event(
                "future_event",
                &json!({"type": "future_event", "x": 1}),
            )],
            text_block(0, &["ok"]),
            message_end("max_tokens", 9),
        ]
        .concat(),
        then: After::Close,
    }])
    .await;
    let (events, error) = drain(anthropic(&server).stream(&request(Vec::new(), "hi"))).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Stop {
            reason: StopReason::MaxTokens
        })
    );
}

#[tokio::test]
async fn an_error_event_echoing_the_key_reaches_nobody_with_the_key() {
    let echo = json!({"type": "error", "error": {"type": "invalid_request_error", "message": format!("key {KEY} is revoked")}});
    let server = FakeServer::start(vec![Reply::Sse {
        pieces: vec![message_start(5, 0, 0), event("error", &echo)],
        then: After::Close,
    }])
    .await;
    let (_, error) = drain(anthropic(&server).stream(&request(Vec::new(), "hi"))).await;
    let text = error.map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("key *** is revoked"), "{text}");
    assert!(!text.contains(KEY), "{text}");

    let openai_echo =
        json!({"error": {"message": format!("bad {KEY}"), "type": format!("{KEY}_error")}});
    let server = FakeServer::start(vec![Reply::Sse {
        pieces: vec![format!("data: {openai_echo}\n\n")],
        then: After::Close,
    }])
    .await;
    let provider = OpenAiProvider::new(&server.config(ProviderKind::OpenAi)).unwrap();
    let (_, error) = drain(provider.stream(&request(Vec::new(), "hi"))).await;
    let text = error.map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("bad ***"), "{text}");
    assert!(!text.contains(KEY), "{text}");
}
