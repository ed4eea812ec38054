//! One event of a session's conversation. The conversation is one list of these
//! ([`crate::Conversation`]); the surface, the provider's messages and the stored form are each
//! read from it. A turn starts at each user message; the binding is read back from
//! `search_tools` results only, from their structured `bound` list, never from text.

use codaris_index::{SearchOutcome, render};

use crate::provider::{Picture, ToolCall};

/// The one tool whose results bind tools.
pub const SEARCH_TOOLS: &str = "search_tools";

/// One event of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The person's message; it starts a turn.
    User {
        /// What they typed.
        text: String,
        /// Notes that arrived between turns (a background command finished), sent with the
        /// message on lines of their own; never part of what was typed.
        notes: Vec<String>,
    },
    /// One answer of the model: its text (possibly empty) and the calls it made, in order. An
    /// answer cut at its output cap keeps its text and drops its calls.
    Assistant {
        /// The text.
        text: String,
        /// The calls, as the model made them.
        calls: Vec<ToolCall>,
    },
    /// The loop took up the call of that id from the answer before it (some calls of an
    /// answer never are: the turn ended first).
    ToolCall {
        /// The call's id, shared with its result.
        id: String,
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
        bound: Vec<String>,
        /// True when the call failed or was refused; an error binds nothing.
        is_error: bool,
        /// Pictures the call returned that the model is still shown (older ones give way to
        /// newer ones).
        pictures: Vec<Picture>,
        /// What the model reads after `output`: a line for each time pictures of this result
        /// were retired. Empty for most results.
        retired: String,
    },
    /// The conversation before this point was folded into a summary: from here on the model
    /// is sent the summary in place of every event before it (which the log still holds).
    Compaction(Box<Compaction>),
}

/// What a compaction left in the conversation (see `docs/surface.md`, "Long sessions").
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Compaction {
    /// What started it.
    pub trigger: CompactionTrigger,
    /// The summary of the folded history: the model's, or a digest made without one when the
    /// summariser failed.
    pub summary: String,
    /// What survives every compaction, rendered for the model: the plans, the checklist, the
    /// kept results, the files read or edited last, the tools still bound, the open tasks.
    pub survivors: String,
    /// How many events were folded (since the compaction before, if any).
    pub folded: u32,
    /// The estimated request before and after, in tokens.
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// Why a compaction happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    /// The request would not fit the budget even with every old result evicted.
    Auto,
    /// The model called `compact_context`.
    Tool,
    /// The Anthropic API compacted server-side and sent its summary.
    Server,
}

impl Compaction {
    /// What the model reads in place of the folded history.
    pub fn message(&self) -> String {
        let mut text = format!(
            "[The conversation before this point was compacted: {} earlier events were folded into this summary. Files, records and grants are unchanged.]\n<summary>\n{}\n</summary>",
            self.folded,
            self.summary.trim()
        );
        if !self.survivors.is_empty() {
            text.push_str("\n\n<kept_after_compaction>\n");
            text.push_str(&self.survivors);
            text.push_str("\n</kept_after_compaction>");
        }
        text
    }
}

impl CompactionTrigger {
    /// The name on the wire and in `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Tool => "tool",
            Self::Server => "server",
        }
    }
}

impl Event {
    /// The person's message.
    pub fn user(text: impl Into<String>) -> Event {
        Event::User {
            text: text.into(),
            notes: Vec::new(),
        }
    }

    /// The model's text alone.
    pub fn assistant(text: impl Into<String>) -> Event {
        Event::Assistant {
            text: text.into(),
            calls: Vec::new(),
        }
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
            pictures: Vec::new(),
            retired: String::new(),
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
            pictures: Vec::new(),
            retired: String::new(),
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
