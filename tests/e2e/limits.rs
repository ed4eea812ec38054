//! A session cannot exhaust the machine: a fork bomb and a memory hog, run through the real
//! binaries with the scripted model, each end with a tool result naming the limit it hit,
//! and the session's next command runs.

use std::path::Path;

use codaris_test_support::sandbox::{Sandbox, json, required_or_skip, stderr};
use serde_json::{Value, json};

/// Whether `codaris status` says a cgroup (v1 or v2) keeps `what`'s limit (`pids`,
/// `memory`); under CI anything less fails the test, elsewhere it is skipped with the reason.
fn cgroup_limit_or_skip(sandbox: &Sandbox, what: &str, test: &str) -> bool {
    let status = json(&sandbox.cli(&["status", "--json"]));
    let limits = &status["limits"];
    assert!(
        limits.is_object(),
        "{test}: `codaris status --json` has no limits: {status}"
    );
    let mechanism = limits[format!("{what}_mechanism")]
        .as_str()
        .unwrap_or_default();
    required_or_skip(
        test,
        mechanism.starts_with("cgroup_"),
        &format!("a cgroup {what} limit"),
        &limits.to_string(),
    )
}

fn script(commands: &[&str]) -> Value {
    let mut rounds: Vec<Value> = commands
        .iter()
        .map(|command| {
            json!({"tool_calls": [{"name": "run_command", "args": {"command": command, "timeout_seconds": 120}}]})
        })
        .collect();
    rounds.push(json!({"text": "done"}));
    json!({"turns": [{"rounds": rounds}]})
}

fn tool_outputs(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "tool_result")
        .map(|event| event["output"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Runs `commands` in one session; each `run_command` result.
fn run(sandbox: &Sandbox, proj: &Path, commands: &[&str]) -> Vec<String> {
    let output = sandbox
        .command("codaris")
        .args(sandbox.run_args(proj, &script(commands), &["--approve", "session"], "go"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let outputs = tool_outputs(&stdout);
    assert_eq!(outputs.len(), commands.len(), "{stdout}");
    outputs
}

/// The session's next command: it forks (`ls`), so it only runs if the session has room.
const NEXT: &str = "ls /usr > /dev/null && echo next-command-ran";

#[test]
fn a_fork_bomb_ends_at_the_session_process_limit_and_the_next_command_runs() {
    let test = "a_fork_bomb_ends_at_the_session_process_limit_and_the_next_command_runs";
    let sandbox = Sandbox::new();
    sandbox.write_config("[tools]\nsession_pids_max = 200\n");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    if !cgroup_limit_or_skip(&sandbox, "pids", test) {
        return;
    }
    // A fork bomb bounded so that a machine without the limit survives the test failing:
    // a binary tree of depth 8, about 511 processes alive at once for a few seconds, far
    // past the 200 allowed. (`:(){ :|:& };:` is the same in dash with a name dash lets a
    // function have.)
    let bomb = "b(){ if [ \"$1\" -gt 0 ]; then b $(($1-1)) & b $(($1-1)) & fi; sleep 4; }; b 8";
    let outputs = run(&sandbox, &proj, &[bomb, NEXT]);
    assert!(
        outputs[0].contains(
            "the command hit the session's process limit (200, `tools.session_pids_max`)"
        ),
        "{}",
        outputs[0]
    );
    assert!(
        outputs[1].starts_with("exit code: 0") && outputs[1].contains("next-command-ran"),
        "{}",
        outputs[1]
    );
    let status = json(&sandbox.cli(&["status", "--json"]));
    assert_eq!(status["running"], true, "the daemon is untouched: {status}");
    assert_eq!(status["limits"]["pids_max"], 200, "{status}");
    let shown = String::from_utf8_lossy(&sandbox.cli(&["status"]).stdout).into_owned();
    assert!(
        shown.contains("  limits     200 processes (cgroup v"),
        "{shown}"
    );
}

#[test]
fn a_4_gib_allocation_ends_at_the_session_memory_limit_and_the_next_command_runs() {
    let test = "a_4_gib_allocation_ends_at_the_session_memory_limit_and_the_next_command_runs";
    let sandbox = Sandbox::new();
    sandbox.write_config("[tools]\nsession_memory_max = \"1G\"\n");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    if !cgroup_limit_or_skip(&sandbox, "memory", test) {
        return;
    }
    let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|path| Path::new(path).exists());
    let Some(python) = python else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: python3 is required under CI"
        );
        eprintln!("SKIPPED {test}: no python3 in /usr/bin or /usr/local/bin");
        return;
    };
    // `bytearray(n)` zero-fills, so every page is touched and charged.
    let hog = format!("{python} -c 'b = bytearray(4 << 30); print(\"allocated\", len(b))'");
    let outputs = run(&sandbox, &proj, &[&hog, NEXT]);
    assert!(
        outputs[0].contains(
            "the command hit the session's memory limit (1 GiB, `tools.session_memory_max`)"
        ),
        "{}",
        outputs[0]
    );
    assert!(!outputs[0].contains("allocated"), "{}", outputs[0]);
    assert!(
        outputs[1].starts_with("exit code: 0") && outputs[1].contains("next-command-ran"),
        "{}",
        outputs[1]
    );
    let status = json(&sandbox.cli(&["status", "--json"]));
    assert_eq!(status["running"], true, "the daemon is untouched: {status}");
    assert_eq!(
        status["limits"]["memory_max_bytes"],
        1_u64 << 30,
        "{status}"
    );
}

#[test]
fn a_command_cannot_move_itself_out_of_its_sessions_limits() {
    let test = "a_command_cannot_move_itself_out_of_its_sessions_limits";
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    if !cgroup_limit_or_skip(&sandbox, "pids", test)
        || !cgroup_limit_or_skip(&sandbox, "memory", test)
    {
        return;
    }
    let status = json(&sandbox.cli(&["status", "--json"]));
    let confinement = status["sandbox"].as_str().unwrap_or_default().to_owned();
    if !confinement.starts_with("landlock active") {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: Landlock is required under CI: {confinement}"
        );
        eprintln!("SKIPPED {test}: {confinement}");
        return;
    }
    // As root a write to any `cgroup.procs` passes the file's mode; Landlock keeps `/sys`
    // read-only to commands, so the command stays where its session put it.
    let escape = "for f in /sys/fs/cgroup/*/cgroup.procs /sys/fs/cgroup/cgroup.procs; do \
                  echo 0 > \"$f\"; done 2>/dev/null; cat /proc/self/cgroup";
    let outputs = run(&sandbox, &proj, &[escape]);
    let lines: Vec<&str> = outputs[0].lines().collect();
    for controller in ["pids", "memory"] {
        let line = lines
            .iter()
            .find(|line| line.split(':').nth(1) == Some(controller));
        assert!(
            line.is_some_and(|line| line.contains("/codaris-") && line.contains("/s-")),
            "{controller}: {}",
            outputs[0]
        );
    }
}

/// The daemon's `codaris-<owner>-<pid>` directories in the v1 `pids` and `memory`
/// hierarchies (mounted at `/sys/fs/cgroup/<controller>`, as on this kind of machine).
fn v1_roots(pid: u32) -> Vec<std::path::PathBuf> {
    let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let mut found = Vec::new();
    for controller in ["pids", "memory"] {
        let Some(path) = own.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let _ = parts.next();
            (parts.next()? == controller).then(|| parts.next().map(str::to_owned))?
        }) else {
            continue;
        };
        let dir = Path::new("/sys/fs/cgroup")
            .join(controller)
            .join(path.trim_start_matches('/'));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        found.extend(
            entries
                .flatten()
                .filter(|entry| {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    name.starts_with("codaris-") && name.ends_with(&format!("-{pid}"))
                })
                .map(|entry| entry.path()),
        );
    }
    found
}

#[test]
fn a_killed_daemon_leaves_no_v1_cgroup_behind() {
    let test = "a_killed_daemon_leaves_no_v1_cgroup_behind";
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let daemon = sandbox.start_daemon(&[]);
    let status = json(&sandbox.cli(&["status", "--json"]));
    if status["limits"]["pids_mechanism"] != "cgroup_v1"
        || status["limits"]["memory_mechanism"] != "cgroup_v1"
    {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: this kind of machine keeps the limits in cgroup v1 under CI: {status}"
        );
        eprintln!("SKIPPED {test}: {}", status["limits"]);
        return;
    }
    let pid = daemon.pid();
    let outputs = run(&sandbox, &proj, &["echo ran"]);
    assert!(outputs[0].starts_with("exit code: 0"), "{}", outputs[0]);
    let roots = v1_roots(pid);
    assert_eq!(roots.len(), 2, "{roots:?}");
    // SIGKILL: nothing of the daemon's own runs; its watchdogs see their pipes close.
    daemon.kill_hard();
    codaris_test_support::sandbox::wait_for(std::time::Duration::from_secs(30), || {
        roots.iter().all(|root| !root.exists())
    });
}
