//! The provider-neutral shape of one model request and of what streams back.
//!
//! The agent loop speaks only these types; each wire format (Anthropic Messages, OpenAI Chat
//! Completions) maps them to and from its own JSON.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::usage::Usage;

/// One message of the conversation, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the person typed.
    User {
        /// The text of the message.
        text: String,
    },
    /// A model turn: its text and the tool calls it made, in the order it made them.
    Assistant {
        /// The text the model wrote (may be empty when it only called tools).
        text: String,
        /// The calls it made.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The answer to one tool call of the preceding assistant message.
    ToolResult(ToolResult),
}

impl Message {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User { text: text.into() }
    }

    /// An assistant message with text only.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::Assistant {
            text: text.into(),
            tool_calls: Vec::new(),
        }
    }
}

/// A tool call the model made, with its arguments assembled from the streamed fragments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call, echoed back in the [`ToolResult`].
    pub id: String,
    /// The tool's name as the model wrote it (it may name a tool that was never offered).
    pub name: String,
    /// The arguments, parsed. Not necessarily an object: the policy refuses other shapes.
    pub arguments: Value,
}

/// The result of one tool call, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] this answers.
    pub call_id: String,
    /// What the model reads.
    pub content: String,
    /// Whether the call failed or was refused.
    #[serde(default)]
    pub is_error: bool,
    /// Tools this result binds (a `search_tools` result). On the Anthropic route, each bound
    /// tool that the request carries as [`ToolTier::Deferred`] is answered with a
    /// `tool_reference` block, so the `tools` array never changes; elsewhere it is ignored and
    /// the caller appends the bound tools as [`ToolTier::Added`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub binds: Vec<String>,
    /// Pictures the call returned (a `read_file` of a PNG), shown to the model after
    /// [`ToolResult::content`]. The daemon fills this only for a multimodal model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pictures: Vec<Picture>,
}

/// A picture for a multimodal model, as both wire formats carry it: a media type and the bytes
/// in standard padded base64. The base64 never reaches the text the model reads.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Picture {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The bytes, base64.
    pub data_base64: String,
}

impl Picture {
    /// A picture of `bytes`, encoded once here.
    pub fn from_bytes(media_type: impl Into<String>, bytes: &[u8]) -> Self {
        use base64::Engine as _;
        Self {
            media_type: media_type.into(),
            data_base64: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }
}

impl std::fmt::Debug for Picture {
    /// The media type and the encoded length: a log line or a failed assertion never prints
    /// megabytes of base64.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Picture")
            .field("media_type", &self.media_type)
            .field("data_base64_len", &self.data_base64.len())
            .finish()
    }
}

/// Where a tool sits on the surface; decides its place in the cache order and on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolTier {
    /// One of the fixed always-on tools. The last one carries the Anthropic cache breakpoint.
    AlwaysOn,
    /// Forced by a slash command or found by a search, appended after the always-on tools.
    Added,
    /// The long tail under the tool-search API: sent with `defer_loading: true` and loaded by a
    /// `tool_reference` in a tool result. Only the Anthropic route sends these.
    Deferred,
}

/// One tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// What the model reads to decide when to call it.
    pub description: String,
    /// The JSON schema of its arguments (an object schema).
    pub input_schema: Value,
    /// Its place on the surface.
    pub tier: ToolTier,
}

/// Where to put prompt-cache breakpoints (Anthropic only; OpenAI caches prefixes itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheHints {
    /// A breakpoint on the last always-on tool, so a discovery only appends after it.
    pub tools: bool,
    /// A breakpoint on the system prompt.
    pub system: bool,
    /// A breakpoint on the last block of the last message, caching the conversation so far.
    pub conversation: bool,
}

impl Default for CacheHints {
    /// The spec's layout: one breakpoint, on the last always-on tool.
    fn default() -> Self {
        Self {
            tools: true,
            system: false,
            conversation: false,
        }
    }
}

/// Everything one model round sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The system prompt.
    pub system: String,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// The tools, in cache order: always-on (fixed order), then added (forced, then found,
    /// oldest first), then deferred.
    pub tools: Vec<ToolDefinition>,
    /// Prompt-cache breakpoints.
    #[serde(default)]
    pub cache: CacheHints,
    /// The output cap of this request; absent, the provider's own (`max_output_tokens`,
    /// [`crate::provider::DEFAULT_MAX_OUTPUT_TOKENS`] unless configured). Every request carries
    /// one: without it an OpenAI-compatible server generates until its context is full.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Let the API compact server-side once the prompt passes this many tokens (Anthropic's
    /// `compact_20260112`; other routes ignore it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_compaction: Option<u64>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It hit the output limit.
    MaxTokens,
    /// It produced a stop sequence.
    StopSequence,
    /// A long server-side step paused; send the conversation again to continue.
    PauseTurn,
    /// It refused, or a content filter stopped it.
    Refusal,
    /// The scripted provider had no round left for the turn.
    ScriptExhausted,
    /// A reason this crate does not know, as the API spelled it.
    Other(String),
}

/// A tool call whose streamed arguments did not assemble into JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvalidToolCall {
    /// The provider's id for the call.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The argument text as streamed.
    pub raw_arguments: String,
    /// What the JSON parser said.
    pub reason: String,
}

/// One event of a streamed model round. A complete round ends with [`StreamEvent::Usage`] (when
/// the server reports usage) and then exactly one [`StreamEvent::Stop`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// A piece of the answer text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// A complete tool call.
    ToolCall(ToolCall),
    /// A tool call whose arguments are not valid JSON. Not fatal: the loop answers it with a tool
    /// result telling the model to call again.
    InvalidToolCall(InvalidToolCall),
    /// Token counts for the round.
    Usage(Usage),
    /// The round ended.
    Stop {
        /// Why.
        reason: StopReason,
    },
    /// The request failed in a way worth another try, and the provider waits before it tries
    /// again. Comes before any part of the answer; for the person watching, never the model.
    Retrying(Retrying),
    /// The API compacted the conversation server-side before answering (Anthropic's
    /// `compaction` block): the summary that stands for everything before this answer.
    Compacted {
        /// The API's summary.
        summary: String,
    },
}

/// A retry the provider is about to make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retrying {
    /// The retry about to be made, from 1.
    pub attempt: u32,
    /// The most retries the provider makes.
    pub max_attempts: u32,
    /// The wait before it, in milliseconds.
    pub delay_ms: u64,
    /// What failed, for a person: `busy (429)`, `server error (502)`, `connection failed`.
    pub reason: String,
}

impl StreamEvent {
    /// A finished tool call from its streamed argument text: no fragments mean no arguments
    /// (`{}`), text that is not JSON is an [`StreamEvent::InvalidToolCall`], never a panic.
    pub(crate) fn assembled_call(id: String, name: String, json: String) -> Self {
        if json.trim().is_empty() {
            return Self::ToolCall(ToolCall {
                id,
                name,
                arguments: Value::Object(serde_json::Map::new()),
            });
        }
        match serde_json::from_str(&json) {
            Ok(arguments) => Self::ToolCall(ToolCall {
                id,
                name,
                arguments,
            }),
            Err(error) => Self::InvalidToolCall(InvalidToolCall {
                id,
                name,
                raw_arguments: json,
                reason: error.to_string(),
            }),
        }
    }
}
