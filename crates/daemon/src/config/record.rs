//! Where each configuration value came from, for `codaris config show`: [`record`]ed by
//! [`super::resolve`] from its inputs (the file's values, the variables that were set,
//! the flags given), then turned into [`Entry`]s of effective values with their [`Source`].
//! Secrets (keys, tokens, MCP headers and environments) are shown as `"<redacted>"`.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;

use serde_json::{Value, json};

use super::file::ConfigToml;
use super::inputs::Flags;

/// What [`super::resolve`] saw, enough to say where each value came from.
#[derive(Clone, PartialEq, Default)]
pub struct Recorded {
    /// The file's leaves by dotted key, secrets already redacted.
    pub(super) file: BTreeMap<String, Value>,
    /// The variables that were set (non-empty).
    pub(super) env: BTreeSet<String>,
    /// The flags given.
    pub(super) flags: BTreeSet<&'static str>,
    /// The line each key of the file is on, when the file was read ([`Recorded::set_lines`]).
    pub(super) lines: BTreeMap<String, usize>,
}

impl Recorded {
    /// The line of each key as the file has it ([`codaris_config::key_lines`]), so
    /// `codaris config show` can say `file:LINE`.
    pub fn set_lines(&mut self, lines: BTreeMap<String, usize>) {
        self.lines = lines;
    }

    /// The line that sets `key` (or, for a table shown whole, its first line), when known.
    pub(super) fn line_of(&self, key: &str) -> Option<usize> {
        self.lines.get(key).copied().or_else(|| {
            let inner = format!("{key}.");
            self.lines
                .iter()
                .filter(|(k, _)| k.starts_with(&inner))
                .map(|(_, line)| *line)
                .min()
        })
    }
}

impl std::fmt::Debug for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorded")
            .field("file", &self.file.keys().collect::<Vec<_>>())
            .field("env", &self.env)
            .field("flags", &self.flags)
            .finish()
    }
}

/// The shown form of a secret that is set.
pub const REDACTED: &str = "<redacted>";

/// Whether the value at dotted `key` is a secret: one rule for `config show`, `config_get`
/// and a commit's diff.
fn is_secret(key: &str) -> bool {
    codaris_config::edit::is_secret(key)
}

fn flatten(prefix: &str, value: Value, out: &mut BTreeMap<String, Value>) {
    match value {
        Value::Null => {}
        Value::Object(map) => {
            for (name, inner) in map {
                let key = if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}.{name}")
                };
                flatten(&key, inner, out);
            }
        }
        leaf => {
            let leaf = if is_secret(prefix) {
                json!(REDACTED)
            } else {
                leaf
            };
            out.insert(prefix.to_owned(), leaf);
        }
    }
}

/// Records what `resolve` is given; called before it takes the file apart.
pub fn record(toml: &ConfigToml, env: &BTreeMap<String, OsString>, flags: &Flags) -> Recorded {
    let mut file = BTreeMap::new();
    if let Ok(value) = serde_json::to_value(toml) {
        flatten("", value, &mut file);
    }
    let env = env
        .iter()
        .filter(|(_, value)| !value.is_empty())
        .map(|(name, _)| name.clone())
        .collect();
    let mut given = BTreeSet::new();
    if flags.listen.is_some() {
        given.insert("listen");
    }
    Recorded {
        file,
        env,
        flags: given,
        lines: BTreeMap::new(),
    }
}
