//! The configuration tools through the real binaries: `config_set` stages, `config_commit`
//! asks the person on a card showing the diff and what the recorded decisions would become,
//! writes, records and reloads the running daemon (the next call sees a new allowed root); a
//! commit that would not validate changes nothing and says why without quoting another file;
//! a rollback puts the previous file back, through a link to it; `config_get` never shows a
//! secret; and `bypass` does not commit without the person.

use std::path::{Path, PathBuf};

use codaris_test_support::sandbox::{Sandbox, calls_script, events, json, stderr, stdout};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn project(sandbox: &Sandbox) -> PathBuf {
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    proj
}

fn config_file(sandbox: &Sandbox) -> PathBuf {
    sandbox.root.path().join("config.toml")
}

/// One scripted turn making `calls` under `flags`: its events.
fn run(sandbox: &Sandbox, proj: &Path, calls: &[(&str, Value)], flags: &[&str]) -> Vec<Value> {
    let output = sandbox.run_script(proj, &calls_script(calls), flags, "go");
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    events(&output)
}

fn results(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect()
}

fn outputs(events: &[Value]) -> Vec<String> {
    results(events)
        .iter()
        .map(|r| r["output"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn cards(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["type"] == "card").collect()
}

fn cli_ok(sandbox: &Sandbox, args: &[&str]) -> String {
    let output = sandbox.cli(args);
    assert!(
        output.status.success(),
        "{args:?}: {}{}",
        stdout(&output),
        stderr(&output)
    );
    stdout(&output)
}

const SURFACE: &str = "[tools]\nlean_surface = false\n";

#[test]
fn a_committed_root_is_in_force_for_the_next_call_and_its_card_shows_the_replay() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let outside = sandbox.root.path().join("data");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("samples.csv"), "sample,fastq\n").unwrap();
    let wanted = outside.join("samples.csv").display().to_string();
    sandbox.write_config(SURFACE);
    let _daemon = sandbox.start_daemon(&[]);

    // Outside every root: refused.
    let read = ("read_file", json!({"path": wanted}));
    let before = run(
        &sandbox,
        &proj,
        std::slice::from_ref(&read),
        &["--approve", "deny"],
    );
    assert_eq!(
        results(&before)[0]["decision"]["code"],
        "read_outside_fence",
        "{before:?}"
    );

    // Staged, then committed on a card that shows the diff and the decision it would turn.
    let staged = format!("add_list allowed_dirs={}", outside.display());
    let commit = run(
        &sandbox,
        &proj,
        &[
            ("config_set", json!({"commands": [staged]})),
            ("config_commit", json!({})),
        ],
        &["--approve", "once"],
    );
    let commit_cards = cards(&commit);
    assert_eq!(commit_cards.len(), 1, "{commit:?}");
    let preview = &commit_cards[0]["preview"];
    assert_eq!(preview["kind"], "config", "{preview}");
    let shown = preview["text"].as_str().unwrap_or_default();
    assert!(
        shown.contains(&format!("+allowed_dirs = [\"{}\"]", outside.display())),
        "{shown}"
    );
    assert!(shown.contains("deny → allow: 1 read_file"), "{shown}");
    assert!(shown.contains("1 of "), "{shown}");
    let said = outputs(&commit);
    assert!(said[0].starts_with("staged 1 command"), "{said:?}");
    assert!(said[1].starts_with("committed 1 command to"), "{said:?}");
    assert!(said[1].contains("in force now"), "{said:?}");

    // The next call is inside a root: no card, the file read.
    let after = run(&sandbox, &proj, &[read], &["--approve", "deny"]);
    assert_eq!(cards(&after).len(), 0, "{after:?}");
    assert!(outputs(&after)[0].contains("sample,fastq"), "{after:?}");
    let status = json(&sandbox.cli(&["status", "--json"]));
    assert_eq!(
        status["allowed_dirs"],
        json!([outside.display().to_string()])
    );

    // Every decision replays under the configuration it was taken in; the change is recorded.
    sandbox.stop_daemon();
    let report = json(&sandbox.cli(&["audit", "replay", "--json"]));
    assert_eq!(report["differences"], json!([]), "{report}");
    assert_eq!(report["chain_findings"], json!([]), "{report}");
    assert_eq!(report["config_changes"], 1, "{report}");
}

#[test]
fn a_commit_that_would_not_validate_changes_nothing_and_quotes_no_other_file() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    // Any file the daemon can read, named as a shadow configuration: its problems would quote
    // it, so the refusal must not.
    let secret = sandbox.root.path().join("notes.txt");
    std::fs::write(&secret, "TOP-SECRET-42 = \"launch\"\n").unwrap();
    sandbox.write_config(SURFACE);
    let text_before = std::fs::read_to_string(config_file(&sandbox)).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let events = run(
        &sandbox,
        &proj,
        &[
            (
                "config_set",
                json!({"commands": [format!("set policy.shadow={}", secret.display())]}),
            ),
            ("config_commit", json!({})),
            ("config_changes", json!({})),
        ],
        &["--approve", "once"],
    );
    // Refused before any card, naming the key, not the other file's text.
    assert_eq!(cards(&events).len(), 0, "{events:?}");
    let said = outputs(&events);
    assert!(
        said[1].contains("would not be valid; nothing changed")
            && said[1].contains("policy.shadow"),
        "{said:?}"
    );
    assert!(!said.iter().any(|s| s.contains("TOP-SECRET")), "{said:?}");
    assert_eq!(
        std::fs::read_to_string(config_file(&sandbox)).unwrap(),
        text_before
    );
    // Still staged until reverted.
    assert!(said[2].starts_with("1 staged command"), "{said:?}");
    let reverted = cli_ok(&sandbox, &["config", "revert"]);
    assert!(
        reverted.starts_with("discarded 1 staged command"),
        "{reverted}"
    );
    assert_eq!(
        cli_ok(&sandbox, &["config", "changes"]).trim(),
        "nothing is staged"
    );

    // A command whose value is the wrong kind is refused as it is staged, with nothing staged.
    let refused = sandbox.cli(&[
        "config",
        "set",
        "tools.background=false",
        "tools.lean_surface=maybe",
    ]);
    assert!(!refused.status.success());
    let why = stderr(&refused);
    assert!(
        why.contains("nothing staged: command 2 `set tools.lean_surface=maybe`")
            && why.contains("must be true or false"),
        "{why}"
    );
    assert_eq!(
        cli_ok(&sandbox, &["config", "changes"]).trim(),
        "nothing is staged"
    );
    sandbox.stop_daemon();
    let report = json(&sandbox.cli(&["audit", "replay", "--json"]));
    assert_eq!(report["config_changes"], 0, "{report}");
}

#[test]
fn a_rollback_puts_the_previous_file_back_through_its_link_and_reloads() {
    let sandbox = Sandbox::new();
    // The person keeps the file in a dotfiles folder and links to it.
    let dotfiles = sandbox.root.path().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let real = dotfiles.join("codaris.toml");
    let original = "# kept by hand\n[tools]\ncommand_allowlist = [\"cargo test\"] # the fast one\n";
    std::fs::write(&real, original).unwrap();
    std::os::unix::fs::symlink(&real, config_file(&sandbox)).unwrap();
    let _daemon = sandbox.start_daemon(&[]);

    cli_ok(
        &sandbox,
        &[
            "config",
            "set",
            "add_list tools.command_allowlist=git status",
        ],
    );
    let changes = cli_ok(&sandbox, &["config", "changes"]);
    assert!(
        changes.contains("+command_allowlist = [\"cargo test\", \"git status\"]"),
        "{changes}"
    );
    let committed = cli_ok(&sandbox, &["config", "commit"]);
    assert!(committed.starts_with("committed 1 command"), "{committed}");
    let status = json(&sandbox.cli(&["status", "--json"]));
    assert_eq!(
        status["command_allowlist"],
        json!(["cargo test", "git status"])
    );
    assert!(
        std::fs::symlink_metadata(config_file(&sandbox))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced by a file"
    );
    assert!(
        std::fs::read_to_string(&real)
            .unwrap()
            .contains("# the fast one")
    );

    let rolled = cli_ok(&sandbox, &["config", "rollback"]);
    assert!(rolled.starts_with("rolled "), "{rolled}");
    assert_eq!(std::fs::read_to_string(&real).unwrap(), original);
    let status = json(&sandbox.cli(&["status", "--json"]));
    assert_eq!(status["command_allowlist"], json!(["cargo test"]));
    // The snapshot is used once.
    let again = sandbox.cli(&["config", "rollback"]);
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("no commit to roll back"),
        "{}",
        stderr(&again)
    );
    sandbox.stop_daemon();
    let report = json(&sandbox.cli(&["audit", "replay", "--json"]));
    assert_eq!(report["config_changes"], 2, "{report}");
    assert_eq!(report["chain_findings"], json!([]), "{report}");
}

#[test]
fn config_get_never_shows_a_secret_and_reads_nothing_but_the_file() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    sandbox.write_config(&format!(
        "{SURFACE}\n[anthropic]\napi_key = \"sk-ant-file-key\"\n\n[mcp.servers.docs]\ncommand = \"docs\"\nenv = {{ DOCS_TOKEN = \"docs-token-9\" }}\nenabled = false\n"
    ));
    let _daemon = sandbox.start_daemon(&[]);
    // A person stages a token; the model reads the staged commands.
    cli_ok(&sandbox, &["config", "set", "seqera.token=person-token-7"]);
    let events = run(
        &sandbox,
        &proj,
        &[
            ("config_get", json!({"path": "."})),
            ("config_get", json!({"path": "anthropic.api_key"})),
            ("config_get", json!({"path": "../../etc/passwd"})),
            ("config_get", json!({"path": "mcp.servers.docs"})),
            ("config_changes", json!({})),
        ],
        &["--approve", "deny"],
    );
    let said = outputs(&events);
    let all = said.join("\n");
    for secret in ["sk-ant-file-key", "docs-token-9", "person-token-7"] {
        assert!(!all.contains(secret), "{secret} shown: {all}");
    }
    assert!(said[0].contains("api_key = \"<redacted>\""), "{said:?}");
    assert_eq!(said[1], "anthropic.api_key = \"<redacted>\"");
    assert!(said[2].contains("is not a configuration path"), "{said:?}");
    assert!(said[3].contains("DOCS_TOKEN = \"<redacted>\""), "{said:?}");
    assert!(said[4].contains("set seqera.token=<redacted>"), "{said:?}");
}

#[test]
fn bypass_does_not_commit_without_the_person() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    sandbox.write_config(SURFACE);
    let before = std::fs::read_to_string(config_file(&sandbox)).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let events = run(
        &sandbox,
        &proj,
        &[
            (
                "config_set",
                json!({"commands": ["add_list allowed_dirs=/"]}),
            ),
            ("config_commit", json!({})),
        ],
        &["--permission-mode", "bypass", "--approve", "deny"],
    );
    assert_eq!(cards(&events).len(), 1, "{events:?}");
    let decided = results(&events)[1]["decision"]["code"].clone();
    assert_eq!(decided, "denied_by_user", "{events:?}");
    assert_eq!(
        std::fs::read_to_string(config_file(&sandbox)).unwrap(),
        before
    );
}

/// The MCP servers listed, but for the built-in `seqera`.
fn server_names(sandbox: &Sandbox) -> Vec<String> {
    let listed = json(&sandbox.cli(&["mcp", "list", "--json"]));
    listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] != "seqera")
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_commit_reloads_allowlists_output_limits_profiles_hooks_and_mcp_servers() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    std::fs::write(
        proj.join("long.txt"),
        (1..=40).map(|n| format!("line {n}\n")).collect::<String>(),
    )
    .unwrap();
    let pipe = proj.join("pipe");
    std::fs::create_dir_all(&pipe).unwrap();
    std::fs::write(pipe.join("main.nf"), "workflow { }\n").unwrap();
    let hook = sandbox.root.path().join("deny-writes");
    std::fs::write(
        &hook,
        "#!/bin/sh\ncat >/dev/null\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"no writes today\"}}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let fixture = codaris_test_support::sandbox::binary("codaris-mcp-fixture")
        .display()
        .to_string();
    sandbox.write_config(SURFACE);
    let _daemon = sandbox.start_daemon(&[]);
    let calls = [
        ("run_command", json!({"command": "echo allowlisted"})),
        ("read_file", json!({"path": "long.txt"})),
        (
            "run_built_pipeline",
            json!({"path": "pipe", "profile": "slurm"}),
        ),
        ("write", json!({"path": "new.txt", "content": "x\n"})),
    ];
    let before = run(&sandbox, &proj, &calls, &["--approve", "deny"]);
    let said = outputs(&before);
    assert_eq!(
        results(&before)[0]["decision"]["verdict"],
        "deny",
        "{before:?}"
    );
    assert!(said[1].contains("line 40"), "{said:?}");
    assert!(
        said[2].contains("profile `slurm` is not in the operator's allowlist"),
        "{said:?}"
    );
    assert_eq!(
        results(&before)[3]["decision"]["verdict"],
        "deny",
        "{before:?}"
    );
    assert!(server_names(&sandbox).is_empty());

    cli_ok(
        &sandbox,
        &[
            "config",
            "set",
            "add_list tools.command_allowlist=echo allowlisted",
            "tools.output_limits.max_lines=5",
            "add_list nextflow.profiles=slurm",
            &format!(
                "add_list hooks.pre_tool_use={{ matcher = \"^write$\", command = [{:?}] }}",
                hook.display().to_string()
            ),
            &format!("mcp.servers.fixture.command={fixture}"),
        ],
    );
    let committed = cli_ok(&sandbox, &["config", "commit"]);
    assert!(
        committed.contains("MCP servers: started fixture"),
        "{committed}"
    );

    let after = run(&sandbox, &proj, &calls, &["--approve", "deny"]);
    let said = outputs(&after);
    // The allowlist lets the command run without a card.
    assert_eq!(
        results(&after)[0]["decision"]["verdict"],
        "allow",
        "{after:?}"
    );
    assert!(said[0].contains("allowlisted"), "{said:?}");
    // The output is cut at the new limit.
    assert!(!said[1].contains("line 40"), "{said:?}");
    // The profile is allowed now: the call goes on to its card, which is refused.
    assert!(
        !said[2].contains("not in the operator's allowlist"),
        "{said:?}"
    );
    // The hook refuses the write.
    assert!(said[3].contains("no writes today"), "{said:?}");
    assert_eq!(server_names(&sandbox), ["fixture"]);

    // Taking the server out of the file stops it.
    cli_ok(&sandbox, &["config", "set", "delete mcp.servers.fixture"]);
    let committed = cli_ok(&sandbox, &["config", "commit"]);
    assert!(
        committed.contains("MCP servers: stopped fixture"),
        "{committed}"
    );
    assert!(server_names(&sandbox).is_empty());
}

/// A file the person edited by hand is put in force by `codaris config reload` without a
/// restart: not before, only when it validates, recorded with its diff, and undone by a
/// rollback. An unchanged file reloads nothing.
#[test]
fn a_hand_edit_is_put_in_force_by_reload_recorded_and_rolled_back() {
    let sandbox = Sandbox::new();
    let first = "[tools]\ncommand_allowlist = [\"cargo test\"]\n";
    std::fs::write(config_file(&sandbox), first).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let allowlist = || json(&sandbox.cli(&["status", "--json"]))["command_allowlist"].clone();
    let refused = |why: &str| {
        let output = sandbox.cli(&["config", "reload"]);
        assert!(!output.status.success(), "{}", stdout(&output));
        assert!(stderr(&output).contains(why), "{}", stderr(&output));
    };
    refused("has not changed since codarisd put it in force; nothing to reload");

    // A hand edit that would not start the daemon is refused; what is in force stays.
    std::fs::write(
        config_file(&sandbox),
        "[tools]\ncommand_allowlist = [\"git status\"]\nlean_surface = \"maybe\"\n",
    )
    .unwrap();
    refused("the configuration would not be valid; nothing changed");
    assert_eq!(allowlist(), json!(["cargo test"]));

    let edited = "[tools]\ncommand_allowlist = [\"git status\"]\n\n[anthropic]\napi_key = \"sk-hand-SECRET-1\"\n";
    std::fs::write(config_file(&sandbox), edited).unwrap();
    assert_eq!(
        allowlist(),
        json!(["cargo test"]),
        "in force before the reload"
    );
    let reloaded = cli_ok(&sandbox, &["config", "reload"]);
    assert!(
        reloaded.starts_with("reloaded `")
            && reloaded.contains("as edited (ledger c")
            && reloaded.contains("2 keys changed: ")
            && reloaded.contains("; in force now")
            && reloaded.contains("takes effect at the next start of codarisd: anthropic.api_key"),
        "{reloaded}"
    );
    assert_eq!(allowlist(), json!(["git status"]));
    assert_eq!(
        std::fs::read_to_string(config_file(&sandbox)).unwrap(),
        edited
    );
    refused("nothing to reload");

    let export = stdout(&sandbox.cli(&["ledger", "export"]));
    let change: Value = export
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["type"] == "config_change")
        .expect("the reload is recorded");
    assert_eq!(change["action"], "reload", "{change}");
    assert_eq!(change["session_id"], "", "{change}");
    let diff = change["diff"].as_str().unwrap_or_default();
    assert!(
        diff.contains("-command_allowlist = [\"cargo test\"]")
            && diff.contains("+command_allowlist = [\"git status\"]")
            && diff.contains("api_key = \"<redacted"),
        "{diff}"
    );
    assert!(!export.contains("sk-hand-SECRET-1") && !reloaded.contains("sk-hand-SECRET-1"));
    // The answer shows the person what went in force, the same redacted diff.
    assert!(reloaded.contains(diff.trim_end()), "{reloaded}");

    // A rollback puts back the text that was in force before the hand edit.
    let rolled = cli_ok(&sandbox, &["config", "rollback"]);
    assert!(rolled.starts_with("rolled "), "{rolled}");
    assert_eq!(
        std::fs::read_to_string(config_file(&sandbox)).unwrap(),
        first
    );
    assert_eq!(allowlist(), json!(["cargo test"]));
    refused("nothing to reload");
    sandbox.stop_daemon();
    let report = json(&sandbox.cli(&["audit", "replay", "--json"]));
    assert_eq!(report["config_changes"], 2, "{report}");
    assert_eq!(report["chain_findings"], json!([]), "{report}");
}
