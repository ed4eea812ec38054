//! How a PreToolUse hook's `matcher` reads, shared by the offline check and the daemon so the
//! two cannot disagree on which tools a hook sees.

/// How long a hook may run when its `timeout_seconds` is unset: Claude Code's default, so a
/// hook written for it keeps the time it had there.
pub const DEFAULT_HOOK_TIMEOUT_SECONDS: u64 = 60;

/// The regular expression a hook's `matcher` stands for: the whole tool name must match
/// (`write` does not match `write_file`, `edit|write` matches both tools), as Claude Code
/// reads its matchers; `*` and the empty matcher match every tool.
pub fn hook_matcher(matcher: &str) -> Result<regex::Regex, regex::Error> {
    let matcher = matcher.trim();
    if matcher.is_empty() || matcher == "*" {
        return regex::Regex::new("^.*$");
    }
    regex::Regex::new(&format!("^(?:{matcher})$"))
}

#[cfg(test)]
mod tests {
    use super::hook_matcher;

    #[test]
    fn a_matcher_matches_whole_names_and_a_star_or_nothing_matches_all() {
        let write = hook_matcher("write|edit").unwrap();
        assert!(write.is_match("write") && write.is_match("edit"));
        assert!(!write.is_match("write_file") && !write.is_match("rewrite"));
        for all in ["*", "", "  "] {
            assert!(
                hook_matcher(all).unwrap().is_match("docs__search"),
                "{all:?}"
            );
        }
        let mcp = hook_matcher("mcp__docs__.*").unwrap();
        assert!(mcp.is_match("mcp__docs__search") && !mcp.is_match("docs__search"));
        assert!(hook_matcher("(unclosed").is_err());
    }
}
