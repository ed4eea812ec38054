//! Compaction's pure part: where to fold, the transcript the summariser reads, and what
//! survives every compaction, written out for the model after the summary.
//!
//! What survives, in the order the model reads it (and so the order the budget is spent in,
//! the most expendable last):
//! 1. the person's latest request, word for word, when it was folded;
//! 2. the tools still bound by a search (the binding rule reads the whole log, so they stay
//!    bound; the model is told which they are);
//! 3. what the host re-reads from disk: the plan documents, the planner's checklist, the open
//!    background tasks (project instructions need nothing: they are in the system prompt,
//!    re-read every turn);
//! 4. the results marked to keep (`keep: true`, `keep_result`), whole, within a budget;
//! 5. the files read or edited most recently (up to [`RECENT_FILES`]): their paths, then the
//!    text last read of each when no edit came after it, while the budget lasts.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde_json::Value;

use super::budget::ContextBudget;
use super::{estimate, evict, keep};
use crate::history::Event;
use crate::surface::BINDING_TURNS;

/// The most files brought back, the most recently read or edited first.
pub const RECENT_FILES: usize = 5;
/// The share of the room the kept tail (the part not folded) may hold.
const TAIL: u16 = 250;
/// The share of the room the survivors may hold, all sections together.
const SURVIVORS: u16 = 150;
/// The share of the room the summariser's transcript may hold.
const TRANSCRIPT: u16 = 600;
/// The most of one result the transcript repeats.
const TRANSCRIPT_RESULT_BYTES: usize = 4_000;

/// A section of what survives, as the host reads it (a plan document, the checklist, the open
/// background tasks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextSection {
    pub title: String,
    pub body: String,
}

/// Where an automatic compaction folds `events` (the part sent, from the last compaction on):
/// the earliest start of a message or an answer whose tail fits [`TAIL`] of the room, else the
/// start of the last answer. `None` when there is nothing to fold.
pub fn fold_point(events: &[Event], budget: &ContextBudget) -> Option<usize> {
    let room = budget.at(TAIL);
    let mut tail = 0;
    let mut best = None;
    for (at, event) in events.iter().enumerate().rev() {
        tail += estimate::event(event);
        if at == 0 {
            break;
        }
        if matches!(event, Event::User { .. } | Event::Assistant { .. }) {
            if best.is_none() || tail <= room {
                best = Some(at);
            } else {
                break;
            }
        }
    }
    best
}

/// The transcript of `folded` the summariser reads: one block per event, results cut to
/// [`TRANSCRIPT_RESULT_BYTES`] (evicted ones as their stubs), the oldest part left out when
/// the whole would pass its share of the room.
pub fn transcript(folded: &[Event], evicted: &evict::Stubs, budget: &ContextBudget) -> String {
    let mut blocks: Vec<String> = Vec::with_capacity(folded.len());
    for event in folded {
        let block = match event {
            Event::User { text, notes } => {
                let mut block = format!("## The person\n{text}");
                for note in notes {
                    let _ = write!(block, "\n(note) {note}");
                }
                block
            }
            Event::Assistant { text, calls } => {
                let mut block = String::from("## The assistant");
                if !text.is_empty() {
                    let _ = write!(block, "\n{text}");
                }
                for call in calls {
                    let _ = write!(block, "\ncalls `{}` {}", call.name, call.arguments);
                }
                block
            }
            Event::ToolCall { .. } => continue,
            Event::ToolResult {
                id,
                tool,
                output,
                is_error,
                ..
            } => {
                let shown = match evicted.get(id) {
                    Some(stub) => stub.clone(),
                    None => cut(output, TRANSCRIPT_RESULT_BYTES),
                };
                let failed = if *is_error { " (failed)" } else { "" };
                format!("## Result of `{tool}`{failed}\n{shown}")
            }
            Event::Compaction(compaction) => format!(
                "## Summary of the conversation before\n{}\n\n{}",
                compaction.summary, compaction.survivors
            ),
        };
        blocks.push(block);
    }
    // Newest first until the budget is spent, then put back in order.
    let limit = budget.at(TRANSCRIPT);
    let mut spent = 0;
    let mut kept = Vec::new();
    for block in blocks.iter().rev() {
        let cost = estimate::text(block) + 1;
        if spent + cost > limit && !kept.is_empty() {
            kept.push("## (the earliest part of the conversation is left out)".to_owned());
            break;
        }
        spent += cost;
        kept.push(block.clone());
    }
    kept.reverse();
    kept.join("\n\n")
}

/// What survives the fold of `log[..fold]` (the whole log, so kept results and reads older
/// than an earlier compaction still count), rendered for the model. `host` are the sections
/// the host re-read from disk.
pub fn survivors(
    log: &[Event],
    fold: usize,
    host: &[ContextSection],
    budget: &ContextBudget,
) -> String {
    let folded = &log[..fold.min(log.len())];
    let mut left = budget
        .at(SURVIVORS)
        .saturating_mul(estimate::BYTES_PER_TOKEN) as usize;
    let mut out = String::new();
    let section = |out: &mut String, title: &str, body: &str, left: &mut usize| {
        let text = format!("### {title}\n{}\n\n", body.trim_end());
        if text.len() <= *left {
            *left -= text.len();
            out.push_str(&text);
        } else if *left > title.len() + 64 {
            let room = *left - title.len() - 64;
            let cut = format!("### {title}\n{}\n\n", cut(body, room));
            *left = left.saturating_sub(cut.len());
            out.push_str(&cut);
        }
    };
    if let Some(request) = latest_request(log, fold) {
        section(&mut out, "The person's latest request", request, &mut left);
    }
    let bound = still_bound(log, fold);
    if !bound.is_empty() {
        let names = bound
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ");
        section(
            &mut out,
            "Tools still bound by your searches",
            &names,
            &mut left,
        );
    }
    for part in host {
        section(&mut out, &part.title, &part.body, &mut left);
    }
    let calls = evict::calls_of(log);
    let kept = keep::kept(log);
    for event in folded {
        if let Event::ToolResult {
            id, tool, output, ..
        } = event
            && kept.contains(id.as_str())
        {
            let args = calls
                .get(id.as_str())
                .map_or(String::new(), |call| call.arguments.to_string());
            section(
                &mut out,
                &format!("Kept result of `{tool}` {args}"),
                output,
                &mut left,
            );
        }
    }
    let recent = recent_files(log, fold);
    if !recent.is_empty() {
        // The paths always; the texts while the budget lasts, the most recent first.
        let paths = recent
            .iter()
            .map(|(path, text)| match text {
                Some(_) => format!("- `{path}`"),
                None => format!("- `{path}` (edited since it was last read: read it again)"),
            })
            .collect::<Vec<_>>()
            .join("\n");
        section(
            &mut out,
            "Files read or edited most recently",
            &paths,
            &mut left,
        );
        for (path, text) in &recent {
            if let Some(text) = text {
                section(&mut out, &format!("Last read of `{path}`"), text, &mut left);
            }
        }
    }
    out.trim_end().to_owned()
}

/// The person's latest message, when it is among the folded events.
fn latest_request(log: &[Event], fold: usize) -> Option<&str> {
    let (at, text) = log
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, event)| match event {
            Event::User { text, .. } => Some((at, text.as_str())),
            _ => None,
        })?;
    (at < fold).then_some(text)
}

/// The files the folded events read or edited, the most recent first (at most
/// [`RECENT_FILES`]), each with the text of its last read when no edit came after it.
fn recent_files(log: &[Event], fold: usize) -> Vec<(String, Option<String>)> {
    let folded = &log[..fold.min(log.len())];
    let calls = evict::calls_of(folded);
    let mut seen: HashSet<String> = HashSet::new();
    let mut files = Vec::new();
    for event in folded.iter().rev() {
        let Event::ToolResult {
            id,
            tool,
            output,
            is_error: false,
            ..
        } = event
        else {
            continue;
        };
        let Some(call) = calls.get(id.as_str()) else {
            continue;
        };
        let Some(path) = call.arguments.get("path").and_then(Value::as_str) else {
            continue;
        };
        let edit = matches!(tool.as_str(), "edit" | "write" | "apply_patch");
        if !(edit || tool == "read_file") || !seen.insert(path.to_owned()) {
            continue;
        }
        // The newest event for this path decides: an edit leaves only the path.
        files.push((path.to_owned(), (!edit).then(|| output.clone())));
        if files.len() == RECENT_FILES {
            break;
        }
    }
    files
}

/// The names bound by searches in the folded part of the last [`BINDING_TURNS`] turns.
fn still_bound(log: &[Event], fold: usize) -> Vec<String> {
    let mut turns = 0;
    let mut start = 0;
    for (at, event) in log.iter().enumerate().rev() {
        if matches!(event, Event::User { .. }) {
            turns += 1;
            if turns == BINDING_TURNS {
                start = at;
                break;
            }
        }
    }
    let mut names: Vec<String> = Vec::new();
    for event in &log[start.min(fold)..fold.min(log.len())] {
        for name in event.binds() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    names
}

/// `text` cut to `max` bytes at a character boundary, saying so.
fn cut(text: &str, max: usize) -> String {
    let kept = super::prefix(text, max);
    if kept.len() == text.len() {
        return text.to_owned();
    }
    format!("{kept}\n[… {} more bytes]", text.len() - kept.len())
}

/// A summary made without the model, when the summariser failed: the person's requests, the
/// tools used and the files touched, so the session can go on.
pub fn digest(folded: &[Event]) -> String {
    let mut requests = Vec::new();
    let mut tools: Vec<(String, u32)> = Vec::new();
    for event in folded {
        match event {
            Event::User { text, .. } => {
                requests.push(text.lines().next().unwrap_or_default().to_owned())
            }
            Event::ToolResult { tool, .. } => match tools.iter_mut().find(|(t, _)| t == tool) {
                Some((_, n)) => *n += 1,
                None => tools.push((tool.clone(), 1)),
            },
            _ => {}
        }
    }
    let mut out =
        String::from("(The summariser could not be reached; this digest was made without it.)\n");
    if !requests.is_empty() {
        out.push_str("Requests so far:\n");
        for request in requests.iter().rev().take(10).rev() {
            let _ = writeln!(out, "- {request}");
        }
    }
    if !tools.is_empty() {
        let used = tools
            .iter()
            .map(|(tool, n)| format!("`{tool}` ×{n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(out, "Tools used: {used}");
    }
    out.trim_end().to_owned()
}
