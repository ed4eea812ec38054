//! The OpenAI Chat Completions request body, as OpenAI and the servers compatible with it
//! (llama.cpp, Ollama, vLLM, Perplexity) read it.
//!
//! Tools become functions in the request's order. Deferred tools are not sent (this API has no
//! deferred loading): the caller appends a bound tool as an added tool, paying one cache write.

use serde::Serialize;
use serde_json::Value;

use crate::provider::types::{Message, ModelRequest, ToolTier};

#[derive(Debug, Serialize)]
pub(crate) struct Body<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
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
        content: &'a str,
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

/// Maps a request to the wire body.
pub(crate) fn body<'a>(model: &'a str, request: &'a ModelRequest) -> Body<'a> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(WireMessage::System {
            content: &request.system,
        });
    }
    messages.extend(request.messages.iter().map(message));
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
        max_tokens: request.max_tokens,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
    }
}

fn message(message: &Message) -> WireMessage<'_> {
    match message {
        Message::User { text } => WireMessage::User { content: text },
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
