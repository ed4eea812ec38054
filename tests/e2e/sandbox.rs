//! The model's own commands through the real binaries: they read nothing of the daemon's
//! (its token, its configuration, the person's keys) nor anything outside the fence, and
//! whatever they start dies with their session and with the daemon, SIGKILL included.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use codaris_test_support::sandbox::{
    Sandbox, alive, free_port, pid_in, required_or_skip, stderr, stdout, wait_for,
};
use serde_json::{Value, json};

/// Whether the daemon keeps its sessions' processes in cgroups (it logs the mechanism at
/// start); under CI (root, cgroup v2) anything less fails the test.
fn cgroup_or_skip(sandbox: &Sandbox, test: &str) -> bool {
    let log = std::fs::read_to_string(sandbox.state_dir().join("codarisd.log")).unwrap_or_default();
    let line = log.lines().find(|line| line.contains("command processes"));
    assert!(
        line.is_some(),
        "{test}: the daemon did not log its containment: {log}"
    );
    let line = line.unwrap_or_default();
    required_or_skip(
        test,
        line.contains("containment=cgroup v2"),
        "a cgroup",
        line,
    )
}

fn script(commands: &[String]) -> Value {
    let mut rounds: Vec<Value> = commands
        .iter()
        .map(|command| {
            json!({"tool_calls": [{"name": "run_command", "args": {"command": command, "timeout_seconds": 3600}}]})
        })
        .collect();
    rounds.push(json!({"text": "done"}));
    json!({"turns": [{"rounds": rounds}]})
}

/// `codaris run --json` in `cwd`, every card approved for the session.
fn run_args(sandbox: &Sandbox, cwd: &Path, body: &Value) -> Vec<String> {
    sandbox.run_args(cwd, body, &["--approve", "session"], "run them")
}

fn tool_outputs(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "tool_result")
        .map(|event| event["output"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn commands_read_nothing_of_the_daemons_nor_outside_the_fence() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[anthropic]\napi_key = \"sk-e2e-config-secret\"\n");
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "ssh-e2e-secret\n").unwrap();
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("readme"), "project-e2e-readable\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("f"), "outside-e2e-secret\n").unwrap();
    let _daemon = sandbox.start_daemon(&["--listen", &format!("127.0.0.1:{}", free_port())]);
    if !sandbox.landlock_or_skip("commands_read_nothing_of_the_daemons_nor_outside_the_fence") {
        return;
    }
    let state = sandbox.state_dir();
    let token = std::fs::read_to_string(state.join("token")).unwrap();
    let targets: Vec<PathBuf> = vec![
        state.join("token"),
        sandbox.root.path().join("config.toml"),
        home.join(".ssh/id_ed25519"),
        outside.path().join("f"),
    ];
    let mut commands: Vec<String> = targets
        .iter()
        .map(|path| format!("cat '{}'", path.display()))
        .collect();
    commands.push(format!("ls -R '{}'", state.display()));
    commands.push("cat readme && git --version && /bin/sh -c 'echo sh-runs'".to_owned());
    let output = sandbox
        .command("codaris")
        .args(run_args(&sandbox, &proj, &script(&commands)))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{}", stderr(&output));
    let outputs = tool_outputs(&stdout);
    assert_eq!(outputs.len(), commands.len(), "{stdout}");
    for secret in [
        token.trim(),
        "sk-e2e-config-secret",
        "ssh-e2e-secret",
        "outside-e2e-secret",
    ] {
        assert!(
            !stdout.contains(secret),
            "`{secret}` reached the model: {stdout}"
        );
    }
    for (target, out) in targets.iter().zip(&outputs) {
        assert!(
            !out.starts_with("exit code: 0"),
            "{}: {out}",
            target.display()
        );
    }
    assert!(!outputs[4].contains("ledger"), "{}", outputs[4]);
    let last = &outputs[5];
    assert!(last.starts_with("exit code: 0\n"), "{last}");
    for expected in ["project-e2e-readable", "git version", "sh-runs"] {
        assert!(last.contains(expected), "{expected}: {last}");
    }
}

/// The forged-grant attack by command: with the state directory inside an explicit root (so
/// Landlock must carve it out), a command appends a grant to the journal, truncates it, writes
/// into the decisions and chain files, and removes the socket and the pid file. None of it lands; the daemon serves on and its ledger
/// verifies.
#[test]
fn a_command_cannot_forge_the_journal_or_remove_the_daemons_files_even_under_a_wide_root() {
    let sandbox = Sandbox::new();
    // The sandbox's root holds the state directory, the project and the configuration.
    sandbox.write_config(&format!(
        "allowed_dirs = [\"{}\"]\n",
        sandbox.root.path().display()
    ));
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    if !sandbox.landlock_or_skip(
        "a_command_cannot_forge_the_journal_or_remove_the_daemons_files_even_under_a_wide_root",
    ) {
        return;
    }
    let state = sandbox.state_dir();
    let journal = state.join("ledger.journal");
    let before = std::fs::read(&journal).unwrap_or_default();
    let forged = r#"{"type":"grant","schema":1,"id":"g999999999999","session_id":"s000001","grant":{"capability":"mutate_outside_fence","path":"/","lifetime":"session","id":"g999999999999"},"granted_at_ms":1}"#;
    let commands = vec![
        format!("echo '{forged}' >> '{}'", journal.display()),
        format!(": > '{}'", journal.display()),
        // The decisions and the chain's links, in files of their own beside the journal.
        format!(
            "echo forged >> '{}'",
            state.join("ledger.decisions").display()
        ),
        format!(": > '{}'", state.join("ledger.chain").display()),
        format!(
            "rm -f '{}' '{}'",
            state.join("codaris.sock").display(),
            state.join("codarisd.pid").display()
        ),
        format!(
            "mv '{}' '{}'",
            state.join("ledger").display(),
            proj.join("stolen").display()
        ),
    ];
    let output = sandbox
        .command("codaris")
        .args(run_args(&sandbox, &proj, &script(&commands)))
        .output()
        .unwrap();
    let printed = stdout(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    let outputs = tool_outputs(&printed);
    assert_eq!(outputs.len(), commands.len(), "{printed}");
    for (command, out) in commands.iter().zip(&outputs) {
        assert!(!out.starts_with("exit code: 0"), "{command}: {out}");
        assert!(out.contains("Permission denied"), "{command}: {out}");
    }
    // The journal holds the commands' own decisions (their text included), but no line of the
    // command's making: every line is a whole record the daemon wrote.
    let after = std::fs::read(&journal).unwrap_or_default();
    // The daemon writes zeros ahead of its last line and its next lines into them: what it had
    // written before is still where it was.
    assert!(
        after.starts_with(codaris_test_support::journal_lines(&before)),
        "the journal was cut or rewritten"
    );
    for line in String::from_utf8_lossy(&after).lines() {
        assert!(
            !line
                .trim_start_matches('\0')
                .starts_with(r#"{"type":"grant","schema":1,"id":"g999999999999""#),
            "the forged grant reached the journal"
        );
    }
    let grants = sandbox.cli(&["ledger", "grants", "--all", "--json"]);
    assert!(!stdout(&grants).contains("g999999999999"));
    assert!(sandbox.socket().exists() && sandbox.pid_file().exists());
    assert!(state.join("ledger").is_dir() && !proj.join("stolen").exists());
    let status = sandbox.cli(&["status", "--json"]);
    assert!(status.status.success(), "{}", stderr(&status));
    sandbox.stop_daemon();
    sandbox.replay_clean();
}

/// A command line that leaves a `sleep` behind in a session of its own (setsid, then a
/// double fork), writing the sleep's pid to `pid_file`, and returns once it is there.
fn escaping_sleep(pid_file: &Path) -> String {
    let file = pid_file.display();
    format!(
        "setsid sh -c 'sh -c \"echo \\$\\$ > {file}; exec sleep 300\" &' >/dev/null 2>&1 & while [ ! -s {file} ]; do sleep 0.05; done;"
    )
}

#[test]
fn a_setsid_descendant_dies_when_its_session_ends() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let pid_file = proj.join("sleep.pid");
    let daemon = sandbox.start_daemon(&[]);
    if !cgroup_or_skip(&sandbox, "a_setsid_descendant_dies_when_its_session_ends") {
        return;
    }
    let body = script(&[escaping_sleep(&pid_file)]);
    let output = sandbox
        .command("codaris")
        .args(run_args(&sandbox, &proj, &body))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let outputs = tool_outputs(&String::from_utf8_lossy(&output.stdout));
    assert!(outputs[0].starts_with("exit code: 0"), "{outputs:?}");
    let pid = pid_in(&pid_file);
    // `codaris run` ended the session when the turn was over.
    wait_for(Duration::from_secs(30), || !alive(pid));
    // The sleep had been adopted by the daemon (a child subreaper), which reaps it.
    wait_for(Duration::from_secs(30), || {
        zombie_children(daemon.pid()).is_empty()
    });
}

/// The zombies whose parent is `parent`.
fn zombie_children(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
            let state = fields.next()?;
            let ppid: u32 = fields.next()?.parse().ok()?;
            (state == "Z" && ppid == parent).then_some(pid)
        })
        .collect()
}

#[test]
fn descendants_die_with_a_killed_daemon_and_the_next_start_cleans_up() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let escaped = proj.join("escaped.pid");
    let shell = proj.join("shell.pid");
    let temp = proj.join("tmpdir");
    let daemon = sandbox.start_daemon(&[]);
    if !cgroup_or_skip(
        &sandbox,
        "descendants_die_with_a_killed_daemon_and_the_next_start_cleans_up",
    ) {
        return;
    }
    // The command keeps its turn busy (foreground, long timeout) so the session is alive
    // when the daemon dies.
    let body = script(&[format!(
        "{} echo \"$TMPDIR\" > {}; echo $$ > {}; exec sleep 300",
        escaping_sleep(&escaped),
        temp.display(),
        shell.display()
    )]);
    let mut client = sandbox
        .command("codaris")
        .args(run_args(&sandbox, &proj, &body))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let escaped_pid = pid_in(&escaped);
    let shell_pid = pid_in(&shell);
    let temp_dir = PathBuf::from(std::fs::read_to_string(&temp).unwrap().trim());
    assert!(temp_dir.is_dir(), "{}", temp_dir.display());
    assert!(alive(escaped_pid) && alive(shell_pid));

    daemon.kill_hard();
    let _ = client.wait();
    // Bounded: the watchdog (or the parent-death signal) acts as soon as the daemon is gone.
    wait_for(Duration::from_secs(30), || {
        !alive(escaped_pid) && !alive(shell_pid)
    });

    // The next start of a daemon on the same state removes the temp dir it left.
    let _daemon = sandbox.start_daemon(&[]);
    wait_for(Duration::from_secs(30), || !temp_dir.exists());
}
