//! `check_run_status`'s reading: finished runs from verbatim traces, and runs in progress.

use std::fs;

use codaris_nextflow::runs::{HistoryStatus, RunQuery, RunState, RunsError, run_status};
use pretty_assertions::assert_eq;

use super::support::{Launch, SESSION, TestResult, fixture_text, history_row};

#[test]
fn a_finished_failed_run() -> TestResult {
    let l = Launch::new(
        &history_row("fabulous_goldstine", "ERR", "3.9s", SESSION),
        Some(&fixture_text("trace-tuto-failed.txt")?),
    )?;
    let s = run_status(l.path(), None)?;
    assert_eq!(s.run, "fabulous_goldstine");
    assert_eq!(s.state, RunState::Finished);
    assert_eq!(s.status, HistoryStatus::Err);
    assert_eq!(s.duration_ms, Some(3_900));
    assert_eq!(
        (s.tasks.completed, s.tasks.failed, s.tasks.running),
        (11, 2, 0)
    );
    assert_eq!(s.process_now, None);
    let text = s.render();
    assert!(text.starts_with("run: fabulous_goldstine\nsession: e710da1b-ce06-482f-bbcf-987a507f85d1\nstate: finished\nstatus: ERR\n"), "{text}");
    assert!(text.contains("\ntasks completed: 11\n"));
    assert!(text.contains("\ntasks failed: 2\n"));
    assert!(
        text.contains(
            "\nfirst failed: [3b/1e91fb] eachAcn (dowloading AF002815.1) (exit 1) (native_id 13050)\n"
        ),
        "{text}"
    );
    Ok(())
}

#[test]
fn the_documented_history_and_trace_together() -> TestResult {
    let l = Launch::new(
        &fixture_text("history-nextflow-test.txt")?,
        Some(&fixture_text("trace-docs-default.txt")?),
    )?;
    let s = RunQuery::new(l.path()).run(Some("evil_pike")).status()?;
    assert_eq!(
        (s.run.as_str(), s.status.clone()),
        ("evil_pike", HistoryStatus::Ok)
    );
    let last = run_status(l.path(), None)?;
    assert_eq!(last.run, "modest_bartik");
    assert!(matches!(
        run_status(l.path(), Some("nobody")),
        Err(RunsError::RunNotFound { .. })
    ));
    Ok(())
}

#[test]
fn a_run_in_progress() -> TestResult {
    // The history row has no status yet, two tasks ended (trace rows), one is running (begun,
    // no .exitcode, no row), one is only submitted.
    let trace = "task_id\thash\tnative_id\tname\tstatus\texit\tsubmit\tduration\trealtime\t%cpu\tpeak_rss\tpeak_vmem\trchar\twchar\n\
                 1\t08/95dc38\t101\tNFCORE_DEMO:DEMO:FASTQC (s1)\tCOMPLETED\t0\t2026-12-01 10:00:01.000\t4.7s\t3s\t94.1%\t29.8 MB\t354 MB\t33.3 MB\t0\n\
                 2\te9/b5dbab\t102\tNFCORE_DEMO:DEMO:FASTQC (s2)\tCACHED\t0\t2026-12-01 10:00:01.000\t4.7s\t3s\t94.1%\t29.8 MB\t354 MB\t33.3 MB\t0\n";
    let l = Launch::new(&history_row("mad_curie", "-", "-", SESSION), Some(trace))?;
    l.task("08/95dc38", &[(".command.begin", b""), (".exitcode", b"0")])?;
    l.task(
        "c5/f00c97",
        &[
            (".command.begin", b""),
            (
                ".command.run",
                b"#!/bin/bash\n### ---\n### name: 'NFCORE_DEMO:DEMO:MULTIQC'\n### ...\n",
            ),
        ],
    )?;
    l.task("d1/000000", &[(".command.run", b"#!/bin/bash\n")])?;
    let log = "Dec-01 10:00:00.000 [main] DEBUG nextflow.cli.Launcher - $> nextflow run main.nf\r\n\
               [c5/f00c97] Submitted process > NFCORE_DEMO:DEMO:MULTIQC\r\n";
    let s = RunQuery::new(l.path()).log_tail(log).status()?;
    assert_eq!(s.state, RunState::Running);
    assert_eq!(s.status, HistoryStatus::Running);
    assert_eq!(
        (
            s.tasks.completed,
            s.tasks.cached,
            s.tasks.running,
            s.tasks.submitted
        ),
        (1, 1, 1, 1)
    );
    assert_eq!(s.process_now.as_deref(), Some("NFCORE_DEMO:DEMO:MULTIQC"));
    assert_eq!(s.running_tasks[0].hash, "c5/f00c97");
    let text = s.render();
    assert!(
        text.contains("\nstate: running\nstatus: none yet (running)\n"),
        "{text}"
    );
    assert!(text.contains("\nprocess running now: NFCORE_DEMO:DEMO:MULTIQC\n"));
    assert!(text.contains("\nlog| [c5/f00c97] Submitted process > NFCORE_DEMO:DEMO:MULTIQC\n"));
    assert!(!text.contains('\r'));
    Ok(())
}

#[test]
fn a_slurm_run_in_progress_names_each_task_s_job() -> TestResult {
    // On a grid executor the log's submission lines carry each task's job id; while a task
    // waits in the queue or runs, nothing else has it.
    let trace = "task_id\thash\tnative_id\tname\tstatus\texit\n";
    let l = Launch::new(&history_row("calm_noether", "-", "-", SESSION), Some(trace))?;
    let running = l.task(
        "c5/f00c97",
        &[
            (".command.begin", b""),
            (
                ".command.run",
                b"#!/bin/bash\n### name: 'NFCORE_DEMO:DEMO:FASTQC (s1)'\n",
            ),
        ],
    )?;
    let queued = l.task(
        "d1/a2b3c4",
        &[(
            ".command.run",
            b"#!/bin/bash\n### name: 'NFCORE_DEMO:DEMO:MULTIQC'\n",
        )],
    )?;
    let log = format!(
        "Dec-07 01:00:00.000 [Task submitter] DEBUG nextflow.executor.GridTaskHandler - [SLURM] submitted process NFCORE_DEMO:DEMO:FASTQC (s1) > jobId: 4242; workDir: {}\n\
         Dec-07 01:00:01.000 [Task submitter] DEBUG nextflow.executor.GridTaskHandler - [SLURM] submitted process NFCORE_DEMO:DEMO:MULTIQC > jobId: 4243; workDir: {}\n",
        running.display(),
        queued.display()
    );
    let s = RunQuery::new(l.path()).log_tail(&log).status()?;
    assert_eq!(s.listed_job_ids(), ["4242", "4243"]);
    let text = s.render();
    assert!(
        text.contains(&format!(
            "\nrunning: [c5/f00c97] NFCORE_DEMO:DEMO:FASTQC (s1) in {} (native_id 4242)\n",
            running.display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "\nsubmitted: [d1/a2b3c4] NFCORE_DEMO:DEMO:MULTIQC in {} (native_id 4243)\n",
            queued.display()
        )),
        "{text}"
    );
    Ok(())
}

#[test]
fn a_run_that_just_started_has_only_its_log() -> TestResult {
    let trace = "task_id\thash\tnative_id\tname\tstatus\texit\n";
    let l = Launch::new(&history_row("tiny_turing", "-", "-", SESSION), Some(trace))?;
    let log = "[PROCESS ab/cdef12] NFCORE_DEMO:DEMO:FASTQC (s1)\n";
    let s = RunQuery::new(l.path()).log_tail(log).status()?;
    assert_eq!(
        s.process_now.as_deref(),
        Some("NFCORE_DEMO:DEMO:FASTQC (s1)")
    );
    Ok(())
}

#[test]
fn a_finished_run_calls_begun_tasks_without_exit_killed() -> TestResult {
    let trace = "task_id\thash\tname\tstatus\texit\n1\taa/000001\tA (1)\tFAILED\t137\n";
    let l = Launch::new(
        &history_row("sad_hopper", "ERR", "1m", SESSION),
        Some(trace),
    )?;
    l.task("bb/000002", &[(".command.begin", b"")])?;
    let s = run_status(l.path(), None)?;
    assert_eq!(s.tasks.running, 0);
    assert!(s.render().contains(
        "\nnote: 1 task(s) started without an `.exitcode` though the run has ended: killed\n"
    ));
    Ok(())
}

#[test]
fn trace_found_where_nextflow_and_nf_core_put_it() -> TestResult {
    let l = Launch::new(&history_row("x", "OK", "1s", SESSION), None)?;
    let info = l.path().join("results/pipeline_info");
    fs::create_dir_all(&info)?;
    fs::write(
        info.join("execution_trace_2026-12-01_10-00-00.txt"),
        fixture_text("trace-tuto-cached.txt")?,
    )?;
    let s = run_status(l.path(), None)?;
    assert_eq!(s.tasks.cached, 1);
    assert!(
        s.trace
            .ok_or("trace")?
            .ends_with("execution_trace_2026-12-01_10-00-00.txt")
    );
    Ok(())
}

#[test]
fn no_history_is_a_clear_error() -> TestResult {
    let dir = tempfile::tempdir()?;
    let e = run_status(dir.path(), None).err().ok_or("no error")?;
    assert!(e.to_string().starts_with("no runs recorded: `"), "{e}");
    Ok(())
}

#[test]
fn a_forged_run_name_cannot_add_lines() -> TestResult {
    let row = "2026-12-01 10:00:00\t-\tevil\u{2028}status: OK\t-\tabc\te710da1b-ce06-482f-bbcf-987a507f85d1\tnextflow run x\u{1b}[2J\n";
    let l = Launch::new(row, Some("task_id\thash\tname\tstatus\texit\n"))?;
    let text = run_status(l.path(), None)?.render();
    assert!(text.contains("run: evil\\u{2028}status: OK\n"), "{text}");
    assert!(text.contains("command: nextflow run x\\u{001b}[2J\n"));
    assert_eq!(text.lines().filter(|l| l.starts_with("status:")).count(), 1);
    Ok(())
}
