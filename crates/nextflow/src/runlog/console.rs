//! The console of `nextflow run`, in both styles.
//!
//! Classic (`-ansi-log false`, or the ANSI table captured as text):
//!
//! ```text
//! N E X T F L O W  ~  version 22.04.0
//! Launching `main.nf` [goofy_jepsen] DSL2 - revision: b336120725
//! executor >  local (3)
//! [25/b975c5] process > map_parse_sort_chunks [ 67%] 2 of 3, failed: 2, retries: 2
//! [ab/123456] Submitted process > FASTQC (s1)
//! ERROR ~ Error executing process > 'FASTQC (s1)'
//! …the error block…
//!  -- Check '.nextflow.log' file for details
//! ```
//!
//! Agent mode (Nextflow's `AgentLogObserver`, switched on by `NXF_AGENT_MODE`, `AGENT` or
//! `CLAUDECODE`): `[PIPELINE] name version | profile=X`, `[WORKDIR] path`,
//! `[PROCESS ab/cdef12] NAME (tag)`, `[WARN] msg`, `[ERROR] ERROR ~ …` (the block), then the
//! recap `[ERROR] NAME` / `exit: N` / `cmd: …` / `stderr: a | b` / `stdout: …` / `workdir: …`,
//! and `[SUCCESS|FAILED] completed=N failed=N cached=N`.

use std::borrow::Cow;

use serde::Serialize;

use super::block::{RunError, after, clip, parse_block, split_task_name};

/// Tasks kept of a console; later ones are counted.
pub const MAX_TASKS: usize = 10_000;
/// Warnings kept.
const MAX_WARNINGS: usize = 50;
/// Lines kept of one error block.
const MAX_BLOCK_LINES: usize = 400;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsoleStyle {
    Classic,
    Agent,
    /// Neither style's markers were seen (an empty or foreign text).
    Unknown,
}

impl ConsoleStyle {
    /// The style as an answer names it.
    pub fn label(self) -> &'static str {
        match self {
            ConsoleStyle::Classic => "classic console",
            ConsoleStyle::Agent => "agent-mode console",
            ConsoleStyle::Unknown => "console of no known style",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// `Submitted process >` (classic) or `[PROCESS …]` (agent).
    Submitted,
    /// `Cached process >`.
    Cached,
    /// A progress row that ended in `✔`.
    Succeeded,
    /// A progress row that ended in `✘`, or the task an error names.
    Failed,
    /// A progress row still counting.
    Running,
}

/// A task (agent mode, `-ansi-log false`) or a process row (the ANSI table) the console shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConsoleTask {
    /// `ab/cdef12`, when shown.
    pub hash: Option<String>,
    pub process: String,
    pub tag: Option<String>,
    pub state: TaskState,
    /// A progress row's counts, e.g. `[ 67%] 2 of 3, failed: 2, retries: 2`.
    pub progress: Option<String>,
}

/// The agent-mode last line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub success: bool,
    pub completed: u64,
    pub failed: u64,
    pub cached: u64,
}

/// What a run's console says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConsoleReport {
    pub style: ConsoleStyle,
    pub version: Option<String>,
    /// The script or pipeline name (`main.nf`, `nf-core/rnaseq 3.14.0`).
    pub pipeline: Option<String>,
    pub run_name: Option<String>,
    pub profile: Option<String>,
    pub work_dir: Option<String>,
    /// `local (3)`.
    pub executor: Option<String>,
    pub tasks: Vec<ConsoleTask>,
    pub tasks_omitted: usize,
    pub warnings: Vec<String>,
    /// `NOTE: … -- Execution is retried` lines.
    pub retried: usize,
    /// The first error block, completed by the agent-mode recap.
    pub error: Option<RunError>,
    pub summary: Option<Summary>,
}

/// Reads a console text. Never fails; ANSI colour sequences and CR line ends are removed first.
pub fn read_console(text: &str) -> ConsoleReport {
    let mut reader = ConsoleReader::default();
    let mut signatures = Vec::new();
    for line in text.lines() {
        let line = strip_ansi(line);
        keep_signature(&mut signatures, &line);
        reader.line(&line);
    }
    reader.finish(&signatures)
}

/// Lines naming a known cause kept for [`signature_error`] and [`add_signatures`]: enough for
/// both, bounded whatever the text.
pub(crate) const MAX_KEPT_SIGNATURES: usize = 4 * MAX_SIGNATURE_LINES;

/// Keeps `line` (trimmed) in `signatures` when it names a known cause and there is room.
pub(crate) fn keep_signature(signatures: &mut Vec<String>, line: &str) {
    if signatures.len() < MAX_KEPT_SIGNATURES && super::diagnose::is_signature(line.as_bytes()) {
        signatures.push(clip(line.trim()));
    }
}

/// A block or recap being read, continued by the lines that follow it.
#[derive(Default)]
enum Pending {
    #[default]
    Nothing,
    /// An error block, up to ` -- Check '.nextflow.log' …`, the end, or an agent tag line.
    Block(Vec<String>),
    /// The agent-mode recap: `[ERROR] NAME` then `exit:`, `cmd:`, `stderr:` … lines.
    Recap(Box<RunError>),
}

/// The console read line by line, in bounded memory: [`read_console`] feeds it a text, and the
/// log reader the lines of a log that are not log records (a console saved or pasted as a
/// log, or pasted into one).
#[derive(Default)]
pub(crate) struct ConsoleReader {
    report: ConsoleReport,
    agent: bool,
    classic: bool,
    /// `Error nextflow.config:298:14: Unexpected input: '('` precedes `ERROR ~ Config parsing
    /// failed` and is the only place the position is written.
    config_issue: Option<String>,
    recap: Option<RunError>,
    pending: Pending,
}

impl ConsoleReader {
    /// Reads one line (ANSI sequences and its line end removed).
    pub(crate) fn line(&mut self, line: &str) {
        match std::mem::take(&mut self.pending) {
            Pending::Block(mut block) => {
                if !is_agent_tag(line) {
                    if block.len() < MAX_BLOCK_LINES {
                        block.push(line.to_string());
                    }
                    if line.trim_start().starts_with("-- Check '") {
                        self.end_block(&block);
                    } else {
                        self.pending = Pending::Block(block);
                    }
                    return;
                }
                // An agent tag ends the block and is read as itself.
                self.end_block(&block);
            }
            Pending::Recap(mut recap) => {
                if recap_line(&mut recap, line) {
                    self.pending = Pending::Recap(recap);
                    return;
                }
                self.recap.get_or_insert(*recap);
            }
            Pending::Nothing => {}
        }
        self.start(line);
    }

    /// A line outside any block.
    fn start(&mut self, line: &str) {
        let report = &mut self.report;
        if let Some(rest) = line.strip_prefix("[PIPELINE] ") {
            self.agent = true;
            let (name, profile) = match rest.rsplit_once(" | profile=") {
                Some((n, p)) => (n, Some(p)),
                None => (rest, None),
            };
            report.pipeline = Some(clip(name.trim()));
            report.profile = profile.map(|p| clip(p.trim()));
        } else if let Some(rest) = line.strip_prefix("[WORKDIR] ") {
            self.agent = true;
            report.work_dir = Some(clip(rest.trim()));
        } else if let Some(rest) = line.strip_prefix("[PROCESS ") {
            self.agent = true;
            if let Some((hash, task)) = rest.split_once("] ") {
                push_task(report, Some(hash), task, TaskState::Submitted, None);
            }
        } else if let Some(rest) = line.strip_prefix("[WARN] ") {
            self.agent = true;
            push_warning(report, rest);
        } else if let Some(rest) = line.strip_prefix("[ERROR] ") {
            self.agent = true;
            if let Some(first) = rest.strip_prefix("ERROR ~ ") {
                self.pending = Pending::Block(vec![first.to_string()]);
            } else {
                self.pending = Pending::Recap(Box::new(recap_start(rest)));
            }
        } else if let Some(s) = parse_summary(line) {
            self.agent = true;
            report.summary = Some(s);
        } else if let Some(first) = line
            .strip_prefix("ERROR ~ ")
            // A paste set in Markdown bold: `**ERROR ~ ERROR: Please check …**`.
            .or_else(|| line.strip_prefix("**ERROR ~ "))
        {
            self.classic = true;
            let first = first.strip_suffix("**").unwrap_or(first);
            self.pending = Pending::Block(vec![first.to_string()]);
        } else if report.error.is_none() && super::block::is_task_section(line) {
            // A report cut to the block's sections (`Command exit status:`, `Command
            // error:` …) without its first line: still the failing task's.
            self.classic = true;
            self.pending = Pending::Block(vec![line.to_string()]);
        } else if line.starts_with("Error executing process > ")
            || line.starts_with("Script compilation error")
            || line.starts_with("ERROR: ")
        {
            // Older Nextflow printed the block without `ERROR ~ `; nf-validation's and a
            // pipeline's own checks print `ERROR: …` at the margin.
            self.classic = true;
            let first = line.strip_prefix("ERROR: ").unwrap_or(line);
            self.pending = Pending::Block(vec![first.to_string()]);
        } else if let Some(rest) = line.trim_start().strip_prefix("N E X T F L O W") {
            self.classic = true;
            report.version = after(rest, "version ").map(|v| clip(v.trim()));
        } else if let Some(rest) = line.strip_prefix("Launching `") {
            self.classic = true;
            if let Some((script, rest)) = rest.split_once('`') {
                report.pipeline = Some(clip(script));
                report.run_name = rest
                    .trim_start()
                    .strip_prefix('[')
                    .and_then(|r| r.split_once(']'))
                    .map(|(name, _)| clip(name));
            }
        } else if let Some(rest) = line.strip_prefix("executor >") {
            self.classic = true;
            report.executor = Some(clip(rest.trim()));
        } else if let Some(rest) = line.strip_prefix("WARN: ") {
            push_warning(report, rest);
        } else if line.starts_with("Error ") && self.config_issue.is_none() && is_position(line) {
            self.config_issue = Some(clip(line));
        } else if line.starts_with('[') {
            classic_task_line(report, line, &mut self.classic);
        }
    }

    fn end_block(&mut self, block: &[String]) {
        let issue = self.config_issue.take();
        set_error(&mut self.report, block, issue);
    }

    /// The report, its error completed by the recap and, for a text with no error block, by
    /// the lines naming a known cause (`signatures`, as [`keep_signature`] kept them).
    pub(crate) fn finish(mut self, signatures: &[String]) -> ConsoleReport {
        match std::mem::take(&mut self.pending) {
            Pending::Block(block) => self.end_block(&block),
            Pending::Recap(recap) => {
                self.recap.get_or_insert(*recap);
            }
            Pending::Nothing => {}
        }
        let mut report = self.report;
        match &mut report.error {
            None if self.recap.is_none() => report.error = signature_error(signatures),
            Some(error) => add_signatures(error, signatures),
            None => {}
        }
        if let Some(recap) = self.recap {
            match &mut report.error {
                Some(error) => error.fill_from(&recap),
                None => report.error = Some(recap),
            }
        }
        if let Some(task) = report.error.as_ref().and_then(RunError::task_name) {
            let (process, tag) = split_task_name(&task);
            match report
                .tasks
                .iter_mut()
                .rev()
                .find(|t| t.process == process && t.tag == tag)
            {
                Some(t) => t.state = TaskState::Failed,
                None => push_task(&mut report, None, &task, TaskState::Failed, None),
            }
        }
        report.style = match (self.agent, self.classic || report.error.is_some()) {
            (true, _) => ConsoleStyle::Agent,
            (false, true) => ConsoleStyle::Classic,
            (false, false) => ConsoleStyle::Unknown,
        };
        report
    }
}

impl Default for ConsoleReport {
    fn default() -> Self {
        ConsoleReport {
            style: ConsoleStyle::Unknown,
            version: None,
            pipeline: None,
            run_name: None,
            profile: None,
            work_dir: None,
            executor: None,
            tasks: Vec::new(),
            tasks_omitted: 0,
            warnings: Vec::new(),
            retried: 0,
            error: None,
            summary: None,
        }
    }
}

fn set_error(report: &mut ConsoleReport, block: &[String], config_issue: Option<String>) {
    if report.error.is_some() {
        return;
    }
    let mut error = parse_block(block);
    if let Some(issue) = config_issue {
        // `Error nextflow.config:298:14: msg` → the file and line, the message as the cause.
        let rest = &issue["Error ".len()..];
        let mut parts = rest.splitn(3, ':');
        if let (Some(file), Some(line)) = (parts.next(), parts.next()) {
            error.location = Some(super::block::Location {
                file: clip(file),
                line: line.parse().ok(),
            });
        }
        error.cause.insert(0, issue);
    }
    report.error = Some(error);
}

/// For a text with no error block: the lines that name a known cause (a report cut to a few
/// lines, an `ERROR ~` message, a scheduler's or registry's words), as an error of its own.
pub(crate) fn signature_error<S: AsRef<str>>(lines: &[S]) -> Option<RunError> {
    let found: Vec<&str> = lines
        .iter()
        .map(|l| l.as_ref().trim())
        .filter(|l| super::diagnose::is_signature(l.as_bytes()))
        .collect();
    // A task Nextflow retried or whose error it ignores is not the run's failure: those
    // notes alone (a run still going) make no error, though they name the task of one.
    if found.iter().all(|l| is_handled_note(l)) {
        return None;
    }
    let mut found = found.into_iter();
    let first = found.next()?;
    let mut error = RunError::new(first.strip_prefix("ERROR ~ ").unwrap_or(first));
    error.cause = found.take(MAX_SIGNATURE_LINES).map(clip).collect();
    // The lines may name the task and its status (`NOTE: Process `P` terminated with an
    // error exit status (N) -- Execution is retried`).
    for line in std::iter::once(first).chain(error.cause.clone().iter().map(String::as_str)) {
        super::block::classify(&mut error, line);
    }
    Some(error)
}

/// An error that names no cause of its own (`Execution aborted due to an unexpected error`,
/// `terminated for an unknown reason`) gains the lines elsewhere in the text that name one:
/// a scheduler's `DUE TO TIME LIMIT`, an exception logged after the record.
pub(crate) fn add_signatures<S: AsRef<str>>(error: &mut RunError, lines: &[S]) {
    if !matches!(
        error.form,
        super::ErrorForm::Other | super::ErrorForm::UnknownTermination
    ) {
        return;
    }
    for line in lines.iter().map(|l| l.as_ref().trim()) {
        if error.cause.len() > MAX_SIGNATURE_LINES {
            break;
        }
        if super::diagnose::is_signature(line.as_bytes())
            && error.message != line
            && !error.cause.iter().any(|c| c == line)
            && !error.stderr.lines.iter().any(|c| c.trim() == line)
        {
            error.cause.push(clip(line));
        }
    }
}

/// `NOTE: Process `P` terminated … -- Execution is retried (1)` or `-- Error is ignored`.
fn is_handled_note(line: &str) -> bool {
    line.contains("-- Execution is retried") || line.contains("-- Error is ignored")
}

/// Lines kept by [`signature_error`] after its first.
const MAX_SIGNATURE_LINES: usize = 20;

/// `Error FILE:LINE:COL: message`, the config parser's diagnostic.
fn is_position(line: &str) -> bool {
    let mut parts = line["Error ".len()..].splitn(4, ':');
    let file = parts.next().unwrap_or_default();
    let line_no = parts.next().unwrap_or_default();
    let col = parts.next().unwrap_or_default();
    !file.is_empty()
        && !line_no.is_empty()
        && line_no.bytes().all(|b| b.is_ascii_digit())
        && !col.is_empty()
        && col.bytes().all(|b| b.is_ascii_digit())
}

/// The recap's first line, `[ERROR] NAME`.
fn recap_start(name: &str) -> RunError {
    let (process, tag) = split_task_name(name);
    let mut err = RunError::new(name);
    err.form = super::ErrorForm::ProcessFailed;
    err.process = Some(process);
    err.tag = tag;
    err
}

/// One of the recap's `exit:`, `cmd:`, `stderr:`, `stdout:`, `workdir:` lines read into `err`;
/// `false` for a line that is none of them (the recap has ended).
fn recap_line(err: &mut RunError, line: &str) -> bool {
    if let Some(v) = line.strip_prefix("exit: ") {
        err.exit_status = v.trim().parse().ok();
    } else if let Some(v) = line.strip_prefix("cmd: ") {
        err.command.lines = vec![clip(v)];
    } else if let Some(v) = line.strip_prefix("stderr: ") {
        // Nextflow joins the last ten lines with ` | `; split back, knowing a line that
        // itself held ` | ` is split too.
        err.stderr.lines = v.split(" | ").map(clip).collect();
    } else if let Some(v) = line.strip_prefix("stdout: ") {
        err.stdout.lines = v.split(" | ").map(clip).collect();
    } else if let Some(v) = line.strip_prefix("workdir: ") {
        err.work_dir = Some(clip(v.trim()));
    } else {
        return false;
    }
    true
}

fn is_agent_tag(line: &str) -> bool {
    [
        "[PIPELINE] ",
        "[WORKDIR] ",
        "[PROCESS ",
        "[WARN] ",
        "[ERROR] ",
        "[SUCCESS] ",
        "[FAILED] ",
    ]
    .iter()
    .any(|tag| line.starts_with(tag))
}

/// `[SUCCESS] completed=10 failed=0 cached=5`.
fn parse_summary(line: &str) -> Option<Summary> {
    let (success, rest) = if let Some(r) = line.strip_prefix("[SUCCESS] ") {
        (true, r)
    } else {
        (false, line.strip_prefix("[FAILED] ")?)
    };
    let mut summary = Summary {
        success,
        completed: 0,
        failed: 0,
        cached: 0,
    };
    for field in rest.split_whitespace() {
        let (key, value) = field.split_once('=')?;
        let value = value.parse().ok()?;
        match key {
            "completed" => summary.completed = value,
            "failed" => summary.failed = value,
            "cached" => summary.cached = value,
            _ => {}
        }
    }
    Some(summary)
}

/// `[ab/123456] Submitted process > NAME (tag)`, `[ab/123456] Cached process > …`,
/// `[ab/123456] process > NAME (tag) [100%] 1 of 1 ✔`, `[-        ] process > NAME -`,
/// `[ab/123456] NOTE: Process … -- Execution is retried (1)`.
fn classic_task_line(report: &mut ConsoleReport, line: &str, classic: &mut bool) {
    let Some((hash, rest)) = line[1..].split_once("] ") else {
        return;
    };
    let hash = hash.trim();
    let hash = (hash != "-" && !hash.is_empty()).then_some(hash);
    if rest.starts_with("NOTE: ") {
        *classic = true;
        if rest.contains("-- Execution is retried") {
            report.retried += 1;
        }
        return;
    }
    let (state, task) = if let Some(t) = rest.strip_prefix("Submitted process > ") {
        (TaskState::Submitted, t)
    } else if let Some(t) = rest.strip_prefix("Cached process > ") {
        (TaskState::Cached, t)
    } else if let Some(t) = rest.strip_prefix("process > ") {
        (TaskState::Running, t)
    } else {
        return;
    };
    *classic = true;
    if state != TaskState::Running {
        push_task(report, hash, task, state, None);
        return;
    }
    // A progress row: `NAME (tag)   [ 67%] 2 of 3, failed: 2 ✘`, or `NAME   -` before it starts.
    let (task, progress) = match task.find(" [") {
        Some(i) => (task[..i].trim_end(), Some(task[i..].trim())),
        None => (task.trim_end().trim_end_matches('-').trim_end(), None),
    };
    let state = match progress {
        Some(p) if p.ends_with('✔') => TaskState::Succeeded,
        Some(p) if p.ends_with('✘') => TaskState::Failed,
        _ => TaskState::Running,
    };
    // The ANSI table is redrawn: one row per process, the last drawing wins.
    let (process, tag) = split_task_name(task);
    if let Some(row) = report
        .tasks
        .iter_mut()
        .find(|t| t.progress.is_some() && t.process == process)
    {
        row.hash = hash.map(clip);
        row.state = state;
        row.progress = progress.map(clip);
        row.tag = tag;
        return;
    }
    push_task(report, hash, task, state, Some(progress.unwrap_or("-")));
}

fn push_task(
    report: &mut ConsoleReport,
    hash: Option<&str>,
    task: &str,
    state: TaskState,
    progress: Option<&str>,
) {
    if report.tasks.len() >= MAX_TASKS {
        report.tasks_omitted += 1;
        return;
    }
    let (process, tag) = split_task_name(task);
    report.tasks.push(ConsoleTask {
        hash: hash.map(clip),
        process,
        tag,
        state,
        progress: progress.map(clip),
    });
}

fn push_warning(report: &mut ConsoleReport, text: &str) {
    if report.warnings.len() < MAX_WARNINGS {
        report.warnings.push(clip(text.trim()));
    }
}

/// `text` without ANSI CSI sequences (`ESC [ … final-byte`) or a trailing CR; borrowed when
/// there were none (most lines of a long log).
pub(crate) fn strip_ansi(text: &str) -> Cow<'_, str> {
    let text = text.strip_suffix('\r').unwrap_or(text);
    if !text.contains('\u{1b}') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.clone().next() == Some('[') {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_sequences_are_removed() {
        assert_eq!(
            strip_ansi("\u{1b}[31mERROR ~ boom\u{1b}[39m\u{1b}[K\r"),
            "ERROR ~ boom"
        );
    }

    #[test]
    fn a_summary_with_a_bad_count_is_not_a_summary() {
        assert_eq!(parse_summary("[FAILED] completed=x"), None);
        assert_eq!(
            parse_summary("[SUCCESS] completed=10 failed=0 cached=5"),
            Some(Summary {
                success: true,
                completed: 10,
                failed: 0,
                cached: 5
            })
        );
    }
}
