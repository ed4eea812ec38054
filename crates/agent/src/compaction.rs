//! Keeping a turn's requests inside the context budget: each round's eviction batch, an
//! automatic compaction when eviction is not enough, and the `compact_context` tool.
//!
//! The pure rules are in [`crate::context`]; this module calls the summariser (the session's
//! model, or the one `compact_context` names) and asks the host for what it re-reads from disk.

use futures_util::StreamExt;
use serde_json::Value;

use crate::context::budget::ContextBudget;
use crate::context::compact::{self, ContextSection};
use crate::context::{estimate, evict};
use crate::conversation::Conversation;
use crate::history::{Compaction, CompactionTrigger, Event};
use crate::host::{ToolRun, TurnHost};
use crate::provider::{CacheHints, Message, ModelProvider, ModelRequest, StreamEvent};
use crate::turn::TurnEvent;

/// The most a summary may be, in tokens.
const SUMMARY_TOKENS: u32 = 4_096;

/// What the summariser is told.
const SUMMARY_SYSTEM: &str = "You summarise a coding assistant's conversation so the assistant can continue the work without it. Write plain prose and short lists: the person's goals and constraints, what was done and decided (file paths, commands, names, figures exactly as they appeared), what failed and why, what is in progress and the next steps. Leave out tool output that can be read again. Wrap the summary in <summary></summary>.";

/// Where the round's request stands against the budget, after [`fit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fitted {
    /// The estimated request, in tokens.
    pub tokens: u64,
}

/// Brings the next request under the budget: an eviction batch when it passes `evict_at`,
/// then a compaction when it still passes `compact_at`.
pub(crate) async fn fit<H: TurnHost>(
    conversation: &mut Conversation,
    budget: &ContextBudget,
    fixed: u64,
    provider: &dyn ModelProvider,
    host: &H,
    turn: u32,
    round: u32,
) -> Fitted {
    let (batch, tokens) = conversation.evict_for(budget, fixed);
    if let Some(batch) = batch {
        host.emit(TurnEvent::Evicted {
            turn,
            round,
            results: batch.results,
            tokens_before: batch.tokens_before,
            tokens_after: batch.tokens_after,
        });
    }
    let from = conversation.sent_from();
    if !budget.auto_compact || tokens <= budget.at(budget.compact_at) {
        return Fitted { tokens };
    }
    let Some(fold) = compact::fold_point(&conversation.events()[from..], budget) else {
        return Fitted { tokens };
    };
    let tokens = compact(
        conversation,
        from + fold,
        Fold {
            trigger: CompactionTrigger::Auto,
            instructions: None,
            budget,
            fixed,
            turn,
            round,
        },
        provider,
        host,
    )
    .await;
    Fitted { tokens }
}

/// How one compaction is made.
pub(crate) struct Fold<'a> {
    pub trigger: CompactionTrigger,
    /// What the person or the model asked the summary to keep.
    pub instructions: Option<&'a str>,
    pub budget: &'a ContextBudget,
    pub fixed: u64,
    pub turn: u32,
    pub round: u32,
}

/// Folds the events from the last compaction up to `at` into a summary and what survives;
/// returns the estimated request afterwards.
pub(crate) async fn compact<H: TurnHost>(
    conversation: &mut Conversation,
    at: usize,
    fold: Fold<'_>,
    summariser: &dyn ModelProvider,
    host: &H,
) -> u64 {
    let from = conversation.sent_from();
    let folded = &conversation.events()[from..at];
    let transcript = compact::transcript(folded, conversation.evicted(), fold.budget);
    let summary = match summarise(summariser, &transcript, fold.instructions).await {
        Some(summary) => summary,
        None => compact::digest(folded),
    };
    record(conversation, at, summary, &fold, host).await
}

/// Records the summary the API sent from a server-side compaction: everything before the
/// answer it came with is folded, and what survives is written out after it as for a local
/// compaction.
pub(crate) async fn server_compacted<H: TurnHost>(
    conversation: &mut Conversation,
    summary: String,
    fold: Fold<'_>,
    host: &H,
) {
    let at = conversation.events().len();
    if at > conversation.sent_from() + 1 {
        record(conversation, at, summary, &fold, host).await;
    }
}

/// Folds the events from the last compaction up to `at` into `summary` and what survives
/// (re-read from the host now), reports it, and returns the estimated request afterwards.
async fn record<H: TurnHost>(
    conversation: &mut Conversation,
    at: usize,
    summary: String,
    fold: &Fold<'_>,
    host: &H,
) -> u64 {
    let sections: Vec<ContextSection> = host.survivors().await;
    let from = conversation.sent_from();
    let events = conversation.events();
    let evicted = conversation.evicted();
    let before = evict::request_tokens(&events[from..], evicted, fold.fixed);
    let folded = events[from..at]
        .iter()
        .filter(|e| !matches!(e, Event::ToolCall { .. }))
        .count();
    let mut compaction = Compaction {
        trigger: fold.trigger,
        summary,
        survivors: compact::survivors(events, at, &sections, fold.budget),
        folded: u32::try_from(folded).unwrap_or(u32::MAX),
        tokens_before: before,
        tokens_after: 0,
    };
    let tail = evict::request_tokens(&events[at..], evicted, 0);
    let after =
        fold.fixed + tail + estimate::event(&Event::Compaction(Box::new(compaction.clone())));
    compaction.tokens_after = after;
    host.emit(TurnEvent::Compacted {
        turn: fold.turn,
        round: fold.round,
        trigger: fold.trigger,
        folded: compaction.folded,
        tokens_before: before,
        tokens_after: after,
    });
    conversation.fold(at, compaction);
    after
}

/// Asks `provider` for a summary of `transcript`; `None` when it fails or says nothing.
async fn summarise(
    provider: &dyn ModelProvider,
    transcript: &str,
    instructions: Option<&str>,
) -> Option<String> {
    let mut ask = String::from(
        "Summarise the conversation above for the assistant that continues it, as the instructions say.",
    );
    if let Some(instructions) = instructions.filter(|i| !i.trim().is_empty()) {
        ask.push_str(" Also: ");
        ask.push_str(instructions.trim());
    }
    let request = ModelRequest {
        system: SUMMARY_SYSTEM.to_owned(),
        messages: vec![Message::user(format!(
            "<conversation>\n{transcript}\n</conversation>\n\n{ask}"
        ))],
        tools: Vec::new(),
        cache: CacheHints {
            tools: false,
            system: false,
            conversation: false,
        },
        max_tokens: Some(SUMMARY_TOKENS),
        server_compaction: None,
    };
    let mut stream = provider.stream(&request);
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        match event {
            Ok(StreamEvent::TextDelta { text: delta }) => text.push_str(&delta),
            Ok(_) => {}
            Err(err) => {
                tracing::warn!(%err, "the summariser failed; a digest stands in for the summary");
                return None;
            }
        }
    }
    let summary = between(&text, "<summary>", "</summary>")
        .unwrap_or(&text)
        .trim();
    (!summary.is_empty()).then(|| summary.to_owned())
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(&text[start..end])
}

/// `compact_context {instructions?, model?}`: folds everything before the answer that called
/// it. The summariser is the session's model or, with `model`, the one the host resolves.
pub(crate) async fn compact_tool<H: TurnHost>(
    conversation: &mut Conversation,
    args: &Value,
    fold: Fold<'_>,
    provider: &dyn ModelProvider,
    host: &H,
) -> ToolRun {
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::trim);
    let instructions = text("instructions").filter(|i| !i.is_empty());
    let named = match text("model").filter(|m| !m.is_empty()) {
        Some(model) => match host.summariser(model).await {
            Ok(provider) => Some(provider),
            Err(why) => return ToolRun::error(format!("compact_context: {why}")),
        },
        None => None,
    };
    let summariser: &dyn ModelProvider = named.as_deref().unwrap_or(provider);
    // The answer that made this call stays, with its results: everything before it folds.
    let from = conversation.sent_from();
    let Some(at) = conversation
        .events()
        .iter()
        .rposition(|e| matches!(e, Event::Assistant { .. }))
        .filter(|at| *at > from + 1)
    else {
        return ToolRun::ok(
            "compact_context: nothing to compact yet: the context holds only the current request",
        );
    };
    let fold = Fold {
        instructions,
        ..fold
    };
    let before = evict::request_tokens(
        &conversation.events()[from..],
        conversation.evicted(),
        fold.fixed,
    );
    let after = compact(conversation, at, fold, summariser, host).await;
    ToolRun::ok(format!(
        "compacted: the conversation before this call is now a summary (about {before} → {after} tokens); the plans, the checklist, kept results and recent files were kept"
    ))
}
