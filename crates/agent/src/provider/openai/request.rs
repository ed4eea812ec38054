//! The OpenAI Chat Completions request body, as OpenAI and the servers compatible with it
//! (llama.cpp, Ollama, vLLM, Perplexity) read it.
//!
//! Tools become functions in the request's order. Deferred tools are not sent (this API has no
//! deferred loading): the caller appends a bound tool as an added tool, paying one cache write.
//!
//! A `tool` message carries text only, so pictures in tool results travel in one `user` message
//! after the run of `tool` messages that answers an assistant message (the API wants those
//! right after it): a text part naming the call each picture belongs to, then one `image_url`
//! part with a `data:` URL per picture.

use serde::Serialize;
use serde_json::Value;

use crate::provider::types::{Message, ModelRequest, ToolCall, ToolResult, ToolTier};

#[derive(Debug, Serialize)]
pub(crate) struct Body<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    /// The output cap, as compatible servers (llama.cpp, Ollama, vLLM) read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    /// The output cap, as OpenAI's own API reads it: it refuses `max_tokens` for its reasoning
    /// models (o-series, GPT-5) and deprecated it for the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    /// How hard a reasoning model thinks (`low`, `medium`, `high`), when the session set a
    /// level (`switch_model`'s `reasoning`); absent, the model's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_effort: Option<&'static str>,
    stream: bool,
    stream_options: StreamOptions,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Debug, Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        /// `null` when the model only called tools.
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

/// A person's text as a plain string; pictures as parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<Part>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    /// `data:<media type>;base64,<data>`.
    url: String,
}

#[derive(Debug, Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Debug, Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    /// The arguments as a JSON string, as the API wants them.
    arguments: String,
}

/// Which field carries the output cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CapField {
    /// `max_tokens`: what every compatible server reads.
    MaxTokens,
    /// `max_completion_tokens`: OpenAI's own endpoint.
    MaxCompletionTokens,
}

impl CapField {
    /// `max_completion_tokens` for OpenAI's own host, `max_tokens` for any other server.
    pub(crate) fn for_base_url(base_url: &str) -> Self {
        let openai = url::Url::parse(base_url)
            .ok()
            .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
            .is_some_and(|host| host == "api.openai.com");
        if openai {
            Self::MaxCompletionTokens
        } else {
            Self::MaxTokens
        }
    }
}

/// Maps a request to the wire body; the request's own `max_tokens`, else `cap`, is the output
/// cap, sent in `field`.
pub(crate) fn body<'a>(
    model: &'a str,
    request: &'a ModelRequest,
    cap: u32,
    field: CapField,
) -> Body<'a> {
    let cap = request.max_tokens.unwrap_or(cap);
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(WireMessage::System {
            content: &request.system,
        });
    }
    conversation(&request.messages, &mut messages);
    let tools = request
        .tools
        .iter()
        .filter(|tool| tool.tier != ToolTier::Deferred)
        .map(|tool| WireTool {
            kind: "function",
            function: Function {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.input_schema,
            },
        })
        .collect();
    Body {
        model,
        messages,
        tools,
        max_tokens: (field == CapField::MaxTokens).then_some(cap),
        max_completion_tokens: (field == CapField::MaxCompletionTokens).then_some(cap),
        reasoning_effort: None,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
    }
}

/// The conversation, with the pictures of each run of tool results in one `user` message after
/// that run.
fn conversation<'a>(messages: &'a [Message], wire: &mut Vec<WireMessage<'a>>) {
    let mut calls: &[ToolCall] = &[];
    let mut with_pictures: Vec<&ToolResult> = Vec::new();
    for item in messages {
        if let Message::ToolResult(result) = item {
            if !result.pictures.is_empty() {
                with_pictures.push(result);
            }
        } else {
            // The run of tool results ended: its pictures go before whatever comes next.
            wire.extend(pictures(&with_pictures, calls));
            with_pictures.clear();
        }
        if let Message::Assistant { tool_calls, .. } = item {
            calls = tool_calls;
        }
        wire.push(message(item));
    }
    wire.extend(pictures(&with_pictures, calls));
}

/// The `user` message showing the pictures of `results`, which answer `calls`; none without
/// pictures.
fn pictures(results: &[&ToolResult], calls: &[ToolCall]) -> Option<WireMessage<'static>> {
    if results.is_empty() {
        return None;
    }
    let sources: Vec<String> = results
        .iter()
        .map(|result| {
            let count = result.pictures.len();
            let noun = if count == 1 { "picture" } else { "pictures" };
            match calls.iter().find(|call| call.id == result.call_id) {
                Some(call) => format!(
                    "{count} {noun} from tool call `{}` ({})",
                    result.call_id, call.name
                ),
                None => format!("{count} {noun} from tool call `{}`", result.call_id),
            }
        })
        .collect();
    let mut parts = vec![Part::Text {
        text: format!(
            "The tool results above returned pictures; here they are, in order: {}.",
            sources.join(", ")
        ),
    }];
    parts.extend(
        results
            .iter()
            .flat_map(|result| &result.pictures)
            .map(|picture| Part::ImageUrl {
                image_url: ImageUrl {
                    url: format!("data:{};base64,{}", picture.media_type, picture.data_base64),
                },
            }),
    );
    Some(WireMessage::User {
        content: UserContent::Parts(parts),
    })
}

fn message(message: &Message) -> WireMessage<'_> {
    match message {
        Message::User { text } => WireMessage::User {
            content: UserContent::Text(text),
        },
        Message::Assistant { text, tool_calls } => WireMessage::Assistant {
            content: (!text.is_empty() || tool_calls.is_empty()).then_some(text.as_str()),
            tool_calls: tool_calls
                .iter()
                .map(|call| WireCall {
                    id: &call.id,
                    kind: "function",
                    function: CallFunction {
                        name: &call.name,
                        arguments: call.arguments.to_string(),
                    },
                })
                .collect(),
        },
        Message::ToolResult(result) => WireMessage::Tool {
            tool_call_id: &result.call_id,
            content: &result.content,
        },
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::provider::types::{CacheHints, Picture};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: json!({"path": format!("{id}.png")}),
        }
    }

    fn result(id: &str, pictures: Vec<Picture>) -> Message {
        Message::ToolResult(ToolResult {
            call_id: id.into(),
            content: format!("`{id}.png`: image/png, 1x1"),
            is_error: false,
            binds: Vec::new(),
            pictures,
        })
    }

    /// Two read_file calls and the person's next words; the first call's result holds
    /// `pictures`.
    fn messages(pictures: Vec<Picture>) -> serde_json::Value {
        let request = ModelRequest {
            system: String::new(),
            messages: vec![
                Message::user("look"),
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![call("a"), call("b")],
                },
                result("a", pictures),
                result("b", Vec::new()),
                Message::user("and?"),
            ],
            tools: Vec::new(),
            cache: CacheHints::default(),
            max_tokens: None,
            server_compaction: None,
        };
        serde_json::to_value(body("m", &request, 8, CapField::MaxTokens)).unwrap()["messages"]
            .clone()
    }

    fn prefix() -> Vec<serde_json::Value> {
        let wire_call = |id: &str| {
            json!({"id": id, "type": "function", "function": {
                "name": "read_file", "arguments": format!("{{\"path\":\"{id}.png\"}}")}})
        };
        vec![
            json!({"role": "user", "content": "look"}),
            json!({"role": "assistant", "content": null,
                   "tool_calls": [wire_call("a"), wire_call("b")]}),
            json!({"role": "tool", "tool_call_id": "a", "content": "`a.png`: image/png, 1x1"}),
            json!({"role": "tool", "tool_call_id": "b", "content": "`b.png`: image/png, 1x1"}),
        ]
    }

    #[test]
    fn pictures_follow_the_whole_run_of_tool_messages_in_one_user_message() {
        let mut expected = prefix();
        expected.push(json!({"role": "user", "content": [
            {"type": "text", "text": "The tool results above returned pictures; here they are, in order: 2 pictures from tool call `a` (read_file)."},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
            {"type": "image_url", "image_url": {"url": "data:image/webp;base64,UklGRg=="}}
        ]}));
        expected.push(json!({"role": "user", "content": "and?"}));
        assert_eq!(
            messages(vec![
                Picture::from_bytes("image/png", b"\x89PNG"),
                Picture::from_bytes("image/webp", b"RIFF"),
            ]),
            json!(expected)
        );
    }

    #[test]
    fn pictures_of_the_last_run_close_the_conversation() {
        let request = ModelRequest {
            system: String::new(),
            messages: vec![
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![call("a"), call("b")],
                },
                result("a", vec![Picture::from_bytes("image/png", b"\x89PNG")]),
                result("b", vec![Picture::from_bytes("image/gif", b"GIF8")]),
            ],
            tools: Vec::new(),
            cache: CacheHints::default(),
            max_tokens: None,
            server_compaction: None,
        };
        let wire = serde_json::to_value(body("m", &request, 8, CapField::MaxTokens)).unwrap();
        let roles: Vec<&str> = wire["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["assistant", "tool", "tool", "user"]);
        assert_eq!(
            wire["messages"][3]["content"][0]["text"],
            "The tool results above returned pictures; here they are, in order: 1 picture from tool call `a` (read_file), 1 picture from tool call `b` (read_file)."
        );
        assert_eq!(
            wire["messages"][3]["content"][2]["image_url"]["url"],
            "data:image/gif;base64,R0lGOA=="
        );
    }

    #[test]
    fn without_pictures_the_messages_are_unchanged() {
        let mut expected = prefix();
        expected.push(json!({"role": "user", "content": "and?"}));
        assert_eq!(messages(Vec::new()), json!(expected));
    }

    #[test]
    fn every_request_carries_the_cap_in_the_field_its_server_reads() {
        let mut request = ModelRequest {
            system: String::new(),
            messages: vec![Message::user("say hello in five words")],
            tools: Vec::new(),
            cache: CacheHints::default(),
            max_tokens: None,
            server_compaction: None,
        };
        let local = CapField::for_base_url("http://127.0.0.1:8080/v1");
        let wire = serde_json::to_value(body("m", &request, 4096, local)).unwrap();
        assert_eq!(wire["max_tokens"], json!(4096));
        assert_eq!(wire.get("max_completion_tokens"), None);

        let openai = CapField::for_base_url("https://API.openai.com/v1/");
        let wire = serde_json::to_value(body("m", &request, 4096, openai)).unwrap();
        assert_eq!(wire["max_completion_tokens"], json!(4096));
        assert_eq!(wire.get("max_tokens"), None);

        // A look-alike host is any other server.
        for other in [
            "https://api.openai.com.evil.example/v1",
            "https://api.openai.com@evil.example/v1",
            "not a url",
        ] {
            assert_eq!(
                CapField::for_base_url(other),
                CapField::MaxTokens,
                "{other}"
            );
        }

        request.max_tokens = Some(7);
        let wire = serde_json::to_value(body("m", &request, 4096, local)).unwrap();
        assert_eq!(wire["max_tokens"], json!(7));
    }
}
