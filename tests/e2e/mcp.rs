//! MCP servers through the real binaries: `codaris mcp add|list|tools|disable|enable|remove`
//! against a daemon, with `codaris-mcp-fixture` (crates/mcp) as the server.

use std::process::Output;
use std::time::Duration;

use codaris_test_support::sandbox::{Sandbox, binary, json, ok, stderr, stdout, wait_for};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// How long a fixture server has to become ready (its startup timeout is 30 s).
const READY: Duration = Duration::from_secs(40);

/// The command failed with exactly one line on stderr, which holds `needle`.
fn refused(output: &Output, needle: &str) {
    assert!(!output.status.success(), "succeeded: {}", stdout(output));
    let text = stderr(output);
    assert_eq!(text.trim_end().lines().count(), 1, "not one line: {text}");
    assert!(text.contains(needle), "`{needle}` not in: {text}");
}

/// The servers listed, but for the built-in `seqera` (tests/e2e/seqera.rs has it).
fn servers(sandbox: &Sandbox) -> Vec<Value> {
    let output = sandbox.cli(&["mcp", "list", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    match json(&output) {
        Value::Array(servers) => servers
            .into_iter()
            .filter(|s| s["name"] != "seqera")
            .collect(),
        other => panic!("not an array: {other}"),
    }
}

fn server(sandbox: &Sandbox, name: &str) -> Value {
    servers(sandbox)
        .into_iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no server `{name}` listed"))
}

/// Waits until `name` is in `state`, and returns it as listed.
fn wait_state(sandbox: &Sandbox, name: &str, state: &str) -> Value {
    let mut last = Value::Null;
    wait_for(READY, || {
        last = server(sandbox, name);
        assert_ne!(
            (last["state"].as_str(), state),
            (Some("failed"), "ready"),
            "the server failed: {last}"
        );
        last["state"] == state
    });
    last
}

#[test]
fn bad_registrations_are_refused_with_one_line_and_nothing_is_kept() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.start_daemon(&[]);
    assert_eq!(
        servers(&sandbox),
        Vec::<Value>::new(),
        "a fresh daemon has none"
    );

    let missing = sandbox.root.path().join("no-such-server");
    let missing = missing.display().to_string();
    refused(
        &sandbox.cli(&["mcp", "add", "ghost", "--", &missing]),
        "does not exist",
    );
    refused(
        &sandbox.cli(&[
            "mcp",
            "add",
            "ghost",
            "--",
            "codaris-no-such-program-on-path",
        ]),
        "does not exist",
    );
    refused(&sandbox.cli(&["mcp", "add", "a__b", "--", "true"]), "`__`");
    refused(
        &sandbox.cli(&["mcp", "add", "web", "--url", "ftp://127.0.0.1/mcp"]),
        "http(s)",
    );
    for command in ["tools", "remove", "restart", "enable", "disable", "approve"] {
        refused(&sandbox.cli(&["mcp", command, "nosuch"]), "no MCP server");
        refused(&sandbox.cli(&["mcp", command, "a__b"]), "`__`");
    }
    // Flags the CLI refuses before asking the daemon, without echoing them.
    let output = sandbox.cli(&["mcp", "add", "x", "--env", "SECRET", "--", "true"]);
    refused(&output, "KEY=VALUE");
    assert!(!stderr(&output).contains("SECRET"), "{}", stderr(&output));
    refused(
        &sandbox.cli(&["mcp", "add", "x", "--url", "http://h", "--header", "K V"]),
        "NAME: VALUE",
    );

    // A relative --cwd is the CLI's: `true` exists (it is no MCP server, so it fails).
    std::fs::create_dir(sandbox.root.path().join("sub")).unwrap();
    let added = json(&sandbox.cli(&[
        "mcp",
        "add",
        "rel",
        "--cwd",
        "sub",
        "--approval",
        "ask",
        "--tool-timeout",
        "5",
        "--share-roots",
        "--json",
        "--",
        "true",
    ]));
    let sub = sandbox.root.path().join("sub").display().to_string();
    assert_eq!(added["cwd"], json!(sub), "{added}");
    assert_eq!(added["command"], json!("true"), "{added}");
    assert_eq!(added["approval"], json!("ask"), "{added}");
    assert_eq!(added["share_roots"], json!(true), "{added}");
    ok(&sandbox.cli(&["mcp", "remove", "rel"]));
    refused(
        &sandbox.cli(&["mcp", "add", "x", "--tool-timeout", "1e9", "--", "true"]),
        "tool_timeout_seconds",
    );

    assert_eq!(servers(&sandbox), Vec::<Value>::new());
    // Only the built-in server is left.
    let table = ok(&sandbox.cli(&["mcp", "list"]));
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert!(rows.len() == 1 && rows[0].starts_with("seqera "), "{table}");
}

#[test]
fn a_fixture_server_is_added_listed_switched_kept_across_restarts_and_removed() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.start_daemon(&[]);
    let fixture = binary("codaris-mcp-fixture").display().to_string();

    let added = ok(&sandbox.cli(&[
        "mcp",
        "add",
        "fx",
        "--keyword",
        "testing",
        "--env",
        "FIXTURE_SECRET=hunter2",
        "--",
        &fixture,
    ]));
    assert!(added.contains("background"), "{added}");
    assert!(added.contains("codaris mcp list"), "{added}");
    refused(
        &sandbox.cli(&["mcp", "add", "fx", "--", &fixture]),
        "already exists",
    );

    let listed = wait_state(&sandbox, "fx", "ready");
    let tools = listed["tools"].as_u64().unwrap_or(0);
    assert!(tools >= 1, "{listed}");
    for (key, want) in [
        ("name", json!("fx")),
        ("transport", json!("stdio")),
        ("state", json!("ready")),
        ("error", Value::Null),
        ("origin", json!("runtime")),
        ("held", json!(0)),
        ("enabled", json!(true)),
        ("trust", json!(false)),
        ("keywords", json!(["testing"])),
        ("command", json!(fixture)),
        ("args", json!([])),
        ("env_names", json!(["FIXTURE_SECRET"])),
        ("url", Value::Null),
    ] {
        assert_eq!(listed[key], want, "{key} of {listed}");
    }
    assert!(listed["protocol"].is_string(), "{listed}");
    let raw = stdout(&sandbox.cli(&["mcp", "list", "--json"]));
    assert!(!raw.contains("hunter2"), "an env value was shown: {raw}");
    let table = ok(&sandbox.cli(&["mcp", "list"]));
    let row = table
        .lines()
        .find(|l| l.starts_with("fx "))
        .unwrap_or_else(|| panic!("no row for fx: {table}"));
    assert!(row.contains("ready") && row.contains("stdio"), "{row}");

    let output = sandbox.cli(&["mcp", "tools", "fx", "--json"]);
    let listed_tools = json(&output);
    let listed_tools = listed_tools.as_array().unwrap();
    assert_eq!(listed_tools.len() as u64, tools);
    let echo = listed_tools
        .iter()
        .find(|t| t["name"] == "fx__echo")
        .unwrap_or_else(|| panic!("no fx__echo: {listed_tools:?}"));
    assert_eq!(echo["enabled"], true);
    assert_eq!(echo["held"], Value::Null);
    let read_thing = listed_tools
        .iter()
        .find(|t| t["name"] == "fx__read_thing")
        .unwrap_or_else(|| panic!("no fx__read_thing: {listed_tools:?}"));
    assert_eq!(
        read_thing["read_only"], false,
        "an untrusted server's claims count for nothing"
    );
    assert!(echo["input_schema"].is_object(), "{echo}");
    assert!(echo["description"].is_string(), "{echo}");
    assert!(
        listed_tools
            .iter()
            .all(|t| t["name"].as_str().is_some_and(|n| n.starts_with("fx__"))),
        "{listed_tools:?}"
    );
    let text = ok(&sandbox.cli(&["mcp", "tools", "fx"]));
    assert!(text.lines().any(|l| l.starts_with("fx__echo")), "{text}");
    // The index has them too, as kind mcp.
    let indexed = |index: &Value| {
        index["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "fx__echo" && t["kind"] == "mcp")
    };
    wait_for(READY, || {
        indexed(&json(&sandbox.cli(&["tools", "list", "--json"])))
    });

    let approved = json(&sandbox.cli(&["mcp", "approve", "fx", "--json"]));
    assert_eq!(approved, json!({"name": "fx", "approved": tools}));

    let off = json(&sandbox.cli(&["mcp", "disable", "fx", "--json"]));
    assert_eq!(off["enabled"], false, "{off}");
    wait_state(&sandbox, "fx", "disabled");
    // A switched-off server's tools leave the index.
    wait_for(READY, || {
        !indexed(&json(&sandbox.cli(&["tools", "list", "--json"])))
    });

    // The registration and its switch survive the daemon: any command starts it again.
    sandbox.stop_daemon();
    let after = server(&sandbox, "fx");
    assert_eq!(after["state"], "disabled", "{after}");
    assert_eq!(after["origin"], "runtime", "{after}");
    let on = ok(&sandbox.cli(&["mcp", "enable", "fx"]));
    assert!(on.contains("fx"), "{on}");
    let ready = wait_state(&sandbox, "fx", "ready");
    assert_eq!(ready["tools"], json!(tools), "{ready}");
    assert_eq!(ready["held"], json!(0), "{ready}");

    ok(&sandbox.cli(&["mcp", "restart", "fx"]));
    wait_state(&sandbox, "fx", "ready");

    let removed = ok(&sandbox.cli(&["mcp", "remove", "fx"]));
    assert!(removed.contains("removed"), "{removed}");
    assert_eq!(servers(&sandbox), Vec::<Value>::new());
    refused(&sandbox.cli(&["mcp", "remove", "fx"]), "no MCP server");
    sandbox.stop_daemon();
    assert_eq!(
        servers(&sandbox),
        Vec::<Value>::new(),
        "a removed server stays removed"
    );
}

#[test]
fn a_configured_server_is_listed_and_cannot_be_removed_here() {
    let sandbox = Sandbox::new();
    let fixture = binary("codaris-mcp-fixture").display().to_string();
    sandbox.write_config(&format!(
        "[mcp.servers.conf]\ncommand = {fixture:?}\ntrust = true\n"
    ));
    let _daemon = sandbox.start_daemon(&[]);
    let listed = wait_state(&sandbox, "conf", "ready");
    assert_eq!(listed["origin"], "config", "{listed}");
    assert_eq!(listed["trust"], true, "{listed}");
    refused(
        &sandbox.cli(&["mcp", "remove", "conf"]),
        "configuration file",
    );
    refused(
        &sandbox.cli(&["mcp", "add", "conf", "--", &fixture]),
        "configuration file",
    );
    // A trusted server's read-only claims count.
    let tools = json(&sandbox.cli(&["mcp", "tools", "conf", "--json"]));
    let read_thing = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "conf__read_thing")
        .unwrap_or_else(|| panic!("no conf__read_thing: {tools}"));
    assert_eq!(read_thing["read_only"], true, "{read_thing}");
}

/// The process groups of the running processes whose command line holds every one of `words`.
fn groups_running(words: &[&str]) -> Vec<i64> {
    let mut groups = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let dir = entry.path();
        let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        let line = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !words.iter().all(|w| line.contains(w)) {
            continue;
        }
        if let Some(group) = process_group(&dir) {
            groups.push(group);
        }
    }
    groups
}

/// Field 5 of `/proc/PID/stat`, after the command name in parentheses.
fn process_group(dir: &std::path::Path) -> Option<i64> {
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(2)?.parse().ok()
}

/// Whether any process is still in `group`.
fn group_alive(group: i64) -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .any(|entry| process_group(&entry.path()) == Some(group))
}

#[test]
fn stopping_the_daemon_leaves_no_process_of_its_servers() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.start_daemon(&[]);
    let fixture = binary("codaris-mcp-fixture").display().to_string();
    // `--child` makes the server start a `sleep` in its process group; `--page-size 4243` marks
    // this test's server among others' fixtures.
    ok(&sandbox.cli(&[
        "mcp",
        "add",
        "kids",
        "--",
        &fixture,
        "--child",
        "--page-size",
        "4243",
    ]));
    wait_state(&sandbox, "kids", "ready");
    let groups = groups_running(&["codaris-mcp-fixture", "--child", "4243"]);
    assert_eq!(groups.len(), 1, "{groups:?}");
    let group = groups[0];
    ok(&sandbox.cli(&["daemon", "stop"]));
    wait_for(Duration::from_secs(15), || !group_alive(group));
}
