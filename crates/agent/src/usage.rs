//! Token usage of a round or a turn, and the usage line.
//!
//! The counts follow the Anthropic convention: `input_tokens` are the prompt tokens neither
//! read from nor written to the cache, so the whole prompt is `input + cache read + cache
//! written`. A provider that reports cached tokens inside its input count subtracts them first.

use serde::{Deserialize, Serialize};

/// Tokens one model call (or a whole turn) used. Absent fields read as zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Prompt tokens not served from or written to the cache.
    #[serde(default)]
    pub input_tokens: u64,
    /// Prompt tokens read from the cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Tokens the model wrote.
    #[serde(default)]
    pub output_tokens: u64,
}

impl Usage {
    /// Adds another call's usage (saturating: a counter never wraps).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }

    /// The whole prompt: input, cache read and cache written.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }

    /// The share of the prompt read from the cache, in whole percent, rounded half up; 0 for
    /// an empty prompt.
    pub fn cache_read_percent(&self) -> u64 {
        let whole = u128::from(self.input_tokens)
            + u128::from(self.cache_read_tokens)
            + u128::from(self.cache_write_tokens);
        if whole == 0 {
            return 0;
        }
        let percent = (u128::from(self.cache_read_tokens) * 200 + whole) / (whole * 2);
        u64::try_from(percent).unwrap_or(100)
    }

    /// The usage line: `Usage: input N tokens, output N tokens, cache read N (P%), cache written
    /// N.` with plain decimal integers, `input` the uncached prompt tokens and `P` the
    /// [`cache_read_percent`](Usage::cache_read_percent).
    pub fn line(&self) -> String {
        format!(
            "Usage: input {} tokens, output {} tokens, cache read {} ({}%), cache written {}.",
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_read_percent(),
            self.cache_write_tokens
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Usage;

    #[test]
    fn percent_rounds_half_up_and_never_overflows() {
        let u = |i, r, w| Usage {
            input_tokens: i,
            cache_read_tokens: r,
            cache_write_tokens: w,
            output_tokens: 0,
        };
        assert_eq!(u(0, 0, 0).cache_read_percent(), 0);
        assert_eq!(u(1, 1, 0).cache_read_percent(), 50);
        assert_eq!(u(199, 1, 0).cache_read_percent(), 1); // 0.5 % rounds up
        assert_eq!(u(201, 1, 0).cache_read_percent(), 0);
        assert_eq!(u(0, u64::MAX, u64::MAX).cache_read_percent(), 50);
        assert_eq!(u(0, 5, 0).cache_read_percent(), 100);
    }
}
