//! Nextflow's error block, the same text in `.nextflow.log` and on the console:
//!
//! ```text
//! Error executing process > 'NAME (TAG)'
//!
//! Caused by:
//!   Process `NAME (TAG)` terminated with an error exit status (127)
//!
//! Command executed:
//!
//!   fastqc --version
//!
//! Command exit status:
//!   127
//!
//! Command output:
//!   (empty)
//!
//! Command error:
//!   .command.sh: line 2: fastqc: command not found
//!
//! Work dir:
//!   /path/work/ab/123456…
//!
//! Tip: …
//! ```
//!
//! Section headers start at column 0 and their content is indented by two spaces, which is
//! what keeps a stderr line such as `Work dir:` from being read as a header.

use serde::Serialize;

/// Lines kept of the command (its head) and of stdout and stderr (their tails).
pub(crate) const MAX_SECTION_LINES: usize = 40;
/// Characters kept of any one line; the rest is dropped and marked with `…`.
pub(crate) const MAX_LINE_CHARS: usize = 1000;
/// Cause lines kept (a stack trace's `at …` frames are never kept).
const MAX_CAUSE_LINES: usize = 20;

/// What kind of failure ended the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorForm {
    /// A task's command exited with a non-zero status.
    ProcessFailed,
    /// The command succeeded but a declared output was not written.
    MissingOutput,
    /// The task ended with no exit status (killed by the system, the scheduler, the OOM killer).
    UnknownTermination,
    /// `No such variable: x` in the pipeline's script.
    NoSuchVariable,
    /// `Unknown method invocation` (a typo, or an operator this Nextflow does not have).
    UnknownMethod,
    /// A configuration file that does not parse or names an unknown setting.
    ConfigError,
    /// Any other error Nextflow reported.
    Other,
}

impl ErrorForm {
    /// The snake_case name, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ProcessFailed => "process_failed",
            Self::MissingOutput => "missing_output",
            Self::UnknownTermination => "unknown_termination",
            Self::NoSuchVariable => "no_such_variable",
            Self::UnknownMethod => "unknown_method",
            Self::ConfigError => "config_error",
            Self::Other => "other",
        }
    }
}

/// Some lines of a longer text: the first or the last [`MAX_SECTION_LINES`], and how many
/// were left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Excerpt {
    pub lines: Vec<String>,
    /// Lines of the original not kept.
    pub omitted: usize,
}

impl Excerpt {
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The kept lines joined with `\n`.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    fn push_head(&mut self, line: String) {
        if self.lines.len() < MAX_SECTION_LINES {
            self.lines.push(line);
        } else {
            self.omitted += 1;
        }
    }

    fn push_tail(&mut self, line: String) {
        self.lines.push(line);
        if self.lines.len() > MAX_SECTION_LINES {
            self.lines.remove(0);
            self.omitted += 1;
        }
    }

    /// Blank lines at either end say nothing (Nextflow puts one after `Command executed:`).
    fn trim(&mut self) {
        while self.lines.last().is_some_and(|l| l.trim().is_empty()) {
            self.lines.pop();
        }
        let lead = self
            .lines
            .iter()
            .take_while(|l| l.trim().is_empty())
            .count();
        self.lines.drain(..lead);
    }
}

/// A place in the pipeline's sources an error names (`-- Check script 'main.nf' at line: 12`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    pub file: String,
    pub line: Option<u32>,
}

/// The error a run ended with, as far as the text says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunError {
    pub form: ErrorForm,
    /// The error's first line, e.g. `Error executing process > 'FASTQC (s1)'`.
    pub message: String,
    /// The failing process, with its subworkflow path (`NFCORE_DEMO:DEMO:FASTQC`).
    pub process: Option<String>,
    /// The task's tag, the parenthesised part of the task name.
    pub tag: Option<String>,
    /// The `Caused by:` lines.
    pub cause: Vec<String>,
    pub exit_status: Option<i32>,
    pub command: Excerpt,
    pub stdout: Excerpt,
    pub stderr: Excerpt,
    pub work_dir: Option<String>,
    pub container: Option<String>,
    pub tip: Option<String>,
    /// What the error is about: the variable, the method, the output pattern or the config file.
    pub subject: Option<String>,
    pub location: Option<Location>,
}

impl RunError {
    pub(crate) fn new(message: &str) -> Self {
        Self {
            form: ErrorForm::Other,
            message: clip(message.trim()),
            process: None,
            tag: None,
            cause: Vec::new(),
            exit_status: None,
            command: Excerpt::default(),
            stdout: Excerpt::default(),
            stderr: Excerpt::default(),
            work_dir: None,
            container: None,
            tip: None,
            subject: None,
            location: None,
        }
    }

    /// The task's name as Nextflow shows it: `NAME (TAG)`, or `NAME`.
    pub fn task_name(&self) -> Option<String> {
        let process = self.process.as_deref()?;
        Some(match &self.tag {
            Some(tag) => format!("{process} ({tag})"),
            None => process.to_string(),
        })
    }

    /// Fill what this error lacks from `other` (the agent-mode recap, a log's debug record).
    pub(crate) fn fill_from(&mut self, other: &RunError) {
        if self.process.is_none() {
            self.process.clone_from(&other.process);
            self.tag.clone_from(&other.tag);
        }
        if self.exit_status.is_none() {
            self.exit_status = other.exit_status;
        }
        if self.command.is_empty() {
            self.command = other.command.clone();
        }
        if self.stdout.is_empty() {
            self.stdout = other.stdout.clone();
        }
        if self.stderr.is_empty() {
            self.stderr = other.stderr.clone();
        }
        if self.work_dir.is_none() {
            self.work_dir.clone_from(&other.work_dir);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Cause,
    Command,
    ExitStatus,
    Output,
    Error,
    Wrapper,
    WorkDir,
    Container,
}

fn section_header(line: &str) -> Option<Section> {
    let line = line.trim_end();
    // `Command executed [/path/templates/x.sh]:` is the form for a process using a template.
    if line == "Command executed:"
        || (line.starts_with("Command executed [") && line.ends_with("]:"))
    {
        return Some(Section::Command);
    }
    Some(match line {
        "Caused by:" => Section::Cause,
        "Command exit status:" => Section::ExitStatus,
        "Command output:" => Section::Output,
        "Command error:" => Section::Error,
        "Command wrapper:" => Section::Wrapper,
        "Work dir:" => Section::WorkDir,
        "Container:" => Section::Container,
        _ => return None,
    })
}

/// Whether `line` opens one of a failed task's sections (`Command executed:`, `Command exit
/// status:`, `Command error:` …): a pasted report may start there.
pub(crate) fn is_task_section(line: &str) -> bool {
    matches!(
        section_header(line),
        Some(Section::Command | Section::ExitStatus | Section::Output | Section::Error)
    )
}

/// An error block's lines (the first is the message, without `ERROR ~ `) read into a
/// [`RunError`]. Never fails: what is not recognised is left out. A block that starts at a
/// section (a paste cut above it) has no message of its own.
pub(crate) fn parse_block<S: AsRef<str>>(lines: &[S]) -> RunError {
    let mut iter = lines.iter().map(AsRef::as_ref).peekable();
    let cut = iter.peek().is_some_and(|first| is_task_section(first));
    let first = if cut {
        ""
    } else {
        iter.next().unwrap_or_default()
    };
    let mut err = RunError::new(first);
    if let Some(rest) = first.trim().strip_prefix("Error executing process > ") {
        err.form = ErrorForm::ProcessFailed;
        let (process, tag) = split_task_name(rest.trim().trim_matches('\''));
        err.process = Some(process);
        err.tag = tag;
    }
    classify(&mut err, first);
    let mut section = None;
    let mut wrapper = Excerpt::default();
    for line in iter {
        if let Some(s) = section_header(line) {
            section = Some(s);
            continue;
        }
        if let Some(tip) = line.strip_prefix("Tip: ") {
            err.tip = Some(clip(tip.trim()));
            section = None;
            continue;
        }
        if line.trim_start().starts_with("-- Check ") {
            check_location(&mut err, line);
            section = None;
            continue;
        }
        let body = dedent(line);
        match section {
            Some(Section::Cause) | None => {
                let t = body.trim();
                // Stack frames are noise to a reader and unbounded in number.
                if t.is_empty() || t.starts_with("at ") || t.starts_with("...") {
                    continue;
                }
                classify(&mut err, t);
                if err.cause.len() < MAX_CAUSE_LINES {
                    err.cause.push(clip(t));
                }
            }
            Some(Section::Command) => err.command.push_head(clip(body)),
            Some(Section::ExitStatus) => {
                if err.exit_status.is_none() {
                    err.exit_status = body.trim().parse().ok();
                }
            }
            Some(Section::Output) => {
                if body.trim() != "(empty)" {
                    err.stdout.push_tail(clip(body));
                }
            }
            Some(Section::Error) => {
                if body.trim() != "(empty)" {
                    err.stderr.push_tail(clip(body));
                }
            }
            // The wrapper's own output (`.command.run: No such file or directory`), kept
            // as stderr when the command wrote none.
            Some(Section::Wrapper) => {
                if body.trim() != "(empty)" {
                    wrapper.push_tail(clip(body));
                }
            }
            Some(Section::WorkDir) => {
                if err.work_dir.is_none() && !body.trim().is_empty() {
                    err.work_dir = Some(clip(body.trim()));
                }
            }
            Some(Section::Container) => {
                if err.container.is_none() && !body.trim().is_empty() {
                    err.container = Some(clip(body.trim()));
                }
            }
        }
    }
    if err.stderr.is_empty() {
        err.stderr = wrapper;
    }
    if err.process.is_none() {
        err.process = versions_process(&err.command.lines);
    }
    err.command.trim();
    err.stdout.trim();
    err.stderr.trim();
    err
}

/// The process an nf-core module's command names in its versions file: every module ends with
/// `cat <<-END_VERSIONS > versions.yml` and `"${task.process}":`, the fully qualified name, so a
/// report cut above `Error executing process` still says which task it was.
fn versions_process(command: &[String]) -> Option<String> {
    let heredoc = command
        .iter()
        .position(|l| l.contains("<<-END_VERSIONS") || l.contains("<<END_VERSIONS"))?;
    let line = command.get(heredoc + 1)?.trim();
    let name = line.strip_prefix('"')?.strip_suffix("\":")?;
    let plausible = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    plausible.then(|| clip(name))
}

/// `NAME (TAG)` into the name and the tag; a name with no tag stays whole.
pub(crate) fn split_task_name(task: &str) -> (String, Option<String>) {
    let task = task.trim();
    if task.ends_with(')')
        && let Some(open) = task.find(" (")
    {
        let name = &task[..open];
        let tag = &task[open + 2..task.len() - 1];
        return (clip(name), Some(clip(tag)));
    }
    (clip(task), None)
}

/// The forms a message line can name, refining the error's form and subject.
pub(crate) fn classify(err: &mut RunError, line: &str) {
    if err.exit_status.is_none()
        && let Some(status) = between(line, "terminated with an error exit status (", ")")
    {
        err.exit_status = status.parse().ok();
    }
    // `Process `P (T)` terminated …` and `… expected by process `P (T)``: the task, for a
    // text that lost its `Error executing process` line.
    if err.process.is_none()
        && let Some(task) = between(line, "Process `", "` terminated")
            .or_else(|| between(line, "expected by process `", "`"))
    {
        let (process, tag) = split_task_name(task);
        err.process = Some(process);
        err.tag = tag;
    }
    if line.contains("terminated for an unknown reason") {
        err.form = ErrorForm::UnknownTermination;
    }
    if let Some(rest) = after(line, "Missing output file(s) `") {
        err.form = ErrorForm::MissingOutput;
        err.subject = rest.split('`').next().map(clip);
    }
    // Console: `No such variable: x`; log stack trace: `No such property: x for class: …`.
    let variable = after(line, "No such variable: ")
        .or_else(|| after(line, "MissingPropertyException: No such property: "));
    if let Some(rest) = variable {
        err.form = ErrorForm::NoSuchVariable;
        err.subject = rest.split_whitespace().next().map(clip);
        check_location(err, line);
    }
    if let Some(rest) = after(line, "Unknown method invocation `") {
        err.form = ErrorForm::UnknownMethod;
        err.subject = rest.split('`').next().map(clip);
    }
    if let Some(file) = between(line, "Unable to parse config file: '", "'") {
        err.form = ErrorForm::ConfigError;
        err.subject = Some(clip(file));
    } else if line.contains("Config parsing failed") {
        err.form = ErrorForm::ConfigError;
    } else if let Some(rest) = after(line, "Unknown config attribute `") {
        err.form = ErrorForm::ConfigError;
        err.subject = rest.split('`').next().map(clip);
    }
}

/// `-- Check script 'main.nf' at line: 12 or see '.nextflow.log' file for more details`.
fn check_location(err: &mut RunError, line: &str) {
    if let Some(file) = between(line, "Check script '", "'") {
        let line_no = after(line, "at line: ")
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok());
        err.location = Some(Location {
            file: clip(file),
            line: line_no,
        });
    }
}

/// The two-space indent Nextflow adds to section content, removed.
fn dedent(line: &str) -> &str {
    line.strip_prefix("  ").unwrap_or(line.trim_start())
}

pub(crate) fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|i| &line[i + marker.len()..])
}

pub(crate) fn between<'a>(line: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let rest = after(line, open)?;
    rest.find(close).map(|end| &rest[..end])
}

/// At most [`MAX_LINE_CHARS`] characters of `text`.
pub(crate) fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_names_split_on_the_last_parenthesised_tag() {
        assert_eq!(
            split_task_name("NFCORE_X:X:FASTQC (sample 1)"),
            (
                "NFCORE_X:X:FASTQC".to_string(),
                Some("sample 1".to_string())
            )
        );
        assert_eq!(split_task_name("MULTIQC"), ("MULTIQC".to_string(), None));
    }

    #[test]
    fn an_indented_header_is_content_not_a_header() {
        let err = parse_block(&[
            "Error executing process > 'P'",
            "Command error:",
            "  Work dir:",
            "  oops",
        ]);
        assert_eq!(err.stderr.lines, vec!["Work dir:", "oops"]);
        assert_eq!(err.work_dir, None);
    }

    #[test]
    fn long_sections_keep_the_head_of_the_command_and_the_tail_of_stderr() {
        let mut lines = vec![
            "Error executing process > 'P'".to_string(),
            "Command executed:".into(),
        ];
        lines.extend((0..100).map(|i| format!("  cmd {i}")));
        lines.push("Command error:".into());
        lines.extend((0..100).map(|i| format!("  err {i}")));
        let err = parse_block(&lines);
        assert_eq!(err.command.lines.first().map(String::as_str), Some("cmd 0"));
        assert_eq!(err.command.omitted, 60);
        assert_eq!(err.stderr.lines.last().map(String::as_str), Some("err 99"));
        assert_eq!(err.stderr.omitted, 60);
    }
}
