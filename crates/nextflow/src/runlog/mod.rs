//! Run logs and the console: the error a Nextflow run ended with, read from `.nextflow.log`
//! ([`read_log`], streaming, in bounded memory) and from the console of `nextflow run` in
//! both its classic and agent-mode styles ([`read_console`]), with a likely cause for the
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

pub use block::{ErrorForm, Excerpt, Location, RunError};
pub use console::{
    ConsoleReport, ConsoleStyle, ConsoleTask, MAX_TASKS, Summary, TaskState, read_console,
};
pub use diagnose::{Diagnosis, LikelyCause, diagnose};
pub use log::{LogReport, MAX_ERRORS, MAX_LINE_BYTES, MAX_RECORD_LINES, TAIL_LINES, read_log};
pub use render::render_analysis;

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
