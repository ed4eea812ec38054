//! `[memory]`: the memory subagent, off unless switched on.
//!
//! ```toml
//! [memory]
//! enabled = true   # every user turn starts a memory subagent in the background
//! ```
//!
//! With it on, each turn of a person's session starts a child session that has only the six
//! `codaris_memory_*` tools (an ask-mode turn's only the three that read): it recalls what the
//! notes say about the prompt, and what it recalls reaches the main model at the start of its
//! next round. The user scope's notes are kept in `<config dir>/memory`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[memory]` as written.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryToml {
    /// A memory subagent at each user turn (default false).
    pub enabled: Option<bool>,
}

/// `[memory]` resolved.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Memory {
    /// `memory.enabled`.
    pub enabled: bool,
    /// Where the user scope's notes are kept is under this (the configuration directory);
    /// `None` without one, when only the project scope has notes.
    pub config_dir: Option<PathBuf>,
}

impl Memory {
    pub fn resolve(toml: Option<MemoryToml>, config_dir: Option<&std::path::Path>) -> Memory {
        Memory {
            enabled: toml.and_then(|m| m.enabled).unwrap_or(false),
            config_dir: config_dir.map(std::path::Path::to_path_buf),
        }
    }
}
