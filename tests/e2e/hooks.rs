//! PreToolUse hooks (`[[hooks.pre_tool_use]]`) through the real binaries: the operator's
//! programs answer before the permission gate, in every permission mode. `allow` skips a
//! card, `ask` forces one under `bypass`, `deny` refuses with the hook's reason, `updatedInput`
//! is judged by the policy like the model's own arguments, the strictest of several answers
//! wins, a hook that fails counts as `deny`, MCP tools are matched, hooks run without the
//! providers' keys, and `codaris audit replay` re-decides hooked calls without running a hook.

use std::path::{Path, PathBuf};
use std::time::Duration;

use codaris_test_support::sandbox::{
    Sandbox, alive, binary, calls_script, events, json, stderr, stdout, wait_for,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A Python hook named `name` that appends the call it reads (and its working directory and
/// environment) as one JSON line to `<root>/<name>.log`, then prints `answer` (nothing when
/// `answer` is null) and exits with `code`.
fn hook(sandbox: &Sandbox, name: &str, answer: &Value, code: i32) -> PathBuf {
    let log = sandbox.root.path().join(format!("{name}.log"));
    let printed = if answer.is_null() {
        String::new()
    } else {
        answer.to_string()
    };
    write_script(
        sandbox,
        name,
        &format!(
            "#!/usr/bin/env python3\nimport json, os, sys\n\
             call = json.load(sys.stdin)\n\
             call['_cwd'] = os.getcwd()\n\
             call['_env'] = dict(os.environ)\n\
             with open({log:?}, 'a') as f:\n    f.write(json.dumps(call) + '\\n')\n\
             out = {printed:?}\n\
             if out:\n    print(out)\n\
             print('a word for the log', file=sys.stderr)\n\
             sys.exit({code})\n",
            log = log.display().to_string(),
        ),
    )
}

fn write_script(sandbox: &Sandbox, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = sandbox.root.path().join(format!("hooks/{name}"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The calls hook `name` was given, one JSON value each.
fn calls_seen(sandbox: &Sandbox, name: &str) -> Vec<Value> {
    std::fs::read_to_string(sandbox.root.path().join(format!("{name}.log")))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// A decision answer as Claude Code's hooks print it.
fn decision(word: &str, reason: &str) -> Value {
    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": word, "permissionDecisionReason": reason}})
}

/// The configuration: the whole surface (no search to bind a tool) and `hooks`, each
/// (matcher, argv, timeout).
fn configure(sandbox: &Sandbox, hooks: &[(&str, Vec<String>, Option<f64>)], more: &str) {
    let mut text = String::from("[tools]\nlean_surface = false\n\n");
    for (matcher, command, timeout) in hooks {
        text.push_str(&format!(
            "[[hooks.pre_tool_use]]\nmatcher = {matcher:?}\ncommand = {command:?}\n"
        ));
        if let Some(seconds) = timeout {
            text.push_str(&format!("timeout_seconds = {seconds}\n"));
        }
        text.push('\n');
    }
    text.push_str(more);
    sandbox.write_config(&text);
}

fn argv(path: &Path) -> Vec<String> {
    vec![path.display().to_string()]
}

fn project(sandbox: &Sandbox) -> PathBuf {
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    proj
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

fn codes(events: &[Value]) -> Vec<String> {
    results(events)
        .iter()
        .map(|r| {
            r["decision"]["code"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

fn cards(events: &[Value]) -> usize {
    events.iter().filter(|e| e["type"] == "card").count()
}

fn write(path: &str) -> (&'static str, Value) {
    ("write", json!({"path": path, "content": "hooked\n"}))
}

/// The ledger as `codaris ledger export` writes it.
fn exported(sandbox: &Sandbox) -> String {
    let output = sandbox.cli(&["ledger", "export"]);
    assert!(output.status.success(), "{}", stderr(&output));
    stdout(&output)
}

/// `codaris audit replay` on the stopped daemon's ledger: every decision replays the same.
fn replays_with_no_difference(sandbox: &Sandbox) -> Value {
    sandbox.stop_daemon();
    let output = sandbox.cli(&["audit", "replay", "--json"]);
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    let report = json(&output);
    assert_eq!(report["differences"], json!([]), "{report}");
    report
}

#[test]
fn allow_skips_the_card_deny_refuses_and_a_replay_runs_no_hook() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let allow = hook(&sandbox, "allow", &decision("allow", "sources are fine"), 0);
    let deny = hook(
        &sandbox,
        "deny",
        &decision("deny", "no notes in this repository."),
        0,
    );
    configure(
        &sandbox,
        &[
            ("write", argv(&allow), None),
            ("edit|rm", argv(&deny), None),
        ],
        "",
    );
    let _daemon = sandbox.start_daemon(&[]);
    std::fs::write(proj.join("notes.txt"), "old\n").unwrap();
    let events = run(
        &sandbox,
        &proj,
        &[
            write("a.txt"),
            (
                "edit",
                json!({"path": "notes.txt", "oldString": "old", "newString": "new"}),
            ),
        ],
        // Under `ask` the write would raise a card, which `--approve deny` would refuse.
        &["--permission-mode", "ask", "--approve", "deny"],
    );
    assert_eq!(codes(&events), ["allowed_by_hook", "blocked_by_hook"]);
    assert_eq!(cards(&events), 0, "{events:?}");
    assert_eq!(
        std::fs::read_to_string(proj.join("a.txt")).unwrap(),
        "hooked\n"
    );
    // The model read the hook's reason; the file stands unchanged.
    let refused = results(&events)[1]["output"].as_str().unwrap_or_default();
    assert!(
        refused.contains("blocked by hook: no notes in this repository"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("notes.txt")).unwrap(),
        "old\n"
    );

    // Each hook got the call as Claude Code's hooks do, in the session's directory.
    let seen = calls_seen(&sandbox, "allow");
    assert_eq!(seen.len(), 1);
    let call = &seen[0];
    assert_eq!(call["hook_event_name"], "PreToolUse");
    assert_eq!(call["tool_name"], "write");
    assert_eq!(
        call["tool_input"],
        json!({"path": "a.txt", "content": "hooked\n"})
    );
    assert_eq!(call["permission_mode"], "default");
    assert_eq!(call["codaris_permission_mode"], "ask");
    assert_eq!(call["operating_mode"], "agent");
    assert_eq!(call["cwd"], json!(proj.display().to_string()));
    assert_eq!(call["_cwd"], json!(proj.display().to_string()));
    assert!(call["session_id"].as_str().is_some_and(|s| !s.is_empty()));

    // The hook's standard error is in the daemon's log.
    let logged = std::fs::read_dir(sandbox.state_dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("codarisd.log"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<String>();
    assert!(logged.contains("a word for the log"), "{logged}");

    // The ledger holds every hook's answer with the decision; a replay decides the same
    // without running a hook.
    let text = exported(&sandbox);
    assert!(text.contains("sources are fine"), "{text}");
    let ran = calls_seen(&sandbox, "allow").len() + calls_seen(&sandbox, "deny").len();
    let report = replays_with_no_difference(&sandbox);
    assert_eq!(report["matched"], report["decisions"], "{report}");
    assert_eq!(
        calls_seen(&sandbox, "allow").len() + calls_seen(&sandbox, "deny").len(),
        ran,
        "the replay ran a hook"
    );
}

#[test]
fn ask_forces_a_card_under_bypass_and_the_answer_decides() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let ask = hook(&sandbox, "ask", &decision("ask", "review writes"), 0);
    configure(&sandbox, &[("write", argv(&ask), None)], "");
    let _daemon = sandbox.start_daemon(&[]);
    let events = run(
        &sandbox,
        &proj,
        &[write("kept.txt")],
        &["--permission-mode", "bypass", "--approve", "once"],
    );
    assert_eq!(cards(&events), 1, "{events:?}");
    assert_eq!(codes(&events), ["allowed_by_mode"]);
    assert!(proj.join("kept.txt").exists());
    let events = run(
        &sandbox,
        &proj,
        &[write("refused.txt")],
        &["--permission-mode", "bypass", "--approve", "deny"],
    );
    assert_eq!(cards(&events), 1, "{events:?}");
    assert_eq!(codes(&events), ["denied_by_user"]);
    assert!(!proj.join("refused.txt").exists());
    // The hook ran once per call, the card's answer did not run it again.
    assert_eq!(calls_seen(&sandbox, "ask").len(), 2);
    replays_with_no_difference(&sandbox);
    assert_eq!(calls_seen(&sandbox, "ask").len(), 2);
}

#[test]
fn updated_input_is_judged_by_the_policy_and_the_call_runs_on_it() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let outside = sandbox.root.path().join("outside.txt");
    let inside = proj.join("moved.txt");
    // One hook sends `a.txt` outside the fence, the other `b.txt` somewhere inside.
    let script = format!(
        "#!/usr/bin/env python3\nimport json, sys\n\
         call = json.load(sys.stdin)\n\
         args = dict(call['tool_input'])\n\
         target = {{'a.txt': {outside:?}, 'b.txt': {inside:?}}}.get(args['path'])\n\
         if target:\n    args['path'] = target\n    \
         print(json.dumps({{'hookSpecificOutput': {{'hookEventName': 'PreToolUse', \
         'permissionDecision': 'allow', 'updatedInput': args}}}}))\n",
        outside = outside.display().to_string(),
        inside = inside.display().to_string(),
    );
    let rewrite = write_script(&sandbox, "rewrite", &script);
    configure(&sandbox, &[("write", argv(&rewrite), None)], "");
    let _daemon = sandbox.start_daemon(&[]);
    let events = run(
        &sandbox,
        &proj,
        &[write("a.txt"), write("b.txt")],
        &["--permission-mode", "bypass"],
    );
    assert_eq!(
        codes(&events),
        ["mutate_outside_fence", "allowed_by_mode"],
        "{events:?}"
    );
    assert!(
        !outside.exists(),
        "the rewritten path outside the fence was written"
    );
    assert!(!proj.join("a.txt").exists());
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "hooked\n");
    assert!(!proj.join("b.txt").exists());
    // The record keeps the arguments the hook replaced beside the ones judged.
    let decisions = exported(&sandbox);
    assert!(decisions.contains("original_args"), "{decisions}");
    replays_with_no_difference(&sandbox);
}

#[test]
fn the_strictest_of_several_matching_hooks_wins() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let allow = hook(&sandbox, "allow", &decision("allow", "fine by me"), 0);
    let ask = hook(&sandbox, "ask", &decision("ask", "a person should look"), 0);
    let deny = hook(&sandbox, "deny", &decision("deny", "not on fridays"), 0);
    configure(
        &sandbox,
        &[
            (".*", argv(&allow), None),
            ("write", argv(&ask), None),
            ("edit", argv(&deny), None),
        ],
        "",
    );
    let _daemon = sandbox.start_daemon(&[]);
    std::fs::write(proj.join("notes.txt"), "old\n").unwrap();
    let events = run(
        &sandbox,
        &proj,
        &[
            write("a.txt"),
            (
                "edit",
                json!({"path": "notes.txt", "oldString": "old", "newString": "new"}),
            ),
            ("read_file", json!({"path": "notes.txt"})),
        ],
        &["--permission-mode", "bypass", "--approve", "deny"],
    );
    // allow + ask: a card, refused; allow + deny: refused; allow alone: allowed.
    assert_eq!(
        codes(&events),
        ["denied_by_user", "blocked_by_hook", "allowed_by_default"]
    );
    assert_eq!(cards(&events), 1);
    let blocked = results(&events)[1]["output"].as_str().unwrap_or_default();
    assert!(
        blocked.contains("blocked by hook: not on fridays"),
        "{blocked}"
    );
    // Every matching hook ran.
    assert_eq!(calls_seen(&sandbox, "allow").len(), 3);
    assert_eq!(calls_seen(&sandbox, "ask").len(), 1);
    assert_eq!(calls_seen(&sandbox, "deny").len(), 1);
    replays_with_no_difference(&sandbox);
}

#[test]
fn a_hook_that_times_out_fails_or_prints_garbage_counts_as_deny() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let pid_file = sandbox.root.path().join("sleeper.pid");
    let slow = write_script(
        &sandbox,
        "slow",
        &format!(
            "#!/bin/sh\nsleep 60 &\necho $! > {:?}\nwait\n",
            pid_file.display().to_string()
        ),
    );
    let failing = write_script(
        &sandbox,
        "failing",
        "#!/bin/sh\necho 'it broke' >&2\nexit 1\n",
    );
    let garbage = write_script(&sandbox, "garbage", "#!/bin/sh\necho 'sure, go ahead'\n");
    let missing = sandbox.root.path().join("hooks/not-there");
    configure(
        &sandbox,
        &[
            ("write", argv(&slow), Some(1.0)),
            ("edit", argv(&failing), None),
            ("read_file", argv(&garbage), None),
            ("glob", argv(&missing), None),
        ],
        "",
    );
    let _daemon = sandbox.start_daemon(&[]);
    std::fs::write(proj.join("notes.txt"), "old\n").unwrap();
    let events = run(
        &sandbox,
        &proj,
        &[
            write("a.txt"),
            (
                "edit",
                json!({"path": "notes.txt", "oldString": "old", "newString": "new"}),
            ),
            ("read_file", json!({"path": "notes.txt"})),
            ("glob", json!({"pattern": "*.txt"})),
        ],
        &["--permission-mode", "bypass"],
    );
    assert_eq!(codes(&events), ["blocked_by_hook"; 4]);
    let outputs: Vec<&str> = results(&events)
        .iter()
        .map(|r| r["output"].as_str().unwrap_or_default())
        .collect();
    for (output, says) in outputs.iter().zip([
        "did not answer within 1 s",
        "failed (exit status 1): it broke",
        "cannot read: `sure, go ahead` is not a JSON object",
        "could not start",
    ]) {
        assert!(output.contains("blocked by hook: hook `"), "{output}");
        assert!(output.contains(says), "{output} lacks {says}");
    }
    assert!(!proj.join("a.txt").exists());
    // What the slow hook started was stopped with it.
    let sleeper: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_for(Duration::from_secs(10), || !alive(sleeper));
    replays_with_no_difference(&sandbox);
}

#[test]
fn an_mcp_tool_is_matched_under_its_claude_code_name() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let deny = hook(&sandbox, "deny", &decision("deny", "no echoes"), 0);
    let fixture = binary("codaris-mcp-fixture").display().to_string();
    configure(
        &sandbox,
        &[("mcp__fx__.*", argv(&deny), None)],
        &format!("[mcp.servers.fx]\ncommand = {fixture:?}\n"),
    );
    let _daemon = sandbox.start_daemon(&[]);
    wait_for(Duration::from_secs(60), || {
        let listed = json(&sandbox.cli(&["mcp", "list", "--json"]));
        listed
            .as_array()
            .and_then(|all| all.iter().find(|s| s["name"] == "fx"))
            .is_some_and(|server| server["state"] == "ready")
    });
    let events = run(
        &sandbox,
        &proj,
        &[
            ("fx__echo", json!({"text": "hello"})),
            ("read_file", json!({"path": "."})),
        ],
        &["--permission-mode", "bypass"],
    );
    assert_eq!(codes(&events)[0], "blocked_by_hook", "{events:?}");
    let seen = calls_seen(&sandbox, "deny");
    assert_eq!(seen.len(), 1, "the built-in matched: {seen:?}");
    assert_eq!(seen[0]["tool_name"], "fx__echo");
    assert_eq!(seen[0]["tool_input"], json!({"text": "hello"}));
}

/// Claude Code's documented PreToolUse example (a script that reads `tool_input.command` and
/// refuses `rm -rf` with `hookSpecificOutput`), as a Python script, used unchanged.
const CLAUDE_CODE_STYLE_HOOK: &str = r#"#!/usr/bin/env python3
import json
import sys

try:
    input_data = json.load(sys.stdin)
except json.JSONDecodeError as e:
    print(f"Error: Invalid JSON input: {e}", file=sys.stderr)
    sys.exit(1)

command = input_data.get("tool_input", {}).get("command", "")

if "rm -rf" in command:
    output = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Destructive command blocked by hook",
        },
        "suppressOutput": True,
        "systemMessage": "blocked a destructive command",
    }
    print(json.dumps(output))
    sys.exit(0)

# Let the normal permission flow proceed
sys.exit(0)
"#;

#[test]
fn a_claude_code_style_hook_works_unchanged_and_sees_no_provider_key() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    std::fs::create_dir_all(proj.join("build")).unwrap();
    let guard = write_script(&sandbox, "guard", CLAUDE_CODE_STYLE_HOOK);
    let spy = hook(&sandbox, "spy", &Value::Null, 0);
    configure(
        &sandbox,
        &[
            ("run_command", argv(&guard), None),
            ("run_command", argv(&spy), None),
        ],
        "",
    );
    let _daemon = sandbox.start_daemon_in(
        sandbox.root.path(),
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-hook-must-not-see"),
            ("OPENAI_API_KEY", "sk-openai-hook-must-not-see"),
            // Not the providers', but no more a hook's business: only a command's environment
            // passes (the providers' keys leave the daemon's own at start anyway).
            ("GITHUB_TOKEN", "gh-hook-must-not-see"),
            ("NCBI_API_KEY", "ncbi-hook-must-not-see"),
        ],
        &[],
    );
    let events = run(
        &sandbox,
        &proj,
        &[
            ("run_command", json!({"command": "rm -rf build"})),
            ("run_command", json!({"command": "echo fine"})),
        ],
        &["--permission-mode", "bypass"],
    );
    assert_eq!(codes(&events), ["blocked_by_hook", "allowed_by_mode"]);
    let refused = results(&events)[0]["output"].as_str().unwrap_or_default();
    assert!(
        refused.contains("blocked by hook: Destructive command blocked by hook"),
        "{refused}"
    );
    assert!(proj.join("build").exists());
    // No key reached the hooks, by name or by value; the session's directory did.
    let seen = calls_seen(&sandbox, "spy");
    assert_eq!(seen.len(), 2);
    let env = &seen[0]["_env"];
    let text = env.to_string();
    for secret in [
        "sk-ant-hook-must-not-see",
        "sk-openai-hook-must-not-see",
        "gh-hook-must-not-see",
        "ncbi-hook-must-not-see",
        "API_KEY",
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    assert_eq!(
        env["CODARIS_PROJECT_DIR"],
        json!(proj.display().to_string())
    );
    assert!(env["PATH"].is_string());
}

#[test]
fn config_check_names_a_bad_hook_and_config_show_lists_the_hooks_in_force() {
    let sandbox = Sandbox::new();
    let bad = sandbox.root.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[[hooks.pre_tool_use]]\nmatcher = \"write|(edit\"\ncommand = [\"/bin/true\"]\n\n\
         [[hooks.pre_tool_use]]\nmatcher = \"write\"\ncommand = []\n",
    )
    .unwrap();
    let output = sandbox.cli(&["config", "check", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let said = format!("{}{}", stdout(&output), stderr(&output));
    let line_of = |key: &str| {
        said.lines()
            .find(|line| line.contains(key))
            .unwrap_or_else(|| panic!("nothing names {key}: {said}"))
            .to_owned()
    };
    assert!(
        line_of("`hooks.pre_tool_use.matcher`").contains("is not a regular expression"),
        "{said}"
    );
    assert!(
        line_of("`hooks.pre_tool_use.command`").contains("names no program"),
        "{said}"
    );

    configure(
        &sandbox,
        &[(
            "write|edit",
            vec!["/usr/local/bin/guard".to_owned(), "--strict".to_owned()],
            None,
        )],
        "",
    );
    let _daemon = sandbox.start_daemon(&[]);
    let shown = json(&sandbox.cli(&["config", "show", "--json"]));
    let entry = shown["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "hooks.pre_tool_use")
        .cloned()
        .unwrap_or_else(|| panic!("no hooks in {shown}"));
    assert_eq!(
        entry["value"],
        json!([{"matcher": "write|edit", "command": ["/usr/local/bin/guard", "--strict"],
                "timeout_seconds": 60.0}])
    );
    assert_eq!(entry["source"], "file");
}
