//! Why a scheduler request could not be carried out: one enum, its own file, so every part of
//! the scheduler names it without importing another.

use std::path::PathBuf;

use codaris_config::jobs::JobError;

/// Why a scheduler request could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error("the scheduler is off; set `[scheduler] enabled = true` and restart codarisd")]
    Disabled,
    #[error("there is no configuration directory for the user's jobs")]
    NoUserDir,
    #[error("`{}` is a symlink; the scheduler reads and writes no job through one", path.display())]
    Symlink { path: PathBuf },
    #[error("no job `{job}`")]
    NoJob { job: String },
    #[error("a job `{job}` exists already; replace or patch it")]
    Exists { job: String },
    #[error("job `{job}` does not read: {source}")]
    BadJob {
        job: String,
        #[source]
        source: JobError,
    },
    #[error("`cwd` `{cwd}` {reason}")]
    BadCwd { cwd: String, reason: &'static str },
    #[error("a run of `{job}` is in flight (`{run}`); cancel it first or wait for it")]
    InFlight { job: String, run: String },
    #[error("no run of `{job}` is in flight")]
    NotRunning { job: String },
    #[error(
        "project job `{job}` is not approved as it is now; the operator approves it with `codaris scheduler approve {id} --scope project`"
    )]
    NotApproved { job: String, id: String },
    #[error("the approval could not be recorded: {reason}")]
    Record { reason: String },
    #[error("the run could not start: {reason}")]
    Start { reason: String },
    #[error("`{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
