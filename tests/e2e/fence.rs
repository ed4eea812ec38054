//! Issue 11 through the real binaries: the state directory is out of every tool's reach but the
//! session's own workspace, `apply_patch` never writes inside `.git`, a recursive `rm` of a tree
//! holding a repository is refused without a card, and the fence follows the session's project
//! rather than the daemon's working directory.

use std::path::Path;
use std::process::Output;

use codaris_test_support::sandbox::{Sandbox, events, free_port, json, stderr, stdout};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Runs one scripted turn of `calls` (one round each) in `cwd` under `mode`, cards answered
/// `approve`.
fn run_calls(sandbox: &Sandbox, cwd: &Path, mode: &str, approve: &str, calls: &[Value]) -> Output {
    let mut rounds: Vec<Value> = calls
        .iter()
        .map(|call| json!({"tool_calls": [call]}))
        .collect();
    rounds.push(json!({"text": "done"}));
    let script = json!({"turns": [{"rounds": rounds}]});
    sandbox.run_script(
        cwd,
        &script,
        &["--permission-mode", mode, "--approve", approve],
        "go",
    )
}

fn events_of(output: &Output) -> Vec<Value> {
    assert!(output.status.success(), "{}", stderr(output));
    events(output)
}

/// The decision codes of the turn's tool results, in order.
fn codes_of(events: &[Value]) -> Vec<String> {
    results(events)
        .iter()
        .map(|e| e["decision"]["code"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn results(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect()
}

fn cards(events: &[Value]) -> usize {
    events.iter().filter(|e| e["type"] == "card").count()
}

/// The daemon answers, its socket and pid file are in place, and every decision replays.
fn still_serving_and_replaying(sandbox: &Sandbox) {
    let status = sandbox.cli(&["status", "--json"]);
    assert!(status.status.success(), "{}", stderr(&status));
    assert_eq!(json(&status)["running"], true);
    assert!(sandbox.socket().exists() && sandbox.pid_file().exists());
    sandbox.stop_daemon();
    let replay = sandbox.cli(&["audit", "replay"]);
    assert!(
        replay.status.success() && stdout(&replay).contains(" 0 differ"),
        "{}{}",
        stdout(&replay),
        stderr(&replay)
    );
}

fn project(sandbox: &Sandbox) -> std::path::PathBuf {
    let proj = sandbox.root.path().join("projects/rnaseq");
    std::fs::create_dir_all(&proj).unwrap();
    proj
}

#[test]
fn the_state_directory_is_refused_in_accept_edits_and_the_daemon_serves_on() {
    for explicit in [false, true] {
        let sandbox = Sandbox::new();
        // An explicit root above the state directory still does not open it.
        let roots = if explicit {
            format!("allowed_dirs = [\"{}\"]\n", sandbox.root.path().display())
        } else {
            String::new()
        };
        sandbox.write_config(&format!("{roots}[tools]\nlean_surface = false\n"));
        let port = free_port();
        let daemon = sandbox.start_daemon(&["--listen", &format!("127.0.0.1:{port}")]);
        let state = sandbox.state_dir();
        let token = state.join("token");
        assert!(token.exists(), "--listen writes the token");
        let token_before = std::fs::read(&token).unwrap();
        let at = |name: &str| state.join(name).display().to_string();
        let proj = project(&sandbox);
        let calls = [
            json!({"name": "write", "args": {"path": at("ledger.journal"), "content": ""}}),
            json!({"name": "request_capability", "args": {"capability": "mutate_outside_fence", "path": at(""), "reason": "fix the ledger"}}),
            json!({"name": "write", "args": {"path": at("ledger.journal"), "content": ""}}),
            json!({"name": "read_file", "args": {"path": at("token")}}),
            json!({"name": "read_file", "args": {"path": at("codarisd.log")}}),
            json!({"name": "grep", "args": {"pattern": ".", "path": at("")}}),
        ];
        let output = run_calls(&sandbox, &proj, "accept-edits", "session", &calls);
        let events = events_of(&output);
        let codes = codes_of(&events);
        // The grant the model asked for is given, and still opens nothing in the state dir.
        assert_eq!(
            codes,
            [
                "protected_path",
                "allowed_by_default",
                "protected_path",
                "protected_path",
                "protected_path",
                "protected_path"
            ],
            "explicit root: {explicit}; {events:?}"
        );
        let leaked = results(&events).iter().any(|r| {
            r["output"]
                .as_str()
                .unwrap_or("")
                .contains(&String::from_utf8_lossy(&token_before).into_owned())
        });
        assert!(!leaked, "the token never reaches the model");

        // The socket and the pid file, in their own turn (a refused rm changes nothing).
        let calls = [
            json!({"name": "rm", "args": {"path": at("codaris.sock")}}),
            json!({"name": "rm", "args": {"path": at("codarisd.pid")}}),
        ];
        let output = run_calls(&sandbox, &proj, "accept-edits", "session", &calls);
        let events = events_of(&output);
        assert_eq!(
            codes_of(&events),
            ["protected_path", "protected_path"],
            "{events:?}"
        );
        assert!(
            std::fs::metadata(state.join("ledger.journal"))
                .unwrap()
                .len()
                > 0
        );
        assert_eq!(std::fs::read(&token).unwrap(), token_before);
        still_serving_and_replaying(&sandbox);
        drop(daemon);
    }
}

fn no_lean_surface(sandbox: &Sandbox) {
    sandbox.write_config("[tools]\nlean_surface = false\n");
}

#[test]
fn apply_patch_never_writes_inside_git() {
    let sandbox = Sandbox::new();
    no_lean_surface(&sandbox);
    let proj = project(&sandbox);
    std::fs::create_dir_all(proj.join(".git/hooks")).unwrap();
    let config = "[core]\n\tbare = false\n";
    std::fs::write(proj.join(".git/config"), config).unwrap();
    std::os::unix::fs::symlink(".git", proj.join("link")).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let patch = |text: &str| json!({"name": "apply_patch", "args": {"patch": text}});
    let calls = [
        patch(
            "*** Begin Patch\n*** Update File: .git/config\n@@\n [core]\n+\tfsmonitor = \"touch /tmp/pwned\"\n*** End Patch\n",
        ),
        patch("--- /dev/null\n+++ b/.GIT/hooks/pre-commit\n@@ -0,0 +1 @@\n+touch /tmp/pwned\n"),
        patch(
            "*** Begin Patch\n*** Update File: link/config\n@@\n [core]\n+\tfsmonitor = \"x\"\n*** End Patch\n",
        ),
        patch("*** Begin Patch\n*** Add File: src/ok.rs\n+fine\n*** End Patch\n"),
    ];
    let events = events_of(&run_calls(&sandbox, &proj, "bypass", "session", &calls));
    assert_eq!(
        codes_of(&events),
        [
            "protected_path",
            "protected_path",
            "protected_path",
            "allowed_by_mode"
        ],
        "{events:?}"
    );
    assert_eq!(cards(&events), 0);
    assert_eq!(
        std::fs::read_to_string(proj.join(".git/config")).unwrap(),
        config
    );
    assert!(
        !proj.join(".GIT/hooks/pre-commit").exists()
            && !proj.join(".git/hooks/pre-commit").exists()
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("src/ok.rs")).unwrap(),
        "fine\n"
    );
    still_serving_and_replaying(&sandbox);
}

#[test]
fn rm_recursive_of_a_tree_holding_a_repository_is_refused_without_a_card() {
    let sandbox = Sandbox::new();
    no_lean_surface(&sandbox);
    let proj = project(&sandbox);
    std::fs::create_dir_all(proj.join("vendor/repo/.git")).unwrap();
    std::fs::write(proj.join("vendor/repo/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(proj.join("scratch/a")).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    for mode in ["ask", "accept-edits", "bypass"] {
        let calls = [json!({"name": "rm", "args": {"path": "vendor", "recursive": true}})];
        let events = events_of(&run_calls(&sandbox, &proj, mode, "session", &calls));
        assert_eq!(codes_of(&events), ["protected_path"], "{mode}: {events:?}");
        assert_eq!(
            cards(&events),
            0,
            "{mode}: no card, so no approval can let it through"
        );
        let sentence = results(&events)[0]["decision"]["sentence"]
            .as_str()
            .unwrap()
            .to_owned();
        let git = proj.join("vendor/repo/.git").display().to_string();
        assert!(sentence.contains(&git), "{sentence}");
        assert!(proj.join("vendor/repo/.git/HEAD").exists());
    }
    let calls = [json!({"name": "rm", "args": {"path": "scratch", "recursive": true}})];
    let events = events_of(&run_calls(&sandbox, &proj, "accept-edits", "deny", &calls));
    assert_eq!(codes_of(&events), ["allowed_by_mode"], "{events:?}");
    assert!(!proj.join("scratch").exists());
    still_serving_and_replaying(&sandbox);
}

#[test]
fn a_session_edits_its_own_project_without_configuration_wherever_the_daemon_started() {
    let sandbox = Sandbox::new();
    let elsewhere = sandbox.root.path().join("daemon-cwd");
    let outside = sandbox.root.path().join("outside");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let _daemon = sandbox.start_daemon_in(&elsewhere, &[], &[]);
    let proj = project(&sandbox);
    let calls = [
        json!({"name": "write", "args": {"path": "main.nf", "content": "workflow {}\n"}}),
        json!({"name": "write", "args": {"path": outside.join("x").display().to_string(), "content": "x"}}),
        json!({"name": "write", "args": {"path": elsewhere.join("x").display().to_string(), "content": "x"}}),
    ];
    let events = events_of(&run_calls(&sandbox, &proj, "accept-edits", "deny", &calls));
    assert_eq!(
        codes_of(&events),
        [
            "allowed_by_mode",
            "mutate_outside_fence",
            "mutate_outside_fence"
        ],
        "{events:?}"
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("main.nf")).unwrap(),
        "workflow {}\n"
    );
    assert!(!outside.join("x").exists() && !elsewhere.join("x").exists());
    let status = json(&sandbox.cli(&["status", "--json"]));
    assert_eq!(status["warnings"], json!([]));
    still_serving_and_replaying(&sandbox);
}

#[test]
fn a_daemon_started_from_the_root_opens_nothing_beyond_the_session() {
    let sandbox = Sandbox::new();
    let outside = sandbox.root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let _daemon = sandbox.start_daemon_in(Path::new("/"), &[], &[]);
    let proj = project(&sandbox);
    let target = outside.join("planted").display().to_string();
    let calls = [
        json!({"name": "write", "args": {"path": "/etc/codaris-e2e-planted", "content": "x"}}),
        json!({"name": "write", "args": {"path": target, "content": "x"}}),
        json!({"name": "write", "args": {"path": "ok.txt", "content": "x"}}),
    ];
    let events = events_of(&run_calls(&sandbox, &proj, "accept-edits", "deny", &calls));
    assert_eq!(
        codes_of(&events),
        [
            "mutate_outside_fence",
            "mutate_outside_fence",
            "allowed_by_mode"
        ],
        "{events:?}"
    );
    // A session whose own directory is `/` gets no root from it either.
    let calls = [json!({"name": "write", "args": {"path": target, "content": "x"}})];
    let events = events_of(&run_calls(
        &sandbox,
        Path::new("/"),
        "bypass",
        "deny",
        &calls,
    ));
    assert_eq!(codes_of(&events), ["mutate_outside_fence"], "{events:?}");
    assert!(!outside.join("planted").exists());
    assert!(!Path::new("/etc/codaris-e2e-planted").exists());
    still_serving_and_replaying(&sandbox);
}

#[test]
fn status_warns_when_the_configuration_opens_the_disk() {
    let sandbox = Sandbox::new();
    let _daemon =
        sandbox.start_daemon_in(sandbox.root.path(), &[("CODARIS_ALLOWED_DIRS", "/")], &[]);
    let status = sandbox.cli(&["status", "--json"]);
    let warnings = json(&status)["warnings"].clone();
    assert_eq!(warnings.as_array().map(Vec::len), Some(1), "{warnings}");
    assert!(
        warnings[0].as_str().unwrap().contains("the whole disk"),
        "{warnings}"
    );
    let text = stdout(&sandbox.cli(&["status"]));
    assert!(
        text.contains("  warning    environment variable `CODARIS_ALLOWED_DIRS` names `/`"),
        "{text}"
    );
    assert!(sandbox.cli(&["daemon", "stop"]).status.success());
}
