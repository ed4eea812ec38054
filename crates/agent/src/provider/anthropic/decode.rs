//! Decodes the Anthropic Messages stream: `message_start`, `content_block_start`,
//! `content_block_delta` (`text_delta`, `input_json_delta`), `content_block_stop`,
//! `message_delta`, `message_stop`, `ping` and `error`; a server-side compaction's
//! `compaction` block and its `compaction_delta`. Unknown events and block types are
//! skipped, as the API's versioning policy asks.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use crate::provider::error::{Origin, ProviderError};
use crate::provider::sse::SseEvent;
use crate::provider::transport::{Flow, WireDecoder};
use crate::provider::types::{StopReason, StreamEvent};
use crate::usage::Usage;

/// A content block being streamed.
#[derive(Debug)]
enum Open {
    Text,
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    /// A server-side compaction's summary (`compaction` block, `compaction_delta`s).
    Compaction(String),
    Other,
}

/// The state of one streamed message.
#[derive(Debug)]
pub(crate) struct Decoder {
    origin: Origin,
    blocks: HashMap<u64, Open>,
    usage: Usage,
    stop: Option<StopReason>,
}

impl Decoder {
    pub(crate) fn new(origin: Origin) -> Self {
        Self {
            origin,
            blocks: HashMap::new(),
            usage: Usage::default(),
            stop: None,
        }
    }

    fn index(&self, data: &Value) -> Result<u64, ProviderError> {
        data.get("index").and_then(Value::as_u64).ok_or_else(|| {
            self.origin
                .malformed("a content block event without an index")
        })
    }

    fn block_start(
        &mut self,
        data: &Value,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let index = self.index(data)?;
        let block = data.get("content_block").unwrap_or(&Value::Null);
        let open = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                push_text(out, str_field(block, "text"));
                Open::Text
            }
            Some("tool_use") => Open::ToolUse {
                id: str_field(block, "id").to_owned(),
                name: str_field(block, "name").to_owned(),
                json: String::new(),
            },
            Some("compaction") => Open::Compaction(str_field(block, "content").to_owned()),
            _ => Open::Other,
        };
        self.blocks.insert(index, open);
        Ok(())
    }

    fn block_delta(
        &mut self,
        data: &Value,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let index = self.index(data)?;
        let delta = data.get("delta").unwrap_or(&Value::Null);
        let Some(open) = self.blocks.get_mut(&index) else {
            return Err(self.origin.malformed(format!(
                "a delta for content block {index}, which was never started"
            )));
        };
        match (delta.get("type").and_then(Value::as_str), open) {
            (Some("text_delta"), Open::Text) => push_text(out, str_field(delta, "text")),
            (Some("input_json_delta"), Open::ToolUse { json, .. }) => {
                json.push_str(str_field(delta, "partial_json"));
            }
            (Some("compaction_delta"), Open::Compaction(summary)) => {
                summary.push_str(str_field(delta, "content"));
            }
            (Some("text_delta" | "input_json_delta"), _) => {
                return Err(self
                    .origin
                    .malformed(format!("a delta that does not fit content block {index}")));
            }
            _ => {}
        }
        Ok(())
    }

    fn block_stop(
        &mut self,
        data: &Value,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let index = self.index(data)?;
        match self.blocks.remove(&index) {
            Some(Open::ToolUse { id, name, json }) => {
                out.push_back(StreamEvent::assembled_call(id, name, json));
            }
            // A compaction that failed comes with no content: nothing to fold.
            Some(Open::Compaction(summary)) if !summary.trim().is_empty() => {
                out.push_back(StreamEvent::Compacted { summary });
            }
            _ => {}
        }
        Ok(())
    }

    fn message_delta(&mut self, data: &Value) {
        if let Some(reason) = data
            .get("delta")
            .and_then(|delta| delta.get("stop_reason"))
            .and_then(Value::as_str)
        {
            self.stop = Some(stop_reason(reason));
        }
        if let Some(usage) = data.get("usage") {
            merge_usage(&mut self.usage, usage);
        }
    }
}

impl WireDecoder for Decoder {
    fn event(
        &mut self,
        event: SseEvent,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<Flow, ProviderError> {
        let data: Value = serde_json::from_str(&event.data).map_err(|error| {
            self.origin
                .malformed(format!("event data is not JSON: {error}"))
        })?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default();
        match kind {
            "message_start" => {
                if let Some(usage) = data.get("message").and_then(|m| m.get("usage")) {
                    merge_usage(&mut self.usage, usage);
                }
            }
            "content_block_start" => self.block_start(&data, out)?,
            "content_block_delta" => self.block_delta(&data, out)?,
            "content_block_stop" => self.block_stop(&data, out)?,
            "message_delta" => self.message_delta(&data),
            "message_stop" => {
                out.push_back(StreamEvent::Usage(self.usage));
                let reason = self.stop.take().unwrap_or(StopReason::EndTurn);
                out.push_back(StreamEvent::Stop { reason });
                return Ok(Flow::Done);
            }
            "error" => {
                let error = data.get("error").unwrap_or(&Value::Null);
                let kind = error.get("type").and_then(Value::as_str).unwrap_or("error");
                return Err(self.origin.api(kind, str_field(error, "message")));
            }
            // `ping` and events added after this was written.
            _ => {}
        }
        Ok(Flow::More)
    }

    fn eof(&mut self, _out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        Err(self.origin.truncated())
    }
}

fn str_field<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn push_text(out: &mut VecDeque<StreamEvent>, text: &str) {
    if !text.is_empty() {
        out.push_back(StreamEvent::TextDelta {
            text: text.to_owned(),
        });
    }
}

/// Takes every count the object carries; `message_start` gives the prompt side and
/// `message_delta` the (cumulative) output side, and may repeat the prompt side.
fn merge_usage(usage: &mut Usage, value: &Value) {
    let count = |key: &str| value.get(key).and_then(Value::as_u64);
    if let Some(n) = count("input_tokens") {
        usage.input_tokens = n;
    }
    if let Some(n) = count("output_tokens") {
        usage.output_tokens = n;
    }
    if let Some(n) = count("cache_read_input_tokens") {
        usage.cache_read_tokens = n;
    }
    if let Some(n) = count("cache_creation_input_tokens") {
        usage.cache_write_tokens = n;
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "pause_turn" => StopReason::PauseTurn,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}
