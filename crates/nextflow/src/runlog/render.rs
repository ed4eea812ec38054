//! The answer text: `key: value` lines, values in backticks with line ends and control
//! characters escaped, so nothing a task printed can start a line of its own.

use std::fmt::Write;

use super::block::{MAX_LINE_CHARS, RunError};
use super::console::{ConsoleReport, TaskState};
use super::diagnose::diagnose;
use super::log::LogReport;

/// Lines of stderr shown; stdout and the command show fewer.
const STDERR_LINES: usize = 20;
const STDOUT_LINES: usize = 10;
const COMMAND_LINES: usize = 20;
/// Lines of a log's tail shown when it reported no error.
const TAIL_SHOWN: usize = 10;

impl LogReport {
    /// The answer for `.nextflow.log` alone.
    pub fn render(&self) -> String {
        render_analysis(Some(self), None)
    }
}

impl ConsoleReport {
    /// The answer for a console alone.
    pub fn render(&self) -> String {
        render_analysis(None, Some(self))
    }
}

/// The answer of `analyze_run_log`: the error from the log, completed by the console (and the
/// console's when the log has none), the console's counts, and the likely cause.
pub fn render_analysis(log: Option<&LogReport>, console: Option<&ConsoleReport>) -> String {
    let mut out = String::new();
    let mut error = log.and_then(|l| l.error.clone());
    if let Some(console_error) = console.and_then(|c| c.error.as_ref()) {
        match &mut error {
            Some(e) => e.fill_from(console_error),
            None => error = Some(console_error.clone()),
        }
    }
    if let Some(log) = log {
        let _ = writeln!(
            out,
            "log: {} lines, {} error records{}, finished: {}",
            log.lines,
            log.errors.len() + log.errors_omitted,
            if log.retried > 0 {
                format!(", {} retried", log.retried)
            } else {
                String::new()
            },
            if log.finished { "yes" } else { "no" }
        );
    }
    if let Some(c) = console {
        render_console_facts(&mut out, c);
    }
    // A script that does not compile is most often one written for another Nextflow: the
    // version that ran is the first thing to compare.
    let compile_error = error
        .as_ref()
        .and_then(super::diagnose)
        .is_some_and(|d| d.cause == super::LikelyCause::CompileError);
    let version = log
        .and_then(|l| l.version.as_ref())
        .or(console.and_then(|c| c.version.as_ref()));
    if let (true, Some(version)) = (compile_error, version) {
        let _ = writeln!(out, "nextflow_version: {}", value(version));
    }
    match &error {
        Some(e) => render_error(&mut out, e),
        None => {
            out.push_str("error: none found\n");
            if let Some(log) = log {
                let skip = log.tail.len().saturating_sub(TAIL_SHOWN);
                for line in &log.tail[skip..] {
                    let _ = writeln!(out, "log_tail: {}", value(line));
                }
            }
        }
    }
    out
}

fn render_console_facts(out: &mut String, c: &ConsoleReport) {
    let style = match c.style {
        super::ConsoleStyle::Classic => "classic",
        super::ConsoleStyle::Agent => "agent",
        super::ConsoleStyle::Unknown => "unknown",
    };
    let _ = writeln!(out, "console: {style}");
    for (key, v) in [
        ("pipeline", &c.pipeline),
        ("run_name", &c.run_name),
        ("profile", &c.profile),
        ("work_root", &c.work_dir),
    ] {
        if let Some(v) = v {
            let _ = writeln!(out, "{key}: {}", value(v));
        }
    }
    let count = |state| c.tasks.iter().filter(|t| t.state == state).count();
    let _ = writeln!(
        out,
        "tasks_shown: {} ({} failed, {} cached){}",
        c.tasks.len() + c.tasks_omitted,
        count(TaskState::Failed),
        count(TaskState::Cached),
        if c.retried > 0 {
            format!(", {} retried", c.retried)
        } else {
            String::new()
        }
    );
    if let Some(s) = c.summary {
        let _ = writeln!(
            out,
            "summary: {} completed={} failed={} cached={}",
            if s.success { "success" } else { "failed" },
            s.completed,
            s.failed,
            s.cached
        );
    }
}

fn render_error(out: &mut String, e: &RunError) {
    let _ = writeln!(out, "error: {}", e.form.as_str());
    let _ = writeln!(out, "message: {}", value(&e.message));
    if let Some(p) = &e.process {
        let _ = writeln!(out, "process: {}", value(p));
    }
    if let Some(t) = &e.tag {
        let _ = writeln!(out, "tag: {}", value(t));
    }
    if let Some(s) = e.exit_status {
        let _ = writeln!(out, "exit_status: {s}");
    }
    if !e.cause.is_empty() {
        let _ = writeln!(out, "cause: {}", value(&e.cause.join("\n")));
    }
    if let Some(s) = &e.subject {
        let key = match e.form {
            super::ErrorForm::NoSuchVariable => "variable",
            super::ErrorForm::UnknownMethod => "method",
            super::ErrorForm::MissingOutput => "missing_output",
            super::ErrorForm::ConfigError => "config",
            _ => "subject",
        };
        let _ = writeln!(out, "{key}: {}", value(s));
    }
    if let Some(loc) = &e.location {
        match loc.line {
            Some(line) => {
                let _ = writeln!(out, "location: {} line {line}", value(&loc.file));
            }
            None => {
                let _ = writeln!(out, "location: {}", value(&loc.file));
            }
        }
    }
    excerpt(
        out,
        "command",
        &e.command.lines,
        e.command.omitted,
        COMMAND_LINES,
        true,
    );
    excerpt(
        out,
        "stdout_tail",
        &e.stdout.lines,
        e.stdout.omitted,
        STDOUT_LINES,
        false,
    );
    excerpt(
        out,
        "stderr_tail",
        &e.stderr.lines,
        e.stderr.omitted,
        STDERR_LINES,
        false,
    );
    if let Some(w) = &e.work_dir {
        let _ = writeln!(out, "work_dir: {}", value(w));
    }
    if let Some(c) = &e.container {
        let _ = writeln!(out, "container: {}", value(c));
    }
    match diagnose(e) {
        Some(d) => {
            let _ = writeln!(
                out,
                "likely_cause: {} — {}",
                d.cause.as_str(),
                value_plain(&d.hint)
            );
            let _ = writeln!(out, "next_step: {}", value_plain(&d.next_step));
        }
        None => out.push_str("likely_cause: unknown — read the stderr tail and the command\n"),
    }
}

/// A section as one value: its head (the command) or its tail (output), lines joined by `\n`.
fn excerpt(out: &mut String, key: &str, lines: &[String], omitted: usize, max: usize, head: bool) {
    if lines.is_empty() {
        return;
    }
    let (shown, more) = if lines.len() <= max {
        (lines, 0)
    } else if head {
        (&lines[..max], lines.len() - max)
    } else {
        (&lines[lines.len() - max..], lines.len() - max)
    };
    let more = more + omitted;
    let note = if more > 0 {
        format!(" ({more} more lines not shown)")
    } else {
        String::new()
    };
    let _ = writeln!(out, "{key}: {}{note}", value(&shown.join("\n")));
}

/// A value in backticks, on one line.
/// The lines `analyze_run_log` adds for a script that did not compile, once it has read the
/// pipeline's `manifest.nextflowVersion`: the requirement, and what it says of the Nextflow
/// that ran. Nothing when either is not a version.
pub fn render_requirement(requirement: &str, running: &str) -> String {
    match super::requirement_note(requirement, running) {
        Some(note) => format!(
            "pipeline_requires: {}\nversion_note: {}\n",
            value(requirement),
            value_plain(&note)
        ),
        None => String::new(),
    }
}

fn value(text: &str) -> String {
    format!("`{}`", escape(text))
}

/// Our own sentences, which quote values already; escaped all the same.
fn value_plain(text: &str) -> String {
    escape(text)
}

/// Line ends and other control characters written as escapes; a value longer than a few
/// lines' worth is cut.
fn escape(text: &str) -> String {
    let limit = MAX_LINE_CHARS * 8;
    let mut out = String::with_capacity(text.len().min(limit));
    for (n, c) in text.chars().enumerate() {
        if n == limit {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_a_value_on_one_line() {
        let v = value("a\nerror: forged\r\u{7}\u{2028}b");
        assert!(!v.contains('\n') && !v.contains('\r'));
        assert_eq!(v, "`a\\nerror: forged\\r\\u{7}\\u{2028}b`");
    }
}
