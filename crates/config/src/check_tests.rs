use super::*;
use pretty_assertions::assert_eq;

fn lines(text: &str) -> Vec<(usize, String)> {
    check(text)
        .into_iter()
        .map(|p| (p.line, p.message))
        .collect()
}

#[test]
fn an_unknown_key_a_wrong_type_and_a_bad_value_are_all_reported_with_their_lines() {
    let text = "\
[daemon]
listen_on = \"127.0.0.1:1\"
card_timeout_seconds = 0

[tools]
lean_surface = \"yes\"
";
    assert_eq!(
        lines(text),
        vec![
            (
                2,
                "unknown key `daemon.listen_on`; `[daemon]` takes `listen`, `detach_grace_seconds`, `card_timeout_seconds`, `ledger_cache_mb`, `log_format`, `log_max_files`".to_owned()
            ),
            (
                3,
                "`daemon.card_timeout_seconds` must be at least 1, not 0".to_owned()
            ),
            (
                6,
                "`tools.lean_surface` must be true or false, not the text `\"yes\"`".to_owned()
            ),
        ]
    );
}

#[test]
fn each_key_is_found_on_its_line() {
    let lines = key_lines(
        "# top\n[daemon]\nlisten = \"127.0.0.1:1\"\n\n[mcp.servers.docs]\nurl = \"http://x\"\n[[models]]\nname = \"m\"\n",
    );
    assert_eq!(lines.get("daemon.listen"), Some(&3));
    assert_eq!(lines.get("mcp.servers.docs.url"), Some(&6));
    assert_eq!(lines.get("models"), Some(&7));
    assert_eq!(lines.get("models.name"), Some(&8));
    assert!(key_lines("[daemon\n").is_empty());
}

#[test]
fn a_good_file_has_no_problem() {
    let text = "\
allowed_dirs = [\"/data\"]
[daemon]
listen = \"127.0.0.1:7457\"
log_format = \"json\"
[tools]
output_limits = { max_bytes = 65_536 }
session_memory_max = \"8G\"
websearch_engines = [\"brave\", \"searxng:https://search.example\"]
http_default_headers = { \"User-Agent\" = \"x\" }
[provider]
name = \"openai\"
[[models]]
name = \"m\"
multimodal = true
[mcp.servers.docs]
url = \"http://127.0.0.1:1/mcp\"
tool_timeout_seconds = 2.5
output_limits = { max_lines = 10 }
[nextflow]
pass_env = [\"AWS_PROFILE\", \"AWS_REGION\"]
";
    assert_eq!(lines(text), vec![]);
}

#[test]
fn values_are_judged_by_kind() {
    for (text, line, needle) in [
        ("[daemon]\nlisten = \"0.0.0.0:1\"", 2, "loopback"),
        (
            "[daemon]\nlog_format = \"xml\"",
            2,
            "one of `text`, `json`, not `xml`",
        ),
        ("[daemon]\nledger_cache_mb = 70000", 2, "from 1 to 65536"),
        ("allowed_dirs = [\"rel\"]", 1, "absolute paths, not `rel`"),
        (
            "[openai]\nbase_url = \"ftp://x\"",
            2,
            "`openai.base_url` `ftp://x` is not",
        ),
        (
            "[tools]\nwebsearch_engines = [\"altavista\"]",
            2,
            "`altavista` is not an engine",
        ),
        (
            "[tools]\nenv_passthrough = [\"A-B\"]",
            2,
            "`A-B` is not a variable name",
        ),
        (
            "[nextflow]\npass_env = [\"AWS_PROFILE\", \"A B\"]",
            2,
            "`nextflow.pass_env` `A B` is not a variable name",
        ),
        (
            "[nextflow]\npass_env = [\"AWS_PROFILE\", \"OPENAI_API_KEY\"]",
            2,
            "`nextflow.pass_env` lists `OPENAI_API_KEY`, a model provider's key",
        ),
        (
            "[mcp.servers.x]\napproval = \"maybe\"",
            2,
            "`mcp.servers.x.approval` must be one of",
        ),
        (
            "[mcp.servers.x]\nbogus = 1",
            2,
            "unknown key `mcp.servers.x.bogus`",
        ),
        (
            "[[models]]\nname = 3",
            2,
            "`models.name` must be text, not the number `3`",
        ),
        ("models = 3", 1, "`models` must be tables"),
        ("daemon = 1", 1, "`daemon` must be a table"),
        ("[daemon]\nlisten = ", 2, "string"),
    ] {
        let found = lines(text);
        assert!(
            found.iter().any(|(l, m)| *l == line && m.contains(needle)),
            "{text:?}: {found:?}"
        );
    }
}

#[test]
fn a_syntax_error_is_reported_once_and_the_rest_still_checked() {
    let text = "[daemon]\nlisten = \n[tools]\nbackground = 1\n";
    let found = lines(text);
    assert_eq!(
        found.iter().filter(|(l, _)| *l == 2).count(),
        1,
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|(l, m)| *l == 4 && m.contains("true or false")),
        "{found:?}"
    );
}

#[test]
fn a_hook_with_a_bad_matcher_an_empty_command_or_none_is_named_by_its_key() {
    let text = "\
[[hooks.pre_tool_use]]
matcher = \"write|(edit\"
command = [\"/bin/check\"]

[[hooks.pre_tool_use]]
matcher = \"run_command\"
command = []

[[hooks.pre_tool_use]]
matcher = \"*\"
command = \"/bin/check --strict\"

[[hooks.pre_tool_use]]
matcher = \"read_file\"
timeout_seconds = 5

[[hooks.pre_tool_use]]
matcher = \"mcp__docs__.*\"
command = [\"/bin/check\", \"--strict\"]
timeout_seconds = 2.5
";
    let found = check(text);
    let keys: Vec<(usize, Option<&str>)> =
        found.iter().map(|p| (p.line, p.key.as_deref())).collect();
    assert_eq!(
        keys,
        vec![
            (2, Some("hooks.pre_tool_use.matcher")),
            (7, Some("hooks.pre_tool_use.command")),
            (11, Some("hooks.pre_tool_use.command")),
            (13, Some("hooks.pre_tool_use.command")),
        ],
        "{found:?}"
    );
    assert!(
        found[0]
            .message
            .starts_with("`hooks.pre_tool_use.matcher` `write|(edit` is not a regular expression"),
        "{}",
        found[0].message
    );
    assert!(
        found[1].message.contains("names no program"),
        "{}",
        found[1].message
    );
    assert!(
        found[2].message.contains("not a shell line"),
        "{}",
        found[2].message
    );
    assert_eq!(
        found[3].message,
        "`hooks.pre_tool_use` entry 4 has no `command`; each `[[hooks.pre_tool_use]]` sets one"
    );
    for problem in &found {
        assert!(!problem.message.contains('\n'), "{}", problem.message);
    }
}
