//! Decodes a Chat Completions stream: `data:` chunks with `choices[].delta` (`content`,
//! `tool_calls` keyed by `index`, `arguments` concatenated), a `finish_reason`, a final chunk with
//! `usage` (asked for with `stream_options.include_usage`), and `data: [DONE]`.
//!
//! Compatible servers differ at the edges, and the decoder takes what they send: a tool-call delta
//! without `index` continues the last call unless it brings a new `id`; arguments sent as an
//! object are taken as-is; a stream that ends after its `finish_reason` without `[DONE]` is
//! complete; a `finish_reason` of `stop` on a message with tool calls reads as tool use.

use std::collections::{BTreeMap, VecDeque};

use serde_json::Value;

use crate::provider::error::{Origin, ProviderError};
use crate::provider::sse::SseEvent;
use crate::provider::transport::{Flow, WireDecoder};
use crate::provider::types::{StopReason, StreamEvent};
use crate::usage::Usage;

/// A tool call being streamed.
#[derive(Debug, Default)]
struct Slot {
    id: String,
    name: String,
    arguments: String,
}

/// The state of one streamed completion.
#[derive(Debug)]
pub(crate) struct Decoder {
    origin: Origin,
    slots: BTreeMap<u64, Slot>,
    last_slot: Option<u64>,
    called_tools: bool,
    finish: Option<StopReason>,
    usage: Option<Usage>,
}

impl Decoder {
    pub(crate) fn new(origin: Origin) -> Self {
        Self {
            origin,
            slots: BTreeMap::new(),
            last_slot: None,
            called_tools: false,
            finish: None,
            usage: None,
        }
    }

    fn choice(&mut self, choice: &Value, out: &mut VecDeque<StreamEvent>) {
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            out.push_back(StreamEvent::TextDelta {
                text: text.to_owned(),
            });
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                self.tool_delta(call);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.flush_tools(out);
            self.finish = Some(finish_reason(reason, self.called_tools));
        }
    }

    fn tool_delta(&mut self, call: &Value) {
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let index = match call.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            None => match (self.last_slot, id) {
                (Some(last), Some(id)) if self.slots.get(&last).is_some_and(|s| s.id != id) => {
                    self.slots.keys().next_back().map_or(0, |k| k + 1)
                }
                (Some(last), _) => last,
                (None, _) => 0,
            },
        };
        self.last_slot = Some(index);
        let slot = self.slots.entry(index).or_default();
        if let Some(id) = id
            && slot.id.is_empty()
        {
            id.clone_into(&mut slot.id);
        }
        let function = call.get("function").unwrap_or(&Value::Null);
        if let Some(name) = function.get("name").and_then(Value::as_str)
            && slot.name.is_empty()
        {
            name.clone_into(&mut slot.name);
        }
        match function.get("arguments") {
            Some(Value::String(fragment)) => slot.arguments.push_str(fragment),
            Some(Value::Null) | None => {}
            Some(object) => slot.arguments.push_str(&object.to_string()),
        }
    }

    /// Emits the assembled calls in index order.
    fn flush_tools(&mut self, out: &mut VecDeque<StreamEvent>) {
        for (index, slot) in std::mem::take(&mut self.slots) {
            self.called_tools = true;
            let id = if slot.id.is_empty() {
                format!("call_{index}")
            } else {
                slot.id
            };
            out.push_back(StreamEvent::assembled_call(id, slot.name, slot.arguments));
        }
        self.last_slot = None;
    }

    /// The end: the calls not yet flushed, the usage, the stop.
    fn finish(&mut self, out: &mut VecDeque<StreamEvent>) {
        self.flush_tools(out);
        if let Some(usage) = self.usage.take() {
            out.push_back(StreamEvent::Usage(usage));
        }
        let reason = self
            .finish
            .take()
            .unwrap_or_else(|| finish_reason("stop", self.called_tools));
        out.push_back(StreamEvent::Stop { reason });
    }
}

impl WireDecoder for Decoder {
    fn event(
        &mut self,
        event: SseEvent,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<Flow, ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.finish(out);
            return Ok(Flow::Done);
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|error| self.origin.malformed(format!("chunk is not JSON: {error}")))?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let kind = error.get("type").and_then(Value::as_str).unwrap_or("error");
            let message = match error.get("message").and_then(Value::as_str) {
                Some(message) => message.to_owned(),
                None => error
                    .as_str()
                    .map_or_else(|| error.to_string(), str::to_owned),
            };
            return Err(self.origin.api(kind, &message));
        }
        if let Some(choices) = chunk.get("choices").and_then(Value::as_array) {
            for choice in choices {
                self.choice(choice, out);
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(parse_usage(usage));
        }
        Ok(Flow::More)
    }

    fn eof(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if self.finish.is_none() {
            return Err(self.origin.truncated());
        }
        self.finish(out);
        Ok(())
    }
}

/// `prompt_tokens` includes the cached tokens; they are split out so that `input_tokens` means the
/// uncached prompt, as on the Anthropic route.
fn parse_usage(usage: &Value) -> Usage {
    let count = |value: Option<&Value>| value.and_then(Value::as_u64).unwrap_or(0);
    let prompt = count(usage.get("prompt_tokens"));
    let cached = count(
        usage
            .get("prompt_tokens_details")
            .and_then(|details| details.get("cached_tokens")),
    )
    .min(prompt);
    Usage {
        input_tokens: prompt - cached,
        output_tokens: count(usage.get("completion_tokens")),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

fn finish_reason(reason: &str, called_tools: bool) -> StopReason {
    match reason {
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "stop" | "eos" if called_tools => StopReason::ToolUse,
        "stop" | "eos" => StopReason::EndTurn,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}
