//! Run logs and the console: the error a Nextflow run ended with, read from `.nextflow.log`
//! or any text a run left ([`read_log`], streaming, in bounded memory: a log of any name, a
//! console in either style saved or pasted, or both) and from the console of `nextflow run`
//! in both its classic and agent-mode styles ([`read_console`]), with a likely cause for the
//! common failures ([`diagnose`]). Each report's `render` is the answer text of
//! `analyze_run_log`: one fact per line, every value escaped onto its line.
//!
//! Pure: the caller opens the files; nothing here touches a process or the file system.

mod block;
mod console;
mod diagnose;
mod log;
mod messages;
mod render;
mod version;

pub use block::{ErrorForm, Excerpt, Location, RunError};
pub use console::{
    ConsoleReport, ConsoleStyle, ConsoleTask, MAX_TASKS, Summary, TaskState, read_console,
};
pub use diagnose::{Diagnosis, LikelyCause, diagnose};
pub use log::{LogReport, MAX_ERRORS, MAX_LINE_BYTES, MAX_RECORD_LINES, TAIL_LINES, read_log};
pub use render::{render_analysis, render_requirement};
pub use version::requirement_note;

/// The most of a pasted text read (`analyze_run_log`'s `text`): 1 MiB, a long console's end.
pub const MAX_PASTED_BYTES: usize = 1024 * 1024;

/// The part of a pasted `text` read: all of it, or past [`MAX_PASTED_BYTES`] its last lines
/// (where a run's error is), cut at a line start. The bytes left out are counted.
pub fn pasted_tail(text: &str) -> (&str, usize) {
    if text.len() <= MAX_PASTED_BYTES {
        return (text, 0);
    }
    let mut from = text.len() - MAX_PASTED_BYTES;
    while !text.is_char_boundary(from) {
        from += 1;
    }
    // The line the cut falls in is dropped whole: half a line could read as another.
    if let Some(nl) = text[from..].find('\n') {
        from += nl + 1;
    }
    (&text[from..], from)
}

/// Why a log could not be read: only the reader itself fails (bad bytes are replaced).
#[derive(Debug, thiserror::Error)]
pub enum RunLogError {
    #[error("reading the log failed at line {line}: {source}")]
    Read {
        line: u64,
        #[source]
        source: std::io::Error,
    },
}
