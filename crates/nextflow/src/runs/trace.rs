//! `trace.txt`: Nextflow's tab-separated trace, read as a stream. The header names the
//! columns (the default set, `trace.fields`, or raw numbers with `trace.raw`); a row is written
//! when its task ends, so a task still running has no row yet, and the rows a finished run
//! writes for tasks that never ended carry no exit status.

use std::collections::HashMap;
use std::io::{BufRead, Read};

use serde::Serialize;

use super::RunsError;
use super::units::{NA, parse_duration, parse_memory, parse_percent};

/// A line longer than this is cut there (the rest of it skipped), so one forged line cannot
/// take the memory of the whole file.
pub const MAX_LINE_BYTES: u64 = 64 * 1024;

/// A task's status as the trace writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    New,
    Submitted,
    Running,
    Completed,
    Failed,
    Cached,
    Aborted,
    /// A value Nextflow does not document, kept as written.
    Other(String),
}

impl TaskStatus {
    fn parse(text: &str) -> TaskStatus {
        match text {
            "NEW" => TaskStatus::New,
            "SUBMITTED" => TaskStatus::Submitted,
            "RUNNING" => TaskStatus::Running,
            "COMPLETED" => TaskStatus::Completed,
            "FAILED" => TaskStatus::Failed,
            "CACHED" => TaskStatus::Cached,
            "ABORTED" => TaskStatus::Aborted,
            other => TaskStatus::Other(other.to_string()),
        }
    }

    /// The word as Nextflow writes it.
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::New => "NEW",
            TaskStatus::Submitted => "SUBMITTED",
            TaskStatus::Running => "RUNNING",
            TaskStatus::Completed => "COMPLETED",
            TaskStatus::Failed => "FAILED",
            TaskStatus::Cached => "CACHED",
            TaskStatus::Aborted => "ABORTED",
            TaskStatus::Other(s) => s,
        }
    }

    /// Whether the task had not ended when its row was written.
    pub fn is_unfinished(&self) -> bool {
        matches!(
            self,
            TaskStatus::New | TaskStatus::Submitted | TaskStatus::Running
        )
    }
}

/// One row, with the columns the run tools use; a column the header does not name, or a `-`,
/// is `None`.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct TraceRow {
    /// 1-based line of the row in the trace.
    pub line: u64,
    pub task_id: Option<String>,
    /// The short hash, `ab/cdef12`: the first characters of the task's work directory.
    pub hash: Option<String>,
    pub native_id: Option<String>,
    /// The task name, `PROCESS (tag)`.
    pub name: Option<String>,
    /// The `process` column (fully qualified, `WF:SUB:PROC`), when the header has it.
    pub process: Option<String>,
    pub tag: Option<String>,
    pub status: Option<TaskStatus>,
    pub exit: Option<i64>,
    pub submit: Option<String>,
    pub duration_ms: Option<u64>,
    pub realtime_ms: Option<u64>,
    pub cpu_percent: Option<f64>,
    pub mem_percent: Option<f64>,
    pub peak_rss: Option<u64>,
    pub peak_vmem: Option<u64>,
    pub rss: Option<u64>,
    pub vmem: Option<u64>,
    pub rchar: Option<u64>,
    pub wchar: Option<u64>,
    pub workdir: Option<String>,
    pub container: Option<String>,
    pub attempt: Option<u32>,
    /// Resources asked (`cpus`, `memory`, `time`, `disk`, `queue` columns).
    pub cpus: Option<u32>,
    pub memory: Option<u64>,
    pub time_ms: Option<u64>,
    pub disk: Option<u64>,
    pub queue: Option<String>,
}

impl TraceRow {
    /// The process name: the `process` column, else the task name without its ` (tag)`.
    pub fn process_name(&self) -> Option<&str> {
        if let Some(p) = &self.process {
            return Some(p);
        }
        let name = self.name.as_deref()?;
        Some(match name.find(" (") {
            Some(i) if name.ends_with(')') => name.get(..i).unwrap_or(name),
            _ => name,
        })
    }

    /// The process's own name, without the workflow scope (`NFCORE_X:SUB:FASTQC` → `FASTQC`),
    /// as it is declared in the pipeline.
    pub fn simple_process_name(&self) -> Option<&str> {
        self.process_name()
            .map(|p| p.rsplit(':').next().unwrap_or(p))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Column {
    TaskId,
    Hash,
    NativeId,
    Name,
    Process,
    Tag,
    Status,
    Exit,
    Submit,
    Duration,
    Realtime,
    Cpu,
    Mem,
    PeakRss,
    PeakVmem,
    Rss,
    Vmem,
    Rchar,
    Wchar,
    Workdir,
    Container,
    Attempt,
    Cpus,
    Memory,
    Time,
    Disk,
    Queue,
    Ignored,
}

impl Column {
    fn from_header(name: &str) -> Column {
        // `name:format` is how trace.fields asks for a format; the header keeps the name.
        let name = name.split(':').next().unwrap_or(name).trim();
        match name {
            "task_id" => Column::TaskId,
            "hash" => Column::Hash,
            "native_id" => Column::NativeId,
            "name" => Column::Name,
            "process" => Column::Process,
            "tag" => Column::Tag,
            "status" => Column::Status,
            "exit" => Column::Exit,
            "submit" => Column::Submit,
            "duration" => Column::Duration,
            "realtime" => Column::Realtime,
            "%cpu" => Column::Cpu,
            "%mem" => Column::Mem,
            "peak_rss" => Column::PeakRss,
            "peak_vmem" => Column::PeakVmem,
            "rss" => Column::Rss,
            "vmem" => Column::Vmem,
            "rchar" => Column::Rchar,
            "wchar" => Column::Wchar,
            "workdir" => Column::Workdir,
            "container" => Column::Container,
            "attempt" => Column::Attempt,
            "cpus" => Column::Cpus,
            "memory" => Column::Memory,
            "time" => Column::Time,
            "disk" => Column::Disk,
            "queue" => Column::Queue,
            _ => Column::Ignored,
        }
    }
}

/// The trace, read one row at a time.
#[derive(Debug)]
pub struct Trace;

impl Trace {
    /// Starts reading a trace: the header is read now (an empty input, or a first line that
    /// names no known column, is an error), the rows as the iterator is driven.
    pub fn read<R: BufRead>(reader: R) -> Result<TraceReader<R>, RunsError> {
        let mut rows = TraceReader {
            reader,
            columns: Vec::new(),
            buf: Vec::with_capacity(256),
            line: 0,
        };
        let header = match rows.next_line()? {
            Some(h) => h,
            None => return Err(RunsError::TraceEmpty),
        };
        rows.columns = header.split('\t').map(Column::from_header).collect();
        if !rows.columns.contains(&Column::Status) && !rows.columns.contains(&Column::Hash) {
            return Err(RunsError::TraceHeader {
                header: header.chars().take(120).collect(),
            });
        }
        Ok(rows)
    }
}

/// Rows of a trace, in file order.
#[derive(Debug)]
pub struct TraceReader<R> {
    reader: R,
    columns: Vec<Column>,
    buf: Vec<u8>,
    line: u64,
}

impl<R: BufRead> TraceReader<R> {
    /// The next line, CR stripped, invalid UTF-8 replaced, cut at [`MAX_LINE_BYTES`].
    fn next_line(&mut self) -> Result<Option<String>, RunsError> {
        self.buf.clear();
        let n = (&mut self.reader)
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', &mut self.buf)
            .map_err(|source| RunsError::TraceRead { source })?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        } else if n as u64 == MAX_LINE_BYTES {
            skip_rest_of_line(&mut self.reader)?;
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some(String::from_utf8_lossy(&self.buf).into_owned()))
    }

    fn parse_row(&self, text: &str) -> TraceRow {
        let mut row = TraceRow {
            line: self.line,
            ..TraceRow::default()
        };
        for (column, value) in self.columns.iter().zip(text.split('\t')) {
            let value = value.trim();
            if value.is_empty() || value == NA {
                continue;
            }
            let owned = || Some(value.to_string());
            match column {
                Column::TaskId => row.task_id = owned(),
                Column::Hash => row.hash = owned(),
                Column::NativeId => row.native_id = owned(),
                Column::Name => row.name = owned(),
                Column::Process => row.process = owned(),
                Column::Tag => row.tag = owned(),
                Column::Status => row.status = Some(TaskStatus::parse(value)),
                Column::Exit => row.exit = value.parse().ok(),
                Column::Submit => row.submit = owned(),
                Column::Duration => row.duration_ms = parse_duration(value),
                Column::Realtime => row.realtime_ms = parse_duration(value),
                Column::Cpu => row.cpu_percent = parse_percent(value),
                Column::Mem => row.mem_percent = parse_percent(value),
                Column::PeakRss => row.peak_rss = parse_memory(value),
                Column::PeakVmem => row.peak_vmem = parse_memory(value),
                Column::Rss => row.rss = parse_memory(value),
                Column::Vmem => row.vmem = parse_memory(value),
                Column::Rchar => row.rchar = parse_memory(value),
                Column::Wchar => row.wchar = parse_memory(value),
                Column::Workdir => row.workdir = owned(),
                Column::Container => row.container = owned(),
                Column::Attempt => row.attempt = value.parse().ok(),
                Column::Cpus => row.cpus = value.parse().ok(),
                Column::Memory => row.memory = parse_memory(value),
                Column::Time => row.time_ms = parse_duration(value),
                Column::Disk => row.disk = parse_memory(value),
                Column::Queue => row.queue = owned(),
                Column::Ignored => {}
            }
        }
        row
    }
}

fn skip_rest_of_line<R: BufRead>(reader: &mut R) -> Result<(), RunsError> {
    loop {
        let chunk = reader
            .fill_buf()
            .map_err(|source| RunsError::TraceRead { source })?;
        if chunk.is_empty() {
            return Ok(());
        }
        match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                return Ok(());
            }
            None => {
                let len = chunk.len();
                reader.consume(len);
            }
        }
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<TraceRow, RunsError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.next_line() {
                Err(e) => return Some(Err(e)),
                Ok(None) => return None,
                Ok(Some(text)) if text.trim().is_empty() => continue,
                Ok(Some(text)) => return Some(Ok(self.parse_row(&text))),
            }
        }
    }
}

/// How many failed tasks are remembered while looking for one that was not retried: enough
/// for any real run's failures, small enough that a trace of failures stays bounded.
const MAX_PENDING_FAILURES: usize = 256;

/// What a whole trace says, gathered in one pass in bounded memory.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct TraceSummary {
    pub rows: u64,
    pub completed: u64,
    /// Rows with status FAILED, including attempts that were retried.
    pub failed: u64,
    pub cached: u64,
    pub aborted: u64,
    /// Rows for tasks that had not ended (NEW, SUBMITTED, RUNNING): written when a run stops.
    pub unfinished: u64,
    pub other: u64,
    /// FAILED rows whose task name later completed (a retry that worked).
    pub retried: u64,
    /// The first FAILED row whose task did not complete later, else the first FAILED row.
    pub first_failed: Option<TraceRow>,
    /// The last row whose task had not ended.
    pub last_unfinished: Option<TraceRow>,
    /// The sum of the `realtime` column.
    pub realtime_ms: u64,
}

impl TraceSummary {
    /// Reads a whole trace.
    pub fn read<R: BufRead>(reader: R) -> Result<TraceSummary, RunsError> {
        let mut acc = Accumulator::default();
        for row in Trace::read(reader)? {
            acc.add(row?);
        }
        Ok(acc.finish())
    }
}

/// Folds rows into a summary; run_status also keeps the hashes it saw.
#[derive(Debug, Default)]
pub(crate) struct Accumulator {
    summary: TraceSummary,
    /// Failed rows not (yet) seen completed, by task name, with the order they came in.
    pending: HashMap<String, (u64, TraceRow)>,
    first_any_failed: Option<TraceRow>,
    order: u64,
}

impl Accumulator {
    pub(crate) fn add(&mut self, row: TraceRow) {
        let s = &mut self.summary;
        s.rows += 1;
        s.realtime_ms = s.realtime_ms.saturating_add(row.realtime_ms.unwrap_or(0));
        match &row.status {
            Some(TaskStatus::Completed) | Some(TaskStatus::Cached) => {
                if row.status == Some(TaskStatus::Completed) {
                    s.completed += 1;
                } else {
                    s.cached += 1;
                }
                if let Some(name) = &row.name
                    && self.pending.remove(name).is_some()
                {
                    s.retried += 1;
                }
            }
            Some(TaskStatus::Failed) => {
                s.failed += 1;
                if self.first_any_failed.is_none() {
                    self.first_any_failed = Some(row.clone());
                }
                if let Some(name) = row.name.clone()
                    && (self.pending.len() < MAX_PENDING_FAILURES
                        || self.pending.contains_key(&name))
                {
                    self.order += 1;
                    let order = self.order;
                    self.pending.entry(name).or_insert((order, row));
                }
            }
            Some(TaskStatus::Aborted) => s.aborted += 1,
            Some(status) if status.is_unfinished() => {
                s.unfinished += 1;
                s.last_unfinished = Some(row);
            }
            _ => s.other += 1,
        }
    }

    pub(crate) fn finish(mut self) -> TraceSummary {
        let first = self
            .pending
            .into_values()
            .min_by_key(|(order, _)| *order)
            .map(|(_, row)| row);
        self.summary.first_failed = first.or(self.first_any_failed);
        self.summary
    }
}
