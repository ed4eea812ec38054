//! `[[hooks.pre_tool_use]]`: the operator's programs that see every tool call before the
//! permission gate (see `docs/hooks.md`). What runs them is
//! `crate::calls::hooks`; here the entries are read and checked.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// `[hooks]` as written.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HooksToml {
    /// `[[hooks.pre_tool_use]]`, in the order they are written.
    pub pre_tool_use: Option<Vec<PreToolUseToml>>,
}

/// One `[[hooks.pre_tool_use]]` entry as written.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PreToolUseToml {
    /// A regular expression the whole tool name must match; `*` or unset: every tool.
    pub matcher: Option<String>,
    /// The program and its arguments (no shell reads it).
    pub command: Option<Vec<String>>,
    /// How long the hook may run before it is killed and counts as `deny`
    /// ([`codaris_config::DEFAULT_HOOK_TIMEOUT_SECONDS`] when unset).
    pub timeout_seconds: Option<f64>,
}

/// One hook, resolved.
#[derive(Debug, Clone)]
pub struct PreToolUseHook {
    /// The matcher as written (`*` when unset), recorded with each answer.
    pub matcher: String,
    /// What the matcher stands for ([`codaris_config::hook_matcher`]).
    pub pattern: regex::Regex,
    /// The program and its arguments.
    pub command: Vec<String>,
    pub timeout: Duration,
}

impl PreToolUseHook {
    /// Whether the hook sees a call of `tool`: its name as decided (`server__tool` for an MCP
    /// tool) or, for an MCP tool, as Claude Code names it (`mcp__server__tool`).
    pub fn matches(&self, tool: &str, mcp: bool) -> bool {
        self.pattern.is_match(tool) || (mcp && self.pattern.is_match(&format!("mcp__{tool}")))
    }
}

impl PartialEq for PreToolUseHook {
    fn eq(&self, other: &Self) -> bool {
        self.matcher == other.matcher
            && self.command == other.command
            && self.timeout == other.timeout
    }
}

/// Resolves `[hooks]`: every matcher a regular expression, every command a program.
pub fn resolve(
    toml: Option<HooksToml>,
    origin: &impl Fn(&str) -> String,
) -> Result<Vec<PreToolUseHook>, ConfigError> {
    let entries = toml.and_then(|t| t.pre_tool_use).unwrap_or_default();
    entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| {
            let key = |field: &str| origin(&format!("hooks.pre_tool_use[{}].{field}", index + 1));
            let matcher = entry.matcher.unwrap_or_else(|| "*".to_owned());
            let pattern =
                codaris_config::hook_matcher(&matcher).map_err(|err| ConfigError::Invalid {
                    key: key("matcher"),
                    reason: format!(
                        "`{matcher}` is not a regular expression: {}",
                        err.to_string()
                            .split_whitespace()
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                })?;
            let command = match entry.command {
                Some(argv) if argv.first().is_some_and(|p| !p.trim().is_empty()) => argv,
                Some(_) => {
                    return Err(ConfigError::Invalid {
                        key: key("command"),
                        reason: "names no program; give the program and its arguments".to_owned(),
                    });
                }
                None => {
                    return Err(ConfigError::Invalid {
                        key: key("command"),
                        reason: "is missing; each `[[hooks.pre_tool_use]]` names its program"
                            .to_owned(),
                    });
                }
            };
            let timeout = match entry.timeout_seconds {
                None => Duration::from_secs(codaris_config::DEFAULT_HOOK_TIMEOUT_SECONDS),
                Some(seconds) => codaris_mcp::timeout_seconds(seconds).map_err(|reason| {
                    ConfigError::Invalid {
                        key: key("timeout_seconds"),
                        reason,
                    }
                })?,
            };
            Ok(PreToolUseHook {
                matcher,
                pattern,
                command,
                timeout,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Vec<PreToolUseHook>, ConfigError> {
        let toml: crate::config::ConfigToml =
            toml::from_str(text).map_err(|e| ConfigError::Invalid {
                key: "toml".to_owned(),
                reason: e.to_string(),
            })?;
        resolve(toml.hooks, &|key: &str| format!("`{key}`"))
    }

    #[test]
    fn hooks_resolve_in_order_with_the_default_timeout_and_bad_ones_name_their_key() {
        let hooks = parsed(
            "[[hooks.pre_tool_use]]\nmatcher = \"write|edit\"\ncommand = [\"/bin/a\"]\n\n\
             [[hooks.pre_tool_use]]\ncommand = [\"/bin/b\", \"-x\"]\ntimeout_seconds = 0.5\n",
        )
        .unwrap();
        assert_eq!(hooks.len(), 2);
        assert_eq!(hooks[0].timeout, Duration::from_secs(60));
        assert!(hooks[0].matches("edit", false) && !hooks[0].matches("write_file", false));
        assert_eq!(hooks[1].matcher, "*");
        assert_eq!(hooks[1].timeout, Duration::from_millis(500));
        for (text, key) in [
            (
                "[[hooks.pre_tool_use]]\nmatcher = \"(\"\ncommand = [\"/bin/a\"]",
                "hooks.pre_tool_use[1].matcher",
            ),
            (
                "[[hooks.pre_tool_use]]\ncommand = [\"\"]",
                "hooks.pre_tool_use[1].command",
            ),
            (
                "[[hooks.pre_tool_use]]\nmatcher = \"x\"",
                "hooks.pre_tool_use[1].command",
            ),
            (
                "[[hooks.pre_tool_use]]\ncommand = [\"/bin/a\"]\ntimeout_seconds = -1",
                "hooks.pre_tool_use[1].timeout_seconds",
            ),
        ] {
            match parsed(text) {
                Err(ConfigError::Invalid { key: got, reason }) => {
                    assert_eq!(got, format!("`{key}`"), "{text}");
                    assert!(!reason.contains('\n'), "{reason}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_mcp_tool_matches_under_both_of_its_names() {
        let hooks = parsed(
            "[[hooks.pre_tool_use]]\nmatcher = \"mcp__docs__.*\"\ncommand = [\"/bin/a\"]\n\n\
             [[hooks.pre_tool_use]]\nmatcher = \"docs__search\"\ncommand = [\"/bin/a\"]\n",
        )
        .unwrap();
        assert!(hooks[0].matches("docs__search", true));
        assert!(
            !hooks[0].matches("docs__search", false),
            "a built-in is no MCP tool"
        );
        assert!(hooks[1].matches("docs__search", true));
    }
}
