//! Pictures from `read_file` through a real turn: a multimodal model is sent the picture after
//! the result's text, in its own wire format; a model without pictures gets a one-line refusal.

use codaris_proto::v1;
use codaris_test_support::daemon::{
    InProcess, anthropic_stream, fake_model, openai_text, openai_tool_call,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::turns::{Sessions, rest_of_turn, start_turn};

/// A 1x1 PNG, 70 bytes.
const PNG: [u8; 70] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64, 0x60, 0xf8, 0x5f,
    0x0f, 0x00, 0x02, 0x87, 0x01, 0x80, 0xeb, 0x47, 0xba, 0x92, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// [`PNG`] in base64, as the model must receive it.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// Writes the PNG into the daemon's working directory (an allowed root); returns its path.
fn write_png(daemon: &InProcess) -> String {
    let path = daemon.temp.path().join("dot.png");
    std::fs::write(&path, PNG).unwrap();
    path.display().to_string()
}

async fn session(daemon: &InProcess, provider: &str) -> (Sessions, String) {
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: daemon.temp.path().display().to_string(),
            provider: provider.to_owned(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    (sessions, id)
}

/// An Anthropic answer calling `read_file` on `path`, then one saying it saw a dot.
fn anthropic_replies(path: &str) -> Vec<String> {
    let start = json!({"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "content": [],
        "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 1}}});
    let end = |stop: &str| {
        [
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                   "usage": {"output_tokens": 5}}),
            json!({"type": "message_stop"}),
        ]
    };
    let mut call = vec![
        start.clone(),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "input_json_delta", "partial_json": json!({"path": path}).to_string()}}),
        json!({"type": "content_block_stop", "index": 0}),
    ];
    call.extend(end("tool_use"));
    let mut answer = vec![
        start,
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "A dot."}}),
        json!({"type": "content_block_stop", "index": 0}),
    ];
    answer.extend(end("end_turn"));
    vec![anthropic_stream(&call), anthropic_stream(&answer)]
}

/// An OpenAI answer calling `read_file` on `path`, then one saying it saw a dot.
fn openai_replies(path: &str) -> Vec<String> {
    vec![
        openai_tool_call("call_1", "read_file", &json!({"path": path})),
        openai_text("A dot."),
    ]
}

#[tokio::test]
async fn a_picture_read_reaches_a_claude_model_as_an_image_block() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("dot.png").display().to_string();
    let (base, bodies) = fake_model(anthropic_replies(&path)).await;
    let daemon = InProcess::start_with(
        temp,
        None,
        &[
            ("ANTHROPIC_BASE_URL", &base),
            ("ANTHROPIC_API_KEY", "sk-ant-test"),
            ("CODARIS_MODEL", "claude-sonnet-4-5"),
        ],
    )
    .await;
    assert_eq!(write_png(&daemon), path);
    let (mut sessions, id) = session(&daemon, "anthropic").await;
    let mut stream = start_turn(&mut sessions, &id, "what is in dot.png?").await;
    let rest = rest_of_turn(&mut stream).await;
    assert_eq!(rest.reason, "end_turn");
    assert_eq!(rest.text, "A dot.");
    assert_eq!(rest.outputs, ["`dot.png`: image/png, 1x1"]);

    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    let second: Value = serde_json::from_str(&bodies[1]).unwrap();
    let last = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last,
        json!({"role": "user", "content": [{
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [
                {"type": "text", "text": "`dot.png`: image/png, 1x1"},
                {"type": "image", "source":
                    {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}}
            ],
            // The conversation's breakpoint: the next round reads all this from the cache.
            "cache_control": {"type": "ephemeral"}
        }]})
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_model_without_pictures_gets_a_one_line_refusal_and_no_bytes() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("dot.png").display().to_string();
    let (base, bodies) = fake_model(openai_replies(&path)).await;
    let daemon = InProcess::start_with(
        temp,
        None,
        &[
            ("OPENAI_BASE_URL", &format!("{base}/v1")),
            ("OPENAI_API_KEY", "sk-test"),
            ("CODARIS_MODEL", "local-model"),
        ],
    )
    .await;
    write_png(&daemon);
    let (mut sessions, id) = session(&daemon, "openai").await;
    let mut stream = start_turn(&mut sessions, &id, "what is in dot.png?").await;
    let rest = rest_of_turn(&mut stream).await;
    assert_eq!(rest.reason, "end_turn");
    let refusal = format!(
        "read_file: `{path}` is a picture (image/png, 70 bytes); the model `local-model` does not take pictures (if it does, set `multimodal = true` in its `[[models]]` entry of the configuration)"
    );
    assert_eq!(rest.outputs, std::slice::from_ref(&refusal));

    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    let second: Value = serde_json::from_str(&bodies[1]).unwrap();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap(),
        &json!({"role": "tool", "tool_call_id": "call_1", "content": refusal})
    );
    assert!(!bodies[1].contains(PNG_BASE64), "{}", bodies[1]);
    assert!(!bodies[1].contains("image_url"), "{}", bodies[1]);
    daemon.stop().await;
}

#[tokio::test]
async fn a_models_entry_makes_a_local_model_multimodal_on_the_openai_route() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("dot.png").display().to_string();
    let (base, bodies) = fake_model(openai_replies(&path)).await;
    let daemon = InProcess::start_with_toml_in(
        temp,
        &format!(
            "[provider]\nmodel = \"llava:13b\"\n[openai]\nbase_url = \"{base}/v1\"\n\n[[models]]\nname = \"llava:13b\"\nmultimodal = true\n"
        ),
    )
    .await;
    write_png(&daemon);
    let (mut sessions, id) = session(&daemon, "openai").await;
    let mut stream = start_turn(&mut sessions, &id, "what is in dot.png?").await;
    let rest = rest_of_turn(&mut stream).await;
    assert_eq!(rest.reason, "end_turn");
    assert_eq!(rest.outputs, ["`dot.png`: image/png, 1x1"]);

    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    let second: Value = serde_json::from_str(&bodies[1]).unwrap();
    let messages = second["messages"].as_array().unwrap();
    let tail = &messages[messages.len() - 2..];
    assert_eq!(
        tail,
        [
            json!({"role": "tool", "tool_call_id": "call_1",
                   "content": "`dot.png`: image/png, 1x1"}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "The tool results above returned pictures; here they are, in order: 1 picture from tool call `call_1` (read_file)."},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_BASE64}")}}
            ]}),
        ]
    );
    daemon.stop().await;
}
