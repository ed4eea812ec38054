//! A pipeline's tests as `test_pipeline` runs them and `check_test_result` reads them back
//! (issue 16, item 2): which kind of test the pipeline has, the command that runs it, the
//! record of the last run kept in the pipeline's `.codaris/tests/`, and the results read from
//! nf-test's reports or, for a run of the `test` profile, from the run's trace.
//!
//! Everything the tests leave goes to [`TESTS_DIR`] beneath the pipeline: nf-test's TAP and
//! JUnit reports, the test run's trace, and [`RECORD_FILE`], the JSON record of which kind
//! ran last, when, how and how it ended. Nothing here starts a process; files are read in
//! bounded amounts and a symlink where a report or the record should be is refused (the
//! sandboxed test run can write the pipeline's directory, so it could plant one).

use std::fmt::Write as _;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::launch::LaunchPlan;
use crate::nftest::{self, TestResults};
use crate::runs::{self, RunQuery, TaskStatus, Trace, TraceRow, format_duration};

/// Where the tests' reports and record go, relative to the pipeline's directory.
pub const TESTS_DIR: &str = ".codaris/tests";
/// The record of the last test run, in [`TESTS_DIR`].
pub const RECORD_FILE: &str = "last-test.json";
/// nf-test's TAP report (`--tap`), in [`TESTS_DIR`].
pub const TAP_FILE: &str = "nf-test.tap";
/// nf-test's JUnit report (`--junitxml`), in [`TESTS_DIR`].
pub const JUNIT_FILE: &str = "nf-test.xml";
/// The trace of a run of the test profile (`-with-trace`), in [`TESTS_DIR`].
pub const TRACE_FILE: &str = "trace.txt";
/// The file whose presence says the pipeline is tested with nf-test.
pub const NFTEST_CONFIG: &str = "nf-test.config";
/// How much of the test run's console the record keeps (its end, where the error is).
pub const OUTPUT_TAIL_LINES: usize = 40;
/// A record larger than this is not one of ours.
const MAX_RECORD_BYTES: u64 = 256 * 1024;
/// A trace with more rows than this is summarised by its counts after that many lines.
const MAX_TASK_LINES: usize = 200;

/// Which tests ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// `nf-test test`: the pipeline has an `nf-test.config`.
    NfTest,
    /// `nextflow run PIPELINE -profile test[,…]`: the pipeline has no nf-test.
    TestProfile,
}

impl TestKind {
    /// The pipeline's kind of test: nf-test when its directory has an `nf-test.config`.
    pub fn of(pipeline: &Path) -> TestKind {
        if pipeline.join(NFTEST_CONFIG).is_file() {
            TestKind::NfTest
        } else {
            TestKind::TestProfile
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            TestKind::NfTest => "nf-test",
            TestKind::TestProfile => "test profile",
        }
    }
}

/// The command that runs the tests (its program is the configured `nf-test` or `nextflow`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCommand {
    pub kind: TestKind,
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Where the run's results will be, each in `tests_dir`.
    pub tap: Option<PathBuf>,
    pub junit: Option<PathBuf>,
    pub trace: Option<PathBuf>,
}

impl TestCommand {
    /// `nf-test test --tap … --junitxml … [--profile P]`, run in the pipeline's directory.
    pub fn nf_test(program: &str, tests_dir: &Path, profiles: &[String]) -> TestCommand {
        let tap = tests_dir.join(TAP_FILE);
        let junit = tests_dir.join(JUNIT_FILE);
        let mut args = vec![
            "test".to_owned(),
            "--tap".to_owned(),
            tap.to_string_lossy().into_owned(),
            "--junitxml".to_owned(),
            junit.to_string_lossy().into_owned(),
        ];
        if !profiles.is_empty() {
            args.push("--profile".to_owned());
            args.push(profiles.join(","));
        }
        TestCommand {
            kind: TestKind::NfTest,
            program: program.to_owned(),
            args,
            env: vec![("NXF_ANSI_LOG".to_owned(), "false".to_owned())],
            tap: Some(tap),
            junit: Some(junit),
            trace: None,
        }
    }

    /// `nextflow run PIPELINE -name RUN -with-trace … -ansi-log false -profile PROFILES`,
    /// spelled as every launch is ([`LaunchPlan`]); `profiles` must already hold `test` (see
    /// [`test_profiles`]).
    pub fn test_profile(
        program: &str,
        pipeline: &Path,
        tests_dir: &Path,
        profiles: &[String],
        run_name: &str,
    ) -> TestCommand {
        let mut plan = LaunchPlan::new(pipeline, pipeline, run_name);
        plan.trace = tests_dir.join(TRACE_FILE);
        plan.profiles = profiles.to_vec();
        TestCommand {
            kind: TestKind::TestProfile,
            program: program.to_owned(),
            args: plan.args(),
            env: plan
                .env()
                .iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                .collect(),
            tap: None,
            junit: None,
            trace: Some(plan.trace),
        }
    }

    /// The files an earlier run left where this one writes: removed before it starts, so a
    /// stale report is never read as this run's (and Nextflow does not refuse an existing
    /// trace).
    pub fn outputs(&self) -> Vec<&Path> {
        [&self.tap, &self.junit, &self.trace]
            .into_iter()
            .flatten()
            .map(PathBuf::as_path)
            .collect()
    }

    /// The command as one line, for the record.
    pub fn line(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The profiles of a run of the test profile: `test` first, then the others asked for (a
/// repeated `test` dropped).
pub fn test_profiles(extra: &[String]) -> Vec<String> {
    let mut profiles = vec!["test".to_owned()];
    profiles.extend(extra.iter().filter(|p| p.as_str() != "test").cloned());
    profiles
}

/// How the test run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "how")]
pub enum TestEnd {
    Exited {
        code: i32,
    },
    Signaled {
        signal: i32,
    },
    /// Stopped after this many seconds: whatever it had written by then was kept.
    TimedOut {
        seconds: u64,
    },
}

impl TestEnd {
    fn describe(&self) -> String {
        match self {
            TestEnd::Exited { code } => format!("exit code {code}"),
            TestEnd::Signaled { signal } => format!("ended by signal {signal}"),
            TestEnd::TimedOut { seconds } => {
                format!("TIMED OUT after {seconds} s and was stopped (what it wrote is kept)")
            }
        }
    }
}

/// The record of the last test run ([`RECORD_FILE`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestRecord {
    pub kind: TestKind,
    /// When it started, in seconds since the Unix epoch.
    pub started_unix: u64,
    pub duration_ms: u64,
    /// The command line it ran.
    pub command: String,
    pub end: TestEnd,
    pub tap: Option<PathBuf>,
    pub junit: Option<PathBuf>,
    pub trace: Option<PathBuf>,
    /// The last lines of its console (stdout, then stderr).
    pub output_tail: String,
}

impl TestRecord {
    /// The record of `command`'s run.
    pub fn new(
        command: &TestCommand,
        started_unix: u64,
        duration_ms: u64,
        end: TestEnd,
        stdout: &str,
        stderr: &str,
    ) -> TestRecord {
        TestRecord {
            kind: command.kind,
            started_unix,
            duration_ms,
            command: command.line(),
            end,
            tap: command.tap.clone(),
            junit: command.junit.clone(),
            trace: command.trace.clone(),
            output_tail: tail_lines(&format!("{stdout}{stderr}"), OUTPUT_TAIL_LINES),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Why the last test cannot be told.
#[derive(Debug, thiserror::Error)]
pub enum TestRunError {
    #[error(
        "test_pipeline has not run on this pipeline: there is no record at `{}`; run test_pipeline first",
        path.display()
    )]
    NoRecord { path: PathBuf },
    #[error("`{}` is a symlink; Codaris reads its test files only where it wrote them", path.display())]
    Symlink { path: PathBuf },
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is not a test record Codaris wrote: {reason}", path.display())]
    BadRecord { path: PathBuf, reason: String },
}

/// Whether `open_nofollow` refused the path for being a symlink.
fn is_symlink_refusal(err: &std::io::Error) -> bool {
    err.get_ref()
        .and_then(|e| e.downcast_ref::<crate::files::BeneathError>())
        .is_some_and(|e| matches!(e, crate::files::BeneathError::Symlink { .. }))
}

/// The record in `tests_dir`.
pub fn read_record(tests_dir: &Path) -> Result<TestRecord, TestRunError> {
    let path = tests_dir.join(RECORD_FILE);
    // Not followed if a symlink, in the same step as the open: a link swapped in after a
    // look would otherwise be read.
    let file = match crate::files::open_nofollow(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(TestRunError::NoRecord { path });
        }
        Err(e) if is_symlink_refusal(&e) => return Err(TestRunError::Symlink { path }),
        Err(source) => return Err(TestRunError::Io { path, source }),
        Ok(file) => file,
    };
    let io = |source| TestRunError::Io {
        path: path.clone(),
        source,
    };
    let mut text = String::new();
    file.take(MAX_RECORD_BYTES)
        .read_to_string(&mut text)
        .map_err(io)?;
    serde_json::from_str(&text).map_err(|e| TestRunError::BadRecord {
        path: path.clone(),
        reason: e.to_string(),
    })
}

/// The last test's outcome: the counts and the answer text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestAnswer {
    pub kind: TestKind,
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub duration_ms: u64,
    /// The record's facts, then one line per test (or task), failures with their reason.
    pub text: String,
}

impl TestAnswer {
    /// `tests of PATH: N passed, N failed, N skipped (KIND) in DURATION`.
    pub fn headline(&self, pipeline: &str) -> String {
        format!(
            "tests of {pipeline}: {} passed, {} failed, {} skipped ({}) in {}",
            self.passed,
            self.failed,
            self.skipped,
            self.kind.label(),
            format_duration(self.duration_ms)
        )
    }
}

/// The outcome of the run `record` describes, in `pipeline` (the launch directory of a run of
/// the test profile, and where its processes are looked up).
pub fn answer(record: &TestRecord, pipeline: &Path) -> TestAnswer {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "last test: {}, started {}, took {}, {}",
        record.kind.label(),
        utc(record.started_unix),
        format_duration(record.duration_ms),
        record.end.describe()
    );
    let _ = writeln!(text, "command: {}", record.command);
    let counts = match record.kind {
        TestKind::NfTest => nf_test_results(record, &mut text),
        TestKind::TestProfile => trace_results(record, pipeline, &mut text),
    };
    let failed_run = !matches!(record.end, TestEnd::Exited { code: 0 });
    if failed_run && counts.1 == 0 && !record.output_tail.trim().is_empty() {
        let _ = writeln!(
            text,
            "the run did not succeed though no test failed; its console ended with:"
        );
        for line in record.output_tail.lines() {
            let _ = writeln!(text, "  out| {line}");
        }
    }
    TestAnswer {
        kind: record.kind,
        passed: counts.0,
        failed: counts.1,
        skipped: counts.2,
        duration_ms: record.duration_ms,
        text,
    }
}

/// nf-test's results, from its JUnit report (it names suites and times) or else its TAP one;
/// the counts passed, failed, skipped.
fn nf_test_results(record: &TestRecord, out: &mut String) -> (usize, usize, usize) {
    let mut problems = Vec::new();
    for path in [&record.junit, &record.tap].into_iter().flatten() {
        match read_results(path) {
            Ok(results) => {
                let _ = writeln!(out, "report: {}", path.display());
                out.push_str(&results.render());
                return (results.passed(), results.failed(), results.skipped());
            }
            Err(why) => problems.push(why),
        }
    }
    let _ = writeln!(out, "nf-test wrote no report that could be read:");
    for why in problems {
        let _ = writeln!(out, "  {why}");
    }
    (0, 0, 0)
}

fn read_results(path: &Path) -> Result<TestResults, String> {
    match std::fs::symlink_metadata(path) {
        Err(e) => Err(format!("`{}`: {e}", path.display())),
        Ok(meta) if meta.file_type().is_symlink() => Err(TestRunError::Symlink {
            path: path.to_path_buf(),
        }
        .to_string()),
        Ok(_) => nftest::read_report(path).map_err(|e| e.to_string()),
    }
}

/// One line per task of the trace; the failing task diagnosed as `debug_last_run` does.
fn trace_results(record: &TestRecord, pipeline: &Path, out: &mut String) -> (usize, usize, usize) {
    let Some(path) = &record.trace else {
        let _ = writeln!(out, "the record names no trace");
        return (0, 0, 0);
    };
    let rows = match read_trace(path) {
        Ok(rows) => rows,
        Err(why) => {
            let _ = writeln!(out, "no task results: {why}");
            return (0, 0, 0);
        }
    };
    let tasks = classify(&rows);
    let count = |want: Verdict| tasks.iter().filter(|(_, v)| *v == want).count();
    let (passed, failed, skipped) = (
        count(Verdict::Passed),
        count(Verdict::Failed),
        count(Verdict::Skipped),
    );
    let verdict = if failed == 0 && matches!(record.end, TestEnd::Exited { code: 0 }) {
        "passed"
    } else {
        "FAILED"
    };
    let _ = writeln!(
        out,
        "test profile run {verdict}: {} tasks, {passed} passed, {failed} failed, {skipped} skipped (from the trace {})",
        tasks.len(),
        path.display()
    );
    let mut listed: Vec<&(&TraceRow, Verdict)> = tasks
        .iter()
        .filter(|(_, v)| *v == Verdict::Failed)
        .collect();
    listed.extend(tasks.iter().filter(|(_, v)| *v != Verdict::Failed));
    for (row, verdict) in listed.iter().take(MAX_TASK_LINES) {
        let _ = writeln!(out, "{}", task_line(row, *verdict));
    }
    if listed.len() > MAX_TASK_LINES {
        let _ = writeln!(out, "… {} more tasks", listed.len() - MAX_TASK_LINES);
    }
    if failed > 0 {
        let _ = writeln!(out, "the failing task:");
        match RunQuery::new(pipeline).trace(path).failing_task(pipeline) {
            Ok(report) => out.push_str(&report.render()),
            Err(why) => {
                let _ = writeln!(out, "  (not diagnosed: {why})");
            }
        }
    } else if verdict == "FAILED" {
        log_diagnosis(pipeline, out);
    }
    (passed, failed, skipped)
}

/// The run's own error from `.nextflow.log`, for a run that failed before any task did.
fn log_diagnosis(pipeline: &Path, out: &mut String) {
    let path = pipeline.join(".nextflow.log");
    // A symlink (or anything but a regular file) is not read.
    let Ok(file) = crate::files::open_nofollow(&path) else {
        return;
    };
    if let Ok(log) = crate::runlog::read_log(BufReader::new(file)) {
        let _ = writeln!(out, "the run's log ({}):", path.display());
        out.push_str(&crate::runlog::render_analysis(Some(&log), None));
    }
}

fn read_trace(path: &Path) -> Result<Vec<TraceRow>, String> {
    let file = match crate::files::open_nofollow(path) {
        Ok(file) => file,
        Err(e) if is_symlink_refusal(&e) => {
            return Err(TestRunError::Symlink {
                path: path.to_path_buf(),
            }
            .to_string());
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "the run left no trace at `{}` ({e}): it stopped before its first task",
                path.display()
            ));
        }
        Err(e) => return Err(format!("`{}`: {e}", path.display())),
    };
    let rows: Result<Vec<TraceRow>, runs::RunsError> =
        Trace::read(BufReader::new(file)).and_then(|rows| rows.collect());
    rows.map_err(|e| e.to_string())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Passed,
    Failed,
    /// A failed attempt a later attempt of the same task made good.
    Retried,
    Skipped,
}

/// Each row's verdict: completed and cached tasks passed, failed ones failed unless the same
/// task completed later (a retry), aborted and unfinished ones were skipped.
fn classify(rows: &[TraceRow]) -> Vec<(&TraceRow, Verdict)> {
    rows.iter()
        .enumerate()
        .map(|(at, row)| {
            let verdict = match &row.status {
                Some(TaskStatus::Completed | TaskStatus::Cached) => Verdict::Passed,
                Some(TaskStatus::Failed) => {
                    let made_good = rows.get(at + 1..).unwrap_or_default().iter().any(|later| {
                        later.name == row.name
                            && matches!(
                                later.status,
                                Some(TaskStatus::Completed | TaskStatus::Cached)
                            )
                    });
                    if made_good {
                        Verdict::Retried
                    } else {
                        Verdict::Failed
                    }
                }
                _ => Verdict::Skipped,
            };
            (row, verdict)
        })
        .collect()
}

fn task_line(row: &TraceRow, verdict: Verdict) -> String {
    let name = one_line(row.name.as_deref().unwrap_or("(unnamed task)"));
    let status = row.status.as_ref().map_or("-", TaskStatus::as_str);
    let exit = row
        .exit
        .map_or_else(|| "no exit recorded".to_owned(), |e| format!("exit {e}"));
    let took = row
        .realtime_ms
        .or(row.duration_ms)
        .map(|ms| format!(" in {}", format_duration(ms)))
        .unwrap_or_default();
    match verdict {
        Verdict::Passed
            if *row.status.as_ref().unwrap_or(&TaskStatus::Completed) == TaskStatus::Cached =>
        {
            format!("passed   {name} (cached)")
        }
        Verdict::Passed => format!("passed   {name}{took}"),
        Verdict::Failed => format!("FAILED   {name}: {status}, {exit}{took}"),
        Verdict::Retried => format!("retried  {name}: {status}, {exit} (a later attempt passed)"),
        Verdict::Skipped => format!("skipped  {name}: {status}, never finished"),
    }
}

/// A trace field on one line: control characters shown as spaces.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The last `limit` lines of `text`.
fn tail_lines(text: &str, limit: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(limit);
    lines.get(from..).unwrap_or_default().join("\n")
}

/// `YYYY-MM-DD HH:MM:SS UTC` of a Unix time (the civil calendar from the day count).
fn utc(unix: u64) -> String {
    let days = i64::try_from(unix / 86_400).unwrap_or(0);
    let secs = unix % 86_400;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_times_are_written_as_utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_796_166_000), "2026-12-01 23:00:00 UTC");
    }

    #[test]
    fn the_test_profile_comes_first_once() {
        let extra = ["docker".to_owned(), "test".to_owned()];
        assert_eq!(test_profiles(&extra), ["test", "docker"]);
        let command = TestCommand::test_profile(
            "nextflow",
            Path::new("/w/p"),
            Path::new("/w/p/.codaris/tests"),
            &test_profiles(&extra),
            "codaris-0000abcd",
        );
        assert_eq!(
            command.line(),
            "nextflow run /w/p -name codaris-0000abcd -with-trace /w/p/.codaris/tests/trace.txt -ansi-log false -profile test,docker"
        );
        assert_eq!(
            command.env,
            [("NXF_ANSI_LOG".to_owned(), "false".to_owned())]
        );
    }

    #[test]
    fn nf_test_writes_both_reports_and_takes_the_profiles() {
        let dir = Path::new("/w/p/.codaris/tests");
        let plain = TestCommand::nf_test("nf-test", dir, &[]);
        assert_eq!(
            plain.line(),
            "nf-test test --tap /w/p/.codaris/tests/nf-test.tap --junitxml /w/p/.codaris/tests/nf-test.xml"
        );
        let docker = TestCommand::nf_test("nf-test", dir, &["docker".to_owned()]);
        assert!(docker.line().ends_with(" --profile docker"));
        assert_eq!(docker.outputs().len(), 2);
    }

    #[test]
    fn a_retried_task_is_not_a_failure() {
        let row = |name: &str, status| TraceRow {
            name: Some(name.to_owned()),
            status: Some(status),
            ..TraceRow::default()
        };
        let rows = [
            row("A (1)", TaskStatus::Failed),
            row("A (1)", TaskStatus::Completed),
            row("B", TaskStatus::Failed),
            row("C", TaskStatus::Aborted),
        ];
        let verdicts: Vec<Verdict> = classify(&rows).into_iter().map(|(_, v)| v).collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Retried,
                Verdict::Passed,
                Verdict::Failed,
                Verdict::Skipped
            ]
        );
    }

    #[test]
    fn the_record_survives_its_json() -> Result<(), Box<dyn std::error::Error>> {
        let command = TestCommand::nf_test("nf-test", Path::new("/p/.codaris/tests"), &[]);
        let record = TestRecord::new(
            &command,
            5,
            1_200,
            TestEnd::TimedOut { seconds: 9 },
            "a\n",
            "b\n",
        );
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join(RECORD_FILE), record.to_json())?;
        assert_eq!(read_record(dir.path())?, record);
        assert_eq!(record.output_tail, "a\nb");
        Ok(())
    }

    #[test]
    fn no_record_says_test_pipeline_has_not_run() {
        let dir = Path::new("/nonexistent/.codaris/tests");
        let text = read_record(dir).map(|_| ()).unwrap_err().to_string();
        assert!(text.starts_with("test_pipeline has not run"), "{text}");
    }
}
