//! The conversation as the surface reads it: a list of events. A turn starts at each user
//! message; the binding is read back from `search_tools` results only, from their structured
//! `bound` list, never from text.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use codaris_index::{SearchOutcome, render};

/// The one tool whose results bind tools.
pub const SEARCH_TOOLS: &str = "search_tools";

/// One event of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The person's message; it starts a turn.
    User {
        /// What they typed.
        text: String,
    },
    /// Text the model wrote.
    Assistant {
        /// The text.
        text: String,
    },
    /// A tool call the model made.
    ToolCall {
        /// The call's id, shared with its result.
        id: String,
        /// The tool's name.
        tool: String,
        /// The arguments as the model gave them.
        args: Value,
    },
    /// What a call returned (or the refusal sent back instead).
    ToolResult {
        /// The call's id.
        id: String,
        /// The tool's name.
        tool: String,
        /// The text the model reads.
        output: String,
        /// The names a `search_tools` result binds (its bindable hits, in rank order). Ignored
        /// for every other tool, whatever it holds.
        #[serde(default)]
        bound: Vec<String>,
        /// True when the call failed or was refused; an error binds nothing.
        #[serde(default)]
        is_error: bool,
    },
}

impl Event {
    /// The person's message.
    pub fn user(text: impl Into<String>) -> Event {
        Event::User { text: text.into() }
    }

    /// The result of a `search_tools` call that ran: the rendered text the model reads and the
    /// bindable hits as structured data.
    pub fn search_result(id: impl Into<String>, outcome: &SearchOutcome) -> Event {
        Event::ToolResult {
            id: id.into(),
            tool: SEARCH_TOOLS.to_owned(),
            output: render(outcome),
            bound: outcome.bindable().into_iter().map(str::to_owned).collect(),
            is_error: false,
        }
    }

    /// The result of any other call (or a failed one), which binds nothing.
    pub fn tool_result(
        id: impl Into<String>,
        tool: impl Into<String>,
        output: impl Into<String>,
        is_error: bool,
    ) -> Event {
        Event::ToolResult {
            id: id.into(),
            tool: tool.into(),
            output: output.into(),
            bound: Vec::new(),
            is_error,
        }
    }

    /// The names this event binds: a successful `search_tools` result's `bound` list, and
    /// nothing for any other event.
    pub fn binds(&self) -> &[String] {
        match self {
            Event::ToolResult {
                tool,
                bound,
                is_error: false,
                ..
            } if tool == SEARCH_TOOLS => bound,
            _ => &[],
        }
    }
}
