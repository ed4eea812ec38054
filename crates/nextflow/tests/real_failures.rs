//! The run-log diagnosis scored on failure reports people really posted
//! (`tests/fixtures/nextflow/real-failures/`, one directory a report: its verbatim text and an
//! expert's reading, with its source; see the README there). Two figures are kept apart: the
//! cases the diagnosis may be tuned on, and the held-out ones it never is.
//!
//! The floors are what the code reaches today, a little below: a change that loses ground
//! fails here. They rise as the diagnosis learns (issue #39's targets: task and exit ≥ 95 %,
//! likely cause ≥ 85 %, a confidently wrong cause on at most 2 %).
#![cfg(test)]

use std::path::{Path, PathBuf};

use codaris_nextflow::runlog::{LikelyCause, RunError, diagnose, read_console, read_log};
use serde::Deserialize;

/// The cause categories an expert's reading may give (the corpus README says what each is).
const CAUSES: &[&str] = &[
    "container_pull",
    "resources_exceeded",
    "time_limit",
    "oom_killed",
    "java_heap",
    "abort_segfault",
    "missing_program",
    "missing_input",
    "validation",
    "compile_error",
    "cloud_access",
    "disk_full",
    "submission_failed",
    "network",
    "task_error",
    "config_error",
    "other",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    source: String,
    repository: String,
    #[serde(default)]
    posted: Option<String>,
    licence: String,
    form: String,
    process: String,
    exit_status: i64,
    cause: String,
    cause_line: String,
    note: String,
    held_out: bool,
}

struct Loaded {
    slug: String,
    case: Case,
    report: String,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/nextflow/real-failures")
}

fn load() -> Vec<Loaded> {
    let mut cases: Vec<Loaded> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|dir| {
            let slug = dir.file_name().unwrap().to_string_lossy().into_owned();
            let toml_text = std::fs::read_to_string(dir.join("case.toml"))
                .unwrap_or_else(|e| panic!("{slug}/case.toml: {e}"));
            let case: Case =
                toml::from_str(&toml_text).unwrap_or_else(|e| panic!("{slug}/case.toml: {e}"));
            let report = std::fs::read_to_string(dir.join("report.txt"))
                .unwrap_or_else(|e| panic!("{slug}/report.txt: {e}"));
            Loaded { slug, case, report }
        })
        .collect();
    cases.sort_by(|a, b| a.slug.cmp(&b.slug));
    cases
}

/// Every case is whole and grounded: a public source, a known form and category, a report
/// that holds the line its reading rests on.
#[test]
fn every_case_is_sourced_labelled_and_grounded_in_its_text() {
    let cases = load();
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    for Loaded { slug, case, report } in &cases {
        assert!(
            case.source.starts_with("https://"),
            "{slug}: source `{}`",
            case.source
        );
        assert!(
            !case.repository.is_empty() && !case.licence.is_empty() && !case.note.is_empty(),
            "{slug}"
        );
        assert!(
            matches!(case.form.as_str(), "console" | "log"),
            "{slug}: form `{}`",
            case.form
        );
        assert!(
            CAUSES.contains(&case.cause.as_str()),
            "{slug}: cause `{}`",
            case.cause
        );
        assert!(!report.trim().is_empty(), "{slug}: empty report");
        let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            squeeze(report).contains(&squeeze(&case.cause_line)),
            "{slug}: the cause line is not in the report: {:?}",
            case.cause_line
        );
        let _ = &case.posted;
    }
    let held = cases.iter().filter(|c| c.case.held_out).count();
    assert!(
        held * 5 >= cases.len(),
        "{held} of {} held out; keep at least a fifth apart",
        cases.len()
    );
}

/// The corpus's category for a diagnosis' cause; `None` for no diagnosis.
fn category(cause: LikelyCause) -> &'static str {
    match cause {
        LikelyCause::CommandNotFound => "missing_program",
        LikelyCause::ContainerPull => "container_pull",
        LikelyCause::ResourcesExceeded => "resources_exceeded",
        LikelyCause::SubmissionFailed => "submission_failed",
        LikelyCause::CompileError => "compile_error",
        LikelyCause::Validation => "validation",
        LikelyCause::CloudAccess => "cloud_access",
        LikelyCause::DiskFull => "disk_full",
        LikelyCause::TimeLimit => "time_limit",
        LikelyCause::AbortSegfault => "abort_segfault",
        LikelyCause::WorkDirMissing => "config_error",
        LikelyCause::JavaHeap => "java_heap",
        LikelyCause::OutOfMemory => "oom_killed",
        LikelyCause::Terminated => "time_limit",
        LikelyCause::MissingFile => "missing_input",
        LikelyCause::UndefinedVariable | LikelyCause::UnknownMethod => "compile_error",
        LikelyCause::ConfigSyntax | LikelyCause::UnknownProfile => "config_error",
        LikelyCause::Network => "network",
        LikelyCause::TaskError => "task_error",
        // The corpus keeps no category of its own for these (see its README): a permission
        // refused, a declared output not written, a task ended by the system.
        LikelyCause::PermissionDenied | LikelyCause::MissingOutput | LikelyCause::ExternalKill => {
            "other"
        }
    }
}

/// The error the text reports, read as its form says.
fn error_of(case: &Loaded) -> Option<RunError> {
    match case.case.form.as_str() {
        "log" => read_log(case.report.as_bytes()).unwrap().error,
        _ => read_console(&case.report).error,
    }
}

/// Task, exit status and likely cause found, in percent, at least: on the cases the diagnosis
/// may be tuned on, and on the held-out ones. Measured when the corpus came in (89 cases; 92 now, 25 held out):
/// tuned on 71 / 82 / 9 %, held out 61 / 83 / 9 %; once the readers took a block without
/// `ERROR ~` and the lines naming a cause outside it, and the diagnosis read the error's own
/// words first: 95 / 92 / 77 % and 83 / 91 / 65 %; with profiles, downloads, files checked
/// for existence and a tool's own failure named: 96 / 93 / 88 % and 84 / 92 / 80 %; with a
/// log's task and submission records, a paste cut to the block's sections and the process
/// named by an nf-core module's versions heredoc: 100 / 99 / 96 % and 85 / 93 / 85 %; with
/// the task and status read from a `Process `P` terminated …` line anywhere (a retried or
/// ignored one alone making no error): 100 / 99 / 96 % and 89 / 100 / 93 %.
const TUNED_FLOORS: (f64, f64, f64) = (98.0, 97.0, 94.0);
const HELD_OUT_FLOORS: (f64, f64, f64) = (87.0, 96.0, 89.0);

/// A confidently wrong cause on at most this share of either part, in percent: the issue's
/// target (5 % and 4 % when the corpus came in, 0 % and 0 % now).
const WRONG_CEILING: f64 = 2.0;

#[derive(Debug, Default)]
struct Score {
    cases: usize,
    task: usize,
    exit: usize,
    cause: usize,
    wrong: usize,
    /// One line a case whose cause was not found, so a reader of the test's output sees
    /// where the diagnosis stands without a debugger.
    misses: Vec<String>,
}

impl Score {
    fn pct(n: usize, of: usize) -> f64 {
        if of == 0 {
            0.0
        } else {
            100.0 * n as f64 / of as f64
        }
    }

    fn line(&self, name: &str) -> String {
        format!(
            "{name}: {} cases; task {:.0} %, exit {:.0} %, likely cause {:.0} %, confidently wrong {:.0} %",
            self.cases,
            Self::pct(self.task, self.cases),
            Self::pct(self.exit, self.cases),
            Self::pct(self.cause, self.cases),
            Self::pct(self.wrong, self.cases),
        )
    }
}

fn score(cases: &[&Loaded]) -> Score {
    let mut score = Score::default();
    for case in cases {
        score.cases += 1;
        let error = error_of(case);
        let expected_process = case.case.process.as_str();
        // The reading names the task as the text does: its process, perhaps with its tag
        // (`FASTQC (s1)`), fully qualified or by its last part only.
        let expected_process = expected_process
            .split_once(" (")
            .map_or(expected_process, |(name, _)| name)
            .trim_matches('\'');
        let found_process = error.as_ref().and_then(|e| e.process.clone());
        let task_ok = match (&found_process, expected_process) {
            (None, "") => true,
            (Some(found), expected) if !expected.is_empty() => {
                found == expected
                    || expected.ends_with(&format!(":{found}"))
                    || found.ends_with(&format!(":{expected}"))
            }
            _ => false,
        };
        score.task += usize::from(task_ok);
        if !task_ok {
            score.misses.push(format!(
                "  {}: task {found_process:?}, expected `{expected_process}`",
                case.slug
            ));
        }
        let exit = error
            .as_ref()
            .and_then(|e| e.exit_status)
            .map_or(-1, i64::from);
        score.exit += usize::from(exit == case.case.exit_status);
        if exit != case.case.exit_status {
            score.misses.push(format!(
                "  {}: exit {exit}, expected {}",
                case.slug, case.case.exit_status
            ));
        }
        let expected = case.case.cause.as_str();
        match error.as_ref().and_then(diagnose).map(|d| category(d.cause)) {
            Some(found) if found == expected => score.cause += 1,
            Some(found) => {
                score.wrong += 1;
                score.misses.push(format!(
                    "  {}: wrong `{found}`, expected `{expected}`",
                    case.slug
                ));
            }
            None => score
                .misses
                .push(format!("  {}: none, expected `{expected}`", case.slug)),
        }
    }
    score
}

/// The scores, printed for both parts; floors on each so a change that loses ground fails.
#[test]
fn the_diagnosis_is_scored_on_real_reports_with_floors() {
    let cases = load();
    let tuned: Vec<&Loaded> = cases.iter().filter(|c| !c.case.held_out).collect();
    let held: Vec<&Loaded> = cases.iter().filter(|c| c.case.held_out).collect();
    let (t, h) = (score(&tuned), score(&held));
    println!("{}\n{}", t.line("tuned on"), t.misses.join("\n"));
    // The held-out misses are counted, not listed: reading them is how a part stops being
    // held out.
    println!("{}", h.line("held out"));
    let at_least = |s: &Score, name: &str, (task, exit, cause): (f64, f64, f64)| {
        let pct = |n| Score::pct(n, s.cases);
        assert!(
            pct(s.task) >= task && pct(s.exit) >= exit && pct(s.cause) >= cause,
            "{} fell below its floors (task {task} %, exit {exit} %, cause {cause} %)",
            s.line(name)
        );
        assert!(
            pct(s.wrong) <= WRONG_CEILING,
            "{}: more than {WRONG_CEILING} % confidently wrong",
            s.line(name)
        );
    };
    at_least(&t, "tuned on", TUNED_FLOORS);
    at_least(&h, "held out", HELD_OUT_FLOORS);
}
