//! The Anthropic Messages request body.
//!
//! The `tools` array is the request's tools in their order; the only `cache_control` in it sits
//! on the last always-on tool; deferred tools carry `defer_loading: true`. A tool result that
//! binds deferred tools carries one `tool_reference` block per bound tool, so under the tool-search
//! API the `tools` array is the same bytes on every request of a session.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::Value;

use crate::provider::types::{Message, ModelRequest, ToolTier};

#[derive(Debug, Serialize)]
pub(crate) struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Block<'a>>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    context_management: Option<Value>,
}

/// The beta of server-side compaction, sent with a request that asks for it.
pub(crate) const COMPACTION_BETA: &str = "compact-2026-01-12";
/// The lowest trigger the API accepts.
const MIN_COMPACTION_TRIGGER: u64 = 50_000;

/// `context_management` asking the API to compact once the prompt passes `trigger` tokens.
fn compaction(trigger: u64) -> Value {
    serde_json::json!({"edits": [{
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": trigger.max(MIN_COMPACTION_TRIGGER)}
    }]})
}

#[derive(Debug, Clone, Copy, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    defer_loading: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Input<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ResultContent<'a>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl Block<'_> {
    fn set_cache_control(&mut self) {
        let (Self::Text { cache_control, .. }
        | Self::ToolUse { cache_control, .. }
        | Self::ToolResult { cache_control, .. }) = self;
        *cache_control = Some(EPHEMERAL);
    }
}

/// A call's arguments as `tool_use.input`, which the API requires to be an object: arguments of
/// another shape (a call the policy refused for its shape) go back as `{}`, and the tool result
/// says what was wrong.
#[derive(Debug)]
struct Input<'a>(&'a Value);

impl Serialize for Input<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.0 {
            Value::Object(_) => self.0.serialize(serializer),
            _ => serializer.serialize_map(Some(0))?.end(),
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<ResultPart<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResultPart<'a> {
    Text { text: &'a str },
    ToolReference { tool_name: &'a str },
    Image { source: ImageSource<'a> },
}

/// A picture inline in a tool result.
#[derive(Debug, Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

/// Whether any tool is deferred (the request then needs the tool-search beta header).
pub(crate) fn uses_tool_search(request: &ModelRequest) -> bool {
    request
        .tools
        .iter()
        .any(|tool| tool.tier == ToolTier::Deferred)
}

/// Maps a request to the wire body; the request's own `max_tokens`, else `cap`, is the output
/// cap (the API requires one).
pub(crate) fn body<'a>(model: &'a str, request: &'a ModelRequest, cap: u32) -> Body<'a> {
    let system = if request.system.is_empty() {
        Vec::new()
    } else {
        vec![Block::Text {
            text: &request.system,
            cache_control: request.cache.system.then_some(EPHEMERAL),
        }]
    };
    Body {
        model,
        max_tokens: request.max_tokens.unwrap_or(cap),
        system,
        messages: messages(request),
        tools: tools(request),
        stream: true,
        context_management: request.server_compaction.map(compaction),
    }
}

fn tools(request: &ModelRequest) -> Vec<WireTool<'_>> {
    let breakpoint = request
        .cache
        .tools
        .then(|| {
            request
                .tools
                .iter()
                .rposition(|tool| tool.tier == ToolTier::AlwaysOn)
        })
        .flatten();
    request
        .tools
        .iter()
        .enumerate()
        .map(|(position, tool)| WireTool {
            name: &tool.name,
            description: &tool.description,
            input_schema: &tool.input_schema,
            defer_loading: tool.tier == ToolTier::Deferred,
            cache_control: (Some(position) == breakpoint).then_some(EPHEMERAL),
        })
        .collect()
}

/// The conversation, with consecutive messages of one role merged (tool results and the user's
/// next words share a user message, as the API requires) and empty messages dropped.
fn messages(request: &ModelRequest) -> Vec<WireMessage<'_>> {
    let deferred: HashSet<&str> = request
        .tools
        .iter()
        .filter(|tool| tool.tier == ToolTier::Deferred)
        .map(|tool| tool.name.as_str())
        .collect();
    let mut wire: Vec<WireMessage<'_>> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            Message::User { text } => ("user", text_block(text).into_iter().collect()),
            Message::Assistant { text, tool_calls } => {
                let mut blocks: Vec<Block<'_>> = text_block(text).into_iter().collect();
                blocks.extend(tool_calls.iter().map(|call| Block::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    input: Input(&call.arguments),
                    cache_control: None,
                }));
                ("assistant", blocks)
            }
            Message::ToolResult(result) => {
                let references: Vec<ResultPart<'_>> = result
                    .binds
                    .iter()
                    .filter(|name| deferred.contains(name.as_str()))
                    .map(|name| ResultPart::ToolReference { tool_name: name })
                    .collect();
                // A plain result stays a plain string, the bytes every earlier request sent.
                let content = if references.is_empty() && result.pictures.is_empty() {
                    ResultContent::Text(&result.content)
                } else {
                    let mut parts: Vec<ResultPart<'_>> = text_part(&result.content).collect();
                    parts.extend(references);
                    parts.extend(result.pictures.iter().map(|picture| ResultPart::Image {
                        source: ImageSource {
                            kind: "base64",
                            media_type: &picture.media_type,
                            data: &picture.data_base64,
                        },
                    }));
                    ResultContent::Blocks(parts)
                };
                let block = Block::ToolResult {
                    tool_use_id: &result.call_id,
                    content,
                    is_error: result.is_error,
                    cache_control: None,
                };
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match wire.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => wire.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    if request.cache.conversation
        && let Some(block) = wire.last_mut().and_then(|m| m.content.last_mut())
    {
        block.set_cache_control();
    }
    wire
}

fn text_block(text: &str) -> Option<Block<'_>> {
    (!text.is_empty()).then_some(Block::Text {
        text,
        cache_control: None,
    })
}

fn text_part(text: &str) -> impl Iterator<Item = ResultPart<'_>> {
    (!text.is_empty())
        .then_some(ResultPart::Text { text })
        .into_iter()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::provider::DEFAULT_MAX_OUTPUT_TOKENS;
    use crate::provider::types::{CacheHints, Picture, ToolCall, ToolResult};

    fn wire(request: &ModelRequest) -> Value {
        serde_json::to_value(body("m", request, DEFAULT_MAX_OUTPUT_TOKENS)).unwrap()
    }

    #[test]
    fn roles_merge_empty_messages_drop_and_breakpoints_follow_the_hints() {
        let request = ModelRequest {
            system: "sys".into(),
            messages: vec![
                Message::user("one"),
                Message::user(""),
                Message::user("two"),
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "t1".into(),
                        name: "grep".into(),
                        arguments: json!("not an object"),
                    }],
                },
                Message::ToolResult(ToolResult {
                    call_id: "t1".into(),
                    content: "arguments must be an object".into(),
                    is_error: true,
                    binds: vec!["grep".into()],
                    pictures: Vec::new(),
                }),
                Message::user("then?"),
            ],
            tools: Vec::new(),
            cache: CacheHints {
                tools: true,
                system: true,
                conversation: true,
            },
            max_tokens: None,
            server_compaction: None,
        };
        let ephemeral = json!({"type": "ephemeral"});
        assert_eq!(
            wire(&request),
            json!({
                "model": "m",
                "max_tokens": DEFAULT_MAX_OUTPUT_TOKENS,
                "system": [{"type": "text", "text": "sys", "cache_control": ephemeral}],
                "messages": [
                    {"role": "user", "content": [
                        {"type": "text", "text": "one"},
                        {"type": "text", "text": "two"}
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": "t1", "name": "grep", "input": {}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1",
                         "content": "arguments must be an object", "is_error": true},
                        {"type": "text", "text": "then?", "cache_control": ephemeral}
                    ]}
                ],
                "stream": true
            })
        );
    }

    #[test]
    fn no_breakpoint_without_an_always_on_tool_or_with_the_hint_off() {
        let tool = |tier| crate::provider::types::ToolDefinition {
            name: "x".into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}),
            tier,
        };
        let mut request = ModelRequest {
            system: String::new(),
            messages: vec![Message::user("hi")],
            tools: vec![tool(ToolTier::Added)],
            cache: CacheHints::default(),
            max_tokens: Some(7),
            server_compaction: None,
        };
        assert_eq!(
            wire(&request).to_string().matches("cache_control").count(),
            0
        );
        request.tools = vec![tool(ToolTier::AlwaysOn)];
        request.cache.tools = false;
        let body = wire(&request);
        assert_eq!(body.to_string().matches("cache_control").count(), 0);
        assert_eq!(body.get("system"), None);
        assert_eq!(body["max_tokens"], json!(7));
    }

    /// A read_file call and its result, with the given pictures.
    fn picture_request(pictures: Vec<Picture>) -> ModelRequest {
        ModelRequest {
            system: String::new(),
            messages: vec![
                Message::user("look"),
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "t1".into(),
                        name: "read_file".into(),
                        arguments: json!({"path": "plot.png"}),
                    }],
                },
                Message::ToolResult(ToolResult {
                    call_id: "t1".into(),
                    content: "`plot.png`: image/png, 1x1".into(),
                    is_error: false,
                    binds: Vec::new(),
                    pictures,
                }),
            ],
            tools: Vec::new(),
            cache: CacheHints::default(),
            max_tokens: None,
            server_compaction: None,
        }
    }

    #[test]
    fn a_result_with_pictures_sends_its_text_then_one_image_block_each() {
        let request = picture_request(vec![
            Picture::from_bytes("image/png", b"\x89PNG"),
            Picture {
                media_type: "image/jpeg".into(),
                data_base64: "/9j/".into(),
            },
        ]);
        assert_eq!(
            wire(&request)["messages"][2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [
                    {"type": "text", "text": "`plot.png`: image/png, 1x1"},
                    {"type": "image", "source":
                        {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
                    {"type": "image", "source":
                        {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}}
                ]}
            ]})
        );
    }

    #[test]
    fn a_result_without_pictures_keeps_its_plain_string_bytes() {
        let body = serde_json::to_string(&body("m", &picture_request(Vec::new()), 8)).unwrap();
        assert!(
            body.contains(
                r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"`plot.png`: image/png, 1x1"}]}"#
            ),
            "{body}"
        );
        assert!(!body.contains(r#""type":"image""#), "{body}");
    }
}
