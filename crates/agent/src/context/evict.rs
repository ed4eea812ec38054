//! Eviction: the oldest tool results give way to a one-line stub once a request would pass its
//! share of the room.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::budget::ContextBudget;
use super::{estimate, keep};
use crate::history::Event;
use crate::provider::ToolCall;

/// A result smaller than this is never evicted: its stub would save next to nothing.
const WORTH_EVICTING: u64 = 64;
/// The most of a call's arguments a stub repeats.
const STUB_ARGS_BYTES: usize = 240;

/// The evicted results by call id, each with the stub sent in its place (made once, when it
/// was evicted: a round's cost does not grow with the results evicted before it).
pub type Stubs = BTreeMap<String, String>;

/// What one eviction batch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    /// Results evicted by this batch.
    pub results: u32,
    /// The estimated request before and after, in tokens.
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// The estimated request: `fixed` (system prompt and tools) and every event sent from the
/// last compaction on, evicted results as their stubs.
pub fn request_tokens(events: &[Event], evicted: &Stubs, fixed: u64) -> u64 {
    fixed
        + events
            .iter()
            .map(|event| match event {
                Event::ToolResult { id, .. } => match evicted.get(id) {
                    Some(stub) => estimate::result(id, stub),
                    None => estimate::event(event),
                },
                other => estimate::event(other),
            })
            .sum::<u64>()
}

/// Evicts the oldest results of `events` (the part sent, from the last compaction on) until
/// the request is back under `evict_to`, when it passes `evict_at`. `current` is where the
/// current turn starts within `events`: its results stay. Returns the batch (`None` when
/// nothing was evicted) and the request's estimate afterwards.
pub fn evict(
    events: &[Event],
    current: usize,
    evicted: &mut Stubs,
    fixed: u64,
    budget: &ContextBudget,
) -> (Option<Evicted>, u64) {
    let before = request_tokens(events, evicted, fixed);
    if before <= budget.at(budget.evict_at) {
        return (None, before);
    }
    let target = budget.at(budget.evict_to);
    let kept = keep::kept(events);
    let calls = calls_of(events);
    let mut total = before;
    let mut results = 0;
    for event in &events[..current.min(events.len())] {
        if total <= target {
            break;
        }
        let Event::ToolResult { id, tool, .. } = event else {
            continue;
        };
        if evicted.contains_key(id) || kept.contains(id.as_str()) {
            continue;
        }
        let whole = estimate::event(event);
        let stub = stub(tool, calls.get(id.as_str()).copied());
        let small = estimate::result(id, &stub);
        if whole < small + WORTH_EVICTING {
            continue;
        }
        evicted.insert(id.clone(), stub);
        total -= whole - small;
        results += 1;
    }
    let batch = (results > 0).then_some(Evicted {
        results,
        tokens_before: before,
        tokens_after: total,
    });
    (batch, total)
}

/// Every call of `events` by id.
pub fn calls_of(events: &[Event]) -> HashMap<&str, &ToolCall> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Assistant { calls, .. } => Some(calls),
            _ => None,
        })
        .flatten()
        .map(|call| (call.id.as_str(), call))
        .collect()
}

/// The stubs of `ids` made again from the calls in `events` (a conversation read back from
/// its stored form keeps only the ids).
pub fn stubs_of(events: &[Event], ids: impl IntoIterator<Item = String>) -> Stubs {
    let calls = calls_of(events);
    let tools: HashMap<&str, &str> = events
        .iter()
        .filter_map(|event| match event {
            Event::ToolResult { id, tool, .. } => Some((id.as_str(), tool.as_str())),
            _ => None,
        })
        .collect();
    ids.into_iter()
        .map(|id| {
            let tool = tools.get(id.as_str()).copied().unwrap_or_default();
            let made = stub(tool, calls.get(id.as_str()).copied());
            (id, made)
        })
        .collect()
}

/// What the model reads in place of an evicted result: the tool, its arguments and how to get
/// the result again.
pub fn stub(tool: &str, call: Option<&ToolCall>) -> String {
    let args = call.map_or(String::new(), |call| shown_args(&call.arguments));
    let again = match tool {
        "run_command" | "ssh_run_command" => {
            "run it again only if that is safe; a background task's output stays readable with `background_output`"
        }
        "background_output" | "background_wait" => "call `background_output` again to read it",
        "write" | "edit" | "apply_patch" | "mkdir" | "rmdir" | "touch" | "rm" | "mv" => {
            "it took effect; `read_file` shows the files as they are now"
        }
        _ => "call it again with the same arguments to see it",
    };
    format!("[result evicted to keep the context under its budget: `{tool}` {args}; {again}]")
}

/// A call's arguments on one line, cut to [`STUB_ARGS_BYTES`] at a character boundary.
fn shown_args(args: &Value) -> String {
    let text = args.to_string();
    let kept = super::prefix(&text, STUB_ARGS_BYTES);
    if kept.len() == text.len() {
        return text;
    }
    format!("{kept}…")
}
