//! Issue 38, item 2, through the real binaries: `analyze_run_log` and `check_run_status` with
//! the run's `.nextflow.log` (or a rotated `.nextflow.log.1`) a symlink a cloned pipeline could
//! ship, pointing at a secret: the SSH key outside the roots, Codaris's configuration, a file
//! in its state directory. Under every mode, with every card denied and approved, no secret's
//! marker reaches the turn's output, each call's result names the refused log, and the daemon
//! serves on.

use std::os::unix::fs::symlink;
use std::path::Path;

use codaris_test_support::sandbox::{Sandbox, calls_script, events, stderr, stdout};
use serde_json::{Value, json};

const SESSION: &str = "e710da1b-ce06-482f-bbcf-987a507f85d1";

/// A launch directory as Nextflow leaves it, with `.nextflow.log` naming run `run`.
fn launch(dir: &Path, run: &str) {
    std::fs::create_dir_all(dir.join(".nextflow")).unwrap();
    std::fs::write(
        dir.join(".nextflow/history"),
        format!(
            "2026-12-01 10:00:00\t5s\t{run}\tERR\t6b9515aba6\t{SESSION}\tnextflow run main.nf\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join(".nextflow.log"),
        format!(
            "Dec-01 10:00:00.100 [main] INFO  nextflow.cli.CmdRun - Launching `main.nf` [{run}] DSL2 - revision: 6b9515aba6\n"
        ),
    )
    .unwrap();
}

/// `link` made a symlink to `target`, whatever it was.
fn relink(target: &Path, link: &Path) {
    let _ = std::fs::remove_file(link);
    symlink(target, link).unwrap();
}

/// The tool results of a turn, in order.
fn results(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["output"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_symlinked_run_log_never_reads_a_secret_in_any_mode() {
    let sandbox = Sandbox::new();
    let root = sandbox.root.path();
    // Each secret holds a marker of its own, as lines a log reader would show.
    let config_marker = "CODARIS-E2E-CONFIG-SECRET-1c7a";
    sandbox.write_config(&format!(
        "# {config_marker}\n[tools]\nlean_surface = false\n"
    ));
    let ssh = root.join("home/.ssh/id_ed25519");
    std::fs::create_dir_all(ssh.parent().unwrap()).unwrap();
    let ssh_marker = "CODARIS-E2E-SSH-SECRET-93d0";
    std::fs::write(
        &ssh,
        format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{ssh_marker}\n-----END OPENSSH PRIVATE KEY-----\n"
        ),
    )
    .unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let state_file = sandbox.state_dir().join("notes.txt");
    let state_marker = "CODARIS-E2E-STATE-SECRET-4b62";
    std::fs::write(&state_file, format!("{state_marker}\n")).unwrap();
    let secrets = [
        (ssh.clone(), ssh_marker),
        (root.join("config.toml"), config_marker),
        (state_file.clone(), state_marker),
    ];

    // `a`: the last log is the link; `b`: the last log is real, the rotated one the link.
    let proj = root.join("projects/pipe");
    launch(&proj.join("a"), "goofy_kilby");
    launch(&proj.join("b"), "goofy_kilby");
    let calls = [
        ("analyze_run_log", json!({"path": "a"})),
        ("check_run_status", json!({"path": "a"})),
        ("analyze_run_log", json!({"path": "b", "run": "old_turing"})),
    ];
    let script = calls_script(&calls);
    for (secret, _) in &secrets {
        relink(secret, &proj.join("a/.nextflow.log"));
        relink(secret, &proj.join("b/.nextflow.log.1"));
        for mode in ["ask", "accept_edits", "bypass"] {
            for approve in ["deny", "session"] {
                let output = sandbox.run_script(
                    &proj,
                    &script,
                    &["--permission-mode", mode, "--approve", approve],
                    "why did the run fail?",
                );
                assert!(output.status.success(), "{}", stderr(&output));
                let seen = format!("{}{}", stdout(&output), stderr(&output));
                for (path, marker) in &secrets {
                    assert!(
                        !seen.contains(marker),
                        "{mode}/{approve}: `{}` was read through a symlinked log: {seen}",
                        path.display()
                    );
                }
                let events = events(&output);
                let out = results(&events);
                assert_eq!(out.len(), calls.len(), "{mode}/{approve}: {events:#?}");
                for (answer, log) in
                    out.iter()
                        .zip([".nextflow.log", ".nextflow.log", ".nextflow.log.1"])
                {
                    assert!(
                        answer.contains(log) && answer.lines().count() == 1,
                        "{mode}/{approve}: the refusal is one line naming `{log}`: {answer}"
                    );
                }
            }
        }
    }
    // A log that is a real file is still read.
    std::fs::remove_file(proj.join("a/.nextflow.log")).unwrap();
    launch(&proj.join("a"), "goofy_kilby");
    let output = sandbox.run_script(
        &proj,
        &calls_script(&calls[..1]),
        &["--permission-mode", "ask", "--approve", "deny"],
        "why did the run fail?",
    );
    let out = results(&events(&output));
    assert!(out[0].starts_with("log: `"), "{out:?}");
    let status = sandbox.cli(&["status", "--json"]);
    assert!(status.status.success(), "{}", stderr(&status));
}

/// The other files the run readers derive from a launch directory, each a symlink to the SSH
/// key, which holds the marker in the form that reader shows (a history row, a trace row, a
/// task's standard error): `check_run_status` and `debug_last_run` never show it.
#[test]
fn history_trace_and_task_files_linked_to_a_secret_are_not_read() {
    let sandbox = Sandbox::new();
    let root = sandbox.root.path();
    sandbox.write_config("[tools]\nlean_surface = false\n");
    let ssh = root.join("home/.ssh/id_ed25519");
    std::fs::create_dir_all(ssh.parent().unwrap()).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let marker = "CODARIS-E2E-SSH-SECRET-77e1";
    let task = "work/9b/02e776000000000000000000000000";
    let proj = root.join("projects/pipe");
    let trace = |process: &str| {
        format!(
            "task_id\thash\tnative_id\tprocess\ttag\tname\tstatus\texit\n1\t9b/02e776\t4242\t{process}\t-\t{process}\tFAILED\t127\n"
        )
    };
    let history = format!(
        "2026-12-01 10:00:00\t5s\t{marker}\tERR\t6b9515aba6\t{SESSION}\tnextflow run main.nf\n"
    );
    let cases = [
        (".nextflow/history", history),
        ("trace.txt", trace(marker)),
        (&*format!("{task}/.command.err"), format!("{marker}\n")),
    ];
    for (file, secret) in &cases {
        let _ = std::fs::remove_dir_all(&proj);
        launch(&proj, "goofy_kilby");
        std::fs::create_dir_all(proj.join(task)).unwrap();
        std::fs::write(proj.join(task).join(".exitcode"), "127").unwrap();
        std::fs::write(proj.join("trace.txt"), trace("FASTQC")).unwrap();
        std::fs::write(proj.join("main.nf"), "workflow {}\n").unwrap();
        std::fs::write(&ssh, secret).unwrap();
        std::fs::write(proj.join(file), "").unwrap();
        relink(&ssh, &proj.join(file));
        let output = sandbox.run_script(
            &proj,
            &calls_script(&[
                ("check_run_status", json!({"path": "."})),
                ("debug_last_run", json!({"path": "."})),
            ]),
            &["--permission-mode", "bypass", "--approve", "session"],
            "why did the run fail?",
        );
        assert!(output.status.success(), "{}", stderr(&output));
        let seen = stdout(&output);
        assert!(
            !seen.contains(marker),
            "`{file}` was followed to the key: {seen}"
        );
        assert_eq!(results(&events(&output)).len(), 2, "{seen}");
    }
}
