//! The streaming reader of `.nextflow.log`, and of any run text: a log saved under another
//! name, a console saved or pasted (either style), or both pasted together.
//!
//! Each record starts with a header line, `Mmm-dd HH:mm:ss.SSS [thread] LEVEL logger - message`
//! (the month is in the JVM's locale: `Oct`, `dic`), and continues on the lines up to the next
//! header (the error block, a stack trace). Records from different threads interleave, but a
//! record's lines are written together, so continuation lines always belong to the header
//! just above them.
//!
//! Memory stays bounded whatever the log: a line is read at most [`MAX_LINE_BYTES`] long (the
//! rest is skipped unread into memory), only ERROR records and the last task failure are kept,
//! each record at most [`MAX_RECORD_LINES`] lines, and a tail of [`TAIL_LINES`] lines.
//!
//! The lines that are not log records (every line of a console, the continuation lines of a
//! log) are read as a console too, in the same pass and as boundedly: pasted console text
//! saved as `.nextflow.log` names its error as a log would.

use std::collections::VecDeque;
use std::io::BufRead;

use serde::Serialize;

use super::RunLogError;
use super::block::{RunError, after, between, clip, parse_block, split_task_name};
use super::console::{
    ConsoleReader, ConsoleReport, ConsoleStyle, MAX_KEPT_SIGNATURES, add_signatures,
    keep_signature, signature_error, strip_ansi,
};

/// Bytes kept of one line; a longer line is cut there (a 1 GB line costs 1 GB of reading,
/// not of memory).
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// Lines kept of one ERROR record (the block is a few dozen; a stack trace may be thousands).
pub const MAX_RECORD_LINES: usize = 400;
/// ERROR records parsed and kept; later ones are counted.
pub const MAX_ERRORS: usize = 16;
/// Lines of the log's end kept for a run that reported no error.
pub const TAIL_LINES: usize = 20;
/// Bytes kept of each tail line.
const TAIL_LINE_BYTES: usize = 2000;

/// What `.nextflow.log` says about a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogReport {
    /// The error the run ended with: the first ERROR record, or, for a log cut off before one
    /// was written, the last failing task the debug records name.
    pub error: Option<RunError>,
    /// Every ERROR record kept, in log order (the first is `error`).
    pub errors: Vec<RunError>,
    /// ERROR records beyond [`MAX_ERRORS`], counted only.
    pub errors_omitted: usize,
    /// `NOTE: … -- Execution is retried` records: failures Nextflow retried.
    pub retried: usize,
    /// The log ends with Nextflow's own last record (`Execution complete -- Goodbye`).
    pub finished: bool,
    /// Lines read, header and continuation alike.
    pub lines: u64,
    /// Lines longer than [`MAX_LINE_BYTES`], cut.
    pub long_lines: u64,
    /// The last lines of the log, decoded lossily.
    pub tail: Vec<String>,
    /// What the text says read as a console, when it holds one (either style's markers, or an
    /// error block outside the log's records); its error is part of `error` already.
    pub console: Option<ConsoleReport>,
    /// The Nextflow version that wrote the log (`N E X T F L O W  ~  version 24.10.0`, the
    /// launcher's INFO record or a console's banner).
    pub version: Option<String>,
}

/// The parts of a header line the reader uses.
struct Header<'a> {
    level: &'a [u8],
    message: &'a [u8],
}

/// Reads `.nextflow.log` from `reader`, streaming. Bytes that are not UTF-8 are replaced,
/// CRLF line ends are accepted; the only error is the reader's own.
pub fn read_log(mut reader: impl BufRead) -> Result<LogReport, RunLogError> {
    let mut state = State::default();
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        let (read, cut) = match read_line_bounded(&mut reader, &mut line) {
            Ok(Some(found)) => (true, found),
            Ok(None) => (false, false),
            Err(source) => {
                return Err(RunLogError::Read {
                    line: state.lines + 1,
                    source,
                });
            }
        };
        if !read {
            break;
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        state.lines += 1;
        if cut {
            state.long_lines += 1;
        }
        state.line(&line);
    }
    Ok(state.finish())
}

#[derive(Default)]
enum Record {
    /// A record the reader does not keep; its continuation lines are skipped.
    #[default]
    Skipped,
    /// An ERROR record: message and continuation lines.
    Error(Vec<String>),
    /// `Handling unexpected condition for` (DEBUG): the failing task, written before the
    /// ERROR block, so a log cut off in between still names it.
    TaskFailure(Vec<String>),
}

#[derive(Default)]
struct State {
    record: Record,
    errors: Vec<RunError>,
    errors_omitted: usize,
    last_failure: Option<RunError>,
    /// The first `Task completed > TaskHandler[…; exit: N; …]` with a non-zero status (the one
    /// that ends a run, as Nextflow reports the first failure): a log
    /// cut to its task records (or a run whose tasks all failed before any ERROR record)
    /// still names the task and its status.
    first_failed_task: Option<RunError>,
    version: Option<String>,
    retried: usize,
    finished: bool,
    lines: u64,
    long_lines: u64,
    tail: VecDeque<Vec<u8>>,
    /// Lines naming a known cause (`sbatch: error: …`, `Session aborted -- Cause: …`), for a
    /// log with no ERROR record.
    signatures: Vec<String>,
    /// The lines that are not log records, read as a console.
    console: ConsoleReader,
}

impl State {
    fn line(&mut self, line: &[u8]) {
        self.keep_tail(line);
        match parse_header(line) {
            Some(header) => {
                // Once the signatures are kept in full no line is searched for one: the
                // search is most of the time a header line costs.
                if self.signatures.len() < MAX_KEPT_SIGNATURES
                    && super::diagnose::is_signature(line)
                {
                    keep_signature(&mut self.signatures, &String::from_utf8_lossy(line));
                }
                self.end_record();
                self.start_record(&header);
            }
            None => {
                let text = String::from_utf8_lossy(line);
                let text = strip_ansi(&text);
                keep_signature(&mut self.signatures, &text);
                self.console.line(&text);
                match &mut self.record {
                    Record::Skipped => {}
                    Record::Error(lines) | Record::TaskFailure(lines) => {
                        if lines.len() < MAX_RECORD_LINES {
                            lines.push(text.into_owned());
                        }
                    }
                }
            }
        }
    }

    fn start_record(&mut self, header: &Header<'_>) {
        let message = header.message;
        self.record = match header.level {
            b"ERROR" => Record::Error(vec![String::from_utf8_lossy(message).into_owned()]),
            b"DEBUG" if message.starts_with(b"Handling unexpected condition for") => {
                Record::TaskFailure(Vec::new())
            }
            _ => {
                // `[ab/cdef12] NOTE: Process … -- Execution is retried (1)`; the prefix test
                // keeps the search off the millions of other records.
                if message.first() == Some(&b'[') && contains(message, b"-- Execution is retried") {
                    self.retried += 1;
                }
                if self.version.is_none()
                    && let Some(banner) = message.strip_prefix(b"N E X T F L O W")
                {
                    self.version =
                        after(&String::from_utf8_lossy(banner), "version ").map(|v| clip(v.trim()));
                }
                if self.first_failed_task.is_none() {
                    if let Some(record) = message.strip_prefix(b"Task completed > TaskHandler[") {
                        self.first_failed_task = failed_task(&String::from_utf8_lossy(record));
                    } else if let Some(rest) = message.strip_prefix(b"Failed to submit process ") {
                        self.first_failed_task = failed_submission(&String::from_utf8_lossy(rest));
                    }
                }
                // `> Execution complete -- Goodbye` (ScriptRunner), with or without the `> `.
                let last = message.strip_prefix(b"> ").unwrap_or(message);
                if last.starts_with(b"Execution complete -- Goodbye") {
                    self.finished = true;
                }
                Record::Skipped
            }
        };
    }

    fn end_record(&mut self) {
        match std::mem::take(&mut self.record) {
            Record::Skipped => {}
            Record::Error(mut lines) => {
                // `ERROR nextflow.cli.Launcher - @unknown` puts the exception on the next line.
                if lines.first().is_some_and(|l| l.trim() == "@unknown") && lines.len() > 1 {
                    lines.remove(0);
                }
                if self.errors.len() < MAX_ERRORS {
                    self.errors.push(parse_block(&lines));
                } else {
                    self.errors_omitted += 1;
                }
            }
            Record::TaskFailure(lines) => {
                if let Some(failure) = task_failure(&lines) {
                    self.last_failure = Some(failure);
                }
            }
        }
    }

    fn keep_tail(&mut self, line: &[u8]) {
        let mut kept = if self.tail.len() == TAIL_LINES {
            self.tail.pop_front().unwrap_or_default()
        } else {
            Vec::new()
        };
        kept.clear();
        kept.extend_from_slice(&line[..line.len().min(TAIL_LINE_BYTES)]);
        self.tail.push_back(kept);
    }

    fn finish(mut self) -> LogReport {
        self.end_record();
        let console = self.console.finish(&[]);
        let mut error = self.errors.first().cloned();
        match (&mut error, &self.last_failure) {
            (Some(error), Some(failure)) => error.fill_from(failure),
            (None, Some(failure)) => error = Some(failure.clone()),
            _ => {}
        }
        // The log's own records first; a console's error block completes them, or stands for
        // them in a text that is a console.
        match (&mut error, &console.error) {
            (Some(error), Some(block)) => error.fill_from(block),
            (None, Some(block)) => error = Some(block.clone()),
            (_, None) => {}
        }
        if error.is_none()
            && let Some(mut task) = self.first_failed_task.take()
        {
            // The task's record says which task and status, not why; the lines that name a
            // cause (`sbatch: error: …`) do.
            task.cause
                .extend(self.signatures.iter().take(MAX_TASK_CAUSE_LINES).cloned());
            error = Some(task);
        }
        if error.is_none() {
            error = signature_error(&self.signatures);
        }
        if let Some(error) = &mut error {
            add_signatures(error, &self.signatures);
        }
        let version = self.version.or_else(|| console.version.clone());
        let console = (console.style != ConsoleStyle::Unknown).then_some(console);
        LogReport {
            error,
            errors: self.errors,
            errors_omitted: self.errors_omitted,
            retried: self.retried,
            finished: self.finished,
            lines: self.lines,
            long_lines: self.long_lines,
            tail: self
                .tail
                .iter()
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect(),
            console,
            version,
        }
    }
}

/// `id: 1; name: P (T); status: COMPLETED; exit: 127; error: -; workDir: /w/ab/cd…]`: a task
/// that ended with a non-zero status, or `None` (a success, a status not yet known).
fn failed_task(record: &str) -> Option<RunError> {
    let field = |key: &str| {
        record
            .split("; ")
            .find_map(|part| part.trim().strip_prefix(key))
            .map(|v| v.trim_end_matches(']').trim())
    };
    let status: i32 = field("exit: ")?.parse().ok()?;
    if status == 0 {
        return None;
    }
    let name = field("name: ")?;
    let (process, tag) = split_task_name(name);
    let mut err = RunError::new(&format!(
        "Process `{name}` terminated with an error exit status ({status})"
    ));
    err.form = super::ErrorForm::ProcessFailed;
    err.process = Some(process);
    err.tag = tag;
    err.exit_status = Some(status);
    err.work_dir = field("workDir: ").filter(|d| !d.is_empty()).map(clip);
    Some(err)
}

/// Cause lines a task record's error borrows from the rest of the log.
const MAX_TASK_CAUSE_LINES: usize = 20;

/// `align (29-32) > exit: 1; workDir: /w/c8/9d…` (GridTaskHandler, DEBUG): the scheduler's
/// submit command failed; its own words (`sbatch: error: …`) follow on the next line.
fn failed_submission(rest: &str) -> Option<RunError> {
    let (name, fields) = rest.split_once(" > ")?;
    let field = |key: &str| {
        fields
            .split("; ")
            .find_map(|part| part.trim().strip_prefix(key))
            .map(str::trim)
    };
    let mut err = RunError::new(&format!("Failed to submit process {name} to the scheduler"));
    err.form = super::ErrorForm::ProcessFailed;
    let (process, tag) = split_task_name(name);
    err.process = Some(process);
    err.tag = tag;
    err.exit_status = field("exit: ").and_then(|s| s.parse().ok());
    err.work_dir = field("workDir: ").filter(|d| !d.is_empty()).map(clip);
    Some(err)
}

/// `  task: name=P (T); work-dir=/w/ab/cd…` / `  error [E]: Process `P (T)` terminated …`.
fn task_failure(lines: &[String]) -> Option<RunError> {
    let task = lines.iter().find_map(|l| after(l.trim(), "task: name="))?;
    let (name, work_dir) = match task.split_once("; work-dir=") {
        Some((name, dir)) => (name, Some(dir.trim())),
        None => (task, None),
    };
    let message = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("error ["))
        .and_then(|rest| rest.split_once("]: ").map(|(_, m)| m))
        .unwrap_or("task failed");
    let mut err = parse_block(&[message]);
    err.form = match err.form {
        super::ErrorForm::Other => super::ErrorForm::ProcessFailed,
        form => form,
    };
    let (process, tag) = split_task_name(name);
    err.process = Some(process);
    err.tag = tag;
    err.work_dir = work_dir.filter(|d| !d.is_empty()).map(clip);
    if err.exit_status.is_none() {
        err.exit_status = between(message, "exit status (", ")").and_then(|s| s.parse().ok());
    }
    Some(err)
}

/// A log4j header line, or `None` for a continuation line. Checked on bytes, cheaply: most
/// lines of a big log are headers of records the reader skips.
fn parse_header(line: &[u8]) -> Option<Header<'_>> {
    // `Mmm-dd` (the month may be multi-byte in some locales) then a space.
    let space = line.iter().take(16).position(|&b| b == b' ')?;
    let date = &line[..space];
    if date.len() < 5 || date[date.len() - 3] != b'-' || !digits(&date[date.len() - 2..]) {
        return None;
    }
    let rest = &line[space + 1..];
    // `HH:mm:ss.SSS [`
    if rest.len() < 14 {
        return None;
    }
    let time = &rest[..12];
    if !(digits(&time[0..2])
        && time[2] == b':'
        && digits(&time[3..5])
        && time[5] == b':'
        && digits(&time[6..8])
        && time[8] == b'.'
        && digits(&time[9..12])
        && &rest[12..14] == b" [")
    {
        return None;
    }
    let rest = &rest[14..];
    let close = find(rest, b"] ")?;
    let rest = &rest[close + 2..];
    let level_end = rest.iter().position(|&b| b == b' ')?;
    let level = &rest[..level_end];
    if !matches!(level, b"TRACE" | b"DEBUG" | b"INFO" | b"WARN" | b"ERROR") {
        return None;
    }
    let rest = &rest[level_end..];
    let logger_sep = find(rest, b" - ")?;
    Some(Header {
        level,
        message: &rest[logger_sep + 3..],
    })
}

fn digits(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_digit)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

/// One line into `buf` without its `\n`, at most [`MAX_LINE_BYTES`] of it; the rest of a longer
/// line is consumed and dropped. `Ok(None)` at the end of input; `Ok(Some(cut))` otherwise.
fn read_line_bounded(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    let mut any = false;
    let mut cut = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(any.then_some(cut));
        }
        any = true;
        let (chunk, used, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], i + 1, true),
            None => (available, available.len(), false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(buf.len());
        if chunk.len() > room {
            cut = true;
        }
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        reader.consume(used);
        if done {
            return Ok(Some(cut));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_recognised_in_any_month_spelling() {
        let h = parse_header(b"dic-13 13:44:22.226 [Task submitter] DEBUG n.executor.local.LocalTaskHandler - Launch cmd line: x");
        assert_eq!(h.map(|h| h.message), Some(&b"Launch cmd line: x"[..]));
        let h = parse_header(
            b"Oct-25 16:15:14.183 [Task submitter] INFO  nextflow.Session - [f9/92bac5] Submitted",
        );
        assert_eq!(h.map(|h| h.level), Some(&b"INFO"[..]));
        assert!(parse_header(b"  Process `X` terminated").is_none());
        assert!(parse_header(b"Caused by:").is_none());
        assert!(parse_header(b"").is_none());
    }
}
