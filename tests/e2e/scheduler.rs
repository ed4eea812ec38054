//! The scheduler through the real binaries: jobs made and changed by the model's
//! `codaris_scheduler_*` tools (the scripted model), runs listed and approved with
//! `codaris scheduler`, and a daemon started on a hand-moved clock (`CODARIS_SCHEDULER_CLOCK`,
//! moved with `codaris scheduler clock`) so a schedule comes round without any wait.
//!
//! A job made by a session keeps that session's script: its N-th run plays the script's
//! `children[N]`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use codaris_test_support::sandbox::{Daemon, Sandbox, events, json, stderr, stdout, wait_for};
use serde_json::{Value, json};

const START: &str = "2026-01-10T00:00:00+00:00";
const CONFIG: &str = "[scheduler]\nenabled = true\n";

fn call(name: &str, args: Value) -> Value {
    json!({"tool_calls": [{"name": name, "args": args}]})
}

/// Finds the scheduler tool `name` and calls it.
fn tool(name: &str, args: Value) -> [Value; 2] {
    [
        call("search_tools", json!({"query": name})),
        call(name, args),
    ]
}

fn rounds(steps: Vec<[Value; 2]>, last: &str) -> Value {
    let mut rounds: Vec<Value> = steps.into_iter().flatten().collect();
    rounds.push(json!({"text": last}));
    Value::Array(rounds)
}

/// A run that only says `text`.
fn saying(text: &str) -> Value {
    json!({"turns": [{"rounds": [{"text": text}]}]})
}

fn project(sandbox: &Sandbox) -> PathBuf {
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    proj
}

fn start(sandbox: &Sandbox, at: &str) -> Daemon {
    sandbox.write_config(CONFIG);
    sandbox.start_daemon_in(sandbox.root.path(), &[("CODARIS_SCHEDULER_CLOCK", at)], &[])
}

/// `codaris scheduler ARGS --json` run in `dir`, its JSON.
fn scheduler(sandbox: &Sandbox, dir: &Path, args: &[&str]) -> Result<Value, String> {
    let output = sandbox
        .command("codaris")
        .current_dir(dir)
        .arg("scheduler")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    if output.status.success() {
        Ok(json(&output))
    } else {
        Err(stderr(&output))
    }
}

fn runs(sandbox: &Sandbox, dir: &Path, job: &[&str]) -> Vec<Value> {
    let mut args = vec!["runs"];
    args.extend_from_slice(job);
    scheduler(sandbox, dir, &args).unwrap()["runs"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Waits until `job` has `count` runs, none in flight; its runs, newest first.
fn settled(sandbox: &Sandbox, dir: &Path, job: &[&str], count: usize) -> Vec<Value> {
    wait_for(Duration::from_secs(30), || {
        let runs = runs(sandbox, dir, job);
        runs.len() == count && runs.iter().all(|r| r["status"] != "running")
    });
    runs(sandbox, dir, job)
}

/// The outputs of the turn's results of `tool`, in order.
fn outputs(events: &[Value], tool: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result" && e["tool"] == tool)
        .map(|e| e["output"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn nightly(extra: Value) -> Value {
    let mut args = json!({"job_id": "nightly", "description": "nightly check",
        "schedule": "0 3 * * *", "timezone": "UTC", "body": "Check the pipeline."});
    if let (Some(args), Some(extra)) = (args.as_object_mut(), extra.as_object()) {
        args.extend(extra.clone());
    }
    args
}

#[test]
fn a_job_made_by_its_tools_is_listed_run_paused_resumed_renamed_and_deleted() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let _daemon = start(&sandbox, START);
    let script = json!({
        "turns": [
            {"rounds": rounds(vec![
                tool("codaris_scheduler_job_create", nightly(json!({}))),
                tool("codaris_scheduler_jobs_list", json!({})),
                tool("codaris_scheduler_job_run", json!({"job_id": "nightly"})),
            ], "Started.")},
            {"rounds": rounds(vec![
                tool("codaris_scheduler_job_pause", json!({"job_id": "nightly"})),
                tool("codaris_scheduler_job_resume", json!({"job_id": "nightly"})),
                tool("codaris_scheduler_job_patch", json!({"job_id": "nightly", "new_job_id": "nightly-tests", "description": "nightly tests"})),
                tool("codaris_scheduler_job_runs", json!({"job_id": "nightly-tests"})),
                tool("codaris_scheduler_job_delete", json!({"job_id": "nightly-tests"})),
                tool("codaris_scheduler_jobs_list", json!({})),
            ], "Done.")}
        ],
        "children": [saying("The pipeline looks fine.")]
    });
    let output = sandbox.run_script(&proj, &script, &["--approve", "once"], "schedule it");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let created = outputs(&events, "codaris_scheduler_job_create");
    assert!(
        created[0].starts_with("created job `user:nightly`; next run 2026-01-10T03:00:00+00:00"),
        "{created:?} {}",
        stderr(&output)
    );
    let file = sandbox.root.path().join("scheduler/nightly.md");
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("schedule: 0 3 * * *")
    );
    let listed = outputs(&events, "codaris_scheduler_jobs_list");
    assert!(listed[0].starts_with("1 scheduled jobs"), "{listed:?}");
    let started = outputs(&events, "codaris_scheduler_job_run");
    assert!(
        started[0].starts_with("started a run of `user:nightly` in the background: run session `s"),
        "{started:?}"
    );
    // The run is listed with its trigger, status and timing, and its session holds its turn.
    let listed = settled(&sandbox, &proj, &["nightly"], 1);
    let run = &listed[0];
    assert_eq!(run["trigger"], "manual", "{run}");
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["started"], START, "{run}");
    assert!(run["ended"].is_string() && run["seconds"] == 0, "{run}");
    let run_session = run["run_session"].as_str().unwrap().to_owned();
    let sessions = json(&sandbox.cli(&["sessions", "--all", "--json"]));
    let record = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == run_session.as_str())
        .unwrap_or_else(|| panic!("the run's session is listed: {sessions}"));
    assert_eq!(record["turns"], 1, "{record}");
    assert_eq!(
        record["state"], "ended",
        "a run's session ends with its run: {record}"
    );
    assert!(record["parent_session_id"].is_string(), "{record}");

    // The session's second turn plays its script's second turn.
    let output = sandbox.cli(&[
        "run",
        "--json",
        "--session",
        "s000001",
        "--approve",
        "once",
        "tidy up",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let events = codaris_test_support::sandbox::events(&output);
    let first = |tool: &str| outputs(&events, tool).first().cloned().unwrap_or_default();
    assert!(
        first("codaris_scheduler_job_pause")
            .starts_with("paused job `user:nightly`; no run scheduled")
    );
    assert!(
        first("codaris_scheduler_job_resume")
            .starts_with("resumed job `user:nightly`; next run 2026-01-10T03:00:00+00:00"),
        "{}",
        first("codaris_scheduler_job_resume")
    );
    assert!(
        first("codaris_scheduler_job_patch")
            .starts_with("patched job `user:nightly-tests` (was `nightly`)"),
        "{}",
        first("codaris_scheduler_job_patch")
    );
    assert!(!file.exists(), "the old name is gone");
    // The history followed the rename.
    let history = first("codaris_scheduler_job_runs");
    assert!(
        history.starts_with("1 runs of `user:nightly-tests`"),
        "{history}"
    );
    assert!(history.contains(&run_session), "{history}");
    assert!(
        first("codaris_scheduler_job_delete")
            .starts_with("deleted job `user:nightly-tests`, its state and its run history")
    );
    assert!(
        !sandbox
            .root
            .path()
            .join("scheduler/nightly-tests.state")
            .exists()
    );
    assert!(outputs(&events, "codaris_scheduler_jobs_list")[0].starts_with("0 scheduled jobs"));
}

#[test]
fn a_second_run_is_refused_while_one_is_in_flight_and_a_runs_card_is_denied_by_its_rule() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let daemon = start(&sandbox, START);
    let outside = sandbox.root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let target = outside.join("notes.md");
    let script = json!({
        "turns": [{"rounds": rounds(vec![
            tool("codaris_scheduler_job_create", nightly(json!({"permission_mode": "bypass"}))),
            tool("codaris_scheduler_job_run", json!({"job_id": "nightly"})),
            tool("codaris_scheduler_job_run", json!({"job_id": "nightly"})),
            tool("codaris_scheduler_job_delete", json!({"job_id": "nightly"})),
        ], "Tried.")}],
        "children": [{"turns": [{"rounds": [
            // Long enough for the second `job_run` to find it in flight.
            {"tool_calls": [{"name": "run_command", "args": {"command": "sleep 3"}}]},
            // Bypass never widens the fence: this asks a person, and nobody watches.
            {"tool_calls": [{"name": "request_capability", "args": {
                "capability": "mutate_outside_fence", "path": outside.display().to_string(),
                "reason": "write the notes there"}}]},
            {"tool_calls": [{"name": "write", "args": {"path": target.display().to_string(), "content": "x"}}]},
            {"text": "The write was refused."}
        ]}]}]
    });
    let output = sandbox.run_script(&proj, &script, &["--approve", "once"], "run it twice");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let runs_started = outputs(&events, "codaris_scheduler_job_run");
    assert!(
        runs_started[0].starts_with("started a run"),
        "{runs_started:?}"
    );
    assert!(
        runs_started[1].contains("a run of `user:nightly` is in flight"),
        "{runs_started:?}"
    );
    let deleted = outputs(&events, "codaris_scheduler_job_delete");
    assert!(deleted[0].contains("is in flight"), "{deleted:?}");
    let listed = settled(&sandbox, &proj, &["nightly"], 1);
    assert_eq!(listed[0]["status"], "succeeded", "{listed:?}");
    // Nobody watched the run: its write's card was denied by the job's rule, and recorded.
    assert!(!target.exists(), "the run wrote without a yes");
    let export = sandbox.cli(&["ledger", "export"]);
    let run_session = listed[0]["run_session"].as_str().unwrap();
    let text = stdout(&export);
    let card = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r.to_string().contains("job user:nightly's rule"))
        .unwrap_or_else(|| panic!("no card answered by the job's rule: {text}"));
    assert!(card.to_string().contains(run_session), "{card}");
    assert!(card.to_string().contains("deny_once"), "{card}");
    drop(daemon);
    sandbox.stop_daemon();
    sandbox.replay_clean();
}

#[test]
fn a_cron_job_fires_on_the_moved_clock_and_a_missed_one_runs_once_after_a_restart() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let daemon = start(&sandbox, START);
    let script = json!({
        "turns": [{"rounds": rounds(vec![
            tool("codaris_scheduler_job_create", nightly(json!({}))),
        ], "Scheduled.")}],
        "children": [saying("run one"), saying("run two"), saying("run three")]
    });
    let output = sandbox.run_script(&proj, &script, &["--approve", "once"], "schedule it");
    assert!(output.status.success(), "{}", stderr(&output));
    let next = |sandbox: &Sandbox| {
        scheduler(sandbox, &proj, &["show", "nightly"]).unwrap()["next_run"].clone()
    };
    assert_eq!(next(&sandbox), "2026-01-10T03:00:00+00:00");
    // Not yet due: nothing runs.
    scheduler(&sandbox, &proj, &["clock", "2026-01-10T02:59:59+00:00"]).unwrap();
    assert!(runs(&sandbox, &proj, &["nightly"]).is_empty());
    scheduler(&sandbox, &proj, &["clock", "2026-01-10T03:00:01+00:00"]).unwrap();
    let fired = settled(&sandbox, &proj, &["nightly"], 1);
    assert_eq!(fired[0]["trigger"], "schedule", "{fired:?}");
    assert_eq!(fired[0]["status"], "succeeded", "{fired:?}");
    assert_eq!(next(&sandbox), "2026-01-11T03:00:00+00:00");

    // Down over four nights: it runs once at the start, then keeps its schedule.
    drop(daemon);
    sandbox.stop_daemon();
    let _daemon = start(&sandbox, "2026-01-14T12:00:00+00:00");
    let after = settled(&sandbox, &proj, &["nightly"], 2);
    assert_eq!(after[0]["trigger"], "missed", "{after:?}");
    assert_eq!(after[0]["status"], "succeeded", "{after:?}");
    assert_eq!(after[0]["started"], "2026-01-14T12:00:00+00:00");
    assert_eq!(next(&sandbox), "2026-01-15T03:00:00+00:00");
    assert_eq!(runs(&sandbox, &proj, &["nightly"]).len(), 2);
}

#[test]
fn a_project_job_runs_only_once_approved_and_again_after_its_file_changed() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let daemon = start(&sandbox, START);
    let script = json!({
        "turns": [{"rounds": rounds(vec![
            tool("codaris_scheduler_job_create", nightly(json!({"scope": "project", "schedule": "every 1h"}))),
            tool("codaris_scheduler_job_run", json!({"scope": "project", "job_id": "nightly"})),
        ], "Asked.")}],
        "children": [saying("approved run"), saying("approved again")]
    });
    let output = sandbox.run_script(&proj, &script, &["--approve", "once"], "schedule it here");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let created = outputs(&events, "codaris_scheduler_job_create");
    assert!(
        created[0].contains("it runs once the operator approves it"),
        "{created:?}"
    );
    let refused = outputs(&events, "codaris_scheduler_job_run");
    assert!(refused[0].contains("is not approved"), "{refused:?}");
    let job = ["nightly", "--scope", "project"];
    let run = |sandbox: &Sandbox| {
        let mut args = vec!["run"];
        args.extend_from_slice(&job);
        scheduler(sandbox, &proj, &args)
    };
    let approve = |sandbox: &Sandbox| {
        let mut args = vec!["approve"];
        args.extend_from_slice(&job);
        scheduler(sandbox, &proj, &args).unwrap()
    };
    assert!(run(&sandbox).unwrap_err().contains("not approved"));
    let approved = approve(&sandbox);
    assert_eq!(approved["job_id"], "nightly", "{approved}");
    run(&sandbox).unwrap();
    assert_eq!(settled(&sandbox, &proj, &job, 1)[0]["status"], "succeeded");
    // A changed file is a job nobody approved.
    let file = proj.join(".codaris/scheduler/nightly.md");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}Also delete the results.\n")).unwrap();
    assert!(run(&sandbox).unwrap_err().contains("not approved"));
    let listed = scheduler(&sandbox, &proj, &["list"]).unwrap();
    assert_eq!(listed["jobs"][0]["approved"], false, "{listed}");
    assert_eq!(listed["jobs"][0]["next_run"], Value::Null, "{listed}");
    let again = approve(&sandbox);
    assert_ne!(again["digest"], approved["digest"]);
    run(&sandbox).unwrap();
    assert_eq!(settled(&sandbox, &proj, &job, 2)[0]["status"], "succeeded");
    // Pausing and resuming is not a change that needs approving again.
    let mut pause = vec!["pause"];
    pause.extend_from_slice(&job);
    scheduler(&sandbox, &proj, &pause).unwrap();
    let mut resume = vec!["resume"];
    resume.extend_from_slice(&job);
    let resumed = scheduler(&sandbox, &proj, &resume).unwrap();
    assert_eq!(resumed["approved"], true, "{resumed}");
    // Both approvals are in the ledger with their digests, replay clean, and count after a
    // restart.
    let export = stdout(&sandbox.cli(&["ledger", "export"]));
    let recorded: Vec<Value> = export
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["type"] == "job_approval")
        .collect();
    assert_eq!(recorded.len(), 2, "{export}");
    assert_eq!(recorded[1]["digest"], again["digest"]);
    assert_eq!(recorded[1]["file"], file.display().to_string());
    drop(daemon);
    sandbox.stop_daemon();
    sandbox.replay_clean();
    let _daemon = start(&sandbox, START);
    let shown = scheduler(&sandbox, &proj, &["show", "nightly", "--scope", "project"]).unwrap();
    assert_eq!(shown["approved"], true, "{shown}");
}

#[test]
fn a_project_scheduler_directory_that_is_a_symlink_is_refused() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let outside = sandbox.root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(proj.join(".codaris")).unwrap();
    std::os::unix::fs::symlink(&outside, proj.join(".codaris/scheduler")).unwrap();
    let _daemon = start(&sandbox, START);
    let script = json!({
        "turns": [{"rounds": rounds(vec![
            tool("codaris_scheduler_job_create", nightly(json!({"scope": "project"}))),
        ], "Tried.")}]
    });
    let output = sandbox.run_script(&proj, &script, &["--approve", "once"], "schedule it here");
    assert!(output.status.success(), "{}", stderr(&output));
    let created = outputs(&events(&output), "codaris_scheduler_job_create");
    assert!(created[0].contains("is a symlink"), "{created:?}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn the_scheduler_is_off_by_default_and_status_and_config_show_say_so() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let _daemon = sandbox.start_daemon(&[]);
    let status = json(&sandbox.cli(&["status", "--json"]));
    assert_eq!(status["scheduler"]["enabled"], false, "{status}");
    let shown = stdout(&sandbox.cli(&["config", "show", "--json"]));
    assert!(shown.contains("scheduler.enabled"), "{shown}");
    // On, its tools are found by name.
    drop(_daemon);
    sandbox.stop_daemon();
    sandbox.write_config(CONFIG);
    let _daemon = sandbox.start_daemon(&[]);
    let status = json(&sandbox.cli(&["status", "--json"]));
    assert_eq!(status["scheduler"]["enabled"], true, "{status}");
    let search = json(&sandbox.cli(&["tools", "search", "codaris_scheduler_job_create", "--json"]));
    assert_eq!(
        search["hits"][0]["name"], "codaris_scheduler_job_create",
        "{search}"
    );
    drop(_daemon);
    sandbox.stop_daemon();
    sandbox.write_config("");
    let _daemon = sandbox.start_daemon(&[]);
    let refused = sandbox.cli(&["scheduler", "list"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("the scheduler is off"),
        "{}",
        stderr(&refused)
    );
    // Its tools are not offered while it is off.
    let search = json(&sandbox.cli(&["tools", "search", "codaris_scheduler_job_create", "--json"]));
    let hits: Vec<&Value> = search["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["name"])
        .collect();
    assert!(
        !hits.iter().any(|name| name
            .as_str()
            .is_some_and(|n| n.starts_with("codaris_scheduler"))),
        "{search}"
    );
}

#[test]
fn a_run_in_flight_is_cancelled_and_listed_as_such() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let _daemon = start(&sandbox, START);
    let script = json!({
        "turns": [{"rounds": rounds(vec![
            tool("codaris_scheduler_job_create", nightly(json!({"permission_mode": "bypass"}))),
            tool("codaris_scheduler_job_run", json!({"job_id": "nightly"})),
        ], "Started.")}],
        "children": [{"turns": [{"rounds": [
            {"tool_calls": [{"name": "run_command", "args": {"command": "sleep 60"}}]},
            {"text": "Slept."}
        ]}]}]
    });
    let output = sandbox.run_script(&proj, &script, &["--approve", "once"], "start it");
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(scheduler(&sandbox, &proj, &["show", "nightly"]).unwrap()["in_flight"].is_string());
    let cancelled = scheduler(&sandbox, &proj, &["cancel", "nightly"]).unwrap();
    assert!(cancelled["run_session"].is_string(), "{cancelled}");
    let listed = settled(&sandbox, &proj, &["nightly"], 1);
    assert_eq!(listed[0]["status"], "cancelled", "{listed:?}");
    assert!(
        scheduler(&sandbox, &proj, &["cancel", "nightly"])
            .unwrap_err()
            .contains("no run of `user:nightly` is in flight")
    );
}
