//! MCP arguments judged by what they are, through the real binaries: the real `mcp-server-git`
//! (installed by `.ci/mcp-peers.sh`) asked for the status of a repository outside the roots by
//! `repo_path` (a name no fixed list holds), as `~/…`, `$HOME/…`, `${HOME}/…`, `file:/…`,
//! `FILE://LOCALHOST/…` with `%2e%2e`, and nested in an object under an innocuous key. Each is
//! carded or refused, none reads the repository, and every decision replays. The real
//! `@modelcontextprotocol/server-filesystem`, allowed the whole sandbox, reads no file outside
//! the roots by `~/…` (which it expands itself) or `$HOME/…`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use codaris_test_support::sandbox::{Sandbox, events, json, stderr, stdout, wait_for};
use serde_json::{Value, json};

/// The peers' directory when `needed` is installed in it; under CI a missing peer fails the
/// test, elsewhere it is skipped with the reason.
fn peers(needed: &str) -> Option<PathBuf> {
    let dir = match std::env::var_os("CODARIS_MCP_PEERS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(&std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/codaris-mcp-peers"),
    };
    if dir.join(needed).exists() {
        return Some(dir);
    }
    let message = format!(
        "the MCP peers are not installed in {} (missing {needed}): run .ci/mcp-peers.sh",
        dir.display()
    );
    assert!(
        std::env::var_os("CI").is_none_or(|ci| ci.is_empty()),
        "{message}"
    );
    eprintln!("SKIPPED: {message}");
    None
}

/// A git repository at `dir` with one untracked file named `marker`: a status of it names
/// the marker, so a result that holds it read the repository.
fn repository(dir: &Path, marker: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let out = Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(dir.join(marker), "x").unwrap();
}

/// A daemon with the untrusted servers `config` declares (TOML), waiting for `name` to be ready.
fn with_server(
    sandbox: &Sandbox,
    config: &str,
    name: &str,
) -> codaris_test_support::sandbox::Daemon {
    sandbox.write_config(&format!("[tools]\nlean_surface = false\n\n{config}"));
    let daemon = sandbox.start_daemon(&[]);
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
    daemon
}

/// One scripted turn in `cwd` under `mode`, cards answered `approve`: a search for `query`
/// that binds `tool`, then one call of it per entry of `calls`. The calls' results, in order.
fn calls_of(
    sandbox: &Sandbox,
    cwd: &Path,
    (mode, approve): (&str, &str),
    (query, tool): (&str, &str),
    calls: &[Value],
) -> Vec<Value> {
    let mut rounds = vec![json!({"tool_calls": [{"name": "search_tools",
        "args": {"query": query}}]})];
    rounds.extend(
        calls
            .iter()
            .map(|args| json!({"tool_calls": [{"name": tool, "args": args}]})),
    );
    rounds.push(json!({"text": "done"}));
    let output = sandbox.run_script(
        cwd,
        &json!({"turns": [{"rounds": rounds}]}),
        &["--permission-mode", mode, "--approve", approve],
        "go",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let results: Vec<Value> = events(&output)
        .into_iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), calls.len() + 1, "{results:?}");
    assert_eq!(results[0]["decision"]["code"], "allowed_by_default");
    results[1..].to_vec()
}

/// `git__git_status` once per entry of `calls`.
fn statuses(
    sandbox: &Sandbox,
    cwd: &Path,
    mode: &str,
    approve: &str,
    calls: &[Value],
) -> Vec<Value> {
    calls_of(
        sandbox,
        cwd,
        (mode, approve),
        ("git status of a repository", "git__git_status"),
        calls,
    )
}

/// The daemon is stopped and every decision it recorded replays to the same answer.
fn replays(sandbox: &Sandbox) {
    sandbox.stop_daemon();
    let replay = sandbox.cli(&["audit", "replay"]);
    assert!(
        replay.status.success() && stdout(&replay).contains(" 0 differ"),
        "{}{}",
        stdout(&replay),
        stderr(&replay)
    );
}

#[test]
fn mcp_server_git_reads_no_repository_outside_the_roots_whatever_the_argument_s_form() {
    let Some(peers) = peers("venv/bin/mcp-server-git") else {
        return;
    };
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("projects/p");
    repository(&proj, "MARKER-INSIDE.txt");
    // The sandbox's HOME (the daemon's, and so the server's) is outside the project's roots.
    let home = sandbox.root.path().join("home");
    let outside = home.join("outside");
    repository(&outside, "MARKER-OUTSIDE.txt");
    let git = peers.join("venv/bin/mcp-server-git").display().to_string();
    let _daemon = with_server(
        &sandbox,
        &format!("[mcp.servers.git]\ncommand = {git:?}\n"),
        "git",
    );

    let abs = outside.display().to_string();
    // From the project, `%2e%2e` climbs to the sandbox root, then down into the home.
    let climb = format!(
        "FILE://LOCALHOST{}/%2e%2e/%2E%2E/home/outside",
        proj.display()
    );
    let attacks = [
        json!({"repo_path": abs}),
        json!({"repo_path": "~/outside"}),
        json!({"repo_path": "$HOME/outside"}),
        json!({"repo_path": "${HOME}/outside"}),
        json!({"repo_path": format!("file:{abs}")}),
        json!({"repo_path": climb}),
        json!({"repo_path": "../../home/outside"}),
        json!({"repo_path": ".", "q": {"target": [{"where": abs}]}}),
    ];
    // Every attack is tried and every one that got through is named, not only the first.
    let mut through = Vec::new();
    for mode in ["bypass", "ask"] {
        let results = statuses(&sandbox, &proj, mode, "deny", &attacks);
        for (args, result) in attacks.iter().zip(&results) {
            let code = result["decision"]["code"].as_str().unwrap_or("");
            let output = result["output"].as_str().unwrap_or("");
            if !matches!(code, "mutate_outside_fence" | "denied_by_user")
                || output.contains("MARKER-OUTSIDE")
            {
                through.push(format!("{mode}: {args} was {code}: {output}"));
            }
        }
    }

    // An unknown variable and another host cannot be judged: refused with a sentence, no card.
    let unjudged = [
        json!({"repo_path": "$CODARIS_NOPE/outside"}),
        json!({"repo_path": "file://elsewhere.example/etc"}),
        json!({"repo_path": "~root/outside"}),
    ];
    let results = statuses(&sandbox, &proj, "bypass", "session", &unjudged);
    for (args, result) in unjudged.iter().zip(&results) {
        let sentence = result["decision"]["sentence"].as_str().unwrap_or("");
        if result["decision"]["code"] != "bad_path"
            || !sentence.contains("`/repo_path`")
            || !sentence.contains("cannot judge")
        {
            through.push(format!("{args} was {}", result["decision"]));
        }
    }
    // The state directory is protected whatever form names it: no card can open it.
    let state = sandbox.state_dir().display().to_string();
    let protected = [
        json!({"repo_path": ".", "cwd": format!("file://localhost{state}/")}),
        json!({"repo_path": format!("{}/../../state", proj.display())}),
    ];
    let results = statuses(&sandbox, &proj, "bypass", "session", &protected);
    for (args, result) in protected.iter().zip(&results) {
        if result["decision"]["code"] != "protected_path" {
            through.push(format!("{args} was {}", result["decision"]));
        }
    }
    assert!(through.is_empty(), "{}", through.join("\n"));

    // The same tool inside the roots runs: the server and the binding work.
    let results = statuses(
        &sandbox,
        &proj,
        "bypass",
        "deny",
        &[json!({"repo_path": proj.display().to_string()})],
    );
    assert_eq!(results[0]["decision"]["code"], "allowed_by_default");
    let output = results[0]["output"].as_str().unwrap_or("");
    assert!(output.contains("MARKER-INSIDE"), "{output}");

    replays(&sandbox);
}

#[test]
fn server_filesystem_reads_no_file_outside_the_roots_by_tilde_or_variable() {
    let Some(peers) = peers("npm/node_modules/.bin/mcp-server-filesystem") else {
        return;
    };
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("projects/p");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("a.txt"), "INSIDE-CONTENT").unwrap();
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("secret.txt"), "SECRET-CONTENT").unwrap();
    // The server itself may read the whole sandbox: only the fence stands between.
    let server = peers.join("npm/node_modules/.bin/mcp-server-filesystem");
    let _daemon = with_server(
        &sandbox,
        &format!(
            "[mcp.servers.fs]\ncommand = {:?}\nargs = [{:?}]\n",
            server.display().to_string(),
            sandbox.root.path().display().to_string()
        ),
        "fs",
    );
    let tool = ("read a text file", "fs__read_text_file");
    let attacks = [
        json!({"path": "~/secret.txt"}),
        json!({"path": "$HOME/secret.txt"}),
        json!({"path": "file:~/secret.txt"}),
        json!({"path": "a.txt", "x": {"y": ["~/secret.txt"]}}),
    ];
    let mut through = Vec::new();
    for result in calls_of(&sandbox, &proj, ("bypass", "deny"), tool, &attacks) {
        let code = result["decision"]["code"].as_str().unwrap_or("");
        let output = result["output"].as_str().unwrap_or("");
        if !matches!(code, "mutate_outside_fence" | "denied_by_user")
            || output.contains("SECRET-CONTENT")
        {
            through.push(format!("{code}: {output}"));
        }
    }
    assert!(through.is_empty(), "{}", through.join("\n"));
    let inside = calls_of(
        &sandbox,
        &proj,
        ("bypass", "deny"),
        tool,
        &[json!({"path": proj.join("a.txt").display().to_string()})],
    );
    assert_eq!(inside[0]["decision"]["code"], "allowed_by_default");
    let output = inside[0]["output"].as_str().unwrap_or("");
    assert!(output.contains("INSIDE-CONTENT"), "{output}");
    replays(&sandbox);
}

/// A folder added to the allowed ones by a committed configuration reaches the running
/// server-filesystem that shares roots by a `roots/list_changed` notification, not a restart:
/// the commit says it told the server, the server was never started again, and a file in the
/// new folder is read through it at once.
#[test]
fn a_new_root_is_told_to_server_filesystem_without_a_restart() {
    let Some(peers) = peers("npm/node_modules/.bin/mcp-server-filesystem") else {
        return;
    };
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("projects/p");
    let more = sandbox.root.path().join("more");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(&more).unwrap();
    std::fs::write(more.join("note.txt"), "IN-THE-NEW-ROOT").unwrap();
    let server = peers.join("npm/node_modules/.bin/mcp-server-filesystem");
    sandbox.write_config(&format!(
        "allowed_dirs = [{proj:?}]\n\n[tools]\nlean_surface = false\n\n\
         [mcp.servers.fs]\ncommand = {:?}\nargs = [{proj:?}]\nshare_roots = true\n",
        server.display().to_string(),
    ));
    let _daemon = sandbox.start_daemon(&[]);
    let fs = || {
        json(&sandbox.cli(&["mcp", "list", "--json"]))
            .as_array()
            .and_then(|all| all.iter().find(|s| s["name"] == "fs").cloned())
            .unwrap_or(Value::Null)
    };
    wait_for(Duration::from_secs(60), || fs()["state"] == "ready");

    let add = format!("add_list allowed_dirs={}", more.display());
    let staged = sandbox.cli(&["config", "set", &add]);
    assert!(staged.status.success(), "{}", stderr(&staged));
    let committed = sandbox.cli(&["config", "commit"]);
    let said = stdout(&committed);
    assert!(committed.status.success(), "{said}{}", stderr(&committed));
    assert!(
        said.contains("MCP servers: told the new roots fs") && !said.contains("started again"),
        "{said}"
    );
    let listed = fs();
    assert_eq!(
        (&listed["state"], &listed["restarts"]),
        (&json!("ready"), &json!(0)),
        "{listed}"
    );
    let read = calls_of(
        &sandbox,
        &proj,
        ("bypass", "deny"),
        ("read a text file", "fs__read_text_file"),
        &[json!({"path": more.join("note.txt").display().to_string()})],
    );
    assert_eq!(
        read[0]["decision"]["code"], "allowed_by_default",
        "{read:?}"
    );
    let output = read[0]["output"].as_str().unwrap_or("");
    assert!(output.contains("IN-THE-NEW-ROOT"), "{output}");
    replays(&sandbox);
}
