//! The OpenAI Chat Completions route, as OpenAI and compatible local servers stream it.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::fake::{After, FakeServer, KEY, Reply, chunk};
use super::{drain, request, text_of, tool};
use crate::Usage;
use crate::provider::{
    Message, ModelProvider, OpenAiProvider, ProviderError, ProviderKind, StopReason, StreamEvent,
    ToolCall, ToolResult, ToolTier,
};

fn delta(delta: &serde_json::Value, finish: Option<&str>) -> String {
    chunk(&json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    }))
}

fn usage(prompt: u64, completion: u64, cached: u64) -> String {
    chunk(&json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": cached}}
    }))
}

const DONE: &str = "data: [DONE]\n\n";

fn sse(pieces: Vec<String>) -> Reply {
    Reply::Sse {
        pieces,
        then: After::Close,
    }
}

fn call_start(index: u64, id: &str, name: &str) -> String {
    delta(
        &json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                "function": {"name": name, "arguments": ""}}]}),
        None,
    )
}

fn call_args(index: u64, fragment: &str) -> String {
    delta(
        &json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
        None,
    )
}

#[tokio::test]
async fn a_turn_with_tool_calls_and_a_final_answer() {
    let server = FakeServer::start(vec![
        sse(vec![
            delta(&json!({"role": "assistant", "content": ""}), None),
            delta(&json!({"content": "Checking."}), None),
            call_start(0, "call_a", "grep"),
            call_start(1, "call_b", "glob"),
            call_args(0, "{\"pattern\":"),
            call_args(1, "{\"pattern\": \"*.nf\"}"),
            call_args(0, " \"process\"}"),
            delta(&json!({}), Some("tool_calls")),
            usage(1200, 40, 1024),
            DONE.into(),
        ]),
        sse(vec![
            delta(&json!({"role": "assistant", "content": "Two "}), None),
            delta(&json!({"content": "processes."}), None),
            delta(&json!({}), Some("stop")),
            usage(1300, 4, 1152),
            DONE.into(),
        ]),
    ])
    .await;
    let provider = OpenAiProvider::new(&server.config(ProviderKind::OpenAi)).unwrap();
    assert_eq!(
        (provider.name(), provider.model()),
        ("openai", "test-model")
    );
    let tools = vec![
        tool("read_file", ToolTier::AlwaysOn),
        tool("grep", ToolTier::AlwaysOn),
        tool("glob", ToolTier::Added),
        tool("lint_nextflow", ToolTier::Deferred),
    ];
    let mut turn = request(tools, "Which processes?");
    let (events, error) = drain(provider.stream(&turn)).await;
    assert!(error.is_none(), "{error:?}");
    let grep = ToolCall {
        id: "call_a".into(),
        name: "grep".into(),
        arguments: json!({"pattern": "process"}),
    };
    let glob = ToolCall {
        id: "call_b".into(),
        name: "glob".into(),
        arguments: json!({"pattern": "*.nf"}),
    };
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta {
                text: "Checking.".into()
            },
            StreamEvent::ToolCall(grep.clone()),
            StreamEvent::ToolCall(glob.clone()),
            StreamEvent::Usage(Usage {
                input_tokens: 176,
                output_tokens: 40,
                cache_read_tokens: 1024,
                cache_write_tokens: 0,
            }),
            StreamEvent::Stop {
                reason: StopReason::ToolUse
            },
        ]
    );

    turn.messages.push(Message::Assistant {
        text: text_of(&events),
        tool_calls: vec![grep, glob],
    });
    for (id, content) in [
        ("call_a", "main.nf:3: process FASTQC"),
        ("call_b", "main.nf"),
    ] {
        turn.messages.push(Message::ToolResult(ToolResult {
            call_id: id.into(),
            content: content.into(),
            is_error: false,
            binds: vec!["ignored_here".into()],
            pictures: Vec::new(),
        }));
    }
    let (events, error) = drain(provider.stream(&turn)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&events), "Two processes.");
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Stop {
            reason: StopReason::EndTurn
        })
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(requests[0].header("x-api-key"), None);
    let schema = tool("grep", ToolTier::AlwaysOn).input_schema;
    let function = |name: &str| {
        json!({"type": "function", "function": {
            "name": name, "description": format!("The {name} tool."), "parameters": schema}})
    };
    assert_eq!(
        requests[0].json(),
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You are Codaris."},
                {"role": "user", "content": "Which processes?"}
            ],
            "tools": [function("read_file"), function("grep"), function("glob")],
            "max_tokens": 1024,
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
    assert_eq!(requests[0].raw_tools(), requests[1].raw_tools());
    assert_eq!(
        requests[1].json()["messages"],
        json!([
            {"role": "system", "content": "You are Codaris."},
            {"role": "user", "content": "Which processes?"},
            {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"id": "call_a", "type": "function",
                 "function": {"name": "grep", "arguments": "{\"pattern\":\"process\"}"}},
                {"id": "call_b", "type": "function",
                 "function": {"name": "glob", "arguments": "{\"pattern\":\"*.nf\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_a", "content": "main.nf:3: process FASTQC"},
            {"role": "tool", "tool_call_id": "call_b", "content": "main.nf"}
        ])
    );
}

#[tokio::test]
async fn a_local_server_without_key_index_or_done_still_completes() {
    // Ollama-style: no key, a whole call in one delta without `index`, `finish_reason: stop`
    // with a call, usage without details, and the body ends without `[DONE]`.
    let server = FakeServer::start(vec![sse(vec![
        delta(
            &json!({"role": "assistant", "content": "",
                    "tool_calls": [{"id": "call_x", "function":
                                    {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}]}),
            None,
        ),
        chunk(
            &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                      "usage": {"prompt_tokens": 50, "completion_tokens": 7}}),
        ),
    ])])
    .await;
    let mut config = server.config(ProviderKind::OpenAi);
    config.api_key = None;
    let provider = OpenAiProvider::new(&config).unwrap();
    let (events, error) = drain(provider.stream(&request(Vec::new(), "read a"))).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        events,
        vec![
            StreamEvent::ToolCall(ToolCall {
                id: "call_x".into(),
                name: "read_file".into(),
                arguments: json!({"path": "a"}),
            }),
            StreamEvent::Usage(Usage {
                input_tokens: 50,
                output_tokens: 7,
                ..Usage::default()
            }),
            StreamEvent::Stop {
                reason: StopReason::ToolUse
            },
        ]
    );
    let recorded = &server.requests()[0];
    assert_eq!(recorded.header("authorization"), None);
    assert_eq!(recorded.json().get("tools"), None);
}

#[tokio::test]
async fn an_error_chunk_ends_the_stream() {
    let server = FakeServer::start(vec![sse(vec![
        delta(&json!({"content": "par"}), None),
        chunk(&json!({"error": {"message": "context length exceeded", "type": "invalid_request_error"}})),
    ])])
    .await;
    let provider = OpenAiProvider::new(&server.config(ProviderKind::OpenAi)).unwrap();
    let (events, error) = drain(provider.stream(&request(Vec::new(), "go"))).await;
    assert_eq!(text_of(&events), "par");
    assert!(
        matches!(&error, Some(ProviderError::Api { kind, message, .. })
            if kind == "invalid_request_error" && message == "context length exceeded"),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_request_without_its_own_cap_carries_the_configured_one_and_length_reads_as_max_tokens() {
    let server = FakeServer::start(vec![sse(vec![
        delta(
            &json!({"role": "assistant", "content": "Hello, hello, hello"}),
            None,
        ),
        delta(&json!({}), Some("length")),
        DONE.to_owned(),
    ])])
    .await;
    let config = server
        .config(ProviderKind::OpenAi)
        .with_max_output_tokens(300);
    let provider = OpenAiProvider::new(&config).unwrap();
    assert_eq!(provider.max_output_tokens(), Some(300));
    let mut uncapped = request(Vec::new(), "say hello in five words");
    uncapped.max_tokens = None;
    let (events, error) = drain(provider.stream(&uncapped)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&events), "Hello, hello, hello");
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Stop {
            reason: StopReason::MaxTokens
        })
    );
    assert_eq!(server.requests()[0].json()["max_tokens"], json!(300));
}
