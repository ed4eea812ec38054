//! A task's work directory, `work/ab/cdef…/`: the files Nextflow writes there (`.command.sh`,
//! `.command.run`, `.command.out`, `.command.err`, `.command.log`, `.command.begin`,
//! `.exitcode`, `.command.trace`) and what was staged in (symlinks) or produced. Nothing is read
//! through a symlink: a staged input is reported with where it points and whether that exists.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::RunsError;
use super::read::{Dir, FileText, Unread};
use super::units::parse_memory;
use super::wrapper::{Wrapper, parse_wrapper};
use crate::files::{Ambient, Files, Kind, Stat};

/// How much of `.command.sh` is shown (a script is short; a generated one may not be).
pub const SCRIPT_BYTES: u64 = 16 * 1024;
/// The tail of `.command.out`, `.command.err` and `.command.log`: at most these bytes …
pub const TAIL_BYTES: u64 = 16 * 1024;
/// … and at most these lines.
pub const TAIL_LINES: usize = 40;
/// `.command.run` is generated and about 10 KiB; only its start is read.
const WRAPPER_BYTES: u64 = 256 * 1024;
/// Entries listed (inputs and outputs); a task with more is summarised.
pub const MAX_ENTRIES: usize = 200;

/// Whether the task ran to an exit status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "code")]
pub enum TaskState {
    /// `.exitcode` holds this status.
    Exited(i64),
    /// `.exitcode` is there but holds no number.
    BadExitCode,
    /// Started (`.command.begin`) with no `.exitcode`: running, or killed before it could
    /// write one (out of memory, a scheduler's limit, a kill of Nextflow).
    NoExitCode,
    /// Not started: no `.command.begin`.
    NotStarted,
}

/// A file in the task directory that is a symlink: an input staged by Nextflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StagedInput {
    pub name: String,
    /// Where the link points, as written in the link.
    pub target: String,
    /// The target does not exist (a dangling link).
    pub dangling: bool,
}

/// Another entry of the task directory (an output, or a file the task wrote).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskEntry {
    pub name: String,
    pub is_dir: bool,
    pub size: u64,
}

/// Resource use the task's own `.command.trace` recorded (`nextflow.trace/v2`).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct TaskMetrics {
    pub realtime_ms: Option<u64>,
    pub cpu_percent: Option<f64>,
    pub mem_percent: Option<f64>,
    pub peak_rss: Option<u64>,
    pub peak_vmem: Option<u64>,
    pub rchar: Option<u64>,
    pub wchar: Option<u64>,
}

/// One task directory, read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskDir {
    /// The directory, canonical.
    pub path: PathBuf,
    pub state: TaskState,
    /// `.command.sh`: the task script, from its start.
    pub script: Option<FileText>,
    /// Tails of the task's standard output, standard error and its executor log.
    pub out_tail: Option<FileText>,
    pub err_tail: Option<FileText>,
    pub log_tail: Option<FileText>,
    /// What `.command.run` says about the task: its name, container and resources asked.
    pub wrapper: Option<Wrapper>,
    pub metrics: Option<TaskMetrics>,
    pub inputs: Vec<StagedInput>,
    pub outputs: Vec<TaskEntry>,
    /// Entries past [`MAX_ENTRIES`], not listed.
    pub more_entries: usize,
    /// Files of Nextflow's that are there but were not read, with the reason.
    pub refused: Vec<(String, String)>,
}

const NEXTFLOW_FILES: &[&str] = &[
    ".command.sh",
    ".command.run",
    ".command.out",
    ".command.err",
    ".command.log",
    ".command.begin",
    ".command.trace",
    ".exitcode",
];

impl TaskDir {
    /// Reads the task directory at `path`. Only a directory that cannot be opened is an
    /// error; every missing or refused file is part of the answer.
    pub fn read(path: &Path) -> Result<TaskDir, RunsError> {
        TaskDir::read_with(&Ambient, path)
    }

    /// [`TaskDir::read`] with every file opened by `files`.
    pub fn read_with(files: &dyn Files, path: &Path) -> Result<TaskDir, RunsError> {
        let (dir, canonical) = Dir::open(files, path).map_err(|source| RunsError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut refused = Vec::new();
        let mut keep = |name: &str, r: Result<FileText, Unread>| match r {
            Ok(t) => Some(t),
            Err(Unread::Missing) => None,
            Err(Unread::Refused(why)) => {
                refused.push((name.to_string(), why.to_string()));
                None
            }
        };
        let script = keep(".command.sh", dir.head(".command.sh", SCRIPT_BYTES));
        let out_tail = keep(
            ".command.out",
            dir.tail(".command.out", TAIL_BYTES, TAIL_LINES),
        );
        let err_tail = keep(
            ".command.err",
            dir.tail(".command.err", TAIL_BYTES, TAIL_LINES),
        );
        let log_tail = keep(
            ".command.log",
            dir.tail(".command.log", TAIL_BYTES, TAIL_LINES),
        );
        let wrapper = keep(".command.run", dir.head(".command.run", WRAPPER_BYTES))
            .map(|t| parse_wrapper(&t.text));
        let metrics = keep(".command.trace", dir.head(".command.trace", 4096))
            .map(|t| parse_metrics(&t.text));
        let exit = keep(".exitcode", dir.head(".exitcode", 64));
        let began = dir.has_file(".command.begin");
        let state = match exit {
            Some(t) => t
                .text
                .trim()
                .parse()
                .map_or(TaskState::BadExitCode, TaskState::Exited),
            None if began => TaskState::NoExitCode,
            None => TaskState::NotStarted,
        };
        let (inputs, outputs, more_entries) = list_entries(files, &canonical, &mut refused);
        Ok(TaskDir {
            path: canonical,
            state,
            script,
            out_tail,
            err_tail,
            log_tail,
            wrapper,
            metrics,
            inputs,
            outputs,
            more_entries,
            refused,
        })
    }

    /// The exit status, when `.exitcode` holds one.
    pub fn exit_code(&self) -> Option<i64> {
        match self.state {
            TaskState::Exited(code) => Some(code),
            _ => None,
        }
    }

    pub fn dangling_inputs(&self) -> impl Iterator<Item = &StagedInput> {
        self.inputs.iter().filter(|i| i.dangling)
    }
}

fn list_entries(
    files: &dyn Files,
    dir: &Path,
    refused: &mut Vec<(String, String)>,
) -> (Vec<StagedInput>, Vec<TaskEntry>, usize) {
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    let mut more = 0;
    let Ok(read) = files.list(dir) else {
        return (inputs, outputs, more);
    };
    let mut names: Vec<(String, PathBuf, Stat)> = read
        .into_iter()
        .map(|e| (e.name.to_string_lossy().into_owned(), e.path, e.stat))
        .collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, path, meta) in names {
        let is_nextflow_file = NEXTFLOW_FILES.contains(&name.as_str());
        if meta.kind == Kind::Symlink {
            if is_nextflow_file {
                // Already named in `refused` when it was opened; not an input.
                continue;
            }
            if inputs.len() + outputs.len() >= MAX_ENTRIES {
                more += 1;
                continue;
            }
            let target = fs::read_link(&path)
                .map(|t| t.to_string_lossy().into_owned())
                .unwrap_or_default();
            // `metadata` follows the link to learn whether its target exists; nothing is read.
            let dangling = fs::metadata(&path).is_err();
            inputs.push(StagedInput {
                name,
                target,
                dangling,
            });
        } else if is_nextflow_file {
            if meta.kind != Kind::File && !refused.iter().any(|(n, _)| *n == name) {
                refused.push((name, "not a regular file".to_string()));
            }
        } else if inputs.len() + outputs.len() >= MAX_ENTRIES {
            more += 1;
        } else {
            outputs.push(TaskEntry {
                name,
                is_dir: meta.kind == Kind::Dir,
                size: meta.len,
            });
        }
    }
    (inputs, outputs, more)
}

/// `.command.trace`: `nextflow.trace/v2`, then `name=value` lines; `%cpu` and `%mem` are in
/// tenths of a percent, `rss`/`vmem`/`peak_*` in KiB, `rchar`/`wchar` in bytes, `realtime` in
/// milliseconds (`TraceRecord.parseTraceFile`).
pub fn parse_metrics(text: &str) -> TaskMetrics {
    let mut m = TaskMetrics::default();
    for line in text.lines() {
        let Some((key, value)) = line.trim().split_once('=') else {
            continue;
        };
        let num = || {
            value
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
        };
        let kib = || num().map(|v| (v * 1024.0).min(u64::MAX as f64) as u64);
        match key.trim() {
            "realtime" => m.realtime_ms = value.trim().parse().ok(),
            "%cpu" => m.cpu_percent = num().map(|v| v / 10.0),
            "%mem" => m.mem_percent = num().map(|v| v / 10.0),
            "peak_rss" => m.peak_rss = kib(),
            "peak_vmem" => m.peak_vmem = kib(),
            "rchar" => m.rchar = parse_memory(value),
            "wchar" => m.wchar = parse_memory(value),
            _ => {}
        }
    }
    m
}
