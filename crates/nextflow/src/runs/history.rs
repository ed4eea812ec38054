//! `.nextflow/history`: one tab-separated row per run, written by Nextflow's
//! `nextflow.util.HistoryFile` when a run starts and rewritten with its status and duration when
//! it ends. Columns: timestamp (`yyyy-MM-dd HH:mm:ss`, local time), duration, run name, status
//! (`OK`, `ERR`, `-` while running), revision id, session id, command line; `-` for no value.
//! Rows of two columns (session id, command) are from Nextflow before run names existed.

use serde::Serialize;

use super::units::{NA, parse_duration};

/// How a run ended, as the history records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryStatus {
    Ok,
    Err,
    /// No status yet: the run is in progress (or Nextflow died before writing one).
    Running,
    /// A status Nextflow does not write, kept as written.
    Other(String),
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryEntry {
    /// 1-based line in the file.
    pub line: usize,
    /// As written, local time without a zone.
    pub timestamp: Option<String>,
    pub duration_ms: Option<u64>,
    pub run_name: Option<String>,
    pub status: HistoryStatus,
    pub revision: Option<String>,
    pub session_id: String,
    pub command: Option<String>,
}

impl HistoryEntry {
    pub fn is_running(&self) -> bool {
        self.status == HistoryStatus::Running
    }
}

/// The history file, read whole (Nextflow keeps it short).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct History {
    pub entries: Vec<HistoryEntry>,
    /// Lines that are not history rows (1-based), skipped as Nextflow skips them.
    pub skipped: Vec<usize>,
}

impl History {
    /// Reads the file's text. CRLF line ends are accepted; a line that is not a row is
    /// skipped and noted.
    pub fn read(text: &str) -> History {
        let mut history = History::default();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            if line.trim().is_empty() {
                continue;
            }
            match parse_row(i + 1, line) {
                Some(entry) => history.entries.push(entry),
                None => history.skipped.push(i + 1),
            }
        }
        history
    }

    /// The last run, as `nextflow log last` means it.
    pub fn last(&self) -> Option<&HistoryEntry> {
        self.entries.last()
    }

    /// A run by its name, else by its session id or a prefix of it (the last such row: a
    /// resumed session has one row per run).
    pub fn find(&self, run: &str) -> Option<&HistoryEntry> {
        if let Some(e) = self
            .entries
            .iter()
            .rev()
            .find(|e| e.run_name.as_deref() == Some(run))
        {
            return Some(e);
        }
        if run.len() >= 4 && run.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return self
                .entries
                .iter()
                .rev()
                .find(|e| e.session_id.starts_with(run));
        }
        None
    }
}

fn field(value: &str) -> Option<String> {
    let v = value.trim();
    (!v.is_empty() && v != NA).then(|| v.to_string())
}

fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.chars().enumerate().all(|(i, c)| {
            matches!(i, 8 | 13 | 18 | 23) == (c == '-') && (c == '-' || c.is_ascii_hexdigit())
        })
}

fn parse_row(line: usize, text: &str) -> Option<HistoryEntry> {
    // Nextflow writes `-` for an empty column and splits with `tokenize('\t')`, which drops
    // empty ones; a row written by another tool may leave the status empty instead, so the
    // plain split is tried first.
    let raw: Vec<&str> = text.split('\t').collect();
    let cols: Vec<&str> = if raw.len() == 7 || raw.len() == 8 {
        raw
    } else {
        raw.into_iter().filter(|c| !c.is_empty()).collect()
    };
    match cols.as_slice() {
        [session, command] if is_uuid(session.trim()) => Some(HistoryEntry {
            line,
            timestamp: None,
            duration_ms: None,
            run_name: None,
            status: HistoryStatus::Running,
            revision: None,
            session_id: session.trim().to_string(),
            command: field(command),
        }),
        // Seven columns is the format; eight is a branch of Nextflow that put a lineage id
        // before the command. Either way the command is last.
        [ts, duration, name, status, revision, session, .., command]
            if (cols.len() == 7 || cols.len() == 8) && is_uuid(session.trim()) =>
        {
            let status = match status.trim() {
                "OK" => HistoryStatus::Ok,
                "ERR" => HistoryStatus::Err,
                "" | NA => HistoryStatus::Running,
                other => HistoryStatus::Other(other.to_string()),
            };
            Some(HistoryEntry {
                line,
                timestamp: field(ts),
                duration_ms: field(duration).and_then(|d| parse_duration(&d)),
                run_name: field(name),
                status,
                revision: field(revision),
                session_id: session.trim().to_string(),
                command: field(command),
            })
        }
        _ => None,
    }
}
