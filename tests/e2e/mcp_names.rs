//! MCP tool names that only the naming rule tells apart, through the real binaries and the
//! fixture server (`codaris-mcp-fixture`): a tool whose own name holds `__` (`srv__do__thing`
//! is tool `do__thing` of server `srv`), and servers named like built-ins (`read_file__echo`
//! is server `read_file`'s `echo`, `edit__echo` server `edit`'s), in both spellings, beside the
//! built-ins they are named like. Each call reaches the tool it names, is recorded under the
//! name it is decided by, and every decision replays.

use std::path::Path;
use std::time::Duration;

use codaris_test_support::sandbox::{Sandbox, binary, events, json, stderr, stdout, wait_for};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A daemon running the fixture as `srv` (with its `do__thing`), as `read_file` and as
/// `edit`, on the whole surface (no search needed to bind a tool).
fn daemon_with_odd_servers(sandbox: &Sandbox) -> codaris_test_support::sandbox::Daemon {
    let fixture = binary("codaris-mcp-fixture").display().to_string();
    sandbox.write_config(&format!(
        "[tools]\nlean_surface = false\n\n\
         [mcp.servers.srv]\ncommand = {fixture:?}\nargs = [\"--odd-names\"]\n\n\
         [mcp.servers.read_file]\ncommand = {fixture:?}\n\n\
         [mcp.servers.edit]\ncommand = {fixture:?}\n"
    ));
    let daemon = sandbox.start_daemon(&[]);
    for name in ["srv", "read_file", "edit"] {
        wait_for(Duration::from_secs(60), || {
            let listed = json(&sandbox.cli(&["mcp", "list", "--json"]));
            let server = listed
                .as_array()
                .and_then(|all| all.iter().find(|s| s["name"] == name))
                .cloned()
                .unwrap_or(Value::Null);
            assert_ne!(server["state"], "failed", "{server}");
            server["state"] == "ready"
        });
    }
    daemon
}

/// One scripted turn in `cwd` that makes `calls` (name, arguments) one per round; the
/// `tool_result` events, in order.
fn results_of(sandbox: &Sandbox, cwd: &Path, calls: &[(&str, Value)]) -> Vec<Value> {
    let mut rounds: Vec<Value> = calls
        .iter()
        .map(|(name, args)| json!({"tool_calls": [{"name": name, "args": args}]}))
        .collect();
    rounds.push(json!({"text": "done"}));
    let output = sandbox.run_script(
        cwd,
        &json!({"turns": [{"rounds": rounds}]}),
        &["--permission-mode", "bypass"],
        "go",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let results: Vec<Value> = events(&output)
        .into_iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), calls.len(), "{results:?}");
    results
}

fn output(result: &Value) -> &str {
    result["output"].as_str().unwrap_or_default()
}

#[test]
fn names_with_a_separator_inside_and_servers_named_like_built_ins_reach_their_tools() {
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("notes.txt"), "the built-in read this\n").unwrap();
    let _daemon = daemon_with_odd_servers(&sandbox);

    let results = results_of(
        &sandbox,
        &proj,
        &[
            ("srv__do__thing", json!({"text": "odd"})),
            ("mcp__srv__do__thing", json!({"text": "odder"})),
            ("read_file__echo", json!({"text": "from the server"})),
            ("mcp__edit__echo", json!({"text": "edit's echo"})),
            ("read_file", json!({"path": "notes.txt"})),
            (
                "edit",
                json!({"path": "notes.txt", "oldString": "read", "newString": "wrote"}),
            ),
            ("srv__do", json!({"text": "no such tool"})),
        ],
    );
    let codes: Vec<&str> = results
        .iter()
        .map(|r| r["decision"]["code"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        codes,
        [
            "allowed_by_default",
            "allowed_by_default",
            "allowed_by_default",
            "allowed_by_default",
            "allowed_by_default",
            "allowed_by_mode",
            "unknown_tool",
        ],
        "{results:?}"
    );
    // Server `srv` ran its tool `do__thing`, whichever spelling called it.
    assert_eq!(output(&results[0]), "do__thing: odd", "{}", results[0]);
    assert_eq!(output(&results[1]), "do__thing: odder", "{}", results[1]);
    // Servers named like built-ins ran their own `echo`.
    assert_eq!(output(&results[2]), "from the server", "{}", results[2]);
    assert_eq!(output(&results[3]), "edit's echo", "{}", results[3]);
    // The built-ins they are named like are still the built-ins.
    assert!(
        output(&results[4]).contains("the built-in read this"),
        "{}",
        results[4]
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("notes.txt")).unwrap(),
        "the built-in wrote this\n"
    );
    // `srv` has no tool `do`: the first `__` ends the server's name, the rest is not searched.
    // The refusal names `srv__do__thing` as the closest tool; it did not run it.
    assert!(
        output(&results[6])
            .starts_with("no tool is named `srv__do`; the closest names are `srv__do__thing`"),
        "{}",
        results[6]
    );

    // Recorded under the names they were decided by (`mcp__…` read as `server__tool`), and
    // every decision replays.
    let decisions = sandbox.cli(&["ledger", "decisions", "-n", "50"]);
    assert!(decisions.status.success(), "{}", stderr(&decisions));
    let text = stdout(&decisions);
    for name in [
        "srv__do__thing",
        "read_file__echo",
        "edit__echo",
        "srv__do:",
    ] {
        assert!(text.contains(name), "`{name}` not recorded: {text}");
    }
    assert!(!text.contains("mcp__"), "{text}");
    sandbox.stop_daemon();
    let replay = sandbox.cli(&["audit", "replay"]);
    assert!(
        replay.status.success() && stdout(&replay).contains(" 0 differ"),
        "{}{}",
        stdout(&replay),
        stderr(&replay)
    );
}
