//! The failing task of a run, for `debug_last_run`: the first FAILED task of the trace (one a
//! retry did not fix), its work directory read, the resources it asked for and used, and the
//! pipeline file its process is declared in.

use std::io::BufReader;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::RunsError;
use super::render::{fact, file_block, head_block};
use super::status::RunQuery;
use super::taskdir::{TaskDir, TaskState};
use super::trace::{TraceRow, TraceSummary};
use super::units::{format_duration, format_memory};
use crate::files::{Files, Kind};
use crate::parse::Pipeline;

/// Config settings listed for the process, at most.
const MAX_SETTINGS: usize = 40;

/// Resources the task asked for, and where each was read.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Resources {
    pub cpus: Option<f64>,
    pub memory: Option<u64>,
    pub time_ms: Option<u64>,
    pub queue: Option<String>,
    pub container: Option<String>,
    /// `trace` and/or `.command.run`.
    pub sources: Vec<String>,
}

/// What the task used (the trace row, else its `.command.trace`).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Usage {
    pub realtime_ms: Option<u64>,
    pub duration_ms: Option<u64>,
    pub cpu_percent: Option<f64>,
    pub peak_rss: Option<u64>,
    pub peak_vmem: Option<u64>,
    pub rchar: Option<u64>,
    pub wchar: Option<u64>,
}

/// Where the task's process is declared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessSource {
    pub name: String,
    /// Relative to the pipeline directory.
    pub file: String,
    pub line: u32,
    pub end_line: u32,
    pub container_images: Vec<String>,
    pub labels: Vec<String>,
    /// The config settings that apply to it (outside profiles), generic first, then by
    /// label, then by name, as Nextflow applies them.
    pub settings: Vec<ConfigSetting>,
}

/// A `process` setting of the pipeline's config that applies to the task's process.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigSetting {
    /// The directive (`cpus`, `memory`, `ext.args`, …).
    pub directive: String,
    /// The value as written (a closure as its source).
    pub value: String,
    pub file: String,
    pub line: u32,
}

/// The answer of `debug_last_run`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskReport {
    pub run: String,
    pub task: TraceRow,
    /// The work directory, read; `None` when it could not be found.
    pub task_dir: Option<TaskDir>,
    pub asked: Resources,
    pub used: Usage,
    pub process: Option<ProcessSource>,
    pub notes: Vec<String>,
}

/// `failing_task(launch_dir, pipeline_dir)`: the last run's failing task with every path at
/// Nextflow's default.
pub fn failing_task(launch_dir: &Path, pipeline_dir: &Path) -> Result<TaskReport, RunsError> {
    RunQuery::new(launch_dir).failing_task(pipeline_dir)
}

impl RunQuery {
    /// The run's failing task, read from its trace and work directory; the process looked up
    /// in the pipeline at `pipeline_dir`.
    pub fn failing_task(&self, pipeline_dir: &Path) -> Result<TaskReport, RunsError> {
        let entry = self.history_entry()?;
        let run = entry
            .run_name
            .clone()
            .unwrap_or_else(|| entry.session_id.clone());
        let trace = self.trace_path().ok_or_else(|| RunsError::NoTrace {
            run: run.clone(),
            dir: self.launch_dir.clone(),
        })?;
        let file = self.files.open(&trace).map_err(|source| RunsError::Io {
            path: trace.clone(),
            source,
        })?;
        let summary = TraceSummary::read(BufReader::new(file))?;
        let task = summary
            .first_failed
            .ok_or_else(|| RunsError::NoFailedTask { run: run.clone() })?;
        let mut notes = Vec::new();
        let files = self.files.as_ref();
        let task_dir = match find_task_dir(files, &self.work_root(), &task) {
            Some(path) => match TaskDir::read_with(files, &path) {
                Ok(d) => Some(d),
                Err(e) => {
                    notes.push(e.to_string());
                    None
                }
            },
            None => {
                notes.push(format!(
                    "no work directory for `{}` under `{}`",
                    task.hash.as_deref().unwrap_or("-"),
                    self.work_root().display()
                ));
                None
            }
        };
        let asked = asked(&task, task_dir.as_ref());
        let used = used(&task, task_dir.as_ref());
        let pipeline =
            Pipeline::load(pipeline_dir).map_err(|source| RunsError::Pipeline { source })?;
        // Selectors are matched on the qualified name the trace gives, as Nextflow does
        // (`…:BAM_STATS_SAMTOOLS:.*` must not reach a FASTQC called elsewhere).
        let qualified = task.process_name();
        let process = task.simple_process_name().and_then(|name| {
            pipeline.process(name).map(|(file, p)| {
                let labels = p.labels();
                let settings = pipeline
                    .config
                    .process_settings(qualified.unwrap_or(&p.name), &labels)
                    .into_iter()
                    .take(MAX_SETTINGS)
                    .map(|ps| ConfigSetting {
                        directive: ps.directive,
                        value: ps.setting.value.to_string(),
                        file: ps.setting.file.clone(),
                        line: ps.setting.line,
                    })
                    .collect();
                ProcessSource {
                    name: p.name.clone(),
                    file: file.path.clone(),
                    line: p.line,
                    end_line: p.end_line,
                    container_images: p.container_images().iter().map(|s| s.to_string()).collect(),
                    labels: labels.iter().map(|s| s.to_string()).collect(),
                    settings,
                }
            })
        });
        if process.is_none() {
            notes.push(format!(
                "process `{}` is not declared in the pipeline at `{}`",
                task.simple_process_name().unwrap_or("-"),
                pipeline_dir.display()
            ));
        }
        Ok(TaskReport {
            run,
            task,
            task_dir,
            asked,
            used,
            process,
            notes,
        })
    }
}

/// The task's directory: the trace's `workdir` when it lies under the work root, else the
/// one directory of `work/ab/` whose name starts with the hash's other six characters.
fn find_task_dir(files: &dyn Files, work_root: &Path, task: &TraceRow) -> Option<PathBuf> {
    let (_, root) = files.open_dir(work_root).ok()?;
    // A trace is file content: a `workdir` outside the work root is not followed.
    if let Some(w) = &task.workdir
        && let Ok((_, dir)) = files.open_dir(Path::new(w))
        && dir.starts_with(&root)
        && dir != root
    {
        return Some(dir);
    }
    let (prefix, rest) = task.hash.as_deref()?.split_once('/')?;
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    if prefix.len() != 2 || !hex(prefix) || !hex(rest) {
        return None;
    }
    let mut matches: Vec<PathBuf> = files
        .list(&root.join(prefix))
        .ok()?
        .into_iter()
        .filter(|e| e.name.to_str().is_some_and(|n| n.starts_with(rest)))
        .filter(|e| e.stat.kind == Kind::Dir)
        .map(|e| e.path)
        .collect();
    matches.sort();
    matches.into_iter().next()
}

fn asked(task: &TraceRow, dir: Option<&TaskDir>) -> Resources {
    let mut r = Resources::default();
    if task.cpus.is_some()
        || task.memory.is_some()
        || task.time_ms.is_some()
        || task.container.is_some()
    {
        r.sources.push("trace".to_string());
    }
    r.cpus = task.cpus.map(f64::from);
    r.memory = task.memory;
    r.time_ms = task.time_ms;
    r.queue = task.queue.clone();
    r.container = task.container.clone();
    if let Some(w) = dir.and_then(|d| d.wrapper.as_ref()) {
        let before = r.clone();
        r.cpus = r.cpus.or(w.cpus);
        r.memory = r.memory.or(w.memory);
        r.time_ms = r.time_ms.or(w.time_ms);
        r.queue = r.queue.clone().or_else(|| w.queue.clone());
        r.container = r.container.clone().or_else(|| w.container.clone());
        if r != before {
            r.sources.push(".command.run".to_string());
        }
    }
    r
}

fn used(task: &TraceRow, dir: Option<&TaskDir>) -> Usage {
    let m = dir.and_then(|d| d.metrics.clone()).unwrap_or_default();
    Usage {
        realtime_ms: task.realtime_ms.or(m.realtime_ms),
        duration_ms: task.duration_ms,
        cpu_percent: task.cpu_percent.or(m.cpu_percent),
        peak_rss: task.peak_rss.or(m.peak_rss),
        peak_vmem: task.peak_vmem.or(m.peak_vmem),
        rchar: task.rchar.or(m.rchar),
        wchar: task.wchar.or(m.wchar),
    }
}

impl TaskReport {
    /// One fact per line (`task:`, `process:`, `status:`, `exit:`, `work dir:`, `state:`,
    /// `container:`, `asked …:`, `used …:`, `input:`, `input dangling:`, `output:`,
    /// `pipeline file:`, `note:`), then the files: `.command.sh` behind `script| `, the tails
    /// of `.command.err`, `.command.out` and `.command.log` behind `stderr| `, `stdout| `,
    /// `log| `.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let t = &self.task;
        fact(&mut out, "run", &self.run);
        fact(&mut out, "task", t.name.as_deref().unwrap_or("-"));
        if let Some(p) = t.process_name() {
            fact(&mut out, "process", p);
        }
        if let Some(h) = &t.hash {
            fact(&mut out, "hash", h);
        }
        fact(
            &mut out,
            "status",
            t.status.as_ref().map_or("-", |s| s.as_str()),
        );
        fact(
            &mut out,
            "exit",
            t.exit
                .map_or("none recorded".to_string(), |e| e.to_string()),
        );
        if let Some(d) = &self.task_dir {
            fact(&mut out, "work dir", d.path.display().to_string());
            let state = match d.state {
                TaskState::Exited(c) => format!("exited with {c} (.exitcode)"),
                TaskState::BadExitCode => ".exitcode holds no number".to_string(),
                TaskState::NoExitCode => {
                    "started, no .exitcode: killed (out of memory, a time limit, a kill) or still running"
                        .to_string()
                }
                TaskState::NotStarted => "never started (no .command.begin)".to_string(),
            };
            fact(&mut out, "state", state);
        }
        let a = &self.asked;
        if let Some(c) = &a.container {
            fact(&mut out, "container", c);
        }
        if let Some(c) = a.cpus {
            fact(&mut out, "asked cpus", trim_float(c));
        }
        if let Some(m) = a.memory {
            fact(&mut out, "asked memory", format_memory(m));
        }
        if let Some(ms) = a.time_ms {
            fact(&mut out, "asked time", format_duration(ms));
        }
        if let Some(q) = &a.queue {
            fact(&mut out, "asked queue", q);
        }
        if !a.sources.is_empty() {
            fact(&mut out, "asked from", a.sources.join(", "));
        }
        let u = &self.used;
        if let Some(ms) = u.realtime_ms {
            fact(&mut out, "used realtime", format_duration(ms));
        }
        if let Some(ms) = u.duration_ms {
            fact(&mut out, "used duration", format_duration(ms));
        }
        if let Some(c) = u.cpu_percent {
            fact(&mut out, "used cpu", format!("{c:.1}%"));
        }
        if let Some(m) = u.peak_rss {
            fact(&mut out, "used peak rss", format_memory(m));
        }
        if let Some(m) = u.peak_vmem {
            fact(&mut out, "used peak vmem", format_memory(m));
        }
        if let Some(m) = u.rchar {
            fact(&mut out, "used read", format_memory(m));
        }
        if let Some(m) = u.wchar {
            fact(&mut out, "used written", format_memory(m));
        }
        if let Some(p) = &self.process {
            fact(
                &mut out,
                "pipeline file",
                format!("{}:{}-{} (process {})", p.file, p.line, p.end_line, p.name),
            );
            for image in &p.container_images {
                fact(&mut out, "pipeline container", image);
            }
            for label in &p.labels {
                fact(&mut out, "pipeline label", label);
            }
            for c in &p.settings {
                fact(
                    &mut out,
                    "pipeline config",
                    format!("{}:{} {} = {}", c.file, c.line, c.directive, c.value),
                );
            }
        }
        if let Some(d) = &self.task_dir {
            for i in &d.inputs {
                let key = if i.dangling {
                    "input dangling"
                } else {
                    "input"
                };
                fact(&mut out, key, format!("{} -> {}", i.name, i.target));
            }
            for o in &d.outputs {
                let kind = if o.is_dir { "dir" } else { "file" };
                fact(
                    &mut out,
                    "output",
                    format!("{} ({kind}, {} bytes)", o.name, o.size),
                );
            }
            if d.more_entries > 0 {
                fact(&mut out, "entries not listed", d.more_entries.to_string());
            }
            for (name, why) in &d.refused {
                fact(&mut out, "not read", format!("{name}: {why}"));
            }
        }
        for n in &self.notes {
            fact(&mut out, "note", n);
        }
        if let Some(d) = &self.task_dir {
            if let Some(s) = &d.script {
                head_block(&mut out, "script", ".command.sh", s);
            }
            if let Some(e) = &d.err_tail {
                file_block(&mut out, "stderr", ".command.err", e);
            }
            if let Some(o) = &d.out_tail {
                file_block(&mut out, "stdout", ".command.out", o);
            }
            if let Some(l) = &d.log_tail {
                file_block(&mut out, "log", ".command.log", l);
            }
        }
        out
    }
}

fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}
