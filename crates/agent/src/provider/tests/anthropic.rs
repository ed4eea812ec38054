//! The Anthropic Messages route: a whole turn, the request bodies, the cache layout and the
//! tool-search API.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::fake::{After, FakeServer, KEY, Reply, event};
use super::{drain, request, text_of, tool};
use crate::Usage;
use crate::provider::{
    AnthropicProvider, InvalidToolCall, Message, ModelProvider, ProviderError, ProviderKind,
    StopReason, StreamEvent, ToolCall, ToolResult, ToolTier,
};

pub(crate) fn message_start(input: u64, cache_write: u64, cache_read: u64) -> String {
    event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": "msg_01", "type": "message", "role": "assistant", "content": [],
            "model": "test-model", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input, "cache_creation_input_tokens": cache_write,
                      "cache_read_input_tokens": cache_read, "output_tokens": 1}}}),
    )
}

pub(crate) fn text_block(index: u64, pieces: &[&str]) -> Vec<String> {
    let mut out = vec![event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""}}),
    )];
    out.push(event("ping", &json!({"type": "ping"})));
    for piece in pieces {
        out.push(event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": piece}}),
        ));
    }
    out.push(event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    ));
    out
}

fn tool_block(index: u64, id: &str, name: &str, pieces: &[&str]) -> Vec<String> {
    let mut out = vec![event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
    )];
    for piece in pieces {
        out.push(event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece}}),
        ));
    }
    out.push(event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    ));
    out
}

pub(crate) fn message_end(stop: &str, output: u64) -> Vec<String> {
    vec![
        event(
            "message_delta",
            &json!({"type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": null},
                    "usage": {"output_tokens": output}}),
        ),
        event("message_stop", &json!({"type": "message_stop"})),
    ]
}

fn sse(parts: Vec<Vec<String>>) -> Reply {
    Reply::Sse {
        pieces: parts.into_iter().flatten().collect(),
        then: After::Close,
    }
}

#[tokio::test]
async fn a_turn_with_a_tool_call_and_a_final_answer() {
    let server = FakeServer::start(vec![
        sse(vec![
            vec![message_start(100, 900, 0)],
            text_block(0, &["Let me ", "look."]),
            tool_block(
                1,
                "toolu_01",
                "read_file",
                &["{\"pa", "th\": \"READ", "ME.md\"}"],
            ),
            message_end("tool_use", 31),
        ]),
        sse(vec![
            vec![message_start(40, 0, 900)],
            text_block(0, &["It is a ", "README."]),
            message_end("end_turn", 12),
        ]),
    ])
    .await;
    let provider = AnthropicProvider::new(&server.config(ProviderKind::Anthropic)).unwrap();
    assert_eq!(
        (provider.name(), provider.model()),
        ("anthropic", "test-model")
    );
    let mut turn = request(vec![tool("read_file", ToolTier::AlwaysOn)], "What is here?");

    let (events, error) = drain(provider.stream(&turn)).await;
    assert!(error.is_none(), "{error:?}");
    let call = ToolCall {
        id: "toolu_01".into(),
        name: "read_file".into(),
        arguments: json!({"path": "README.md"}),
    };
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta {
                text: "Let me ".into()
            },
            StreamEvent::TextDelta {
                text: "look.".into()
            },
            StreamEvent::ToolCall(call.clone()),
            StreamEvent::Usage(Usage {
                input_tokens: 100,
                output_tokens: 31,
                cache_read_tokens: 0,
                cache_write_tokens: 900,
            }),
            StreamEvent::Stop {
                reason: StopReason::ToolUse
            },
        ]
    );

    turn.messages.push(Message::Assistant {
        text: text_of(&events),
        tool_calls: vec![call],
    });
    turn.messages.push(Message::ToolResult(ToolResult {
        call_id: "toolu_01".into(),
        content: "# Codaris".into(),
        is_error: false,
        binds: Vec::new(),
        pictures: Vec::new(),
    }));
    let (events, error) = drain(provider.stream(&turn)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&events), "It is a README.");
    let usage = Usage {
        input_tokens: 40,
        output_tokens: 12,
        cache_read_tokens: 900,
        cache_write_tokens: 0,
    };
    assert_eq!(
        events[2..],
        [
            StreamEvent::Usage(usage),
            StreamEvent::Stop {
                reason: StopReason::EndTurn
            }
        ]
    );
    assert_eq!(usage.cache_read_percent(), 96);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first.path, "/v1/messages");
    assert_eq!(first.header("x-api-key"), Some(KEY));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(first.header("anthropic-beta"), None);
    assert_eq!(first.header("authorization"), None);
    assert_eq!(
        first.json(),
        json!({
            "model": "test-model",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": "You are Codaris."}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "What is here?"}]}],
            "tools": [{
                "name": "read_file",
                "description": "The read_file tool.",
                "input_schema": tool("read_file", ToolTier::AlwaysOn).input_schema,
                "cache_control": {"type": "ephemeral"}
            }],
            "stream": true
        })
    );
    assert_eq!(
        requests[1].json()["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "What is here?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_01", "name": "read_file",
                 "input": {"path": "README.md"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "# Codaris"}
            ]}
        ])
    );
}

/// The names and the `cache_control` of each tool of a request, in order.
fn layout(body: &Value) -> Vec<(String, Option<Value>, Option<Value>)> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            (
                tool["name"].as_str().unwrap().to_owned(),
                tool.get("cache_control").cloned(),
                tool.get("defer_loading").cloned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn tools_keep_their_order_with_one_breakpoint_on_the_last_always_on_tool() {
    let reply = || {
        sse(vec![
            vec![message_start(1, 0, 0)],
            text_block(0, &["ok"]),
            message_end("end_turn", 1),
        ])
    };
    let server = FakeServer::start(vec![reply(), reply()]).await;
    let provider = AnthropicProvider::new(&server.config(ProviderKind::Anthropic)).unwrap();
    let always = ["search_tools", "request_capability", "read_file"];
    let mut tools: Vec<_> = always.iter().map(|n| tool(n, ToolTier::AlwaysOn)).collect();
    let first = request(tools.clone(), "hi");
    tools.push(tool("review_pipeline", ToolTier::Added));
    tools.push(tool("lint_nextflow", ToolTier::Added));
    let second = request(tools, "hi");
    for turn in [&first, &second] {
        let (_, error) = drain(provider.stream(turn)).await;
        assert!(error.is_none(), "{error:?}");
    }

    let requests = server.requests();
    let ephemeral = Some(json!({"type": "ephemeral"}));
    let expected = |names: &[&str]| -> Vec<(String, Option<Value>, Option<Value>)> {
        names
            .iter()
            .map(|name| {
                let breakpoint = (*name == "read_file").then(|| ephemeral.clone()).flatten();
                ((*name).to_owned(), breakpoint, None)
            })
            .collect()
    };
    assert_eq!(layout(&requests[0].json()), expected(&always));
    assert_eq!(
        layout(&requests[1].json()),
        expected(&[
            "search_tools",
            "request_capability",
            "read_file",
            "review_pipeline",
            "lint_nextflow"
        ])
    );
    for recorded in &requests {
        assert_eq!(recorded.body.matches("cache_control").count(), 1);
    }
    // A discovery only appends: the first request's tools are a prefix of the second's.
    let (before, after) = (requests[0].raw_tools(), requests[1].raw_tools());
    assert!(
        after.starts_with(before.trim_end_matches(']')),
        "{before}\n{after}"
    );
}

#[tokio::test]
async fn tool_search_keeps_the_tools_array_byte_identical_and_answers_with_references() {
    let server = FakeServer::start(vec![
        sse(vec![
            vec![message_start(10, 0, 0)],
            tool_block(
                0,
                "toolu_s",
                "search_tools",
                &["{\"query\": \"lint nextflow\"}"],
            ),
            message_end("tool_use", 5),
        ]),
        sse(vec![
            vec![message_start(10, 0, 0)],
            tool_block(0, "toolu_l", "lint_nextflow", &["{\"path\": \"main.nf\"}"]),
            message_end("tool_use", 5),
        ]),
    ])
    .await;
    let provider = AnthropicProvider::new(&server.config(ProviderKind::Anthropic)).unwrap();
    let tools = vec![
        tool("search_tools", ToolTier::AlwaysOn),
        tool("read_file", ToolTier::AlwaysOn),
        tool("lint_nextflow", ToolTier::Deferred),
        tool("lint_pipeline", ToolTier::Deferred),
        tool("demo__echo", ToolTier::Deferred),
    ];
    let mut turn = request(tools, "lint my pipeline");
    let (events, error) = drain(provider.stream(&turn)).await;
    assert!(error.is_none(), "{error:?}");
    let StreamEvent::ToolCall(search) = events[0].clone() else {
        unreachable!("the first event is the search call: {events:?}");
    };
    let listing =
        "Matches for \"lint nextflow\":\n- lint_nextflow [mcp] — Lint a Nextflow pipeline.";
    turn.messages.push(Message::Assistant {
        text: String::new(),
        tool_calls: vec![search],
    });
    turn.messages.push(Message::ToolResult(ToolResult {
        call_id: "toolu_s".into(),
        content: listing.into(),
        is_error: false,
        // `read_file` is not deferred and `nowhere` is not in the request: no reference for them.
        binds: vec!["lint_nextflow".into(), "read_file".into(), "nowhere".into()],
        pictures: Vec::new(),
    }));
    let (events, error) = drain(provider.stream(&turn)).await;
    assert!(error.is_none(), "{error:?}");
    assert!(matches!(&events[0], StreamEvent::ToolCall(call) if call.name == "lint_nextflow"));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].raw_tools(), requests[1].raw_tools());
    for recorded in &requests {
        assert_eq!(
            recorded.header("anthropic-beta"),
            Some("advanced-tool-use-2025-11-20")
        );
        assert_eq!(recorded.body.matches("cache_control").count(), 1);
    }
    let ephemeral = Some(json!({"type": "ephemeral"}));
    assert_eq!(
        layout(&requests[0].json()),
        vec![
            ("search_tools".into(), None, None),
            ("read_file".into(), ephemeral, None),
            ("lint_nextflow".into(), None, Some(json!(true))),
            ("lint_pipeline".into(), None, Some(json!(true))),
            ("demo__echo".into(), None, Some(json!(true))),
        ]
    );
    assert_eq!(
        requests[1].json()["messages"][2],
        json!({"role": "user", "content": [{
            "type": "tool_result",
            "tool_use_id": "toolu_s",
            "content": [
                {"type": "text", "text": listing},
                {"type": "tool_reference", "tool_name": "lint_nextflow"}
            ]
        }]})
    );
}

#[tokio::test]
async fn malformed_tool_arguments_are_an_event_and_the_round_still_ends() {
    let server = FakeServer::start(vec![sse(vec![
        vec![message_start(1, 0, 0)],
        tool_block(0, "toolu_bad", "grep", &["{\"pattern\": \"x\"", ", oops"]),
        tool_block(1, "toolu_none", "planner", &[]),
        message_end("tool_use", 3),
    ])])
    .await;
    let provider = AnthropicProvider::new(&server.config(ProviderKind::Anthropic)).unwrap();
    let (events, error) = drain(provider.stream(&request(Vec::new(), "go"))).await;
    assert!(error.is_none(), "{error:?}");
    let StreamEvent::InvalidToolCall(InvalidToolCall {
        id,
        name,
        raw_arguments,
        ..
    }) = &events[0]
    else {
        unreachable!("{events:?}");
    };
    assert_eq!(
        (id.as_str(), name.as_str(), raw_arguments.as_str()),
        ("toolu_bad", "grep", "{\"pattern\": \"x\", oops")
    );
    assert_eq!(
        events[1],
        StreamEvent::ToolCall(ToolCall {
            id: "toolu_none".into(),
            name: "planner".into(),
            arguments: json!({}),
        })
    );
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Stop {
            reason: StopReason::ToolUse
        })
    );
    // No tools: no `tools` key at all.
    assert_eq!(server.requests()[0].json().get("tools"), None);
}

#[tokio::test]
async fn an_error_event_in_the_stream_ends_it_with_the_apis_words() {
    let server = FakeServer::start(vec![sse(vec![
        vec![message_start(1, 0, 0)],
        vec![event(
            "error",
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        )],
    ])])
    .await;
    let provider = AnthropicProvider::new(&server.config(ProviderKind::Anthropic)).unwrap();
    let (events, error) = drain(provider.stream(&request(Vec::new(), "go"))).await;
    assert_eq!(events, Vec::new());
    let error = error.unwrap();
    assert!(
        matches!(&error, ProviderError::Api { kind, message, .. }
            if kind == "overloaded_error" && message == "Overloaded"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "anthropic model `test-model`: the API reported overloaded_error: Overloaded"
    );
}

#[tokio::test]
async fn a_request_without_its_own_cap_carries_the_configured_one() {
    let server = FakeServer::start(vec![sse(vec![
        vec![message_start(5, 0, 0)],
        text_block(0, &["cut"]),
        message_end("max_tokens", 3),
    ])])
    .await;
    let config = server
        .config(ProviderKind::Anthropic)
        .with_max_output_tokens(3);
    let provider = AnthropicProvider::new(&config).unwrap();
    assert_eq!(provider.max_output_tokens(), Some(3));
    let mut uncapped = request(Vec::new(), "hi");
    uncapped.max_tokens = None;
    let (events, error) = drain(provider.stream(&uncapped)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Stop {
            reason: StopReason::MaxTokens
        })
    );
    assert_eq!(server.requests()[0].json()["max_tokens"], json!(3));
}

/// Server-side compaction, as the API documents it: asked for in `context_management` with its
/// beta, answered by a `compaction` block whose one `compaction_delta` carries the summary.
#[tokio::test]
async fn a_server_side_compaction_is_asked_for_and_its_summary_comes_back() {
    let compaction = vec![
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "compaction", "content": ""}}),
        ),
        event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "compaction_delta", "content": "The person builds a scraper."}}),
        ),
        event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 0}),
        ),
    ];
    let server = FakeServer::start(vec![sse(vec![
        vec![message_start(10, 0, 0)],
        compaction,
        text_block(1, &["Carrying on."]),
        message_end("end_turn", 3),
    ])])
    .await;
    let provider = AnthropicProvider::new(&server.config(ProviderKind::Anthropic)).unwrap();
    let mut turn = request(Vec::new(), "go on");
    turn.server_compaction = Some(120_000);
    let (events, error) = drain(provider.stream(&turn)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        events[0],
        StreamEvent::Compacted {
            summary: "The person builds a scraper.".into()
        }
    );
    assert_eq!(text_of(&events), "Carrying on.");
    let sent = &server.requests()[0];
    assert_eq!(sent.header("anthropic-beta"), Some("compact-2026-01-12"));
    assert_eq!(
        sent.json()["context_management"],
        json!({"edits": [{"type": "compact_20260112",
                          "trigger": {"type": "input_tokens", "value": 120_000}}]})
    );
    // A request that does not ask sends neither.
    let server = FakeServer::start(vec![sse(vec![
        vec![message_start(10, 0, 0)],
        text_block(0, &["ok"]),
        message_end("end_turn", 1),
    ])])
    .await;
    let provider = AnthropicProvider::new(&server.config(ProviderKind::Anthropic)).unwrap();
    drain(provider.stream(&request(Vec::new(), "hi"))).await;
    let sent = &server.requests()[0];
    assert_eq!(sent.header("anthropic-beta"), None);
    assert!(sent.json().get("context_management").is_none());
}
