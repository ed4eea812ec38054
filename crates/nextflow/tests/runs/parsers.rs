//! The readers on verbatim documented text.

use std::io::Cursor;

use codaris_nextflow::runs::{
    History, HistoryStatus, TaskStatus, Trace, TraceSummary, parse_metrics, parse_wrapper,
};
use pretty_assertions::assert_eq;

use super::support::{TestResult, fixture_text};

#[test]
fn the_documented_default_trace_reads_every_column() -> TestResult {
    let text = fixture_text("trace-docs-default.txt")?;
    let rows: Vec<_> = Trace::read(Cursor::new(&text))?.collect::<Result<_, _>>()?;
    assert_eq!(rows.len(), text.lines().count() - 1);
    let first = &rows[0];
    assert_eq!(first.task_id.as_deref(), Some("19"));
    assert_eq!(first.hash.as_deref(), Some("45/ab752a"));
    assert_eq!(first.native_id.as_deref(), Some("2032"));
    assert_eq!(first.name.as_deref(), Some("blast (1)"));
    assert_eq!(first.process_name(), Some("blast"));
    assert_eq!(first.status, Some(TaskStatus::Completed));
    assert_eq!(first.exit, Some(0));
    assert_eq!(first.submit.as_deref(), Some("2014-10-23 16:33:16.288"));
    assert_eq!(first.duration_ms, Some(60_000));
    assert_eq!(first.realtime_ms, Some(5_000));
    assert_eq!(first.cpu_percent, Some(0.0));
    assert_eq!(
        first.peak_rss,
        Some((29.8f64 * 1024.0 * 1024.0).round() as u64)
    );
    assert_eq!(first.peak_vmem, Some(354 * 1024 * 1024));
    assert_eq!(first.wchar, Some(0));
    let summary = TraceSummary::read(Cursor::new(&text))?;
    assert_eq!(summary.completed, rows.len() as u64);
    assert_eq!(summary.failed, 0);
    assert_eq!(summary.first_failed, None);
    Ok(())
}

#[test]
fn a_failed_run_names_its_first_failure_and_the_killed_task() -> TestResult {
    let text = fixture_text("trace-tuto-failed.txt")?;
    let summary = TraceSummary::read(Cursor::new(&text))?;
    assert_eq!(summary.completed, 11);
    assert_eq!(summary.failed, 2);
    let first = summary.first_failed.ok_or("no failure")?;
    assert_eq!(
        first.name.as_deref(),
        Some("eachAcn (dowloading AF002815.1)")
    );
    assert_eq!(first.hash.as_deref(), Some("3b/1e91fb"));
    assert_eq!(first.exit, Some(1));
    // The task killed when the run stopped: FAILED with `-` for exit and every metric.
    let rows: Vec<_> = Trace::read(Cursor::new(&text))?.collect::<Result<_, _>>()?;
    let killed = rows.last().ok_or("no rows")?;
    assert_eq!(killed.status, Some(TaskStatus::Failed));
    assert_eq!(killed.exit, None);
    assert_eq!(killed.duration_ms, None);
    assert_eq!(killed.rss, None);
    // A COMPLETED row whose metrics are `-`.
    let blank = rows
        .iter()
        .find(|r| r.hash.as_deref() == Some("1f/135e27"))
        .ok_or("row")?;
    assert_eq!(
        (blank.cpu_percent, blank.rss, blank.realtime_ms),
        (None, None, Some(90))
    );
    Ok(())
}

#[test]
fn cached_and_custom_fields() -> TestResult {
    let cached = TraceSummary::read(Cursor::new(fixture_text("trace-tuto-cached.txt")?))?;
    assert_eq!((cached.cached, cached.completed), (1, 0));
    let text = fixture_text("trace-mcp-failed.txt")?;
    let rows: Vec<_> = Trace::read(Cursor::new(&text))?.collect::<Result<_, _>>()?;
    let failed = &rows[2];
    assert_eq!(failed.name.as_deref(), Some("FAIL (1)"));
    assert_eq!(failed.exit, Some(3));
    assert_eq!(failed.realtime_ms, Some(18));
    assert_eq!(
        failed.workdir.as_deref(),
        Some("/runs/demo-run/work/c5/f00c97b40934822f3c080d59dc7887")
    );
    assert_eq!(
        failed.native_id, None,
        "a column the header does not name is None"
    );
    Ok(())
}

#[test]
fn a_retry_that_worked_is_not_the_failing_task() -> TestResult {
    let text = "task_id\thash\tname\tstatus\texit\n\
                1\taa/000001\tALIGN (s1)\tFAILED\t137\n\
                2\tbb/000002\tQC (s1)\tFAILED\t1\n\
                3\tcc/000003\tALIGN (s1)\tCOMPLETED\t0\n";
    let s = TraceSummary::read(Cursor::new(text))?;
    assert_eq!((s.failed, s.retried, s.completed), (2, 1, 1));
    assert_eq!(
        s.first_failed.ok_or("none")?.name.as_deref(),
        Some("QC (s1)")
    );
    Ok(())
}

#[test]
fn raw_numbers_crlf_short_rows_and_bad_bytes() -> TestResult {
    let mut bytes = b"task_id\thash\tname\tstatus\texit\trealtime\tpeak_rss\r\n".to_vec();
    bytes.extend_from_slice(b"1\tab/cdef12\tT\xff (x)\tCOMPLETED\t0\t1500\t2048\r\n");
    bytes.extend_from_slice(b"2\tab/cdef13\tSHORT\r\n\r\n");
    let rows: Vec<_> = Trace::read(Cursor::new(bytes))?.collect::<Result<_, _>>()?;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].name.as_deref(), Some("T\u{fffd} (x)"));
    assert_eq!(
        (rows[0].realtime_ms, rows[0].peak_rss),
        (Some(1500), Some(2048))
    );
    assert_eq!(rows[1].status, None);
    assert_eq!(rows[1].line, 3);
    Ok(())
}

#[test]
fn an_endless_line_is_cut_not_held() -> TestResult {
    let mut text = String::from("task_id\thash\tname\tstatus\n1\tab/cdef12\t");
    text.push_str(&"x".repeat(1_000_000));
    text.push_str("\tFAILED\n2\tab/cdef13\tOK (1)\tCOMPLETED\n");
    let rows: Vec<_> = Trace::read(Cursor::new(text))?.collect::<Result<_, _>>()?;
    assert_eq!(rows.len(), 2);
    assert!(rows[0].name.as_ref().ok_or("name")?.len() < 70_000);
    assert_eq!(rows[0].status, None, "the cut part is not read as columns");
    assert_eq!(rows[1].status, Some(TaskStatus::Completed));
    Ok(())
}

#[test]
fn not_a_trace() {
    assert!(Trace::read(Cursor::new("")).is_err());
    assert!(Trace::read(Cursor::new("hello world\nfoo\n")).is_err());
}

#[test]
fn the_history_of_nextflows_own_tests() -> TestResult {
    let h = History::read(&fixture_text("history-nextflow-test.txt")?);
    assert_eq!(h.entries.len(), 7);
    let legacy = &h.entries[0];
    assert_eq!(legacy.session_id, "b8a3c4cf-17e4-49c6-a4cf-4fd8ddbeef98");
    assert_eq!(legacy.run_name, None);
    let last = h.last().ok_or("no last")?;
    assert_eq!(last.run_name.as_deref(), Some("modest_bartik"));
    assert_eq!(last.status, HistoryStatus::Err);
    assert_eq!(last.duration_ms, Some(300_000));
    assert_eq!(last.timestamp.as_deref(), Some("2016-07-25 09:58:01"));
    assert_eq!(last.revision.as_deref(), Some("6b9515aba6"));
    assert_eq!(last.command.as_deref(), Some(".nextflow run hello"));
    let ok = h.find("evil_pike").ok_or("evil_pike")?;
    assert_eq!(
        (ok.status.clone(), ok.duration_ms),
        (HistoryStatus::Ok, None)
    );
    // A session id prefix finds the last run of that session (a resumed one).
    assert_eq!(
        h.find("5a6d3877").and_then(|e| e.run_name.as_deref()),
        Some("small_cirum")
    );
    assert_eq!(h.find("nobody"), None);
    Ok(())
}

#[test]
fn a_row_without_a_status_is_a_run_in_progress() -> TestResult {
    let h = History::read(&fixture_text("history-nextflow-running.txt")?);
    assert_eq!(h.entries.len(), 4);
    assert!(h.entries[0].is_running());
    assert!(!h.entries[3].is_running());
    // Empty instead of `-`, CRLF, a junk line and a lineage column before the command.
    let text = "2026-01-01 10:00:00\t\tempty_status\t\tabc\te710da1b-ce06-482f-bbcf-987a507f85d1\tnextflow run x\r\n\
                not a history row\r\n\
                2026-01-01 11:00:00\t1m 2s\tlineage\tOK\tabc\t5a6d3877-8823-4ed6-b7fe-2b6748ed4ff9\tlid://123\tnextflow run y\r\n";
    let h = History::read(text);
    assert_eq!(h.skipped, vec![2]);
    assert!(h.entries[0].is_running());
    assert_eq!(h.entries[1].duration_ms, Some(62_000));
    assert_eq!(h.entries[1].command.as_deref(), Some("nextflow run y"));
    Ok(())
}

#[test]
fn the_wrapper_shows_container_cpus_and_staged_inputs() -> TestResult {
    let w = parse_wrapper(&fixture_text("command-run-training-docker.txt")?);
    assert_eq!(w.name.as_deref(), Some("cowpy"));
    assert_eq!(
        w.container.as_deref(),
        Some("community.wave.seqera.io/library/cowpy:1.1.5--3db457ae1977a273")
    );
    assert_eq!(w.engine.as_deref(), Some("docker"));
    assert_eq!(w.cpus, Some(1.0));
    assert_eq!(w.memory, None);
    assert_eq!(
        w.staged,
        vec![(
            "COLLECTED-batch-output.txt".to_string(),
            "/workspaces/training/hello-nextflow/work/7f/f435e3f2cf95979b5f3d7647ae6696/COLLECTED-batch-output.txt".to_string()
        )]
    );
    let slurm = parse_wrapper(
        "#!/bin/bash\n#SBATCH -J nf-FASTQC_(s1)\n#SBATCH -c 4\n#SBATCH -t 02:00:00\n#SBATCH --mem 6144M\n#SBATCH -p short\n# NEXTFLOW TASK: FASTQC (s1)\n",
    );
    assert_eq!(slurm.name.as_deref(), Some("FASTQC (s1)"));
    assert_eq!(slurm.cpus, Some(4.0));
    assert_eq!(slurm.time_ms, Some(7_200_000));
    assert_eq!(slurm.memory, Some(6144 * 1024 * 1024));
    assert_eq!(slurm.queue.as_deref(), Some("short"));
    assert_eq!(slurm.directives.len(), 5);
    Ok(())
}

#[test]
fn the_task_trace_file() -> TestResult {
    let m = parse_metrics(&fixture_text("command-trace-cws.txt")?);
    assert_eq!(m.realtime_ms, Some(30_090));
    assert_eq!(m.cpu_percent, Some(81.2));
    assert_eq!(m.mem_percent, Some(7.1));
    // 593192 KiB, the number NfTraceTest checks (607428608 bytes).
    assert_eq!(m.peak_rss, Some(607_428_608));
    assert_eq!(m.peak_vmem, Some(728_216 * 1024));
    assert_eq!((m.rchar, m.wchar), (Some(79_901), Some(427)));
    Ok(())
}
