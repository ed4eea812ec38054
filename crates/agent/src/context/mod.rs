//! The context window: how much a request may hold, what it is estimated to hold, and what is
//! sent once a session has outgrown it.
//!
//! Two steps keep a request under its budget, both deterministic for a fixed conversation (the
//! surface's determinism rule extends to the messages):
//!
//! - **eviction** ([`evict`]): once a request would pass `evict_at` of the room, the oldest tool
//!   results are replaced by a one-line stub that says how to get them again, in one batch down
//!   to `evict_to` — never a result marked `keep: true` or by `keep_result`, never the current
//!   turn's. The marks are part of the conversation, so later rounds send the same prefix and
//!   the prompt cache holds until the next batch;
//! - **compaction** ([`compact`]): when eviction is not enough (or the model calls
//!   `compact_context`), the older history is folded into a summary made by the model, and what
//!   must survive is written out after it.
//!
//! The log keeps every event: both steps change only what is sent.

pub(crate) mod budget;
pub(crate) mod compact;
pub(crate) mod estimate;
pub(crate) mod evict;
pub(crate) mod keep;
pub(crate) mod window;

/// The longest prefix of `text` of at most `max` bytes that ends at a character boundary
/// (`str::floor_char_boundary` is newer than the workspace's rust-version).
pub(crate) fn prefix(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
