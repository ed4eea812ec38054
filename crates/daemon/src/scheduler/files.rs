//! The job files, their `.state` sidecars, and what the daemon keeps of the scheduler in its
//! state directory (the operator's approvals, each job's session, the projects it runs).
//!
//! A job file is `<dir>/<job_id>.md`; its sidecar `<dir>/<job_id>.state` holds its last and next
//! run and its run history. `<dir>` is `<config dir>/scheduler` (scope `user`) or
//! `<project>/.codaris/scheduler` (scope `project`). A project's `.codaris`, its `scheduler`
//! directory, a job file and a sidecar that is a symlink are refused: a cloned repository must
//! not make the daemon read or write outside it. Writes go to a temporary file renamed over the
//! old one, which replaces a link rather than following it.
//!
//! The approvals live in the state directory, which no tool can reach, so a run of a job (or a
//! repository) cannot approve itself.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use codaris_config::jobs::{Job, JobError, parse_job};
use codaris_tools::scheduler::JobScope;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::error::SchedulerError;

/// A job: its scope, the directory its file is in, its id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobKey {
    pub scope: JobScope,
    pub dir: PathBuf,
    pub id: String,
}

impl JobKey {
    pub fn file(&self) -> PathBuf {
        self.dir.join(format!("{}.md", self.id))
    }

    pub fn sidecar(&self) -> PathBuf {
        self.dir.join(format!("{}.state", self.id))
    }

    /// The project a project job belongs to (`<project>/.codaris/scheduler`).
    pub fn project(&self) -> Option<&Path> {
        (self.scope == JobScope::Project)
            .then(|| self.dir.parent().and_then(Path::parent))
            .flatten()
    }

    /// `user:nightly`, `project:nightly`
    pub fn label(&self) -> String {
        format!("{}:{}", self.scope.as_str(), self.id)
    }
}

/// The directory of `scope`'s jobs for a session working in `cwd`; a project's `.codaris` or
/// `scheduler` that is a symlink is refused.
pub fn dir_for(
    scope: JobScope,
    user_dir: Option<&Path>,
    project: &Path,
) -> Result<PathBuf, SchedulerError> {
    match scope {
        JobScope::User => user_dir
            .map(Path::to_path_buf)
            .ok_or(SchedulerError::NoUserDir),
        JobScope::Project => {
            let dot = project.join(".codaris");
            refuse_link(&dot)?;
            let dir = dot.join("scheduler");
            refuse_link(&dir)?;
            Ok(dir)
        }
    }
}

/// `path` when it is not a symlink (absent is fine).
pub fn refuse_link(path: &Path) -> Result<(), SchedulerError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(SchedulerError::Symlink {
            path: path.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

/// A job file read, with the digest of its bytes (what an approval names).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub job: Job,
    pub digest: String,
}

/// Reads `key`'s file; `Ok(None)` when there is none.
pub fn load(key: &JobKey) -> Result<Option<Loaded>, SchedulerError> {
    let path = key.file();
    refuse_link(&path)?;
    let text = match read_bounded(&path)? {
        Some(text) => text,
        None => return Ok(None),
    };
    let job = parse_job(&text).map_err(|source| SchedulerError::BadJob {
        job: key.label(),
        source,
    })?;
    Ok(Some(Loaded {
        job,
        digest: approval_digest(&text),
    }))
}

fn read_bounded(path: &Path) -> Result<Option<String>, SchedulerError> {
    let io = |source| SchedulerError::Io {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io(err)),
        Ok(meta) if meta.len() > codaris_config::jobs::JOB_MAX_BYTES as u64 => {
            return Err(SchedulerError::BadJob {
                job: path.display().to_string(),
                source: JobError::TooLong {
                    bytes: usize::try_from(meta.len()).unwrap_or(usize::MAX),
                },
            });
        }
        Ok(_) => {}
    }
    std::fs::read_to_string(path).map(Some).map_err(io)
}

/// The digest an approval names: the file's bytes but its front matter's `paused:` line, so
/// pausing and resuming an approved job keeps it approved while any other change does not.
pub fn approval_digest(text: &str) -> String {
    let Some((block, body)) = codaris_config::front_matter::split(text) else {
        return digest(text.as_bytes());
    };
    let mut kept = String::with_capacity(text.len());
    for line in block.split_inclusive('\n') {
        if !line.trim_start().starts_with("paused:") {
            kept.push_str(line);
        }
    }
    kept.push_str("---\n");
    kept.push_str(body);
    digest(kept.as_bytes())
}

/// The hex SHA-256 of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    let hash = sha2::Sha256::digest(bytes);
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `text` to `path` through a temporary file in the same directory, made first (with
/// the directories above it) when absent.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), SchedulerError> {
    let io = |source| SchedulerError::Io {
        path: path.to_path_buf(),
        source,
    };
    let Some(dir) = path.parent() else {
        return Err(SchedulerError::Symlink {
            path: path.to_path_buf(),
        });
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    // A leftover (or planted) temporary name is removed, never followed: `create_new` opens
    // only a file it made.
    let _ = std::fs::remove_file(&temp);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.map_err(io)
}

/// Writes `key`'s job file; returns the new digest.
pub fn save(key: &JobKey, job: &Job) -> Result<String, SchedulerError> {
    refuse_link(&key.dir)?;
    let text = job.render();
    write_atomic(&key.file(), &text)?;
    Ok(approval_digest(&text))
}

/// Removes `key`'s file and sidecar (either may be absent).
pub fn remove(key: &JobKey) -> Result<(), SchedulerError> {
    for path in [key.file(), key.sidecar()] {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(SchedulerError::Io { path, source }),
        }
    }
    Ok(())
}

/// The ids of the jobs in `dir` (its `*.md` files that are not symlinks), sorted.
pub fn ids_in(dir: &Path) -> Vec<String> {
    if refuse_link(dir).is_err() {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let id = name.strip_suffix(".md")?;
            codaris_config::jobs::is_job_id(id).then(|| id.to_owned())
        })
        .collect();
    ids.sort();
    ids
}

/// Why a run started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// Its schedule came round.
    Schedule,
    /// It was due while the daemon was down: run once, however many times it was missed.
    Missed,
    /// `codaris_scheduler_job_run` or `codaris scheduler run`.
    Manual,
}

/// How a run went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    /// Its turn ended on its own.
    Succeeded,
    Failed,
    Cancelled,
    /// The daemon stopped while it ran.
    Interrupted,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

/// One run of a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The session holding the run's transcript (a child of the job's session).
    pub run_session: String,
    pub trigger: Trigger,
    pub status: RunStatus,
    pub started: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<DateTime<Utc>>,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
}

/// The most runs a sidecar keeps.
pub const RUNS_KEPT: usize = 100;

/// A job's `.state` sidecar.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sidecar {
    #[serde(default)]
    pub last_run: Option<DateTime<Utc>>,
    #[serde(default)]
    pub next_run: Option<DateTime<Utc>>,
    /// Newest last.
    #[serde(default)]
    pub runs: Vec<RunRecord>,
}

/// `key`'s sidecar; a missing or unreadable one reads as empty (it is the daemon's own note).
pub fn sidecar(key: &JobKey) -> Sidecar {
    let path = key.sidecar();
    if refuse_link(&path).is_err() {
        return Sidecar::default();
    }
    std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

pub fn save_sidecar(key: &JobKey, sidecar: &Sidecar) -> Result<(), SchedulerError> {
    let text = serde_json::to_string_pretty(sidecar).unwrap_or_default();
    write_atomic(&key.sidecar(), &text)
}

/// Whether the operator approved `key`'s file as it is now (`digest`), by the latest approval
/// of each file (`approved`, read from the ledger); a user's job needs none.
pub fn is_approved(approved: &BTreeMap<PathBuf, String>, key: &JobKey, digest: &str) -> bool {
    key.scope == JobScope::User || approved.get(&key.file()).is_some_and(|d| d == digest)
}

/// What the daemon keeps of the scheduler in `<state dir>/scheduler/state.json` (the operator's
/// approvals are in the ledger).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    /// The projects whose jobs the scheduler reads (each one a session worked in or the
    /// operator approved a job of).
    #[serde(default)]
    pub projects: Vec<PathBuf>,
    /// A job's file → its session (the parent of its runs).
    #[serde(default)]
    pub sessions: BTreeMap<PathBuf, String>,
}

impl Kept {
    pub fn read(path: &Path) -> Kept {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    pub fn write(&self, path: &Path) -> Result<(), SchedulerError> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        write_atomic(path, &text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = "---\ndescription: d\nschedule: every 1h\npaused: false\n---\nGo.\n";

    fn key(dir: &Path) -> JobKey {
        JobKey {
            scope: JobScope::Project,
            dir: dir.to_path_buf(),
            id: "nightly".to_owned(),
        }
    }

    #[test]
    fn an_approval_survives_pausing_but_not_any_other_change() {
        let paused = JOB.replace("paused: false", "paused: true");
        assert_eq!(approval_digest(JOB), approval_digest(&paused));
        assert_ne!(
            approval_digest(JOB),
            approval_digest(&JOB.replace("Go.", "Go, and delete."))
        );
        assert_ne!(
            approval_digest(JOB),
            approval_digest(&JOB.replace("every 1h", "every 2h"))
        );
    }

    #[test]
    fn a_job_file_or_sidecar_that_is_a_symlink_is_neither_read_nor_written_through() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("scheduler");
        std::fs::create_dir_all(&dir).unwrap();
        let elsewhere = temp.path().join("elsewhere.md");
        std::fs::write(&elsewhere, JOB).unwrap();
        let key = key(&dir);
        std::os::unix::fs::symlink(&elsewhere, key.file()).unwrap();
        assert!(matches!(load(&key), Err(SchedulerError::Symlink { .. })));
        assert!(ids_in(&dir).is_empty(), "a linked job is not listed");
        // A planted link where the sidecar goes is replaced, never followed.
        std::fs::remove_file(key.file()).unwrap();
        let target = temp.path().join("target.txt");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, key.sidecar()).unwrap();
        assert_eq!(sidecar(&key), Sidecar::default());
        save_sidecar(&key, &Sidecar::default()).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(
            !std::fs::symlink_metadata(key.sidecar())
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // A project whose scheduler directory is a link has no jobs directory at all.
        let project = temp.path().join("proj");
        std::fs::create_dir_all(project.join(".codaris")).unwrap();
        std::os::unix::fs::symlink(&dir, project.join(".codaris/scheduler")).unwrap();
        assert!(matches!(
            dir_for(JobScope::Project, None, &project),
            Err(SchedulerError::Symlink { .. })
        ));
    }
}
