//! `[scheduler]`: jobs that run while nobody watches (`docs/scheduler.md`).
//!
//! ```toml
//! [scheduler]
//! enabled = true      # default false: no job runs and the scheduler's tools are not offered
//! ```

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[scheduler]` as written.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerToml {
    pub enabled: Option<bool>,
}

/// `[scheduler]`, resolved.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// Off by default: a daemon runs nothing on its own until the operator says so.
    pub enabled: bool,
    /// The user's jobs (`<config dir>/scheduler`); `None` without a config directory.
    pub user_dir: Option<PathBuf>,
}

/// `[scheduler]` with the configuration directory the user's jobs live in.
pub fn resolve(
    toml: Option<SchedulerToml>,
    config_dir: Option<&std::path::Path>,
) -> SchedulerConfig {
    SchedulerConfig {
        enabled: toml.and_then(|t| t.enabled).unwrap_or(false),
        user_dir: config_dir.map(|dir| dir.join("scheduler")),
    }
}
