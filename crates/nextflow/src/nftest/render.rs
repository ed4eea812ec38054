//! The answer text of `check_test_result`: what passed, what failed and why, what was skipped.
//! Failures come first (they are what the reader acts on); long messages, diffs and reports
//! are cut to a bounded number of lines so one runaway test cannot flood the answer.

use std::fmt::Write;

use super::{Outcome, TestCase, TestResults};

const MESSAGE_LINES: usize = 30;
const DIFF_LINES: usize = 60;
const REPORT_LINES: usize = 20;
const LINE_CHARS: usize = 400;

pub(super) fn render(results: &TestResults) -> String {
    let mut out = String::new();
    let verdict = if results.success() {
        "passed"
    } else {
        "FAILED"
    };
    let _ = write!(
        out,
        "nf-test {verdict}: {} tests, {} passed, {} failed, {} skipped (from the {} report)",
        results.tests.len(),
        results.passed(),
        results.failed(),
        results.skipped(),
        results.format.label(),
    );
    out.push('\n');
    if let Some(planned) = results.planned
        && planned != results.tests.len()
    {
        let _ = writeln!(
            out,
            "the plan announced {planned} tests, the report has {}",
            results.tests.len()
        );
    }
    if let Some(reason) = &results.bailed_out {
        let _ = writeln!(out, "the run bailed out: {}", one_line(reason));
    }
    let failed = results
        .tests
        .iter()
        .filter(|t| matches!(t.outcome, Outcome::Failed(_)));
    let others = results
        .tests
        .iter()
        .filter(|t| !matches!(t.outcome, Outcome::Failed(_)));
    for test in failed.chain(others) {
        render_test(&mut out, test);
    }
    out
}

fn render_test(out: &mut String, test: &TestCase) {
    let label = match &test.suite {
        Some(suite) => format!("{} > {}", one_line(suite), one_line(&test.name)),
        None => one_line(&test.name),
    };
    let time = test
        .seconds
        .map(|s| format!(" ({s:.3}s)"))
        .unwrap_or_default();
    match &test.outcome {
        Outcome::Passed => {
            let _ = writeln!(out, "passed   {label}{time}");
        }
        Outcome::Skipped { reason } => {
            let why = reason
                .as_deref()
                .map(|r| format!(": {}", one_line(r)))
                .unwrap_or_default();
            let _ = writeln!(out, "skipped  {label}{why}");
        }
        Outcome::Failed(failure) => {
            let _ = writeln!(out, "FAILED   {label}{time}");
            match (&failure.message, &failure.snapshot_diff) {
                (_, Some(diff)) => {
                    let _ = writeln!(out, "  snapshot mismatch:");
                    block(out, diff, DIFF_LINES);
                }
                (Some(message), None) => {
                    let _ = writeln!(out, "  assertion:");
                    block(out, message, MESSAGE_LINES);
                }
                (None, None) => {
                    let _ = writeln!(out, "  (the report gives no reason)");
                }
            }
            if let Some(report) = &failure.report {
                let _ = writeln!(out, "  output (last lines):");
                tail(out, report, REPORT_LINES);
            }
        }
    }
}

/// The first `limit` lines, indented, with a note of what was left out.
fn block(out: &mut String, text: &str, limit: usize) {
    let lines: Vec<&str> = text.lines().collect();
    for line in lines.iter().take(limit) {
        let _ = writeln!(out, "    {}", clip(line));
    }
    if lines.len() > limit {
        let _ = writeln!(out, "    … {} more lines", lines.len() - limit);
    }
}

/// The last `limit` lines: the end of Nextflow's output is where its error is.
fn tail(out: &mut String, text: &str, limit: usize) {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() > limit {
        let _ = writeln!(out, "    … {} earlier lines", lines.len() - limit);
    }
    for line in lines.iter().skip(lines.len().saturating_sub(limit)) {
        let _ = writeln!(out, "    {}", clip(line));
    }
}

/// A name on one line: control characters (an injected newline) shown escaped.
fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push(' '),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    clip(&out)
}

fn clip(line: &str) -> String {
    let line: String = line
        .chars()
        .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
        .collect();
    match line.char_indices().nth(LINE_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}
