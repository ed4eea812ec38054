use pretty_assertions::assert_eq;

use super::*;

const FILE: &str = r#"# The operator's own notes stay.
allowed_dirs = ["/srv/data"]

[tools]
command_allowlist = ["cargo test"] # fast checks
background = true

[anthropic]
api_key = "sk-ant-secret"

[mcp.servers.docs]
command = "docs-server"
env = { DOCS_TOKEN = "t0ken" }
"#;

fn edited(text: &str, lines: &[&str]) -> Result<String, EditError> {
    let mut doc = parse_document(text)?;
    for line in lines {
        apply(&mut doc, &Command::parse(line)?)?;
    }
    Ok(doc.to_string())
}

#[test]
fn set_keeps_comments_and_takes_text_without_quotes() -> Result<(), EditError> {
    let out = edited(
        FILE,
        &["set provider.model=gpt-4o", "set tools.background=false"],
    )?;
    assert!(out.starts_with("# The operator's own notes stay."), "{out}");
    assert!(
        out.contains("command_allowlist = [\"cargo test\"] # fast checks"),
        "{out}"
    );
    assert!(out.contains("background = false"), "{out}");
    assert!(out.contains("[provider]\nmodel = \"gpt-4o\""), "{out}");
    assert!(crate::check(&out).is_empty(), "{:?}", crate::check(&out));
    Ok(())
}

#[test]
fn lists_grow_and_shrink_by_value() -> Result<(), EditError> {
    let out = edited(
        FILE,
        &[
            "add_list tools.command_allowlist=git status",
            "add_list allowed_dirs=\"/srv/more\"",
            "del_list tools.command_allowlist=cargo test",
        ],
    )?;
    assert!(
        out.contains("command_allowlist = [\"git status\"]"),
        "{out}"
    );
    assert!(
        out.contains("allowed_dirs = [\"/srv/data\", \"/srv/more\"]"),
        "{out}"
    );
    let missing = edited(FILE, &["del_list tools.command_allowlist=make"]);
    assert_eq!(
        missing.map_err(|e| e.to_string()),
        Err("`tools.command_allowlist` has no `make` in its list".to_owned())
    );
    Ok(())
}

#[test]
fn a_new_table_is_written_with_its_own_header_only() -> Result<(), EditError> {
    let out = edited(
        "",
        &[
            "set mcp.servers.fs.command=fs-server",
            "add_list mcp.servers.fs.args=/w",
        ],
    )?;
    assert_eq!(
        out,
        "[mcp.servers.fs]\ncommand = \"fs-server\"\nargs = [\"/w\"]\n"
    );
    Ok(())
}

#[test]
fn hooks_are_added_addressed_and_deleted_by_index() -> Result<(), EditError> {
    let out = edited(
        "",
        &[
            r#"add_list hooks.pre_tool_use={ matcher = "run_command", command = ["/opt/hook"] }"#,
            r#"add_list hooks.pre_tool_use={ matcher = "write", command = ["/opt/other"] }"#,
            "set hooks.pre_tool_use[1].timeout_seconds=5",
            "delete hooks.pre_tool_use[0]",
        ],
    )?;
    assert!(crate::check(&out).is_empty(), "{out}");
    assert!(out.contains("[[hooks.pre_tool_use]]"), "{out}");
    assert!(!out.contains("/opt/hook\""), "{out}");
    assert!(out.contains("timeout_seconds = 5"), "{out}");
    let beyond = edited(&out, &["delete hooks.pre_tool_use[3]"]);
    assert_eq!(
        beyond.map_err(|e| e.to_string()),
        Err("`pre_tool_use` has 1 entries; entry [3] does not exist".to_owned())
    );
    Ok(())
}

#[test]
fn delete_removes_keys_and_tables_and_names_what_is_not_there() -> Result<(), EditError> {
    let out = edited(
        FILE,
        &["delete mcp.servers.docs", "delete tools.background"],
    )?;
    assert!(!out.contains("docs-server"), "{out}");
    assert!(!out.contains("background"), "{out}");
    assert_eq!(
        edited(FILE, &["delete tools.lean_surface"]).map_err(|e| e.to_string()),
        Err("`tools.lean_surface` is not set in the file".to_owned())
    );
    Ok(())
}

#[test]
fn commands_are_refused_with_one_line_each() {
    for (line, said) in [
        ("sett tools.background=true", "is not a command"),
        ("set tools.nothing=1", "no key `tools.nothing`"),
        (
            "add_list tools.background=true",
            "`tools.background` is not a list",
        ),
        ("set tools=3", "`tools` is a table"),
        ("delete .", "not the whole file"),
        ("set tools.background", "is not a command"),
    ] {
        let err = Command::parse(line)
            .and_then(|command| {
                let mut doc = parse_document(FILE)?;
                apply(&mut doc, &command)
            })
            .map_err(|e| e.to_string());
        assert!(
            err.as_ref()
                .is_err_and(|e| e.contains(said) && !e.contains('\n')),
            "{line}: {err:?}"
        );
    }
}

#[test]
fn wrong_kinds_are_left_for_the_check_to_name() -> Result<(), EditError> {
    let out = edited(FILE, &["set tools.background=yes"])?;
    let problems = crate::check(&out);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].message.contains("must be true or false"),
        "{problems:?}"
    );
    Ok(())
}

#[test]
fn get_never_shows_a_secret() -> Result<(), EditError> {
    let whole = get(FILE, &ConfigPath::parse(".")?)?.unwrap_or_default();
    assert!(
        !whole.contains("sk-ant-secret") && !whole.contains("t0ken"),
        "{whole}"
    );
    assert!(whole.contains("api_key = \"<redacted>\""), "{whole}");
    assert!(whole.contains("# fast checks"), "{whole}");
    let key = get(FILE, &ConfigPath::parse("anthropic.api_key")?)?;
    assert_eq!(key.as_deref(), Some("anthropic.api_key = \"<redacted>\""));
    let table = get(FILE, &ConfigPath::parse("mcp.servers.docs")?)?.unwrap_or_default();
    assert!(table.starts_with("[mcp.servers.docs]"), "{table}");
    assert!(!table.contains("t0ken"), "{table}");
    assert_eq!(get(FILE, &ConfigPath::parse("tools.lean_surface")?)?, None);
    assert_eq!(
        get(FILE, &ConfigPath::parse("tools.background")?)?.as_deref(),
        Some("tools.background = true")
    );
    Ok(())
}

#[test]
fn a_diff_shows_a_changed_secret_without_its_value() -> Result<(), EditError> {
    let after = edited(
        FILE,
        &[
            "set anthropic.api_key=sk-ant-new",
            "add_list allowed_dirs=/srv/b",
        ],
    )?;
    let shown = diff(FILE, &after, "config.toml")?;
    assert!(!shown.contains("sk-ant"), "{shown}");
    assert!(
        shown.contains("+api_key = \"<redacted, changed>\""),
        "{shown}"
    );
    assert!(
        shown.contains("+allowed_dirs = [\"/srv/data\", \"/srv/b\"]"),
        "{shown}"
    );
    assert_eq!(diff(FILE, FILE, "config.toml")?, "");
    Ok(())
}

#[test]
fn a_staged_secret_is_shown_redacted() -> Result<(), EditError> {
    let shown = |line: &str| Command::parse(line).map(|c| redact_command(&c));
    assert_eq!(
        shown("set seqera.token=tok-123")?,
        "set seqera.token=<redacted>"
    );
    assert_eq!(
        shown("set mcp.servers.docs.env={ A = \"b\" }")?,
        "set mcp.servers.docs.env=<redacted>"
    );
    assert_eq!(
        shown(r#"set mcp.servers.x={ command = "x", headers = { Authorization = "Bearer z" } }"#)?,
        "set mcp.servers.x=<redacted>"
    );
    assert_eq!(
        shown("add_list tools.http_allowlist=https://a.example")?,
        "add_list tools.http_allowlist=https://a.example"
    );
    Ok(())
}
