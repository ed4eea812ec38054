//! Token estimates, without a tokenizer: the providers' own tokenizers are not available
//! offline, and the budget needs a number before the request is sent.
//!
//! The estimate is deliberately high: 3 bytes per token (English prose runs near 4, code and
//! JSON near 3, so most text is over-counted), a fixed framing cost per message and per tool,
//! and a picture at the size the Anthropic API bills its largest ones.

use crate::history::Event;
use crate::provider::{ToolCall, ToolDefinition};

/// Bytes counted as one token.
pub const BYTES_PER_TOKEN: u64 = 3;
/// The framing of one message or content block (role, ids, JSON punctuation).
const MESSAGE_TOKENS: u64 = 12;
/// One picture.
const PICTURE_TOKENS: u64 = 1_600;

/// The tokens of `text`.
pub fn text(text: &str) -> u64 {
    (text.len() as u64).div_ceil(BYTES_PER_TOKEN)
}

fn calls(calls: &[ToolCall]) -> u64 {
    calls
        .iter()
        .map(|call| {
            MESSAGE_TOKENS + text(&call.id) + text(&call.name) + text(&call.arguments.to_string())
        })
        .sum()
}

/// The tokens of an event as the model would be sent it unevicted (a call taken up is sent
/// with its answer, so it costs nothing of its own).
pub fn event(event: &Event) -> u64 {
    match event {
        Event::User { text: t, notes } => {
            MESSAGE_TOKENS + text(t) + notes.iter().map(|n| text(n) + 1).sum::<u64>()
        }
        Event::Assistant { text: t, calls: c } => MESSAGE_TOKENS + text(t) + calls(c),
        Event::ToolCall { .. } => 0,
        Event::ToolResult {
            id,
            output,
            pictures,
            retired,
            ..
        } => {
            MESSAGE_TOKENS
                + text(id)
                + text(output)
                + text(retired)
                + PICTURE_TOKENS * pictures.len() as u64
        }
        Event::Compaction(compaction) => {
            MESSAGE_TOKENS + text(&compaction.summary) + text(&compaction.survivors) + 64
        }
    }
}

/// The tokens of a result of call `id` reading `content`.
pub fn result(id: &str, content: &str) -> u64 {
    MESSAGE_TOKENS + text(id) + text(content)
}

/// The tokens of what every request carries besides its messages: the system prompt and the
/// tools' definitions.
pub fn fixed(system: &str, tools: &[ToolDefinition]) -> u64 {
    text(system)
        + tools
            .iter()
            .map(|tool| {
                MESSAGE_TOKENS
                    + text(&tool.name)
                    + text(&tool.description)
                    + text(&tool.input_schema.to_string())
            })
            .sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_rounds_up_and_a_message_costs_its_framing() {
        assert_eq!(text(""), 0);
        assert_eq!(text("abc"), 1);
        assert_eq!(text("abcd"), 2);
        assert_eq!(event(&Event::user("abcdef")), MESSAGE_TOKENS + 2);
        assert_eq!(event(&Event::ToolCall { id: "x".into() }), 0);
    }
}
