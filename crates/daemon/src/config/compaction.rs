//! `[compaction]`: how sessions keep inside their model's context window (result eviction,
//! compaction; see `docs/surface.md`, "Long sessions"). Each model's window is
//! `context_window` in its provider's section (`[openai]`, `[anthropic]`), else a table of
//! known models, else a small default.

use codaris_agent::{ContextBudget, PerMille};
use serde::Deserialize;

use crate::error::ConfigError;

/// `[compaction]` as written.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionToml {
    /// Automatic compaction and the `compact_context` tool (default true). Off, eviction still
    /// runs and a session that outgrows its window is refused by the API.
    pub enable: Option<bool>,
    /// The share of the window (less the answer) at which old results are evicted (0.6).
    pub evict_at: Option<f64>,
    /// The share one eviction batch goes down to (0.4).
    pub evict_to: Option<f64>,
    /// The share at which the history is compacted when eviction is not enough (0.85).
    pub compact_at: Option<f64>,
    /// On the direct Anthropic route, let the API compact server-side (`compact_20260112`),
    /// the local summary standing by (default false).
    pub server_side: Option<bool>,
}

/// `[compaction]`, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionConfig {
    pub enable: bool,
    pub evict_at: PerMille,
    pub evict_to: PerMille,
    pub compact_at: PerMille,
    pub server_side: bool,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        let budget = ContextBudget::new(1, 0);
        Self {
            enable: true,
            evict_at: budget.evict_at,
            evict_to: budget.evict_to,
            compact_at: budget.compact_at,
            server_side: false,
        }
    }
}

impl CompactionConfig {
    /// The budget of a model with `window` tokens and answers of up to `output`; `anthropic`
    /// for the direct Anthropic route, the only one that compacts server-side.
    pub fn budget(&self, window: u64, output: u64, anthropic: bool) -> ContextBudget {
        ContextBudget {
            evict_at: self.evict_at,
            evict_to: self.evict_to,
            compact_at: self.compact_at,
            auto_compact: self.enable,
            server_side: self.server_side && self.enable && anthropic,
            ..ContextBudget::new(window, output)
        }
    }
}

/// Resolves `[compaction]`: shares between 0.05 and 1, `evict_to` below `evict_at`.
pub fn resolve(
    toml: Option<CompactionToml>,
    origin: &impl Fn(&str) -> String,
) -> Result<CompactionConfig, ConfigError> {
    let toml = toml.unwrap_or_default();
    let defaults = CompactionConfig::default();
    let share = |key: &str, value: Option<f64>, default: PerMille| match value {
        None => Ok(default),
        Some(v) if (0.05..=1.0).contains(&v) => Ok((v * 1000.0).round() as PerMille),
        Some(v) => Err(ConfigError::Invalid {
            key: origin(&format!("compaction.{key}")),
            reason: format!("must be a share of the window from 0.05 to 1, such as 0.6, not `{v}`"),
        }),
    };
    let config = CompactionConfig {
        enable: toml.enable.unwrap_or(defaults.enable),
        evict_at: share("evict_at", toml.evict_at, defaults.evict_at)?,
        evict_to: share("evict_to", toml.evict_to, defaults.evict_to)?,
        compact_at: share("compact_at", toml.compact_at, defaults.compact_at)?,
        server_side: toml.server_side.unwrap_or(defaults.server_side),
    };
    if config.evict_to >= config.evict_at {
        return Err(ConfigError::Invalid {
            key: origin("compaction.evict_to"),
            reason: "must be below `compaction.evict_at`, so a batch frees room".to_owned(),
        });
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_read_as_thousandths_and_bad_ones_are_named() {
        let config = resolve(
            Some(CompactionToml {
                evict_at: Some(0.5),
                evict_to: Some(0.25),
                ..CompactionToml::default()
            }),
            &|key: &str| format!("`{key}` in f.toml"),
        )
        .unwrap();
        assert_eq!((config.evict_at, config.evict_to), (500, 250));
        assert_eq!(config.compact_at, 850);
        for bad in [0.0, 1.5, -1.0, f64::NAN] {
            let err = resolve(
                Some(CompactionToml {
                    compact_at: Some(bad),
                    ..CompactionToml::default()
                }),
                &|key: &str| format!("`{key}` in f.toml"),
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains("`compaction.compact_at` in f.toml"), "{err}");
        }
        let err = resolve(
            Some(CompactionToml {
                evict_at: Some(0.4),
                evict_to: Some(0.4),
                ..CompactionToml::default()
            }),
            &|key: &str| format!("`{key}` in f.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("below"), "{err}");
    }
}
