//! What a Nextflow run leaves on disk, read: `trace.txt` ([`Trace`], [`TraceSummary`]),
//! `.nextflow/history` ([`History`]), the task work directories ([`TaskDir`]), and from them a
//! run's status ([`run_status`], [`RunQuery::status`]) and its failing task
//! ([`failing_task`], [`RunQuery::failing_task`]) — the pure part of `check_run_status` and
//! `debug_last_run` (issue 16, items 3, 5 and 8).
//!
//! Nothing here starts a process, touches the network, or writes. Files are read in bounded
//! amounts; no symlink inside a work directory is followed when reading (a staged input is
//! reported with where it points). Every answer is a value with a `render()` that writes one
//! fact per line, with file content escaped and prefixed so it cannot pass for a fact.

mod failing;
mod history;
mod jobs;
mod read;
mod render;
mod status;
mod taskdir;
mod trace;
mod units;
mod wrapper;

use std::path::PathBuf;

pub use failing::{ConfigSetting, ProcessSource, Resources, TaskReport, Usage, failing_task};
pub use history::{History, HistoryEntry, HistoryStatus};
pub use jobs::{job_ids, short_hash};
pub use read::FileText;
pub use status::{RunQuery, RunState, RunStatus, RunningTask, TaskCounts, run_status};
pub use taskdir::{
    MAX_ENTRIES, SCRIPT_BYTES, StagedInput, TAIL_BYTES, TAIL_LINES, TaskDir, TaskEntry,
    TaskMetrics, TaskState, parse_metrics,
};
pub use trace::{MAX_LINE_BYTES, TaskStatus, Trace, TraceReader, TraceRow, TraceSummary};
pub use units::{format_duration, format_memory, parse_duration, parse_memory, parse_percent};
pub use wrapper::{Wrapper, parse_wrapper};

/// Why a run could not be read. Anything short of these is part of the answer.
#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    #[error("cannot read `{path}`: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the trace: {source}")]
    TraceRead {
        #[source]
        source: std::io::Error,
    },
    #[error("the trace is empty (no header line)")]
    TraceEmpty,
    #[error("the trace's first line names no trace column (`status`, `hash`): `{header}`")]
    TraceHeader { header: String },
    #[error("no runs recorded: `{path}` is missing or empty")]
    NoHistory { path: PathBuf },
    #[error("no run `{run}` in `{path}`")]
    RunNotFound { run: String, path: PathBuf },
    #[error("no trace file found for run `{run}` in `{dir}` (launch with `-with-trace`)")]
    NoTrace { run: String, dir: PathBuf },
    #[error("run `{run}` has no failed task in its trace")]
    NoFailedTask { run: String },
    #[error("cannot read the pipeline: {source}")]
    Pipeline {
        #[source]
        source: crate::parse::ParseError,
    },
}
