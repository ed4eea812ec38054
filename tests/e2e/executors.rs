//! Pipelines on a cluster, through the real binaries: `codaris doctor` names what an executor
//! profile of `[nextflow] profiles` is missing on this machine, and `check_run_status` on a run
//! that Slurm executes shows each task's job id (from the log's submission lines) and, for a
//! task waiting in the queue, the state the scheduler gives it. The `squeue` here is a
//! stand-in script that says so; its output is in the format Slurm documents for
//! `squeue --noheader --format %i|%T|%r`.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use codaris_test_support::sandbox::{Sandbox, calls_script, events, stderr, stdout};
use serde_json::{Value, json};

/// A stand-in scheduler client in `dir` that names itself and prints `out`.
fn stand_in(dir: &Path, name: &str, out: &str) {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n# codaris stand-in `{name}` for the e2e tests: NOT Slurm\nprintf '%s' '{out}'\n"
        ),
    )
    .expect("a stand-in");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("executable");
}

#[test]
fn doctor_names_an_executor_profile_whose_client_is_missing() {
    let sandbox = Sandbox::new();
    let bin = sandbox.root.path().join("cluster-bin");
    std::fs::create_dir_all(&bin).expect("bin");
    // The sandbox's commands may read the cluster's clients where the operator says so.
    sandbox.write_config(&format!(
        "[nextflow]\nprofiles = [\"test\", \"docker\", \"slurm\"]\n[tools]\nsandbox_readable = [\"{}\"]\n",
        bin.display()
    ));
    stand_in(&bin, "squeue", "");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let _daemon = sandbox.start_daemon_in(sandbox.root.path(), &[("PATH", path.as_str())], &[]);
    let shown = sandbox
        .command("codaris")
        .arg("doctor")
        .output()
        .expect("doctor");
    let text = stdout(&shown);
    let line = text
        .lines()
        .find(|l| l.starts_with("warn  executor profile `slurm` (slurm): "))
        .unwrap_or_else(|| panic!("no executor line: {text}{}", stderr(&shown)));
    assert!(line.contains("`sbatch` is not on PATH"), "{line}");
    assert!(!line.contains("`squeue` is not on PATH"), "{line}");
    assert!(!text.contains("executor profile `docker`"), "{text}");
    let json_out = sandbox
        .command("codaris")
        .args(["doctor", "--json"])
        .output()
        .expect("doctor --json");
    let report: Value = serde_json::from_str(&stdout(&json_out)).unwrap_or(Value::Null);
    let slurm = &report["executors"][0];
    assert_eq!(slurm["profile"], "slurm", "{report}");
    assert_eq!(slurm["ok"], false);
    assert!(
        slurm["found"].as_array().is_some_and(|found| found
            .iter()
            .any(|f| f.as_str().is_some_and(|f| f.starts_with("squeue at ")))),
        "{slurm}"
    );
}

#[test]
fn a_slurm_run_shows_its_job_ids_and_a_queued_task_s_scheduler_state() {
    let sandbox = Sandbox::new();
    let bin = sandbox.root.path().join("cluster-bin");
    std::fs::create_dir_all(&bin).expect("bin");
    // The queued task's job waits for resources; the running one is not asked about twice.
    stand_in(
        &bin,
        "squeue",
        "4242|RUNNING|None\n4243|PENDING|Resources\n",
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let proj = sandbox.root.path().join("proj");
    let launch = proj.join("run1");
    std::fs::create_dir_all(launch.join(".nextflow")).expect("launch dir");
    // A run in progress, as Nextflow leaves it with `-profile slurm`: its history row without
    // a status, an empty trace, one task begun and one only submitted, and the log's lines
    // for both submissions (GridTaskHandler, debug level).
    std::fs::write(
        launch.join(".nextflow/history"),
        "2026-12-07 01:00:00\t-\tcalm_noether\t-\t6b9515aba6\te710da1b-ce06-482f-bbcf-987a507f85d1\tnextflow run main.nf -profile slurm -with-trace\n",
    )
    .expect("history");
    std::fs::write(
        launch.join("trace.txt"),
        "task_id\thash\tnative_id\tname\tstatus\texit\n",
    )
    .expect("trace");
    let running = launch.join("work/c5/f00c97aa00000000000000000000");
    let queued = launch.join("work/d1/a2b3c4bb00000000000000000000");
    for (dir, begun, name) in [
        (&running, true, "NFCORE_DEMO:DEMO:FASTQC (s1)"),
        (&queued, false, "NFCORE_DEMO:DEMO:MULTIQC"),
    ] {
        std::fs::create_dir_all(dir).expect("task dir");
        std::fs::write(
            dir.join(".command.run"),
            format!("#!/bin/bash\n### name: '{name}'\n"),
        )
        .expect(".command.run");
        if begun {
            std::fs::write(dir.join(".command.begin"), "").expect(".command.begin");
        }
    }
    std::fs::write(
        launch.join(".nextflow.log"),
        format!(
            "Dec-07 01:00:00.100 [main] DEBUG nextflow.cli.Launcher - $> nextflow run main.nf -profile slurm -with-trace\n\
             Dec-07 01:00:02.000 [Task submitter] DEBUG nextflow.executor.GridTaskHandler - [SLURM] submitted process NFCORE_DEMO:DEMO:FASTQC (s1) > jobId: 4242; workDir: {}\n\
             Dec-07 01:00:03.000 [Task submitter] DEBUG nextflow.executor.GridTaskHandler - [SLURM] submitted process NFCORE_DEMO:DEMO:MULTIQC > jobId: 4243; workDir: {}\n",
            running.display(),
            queued.display()
        ),
    )
    .expect("log");
    let _daemon = sandbox.start_daemon_in(sandbox.root.path(), &[("PATH", path.as_str())], &[]);
    let output = sandbox.run_script(
        &proj,
        &calls_script(&[
            ("search_tools", json!({"query": "check run status"})),
            ("check_run_status", json!({"path": "run1"})),
        ]),
        &["--approve", "deny"],
        "is my run stuck?",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let status = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["tool"] == "check_run_status")
        .and_then(|e| e["output"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(
        status.contains("NFCORE_DEMO:DEMO:FASTQC (s1) in ") && status.contains("(native_id 4242)"),
        "{status}"
    );
    assert!(
        status.contains("\nsubmitted: [d1/a2b3c4] NFCORE_DEMO:DEMO:MULTIQC in "),
        "{status}"
    );
    assert!(
        status.contains("\nscheduler: job 4243: PENDING (Resources) per squeue\n"),
        "{status}"
    );
    assert!(
        status.contains("\nscheduler: job 4242: RUNNING per squeue\n"),
        "{status}"
    );
}
