//! A run's status from what it left in its launch directory: the history row (is it running,
//! how did it end), the trace (the tasks that ended), the work directories (the tasks that
//! started and have no row yet) and, when given, the last lines of the log.

use std::collections::HashSet;
use std::io::{BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;

use super::RunsError;
use super::history::{History, HistoryEntry, HistoryStatus};
use super::read::Dir;
use super::render::{escape, fact};
use super::trace::{Accumulator, Trace, TraceRow};
use super::units::format_duration;
use super::wrapper::parse_wrapper;
use crate::files::{Ambient, Files, Kind};

/// Tasks listed as running; a run with more says how many.
const MAX_RUNNING_LISTED: usize = 20;
/// Log lines shown at the end of a status.
const LOG_LINES: usize = 5;
/// The history is read whole; past this it is not a history file.
const MAX_HISTORY_BYTES: u64 = 16 * 1024 * 1024;

/// Where to look, and for which run. Paths default to Nextflow's: `.nextflow/history`, the
/// newest trace (`trace.txt`, `trace-*.txt`, `*/pipeline_info/execution_trace_*.txt`) and
/// `work/`, all in the launch directory.
#[derive(Debug, Clone)]
pub struct RunQuery {
    pub launch_dir: PathBuf,
    /// A run name or session id (prefix); the last run when `None`.
    pub run: Option<String>,
    pub trace: Option<PathBuf>,
    pub work_dir: Option<PathBuf>,
    /// The last lines of `.nextflow.log` or the console, as text.
    pub log_tail: Option<String>,
    /// Opens every file read (history, trace, work directories): [`Ambient`] unless set.
    pub files: Arc<dyn Files>,
}

impl RunQuery {
    pub fn new(launch_dir: &Path) -> RunQuery {
        RunQuery {
            launch_dir: launch_dir.to_path_buf(),
            run: None,
            trace: None,
            work_dir: None,
            log_tail: None,
            files: Ambient::shared(),
        }
    }

    /// Opens every file through `files` (the tools crate's fence).
    pub fn files(mut self, files: Arc<dyn Files>) -> RunQuery {
        self.files = files;
        self
    }

    pub fn run(mut self, run: Option<&str>) -> RunQuery {
        self.run = run.map(str::to_string);
        self
    }

    pub fn trace(mut self, path: &Path) -> RunQuery {
        self.trace = Some(path.to_path_buf());
        self
    }

    pub fn work_dir(mut self, path: &Path) -> RunQuery {
        self.work_dir = Some(path.to_path_buf());
        self
    }

    pub fn log_tail(mut self, text: &str) -> RunQuery {
        self.log_tail = Some(text.to_string());
        self
    }

    pub(crate) fn work_root(&self) -> PathBuf {
        self.work_dir
            .clone()
            .unwrap_or_else(|| self.launch_dir.join("work"))
    }

    /// The history row of the run asked for.
    pub(crate) fn history_entry(&self) -> Result<HistoryEntry, RunsError> {
        let path = self.launch_dir.join(".nextflow").join("history");
        let text = read_history(self.files.as_ref(), &path)?;
        let history = History::read(&text);
        let entry = match &self.run {
            Some(run) => history.find(run).ok_or_else(|| RunsError::RunNotFound {
                run: run.clone(),
                path: path.clone(),
            })?,
            None => history
                .last()
                .ok_or_else(|| RunsError::NoHistory { path: path.clone() })?,
        };
        Ok(entry.clone())
    }

    /// The trace named, else the newest one in the launch directory.
    pub(crate) fn trace_path(&self) -> Option<PathBuf> {
        if let Some(t) = &self.trace {
            return Some(if t.is_absolute() {
                t.clone()
            } else {
                self.launch_dir.join(t)
            });
        }
        newest_trace(self.files.as_ref(), &self.launch_dir)
    }

    /// Whether `.nextflow/history` has a row for the run asked for: a run just launched has
    /// none until Nextflow has started (a JVM's start, the script compiled).
    pub fn is_recorded(&self) -> Result<bool, RunsError> {
        match self.history_entry() {
            Ok(_) => Ok(true),
            Err(RunsError::RunNotFound { .. } | RunsError::NoHistory { .. }) => Ok(false),
            Err(other) => Err(other),
        }
    }

    /// The run's status.
    pub fn status(&self) -> Result<RunStatus, RunsError> {
        let entry = self.history_entry()?;
        let run = entry
            .run_name
            .clone()
            .unwrap_or_else(|| entry.session_id.clone());
        let mut notes = Vec::new();
        let mut acc = Accumulator::default();
        let mut hashes = HashSet::new();
        let trace_path = self.trace_path();
        let mut trace_started = None;
        match &trace_path {
            Some(path) => {
                let file = self.files.open(path).map_err(|source| RunsError::Io {
                    path: path.clone(),
                    source,
                })?;
                trace_started = file.metadata().ok().and_then(|m| m.created().ok());
                for row in Trace::read(BufReader::new(file))? {
                    let row = row?;
                    if let Some(h) = &row.hash {
                        hashes.insert(h.clone());
                    }
                    acc.add(row);
                }
            }
            None => notes.push(format!(
                "no trace file in `{}`: task counts come from the work directories only",
                self.launch_dir.display()
            )),
        }
        let summary = acc.finish();
        let running = entry.is_running();
        let scan = scan_work(
            self.files.as_ref(),
            &self.work_root(),
            &hashes,
            trace_started,
        );
        let mut running_tasks = scan.started;
        running_tasks.truncate(MAX_RUNNING_LISTED);
        let mut submitted_tasks = scan.submitted;
        // The executor's job ids, from the log's submission lines.
        let jobs = self
            .log_tail
            .as_deref()
            .map(super::jobs::job_ids)
            .unwrap_or_default();
        for task in running_tasks.iter_mut().chain(submitted_tasks.iter_mut()) {
            task.native_id = jobs.get(&task.hash).cloned();
        }
        let mut process_now = running_tasks.last().and_then(|t| t.name.clone());
        if process_now.is_none() && running {
            process_now = summary
                .last_unfinished
                .as_ref()
                .and_then(|r| r.name.clone())
                .or_else(|| {
                    self.log_tail
                        .as_deref()
                        .and_then(|t| last_submitted(t, &hashes))
                });
        }
        if !running && scan.started_count > 0 {
            notes.push(format!(
                "{} task(s) started without an `.exitcode` though the run has ended: killed",
                scan.started_count
            ));
        }
        let log_lines = self
            .log_tail
            .as_deref()
            .map(|t| {
                let lines: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
                let from = lines.len().saturating_sub(LOG_LINES);
                lines
                    .get(from..)
                    .unwrap_or_default()
                    .iter()
                    .map(|l| l.trim_end_matches('\r').to_string())
                    .collect()
            })
            .unwrap_or_default();
        Ok(RunStatus {
            run,
            session_id: entry.session_id.clone(),
            state: if running {
                RunState::Running
            } else {
                RunState::Finished
            },
            status: entry.status.clone(),
            started: entry.timestamp.clone(),
            duration_ms: entry.duration_ms,
            command: entry.command.clone(),
            trace: trace_path,
            tasks: TaskCounts {
                completed: summary.completed,
                cached: summary.cached,
                failed: summary.failed,
                retried: summary.retried,
                aborted: summary.aborted,
                running: if running {
                    scan.started_count + summary.unfinished
                } else {
                    0
                },
                submitted: if running { scan.submitted_count } else { 0 },
            },
            running_tasks: if running { running_tasks } else { Vec::new() },
            submitted_tasks: if running {
                std::mem::take(&mut submitted_tasks)
            } else {
                Vec::new()
            },
            scheduler: Vec::new(),
            process_now: if running { process_now } else { None },
            first_failed: summary.first_failed,
            log_lines,
            notes,
        })
    }
}

/// ` (native_id 4242)`, the executor's id of a task's job (a Slurm job id, a Batch job's, the
/// local executor's process id), as the trace names it; or nothing.
fn job(native_id: Option<&str>) -> String {
    native_id.map_or_else(String::new, |id| format!(" (native_id {id})"))
}

impl RunStatus {
    /// The job ids of the tasks listed as running or submitted, in order.
    pub fn listed_job_ids(&self) -> Vec<&str> {
        self.running_tasks
            .iter()
            .chain(&self.submitted_tasks)
            .filter_map(|t| t.native_id.as_deref())
            .collect()
    }
}

/// `run_status(launch_dir, run)`: the status with every path at Nextflow's default.
pub fn run_status(launch_dir: &Path, run: Option<&str>) -> Result<RunStatus, RunsError> {
    RunQuery::new(launch_dir).run(run).status()
}

fn read_history(files: &dyn Files, path: &Path) -> Result<String, RunsError> {
    let file = match files.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(RunsError::NoHistory {
                path: path.to_path_buf(),
            });
        }
        Err(source) => {
            return Err(RunsError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut bytes = Vec::new();
    file.take(MAX_HISTORY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| RunsError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > MAX_HISTORY_BYTES {
        return Err(RunsError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other("larger than a history file can be"),
        });
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn newest_trace(files: &dyn Files, launch: &Path) -> Option<PathBuf> {
    let mut candidates = Vec::new();
    let mut add_matching = |dir: &Path, prefix: &str| {
        for e in files.list(dir).unwrap_or_default() {
            let name = e.name.to_string_lossy();
            if name.starts_with(prefix) && name.ends_with(".txt") {
                candidates.push(e.path);
            }
        }
    };
    add_matching(launch, "trace");
    for e in files.list(launch).unwrap_or_default() {
        let info = e.path.join("pipeline_info");
        if files.stat(&info).is_ok_and(|s| s.kind == Kind::Dir) {
            add_matching(&info, "execution_trace");
        }
    }
    candidates
        .into_iter()
        .filter_map(|p| match files.stat(&p) {
            Ok(stat) if stat.kind == Kind::File => {
                Some((stat.modified.unwrap_or(SystemTime::UNIX_EPOCH), p))
            }
            // Refused (a link out of the roots): kept, oldest, so that reading it says why
            // when it is the only trace rather than the run seeming to have none.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                Some((SystemTime::UNIX_EPOCH, p))
            }
            _ => None,
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, p)| p)
}

#[derive(Debug, Default)]
struct Scan {
    started: Vec<RunningTask>,
    /// Handed to the executor and not begun (waiting in a scheduler's queue, or stuck).
    submitted: Vec<RunningTask>,
    started_count: u64,
    submitted_count: u64,
}

/// Task directories with no trace row: started (`.command.begin`, no `.exitcode`) or only
/// submitted (`.command.run`, not begun). Directories older than the trace file were left by
/// an earlier run and are passed over.
fn scan_work(
    files: &dyn Files,
    root: &Path,
    hashes: &HashSet<String>,
    since: Option<SystemTime>,
) -> Scan {
    let mut scan = Scan::default();
    let Ok(prefixes) = files.list(root) else {
        return scan;
    };
    let mut prefixes: Vec<(String, PathBuf)> = prefixes
        .into_iter()
        .filter_map(|e| {
            let n = e.name.to_str()?.to_string();
            (n.len() == 2 && n.bytes().all(|b| b.is_ascii_hexdigit())).then_some((n, e.path))
        })
        .collect();
    prefixes.sort();
    for (prefix, dir) in prefixes {
        let Ok(tasks) = files.list(&dir) else {
            continue;
        };
        for task in tasks {
            let Some(name) = task.name.to_str().map(str::to_string) else {
                continue;
            };
            let short = format!("{prefix}/{}", name.get(..6).unwrap_or(&name));
            if hashes.contains(&short) {
                continue;
            }
            if task.stat.kind != Kind::Dir {
                continue;
            }
            if let (Some(since), Some(modified)) = (since, task.stat.modified)
                && modified < since
            {
                continue;
            }
            let Ok((d, _)) = Dir::open(files, &task.path) else {
                continue;
            };
            if d.has_file(".exitcode") {
                continue;
            }
            if d.has_file(".command.begin") {
                scan.started_count += 1;
                if scan.started.len() < MAX_RUNNING_LISTED {
                    let name = d
                        .head(".command.run", 8 * 1024)
                        .ok()
                        .and_then(|t| parse_wrapper(&t.text).name);
                    scan.started.push(RunningTask {
                        hash: short,
                        name,
                        work_dir: task.path.clone(),
                        native_id: None,
                    });
                }
            } else if d.has_file(".command.run") {
                scan.submitted_count += 1;
                if scan.submitted.len() < MAX_RUNNING_LISTED {
                    let name = d
                        .head(".command.run", 8 * 1024)
                        .ok()
                        .and_then(|t| parse_wrapper(&t.text).name);
                    scan.submitted.push(RunningTask {
                        hash: short,
                        name,
                        work_dir: task.path.clone(),
                        native_id: None,
                    });
                }
            }
        }
    }
    scan
}

/// The last task the log says was submitted and the trace has no row for: classic console
/// (`[ab/cdef12] Submitted process > NAME (tag)`) or agent mode (`[PROCESS ab/cdef12] NAME`).
fn last_submitted(log: &str, hashes: &HashSet<String>) -> Option<String> {
    log.lines().rev().find_map(|line| {
        let line = line.trim_end_matches('\r');
        let start = line.find('[')?;
        let rest = line.get(start + 1..)?;
        let (inside, after) = rest.split_once(']')?;
        let hash = inside.strip_prefix("PROCESS ").unwrap_or(inside);
        if hash.len() != 9 || hashes.contains(hash) {
            return None;
        }
        let name = if inside.starts_with("PROCESS ") {
            after.trim()
        } else {
            after.split_once("process > ")?.1.trim()
        };
        (!name.is_empty()).then(|| name.to_string())
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Running,
    Finished,
}

/// Tasks by what became of them. `failed` counts FAILED rows, attempts a retry fixed too
/// (`retried` of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct TaskCounts {
    pub completed: u64,
    pub cached: u64,
    pub failed: u64,
    pub retried: u64,
    pub aborted: u64,
    /// Started and not ended (only while the run runs).
    pub running: u64,
    /// Handed to the executor, not started (only while the run runs).
    pub submitted: u64,
}

/// A task started and not ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunningTask {
    /// `ab/cdef12`, as the console shows it.
    pub hash: String,
    /// The task name from its `.command.run`.
    pub name: Option<String>,
    pub work_dir: PathBuf,
    /// The executor's id of its job (a Slurm job id), from the log's submission line.
    pub native_id: Option<String>,
}

/// The answer of `check_run_status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunStatus {
    pub run: String,
    pub session_id: String,
    pub state: RunState,
    /// `ok`, `err`, or `running` while the history row has no status.
    pub status: HistoryStatus,
    /// When the run started, as the history writes it (local time).
    pub started: Option<String>,
    pub duration_ms: Option<u64>,
    pub command: Option<String>,
    pub trace: Option<PathBuf>,
    pub tasks: TaskCounts,
    pub running_tasks: Vec<RunningTask>,
    /// Tasks handed to the executor that have not begun, while the run runs.
    pub submitted_tasks: Vec<RunningTask>,
    /// The scheduler's state of the listed tasks' jobs, one line each, or why it is unknown:
    /// filled by a caller that can ask the scheduler (`squeue`, `sacct`); empty otherwise.
    pub scheduler: Vec<String>,
    /// The process of the task started last, while the run runs.
    pub process_now: Option<String>,
    pub first_failed: Option<TraceRow>,
    pub log_lines: Vec<String>,
    pub notes: Vec<String>,
}

impl RunStatus {
    /// One fact per line: `run:`, `state:`, `status:`, `started:`, `duration:`, `command:`,
    /// `trace:`, one `tasks KIND: N` line per kind, `running:` per running task, `process
    /// running now:`, `first failed:`, `log:` per log line, `note:` per note.
    pub fn render(&self) -> String {
        let mut out = String::new();
        fact(&mut out, "run", &self.run);
        fact(&mut out, "session", &self.session_id);
        fact(
            &mut out,
            "state",
            match self.state {
                RunState::Running => "running",
                RunState::Finished => "finished",
            },
        );
        let status = match &self.status {
            HistoryStatus::Ok => "OK".to_string(),
            HistoryStatus::Err => "ERR".to_string(),
            HistoryStatus::Running => "none yet (running)".to_string(),
            HistoryStatus::Other(s) => s.clone(),
        };
        fact(&mut out, "status", status);
        if let Some(s) = &self.started {
            fact(&mut out, "started", s);
        }
        if let Some(d) = self.duration_ms {
            fact(&mut out, "duration", format_duration(d));
        }
        if let Some(c) = &self.command {
            fact(&mut out, "command", c);
        }
        if let Some(t) = &self.trace {
            fact(&mut out, "trace", t.display().to_string());
        }
        let t = &self.tasks;
        for (kind, n) in [
            ("completed", t.completed),
            ("cached", t.cached),
            ("failed", t.failed),
            ("retried", t.retried),
            ("aborted", t.aborted),
            ("running", t.running),
            ("submitted", t.submitted),
        ] {
            fact(&mut out, &format!("tasks {kind}"), n.to_string());
        }
        for task in &self.running_tasks {
            let name = task.name.as_deref().unwrap_or("(name unknown)");
            fact(
                &mut out,
                "running",
                format!(
                    "[{}] {} in {}{}",
                    task.hash,
                    name,
                    task.work_dir.display(),
                    job(task.native_id.as_deref())
                ),
            );
        }
        for task in &self.submitted_tasks {
            let name = task.name.as_deref().unwrap_or("(name unknown)");
            fact(
                &mut out,
                "submitted",
                format!(
                    "[{}] {} in {}{}",
                    task.hash,
                    name,
                    task.work_dir.display(),
                    job(task.native_id.as_deref())
                ),
            );
        }
        if self.tasks.running as usize > self.running_tasks.len() && !self.running_tasks.is_empty()
        {
            fact(
                &mut out,
                "running",
                format!(
                    "… and {} more",
                    self.tasks.running as usize - self.running_tasks.len()
                ),
            );
        }
        if let Some(p) = &self.process_now {
            fact(&mut out, "process running now", p);
        }
        if let Some(row) = &self.first_failed {
            let exit = row
                .exit
                .map_or("no exit status".to_string(), |e| format!("exit {e}"));
            fact(
                &mut out,
                "first failed",
                format!(
                    "[{}] {} ({exit}){}",
                    row.hash.as_deref().unwrap_or("-"),
                    row.name.as_deref().unwrap_or("-"),
                    job(row.native_id.as_deref())
                ),
            );
        }
        for line in &self.scheduler {
            fact(&mut out, "scheduler", line);
        }
        for line in &self.log_lines {
            out.push_str("log| ");
            out.push_str(&escape(line));
            out.push('\n');
        }
        for note in &self.notes {
            fact(&mut out, "note", note);
        }
        out
    }
}
