//! A session's share of the context window: when to evict, how far, and when to compact.

use super::window::{DEFAULT_CONTEXT_WINDOW, known_context_window};

/// A share of the room, in thousandths (so a budget compares and hashes exactly).
pub type PerMille = u16;

/// How a session's requests share the model's context window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextBudget {
    /// The model's context window, in tokens.
    pub window: u64,
    /// Kept free for the answer (the provider's output cap).
    pub output: u64,
    /// Results are evicted once a request would pass this share of the room.
    pub evict_at: PerMille,
    /// One eviction batch goes down to this share, so the cache is rewritten rarely.
    pub evict_to: PerMille,
    /// The history is compacted once, with every old result evicted, a request would still
    /// pass this share of the room.
    pub compact_at: PerMille,
    /// Whether a compaction may start on its own (`[compaction] enable`).
    pub auto_compact: bool,
    /// On the direct Anthropic route, ask the API to compact server-side at `compact_at`
    /// (`[compaction] server_side`); the local compaction stands by.
    pub server_side: bool,
}

impl ContextBudget {
    /// The defaults for a window of `window` tokens and answers of up to `output`.
    pub fn new(window: u64, output: u64) -> Self {
        Self {
            window: window.max(1),
            output,
            evict_at: 600,
            evict_to: 400,
            compact_at: 850,
            auto_compact: true,
            server_side: false,
        }
    }

    /// The budget of `model`: `configured` when the configuration names a window, else the
    /// table's, else [`DEFAULT_CONTEXT_WINDOW`].
    pub fn for_model(model: &str, configured: Option<u64>, output: u64) -> Self {
        let window = configured
            .or_else(|| known_context_window(model))
            .unwrap_or(DEFAULT_CONTEXT_WINDOW);
        Self::new(window, output)
    }

    /// What a request may hold: the window less the answer, and never less than half of it
    /// (an output cap configured near the window would leave nothing).
    pub fn room(&self) -> u64 {
        self.window.saturating_sub(self.output).max(self.window / 2)
    }

    /// `share` of the room, in tokens.
    pub fn at(&self, share: PerMille) -> u64 {
        self.room().saturating_mul(u64::from(share)) / 1000
    }

    /// The request's share of the window, in whole percent rounded half up.
    pub fn percent_of_window(&self, tokens: u64) -> u64 {
        let percent =
            (u128::from(tokens) * 200 + u128::from(self.window)) / (u128::from(self.window) * 2);
        u64::try_from(percent).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_room_leaves_the_answer_out_but_never_more_than_half() {
        let budget = ContextBudget::new(100_000, 8_192);
        assert_eq!(budget.room(), 91_808);
        assert_eq!(budget.at(500), 45_904);
        assert_eq!(ContextBudget::new(10_000, 9_000).room(), 5_000);
        assert_eq!(budget.percent_of_window(50_000), 50);
        assert_eq!(budget.percent_of_window(0), 0);
    }

    #[test]
    fn a_configured_window_beats_the_table_and_the_table_beats_the_default() {
        assert_eq!(
            ContextBudget::for_model("claude-x", Some(50_000), 0).window,
            50_000
        );
        assert_eq!(
            ContextBudget::for_model("claude-x", None, 0).window,
            200_000
        );
        assert_eq!(
            ContextBudget::for_model("my-model", None, 0).window,
            DEFAULT_CONTEXT_WINDOW
        );
    }
}
