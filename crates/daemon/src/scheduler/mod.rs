//! The scheduler: jobs as Markdown files (`files.rs`), each due time kept in one queue
//! (`queue.rs`) with one timer for the earliest (`clock.rs`), and each run an agent task in the
//! background: a child session of the job's session, holding the run's transcript
//! (`runs.rs`). Off unless `[scheduler] enabled`; see `docs/scheduler.md`.
//!
//! The rules a person relies on, each enforced here:
//! - at most one run of a job at a time (a second is refused while one is in flight);
//! - a project job runs only while the operator's approval names its file's digest;
//! - a run gets the operating and permission mode its front matter names, never more, and a
//!   card it raises is denied and recorded (`host/asking.rs`), since nobody watches it;
//! - a job due while the daemon was down runs once at the next start (trigger `missed`), not
//!   once per missed time, then keeps its schedule from then.

pub mod clock;
pub mod error;
pub mod files;
pub mod host;
pub mod queue;
mod runs;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use chrono::{DateTime, Utc};
use tokio::sync::Notify;

use crate::config::Config;
use crate::sessions::turns::Services;
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::SchedulerError;
use files::{JobKey, Kept, Sidecar, Trigger};
use queue::DueQueue;

/// The environment variable that starts the daemon on a hand-moved clock at the instant it
/// names (RFC 3339), moved with `codaris scheduler clock`: for tests, which never wait for a
/// schedule to come round. The system clock otherwise.
pub const CLOCK_VAR: &str = "CODARIS_SCHEDULER_CLOCK";

/// The scheduler of one daemon.
pub struct Scheduler {
    enabled: bool,
    user_dir: Option<PathBuf>,
    home: Option<PathBuf>,
    agents_dir: Option<PathBuf>,
    kept_path: PathBuf,
    clock: Arc<dyn Clock>,
    inner: Mutex<Inner>,
    /// Wakes the loop to re-arm its one timer after a change of the due times.
    changed: Notify,
    services: OnceLock<Arc<Services>>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("enabled", &self.enabled)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

struct Inner {
    queue: DueQueue<JobKey>,
    /// The job's run in flight: its run session.
    running: HashMap<JobKey, String>,
    /// Each project job file's latest approved digest, from the ledger.
    approved: std::collections::BTreeMap<PathBuf, String>,
    kept: Kept,
}

impl Scheduler {
    pub fn new(config: &Config, clock: Arc<dyn Clock>) -> Arc<Scheduler> {
        let kept_path = config.state_dir.join("scheduler").join("state.json");
        Arc::new(Scheduler {
            enabled: config.scheduler.enabled,
            user_dir: config.scheduler.user_dir.clone(),
            home: config.home.clone(),
            agents_dir: config.agents_dir.clone(),
            inner: Mutex::new(Inner {
                queue: DueQueue::default(),
                running: HashMap::new(),
                approved: std::collections::BTreeMap::new(),
                kept: Kept::read(&kept_path),
            }),
            kept_path,
            clock,
            changed: Notify::new(),
            services: OnceLock::new(),
        })
    }

    /// The clock `CLOCK_VAR` selects: a hand-moved one at its instant, else the system's.
    pub fn clock_from_env() -> Arc<dyn Clock> {
        match std::env::var(CLOCK_VAR)
            .ok()
            .and_then(|v| DateTime::parse_from_rfc3339(&v).ok())
        {
            Some(start) => {
                tracing::warn!(start = %start, "the scheduler runs on a hand-moved clock ({CLOCK_VAR})");
                Arc::new(ManualClock::new(start.with_timezone(&Utc)))
            }
            None => Arc::new(SystemClock),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Gives the scheduler the turns' services and starts it: every known job read, a missed
    /// one run once, and the loop that waits for the next.
    pub fn start(self: &Arc<Self>, services: Arc<Services>) {
        if !self.enabled {
            return;
        }
        // The approvals are the ledger's: the latest of each file counts (ids grow).
        match services.ledger.job_approvals(None) {
            Ok((approvals, corrupt)) => {
                for bad in corrupt {
                    tracing::warn!(
                        ?bad,
                        "a job approval does not read; that job is not approved"
                    );
                }
                let mut inner = self.inner();
                for approval in approvals {
                    inner
                        .approved
                        .insert(PathBuf::from(approval.file), approval.digest);
                }
            }
            Err(err) => {
                tracing::error!(%err, "the job approvals could not be read; no project job runs")
            }
        }
        if self.services.set(services).is_err() {
            return;
        }
        let now = self.clock.now();
        let mut missed = Vec::new();
        for key in self.known_keys() {
            // A run the last daemon left running ended with it.
            let mut sidecar = files::sidecar(&key);
            let mut touched = false;
            for run in &mut sidecar.runs {
                if run.status == files::RunStatus::Running {
                    run.status = files::RunStatus::Interrupted;
                    run.ended = Some(now);
                    touched = true;
                }
            }
            if touched && let Err(err) = files::save_sidecar(&key, &sidecar) {
                tracing::warn!(%err, "a job's state could not be written");
            }
            if let Some(due) = sidecar.next_run
                && due <= now
                && self.runnable(&key).is_ok_and(|loaded| !loaded.job.paused)
            {
                missed.push(key.clone());
            }
            self.refresh(&key, false);
        }
        let scheduler = self.clone();
        tokio::spawn(async move {
            for key in missed {
                tracing::info!(job = %key.label(), "a job was due while codarisd was down; it runs once now");
                if let Err(err) = scheduler.start_run(&key, Trigger::Missed, None).await {
                    tracing::warn!(job = %key.label(), %err, "a missed job could not run");
                }
                scheduler.refresh(&key, true);
            }
            scheduler.run_loop().await;
        });
    }

    /// Waits for the earliest due job with one timer, fires what is due, re-arms on a change.
    async fn run_loop(self: Arc<Self>) {
        loop {
            let changed = self.changed.notified();
            let first = self.inner().queue.first().map(|(at, _)| at);
            let wait = match first {
                Some(at) => self.clock.until(at),
                None => Box::pin(std::future::pending()),
            };
            tokio::select! {
                () = changed => continue,
                () = wait => {}
            }
            let now = self.clock.now();
            let due = self.inner().queue.pop_due(now);
            for key in due {
                // Read again when due: a job paused (or changed and not yet approved) since it
                // was queued does not run.
                if self.runnable(&key).is_ok_and(|loaded| !loaded.job.paused)
                    && let Err(err) = self.start_run(&key, Trigger::Schedule, None).await
                {
                    tracing::info!(job = %key.label(), %err, "a due job did not run");
                }
                self.refresh(&key, true);
            }
        }
    }

    /// Every job of the user's directory and of the known projects.
    fn known_keys(&self) -> Vec<JobKey> {
        let mut keys = Vec::new();
        if let Some(dir) = &self.user_dir {
            keys.extend(files::ids_in(dir).into_iter().map(|id| JobKey {
                scope: codaris_tools::scheduler::JobScope::User,
                dir: dir.clone(),
                id,
            }));
        }
        let projects = self.inner().kept.projects.clone();
        for project in projects {
            if let Ok(dir) =
                files::dir_for(codaris_tools::scheduler::JobScope::Project, None, &project)
            {
                keys.extend(files::ids_in(&dir).into_iter().map(|id| JobKey {
                    scope: codaris_tools::scheduler::JobScope::Project,
                    dir: dir.clone(),
                    id,
                }));
            }
        }
        keys
    }

    /// Reads `key` again and sets its next due time: kept from its sidecar while still ahead,
    /// else computed from now (`recompute`: always from now, after a run or a change). A
    /// paused, unapproved, unreadable or deleted job is due never.
    fn refresh(&self, key: &JobKey, recompute: bool) -> Option<DateTime<Utc>> {
        let now = self.clock.now();
        let next = match self.runnable(key) {
            Ok(loaded) if !loaded.job.paused => {
                let mut sidecar = files::sidecar(key);
                let kept = sidecar.next_run.filter(|at| !recompute && *at > now);
                let next = kept.or_else(|| {
                    let schedule = loaded.job.schedule().ok()?;
                    let zone = loaded.job.zone().ok()?;
                    schedule.next_after(now, zone)
                });
                if sidecar.next_run != next {
                    sidecar.next_run = next;
                    if let Err(err) = files::save_sidecar(key, &sidecar) {
                        tracing::warn!(job = %key.label(), %err, "a job's state could not be written");
                    }
                }
                next
            }
            _ => None,
        };
        self.inner().queue.set(key, next);
        self.changed.notify_one();
        next
    }

    /// `key`'s job when it may run: it reads, and a project job is approved as it is.
    fn runnable(&self, key: &JobKey) -> Result<files::Loaded, SchedulerError> {
        let loaded = files::load(key)?.ok_or_else(|| SchedulerError::NoJob { job: key.label() })?;
        if !self.is_approved(key, &loaded.digest) {
            return Err(SchedulerError::NotApproved {
                job: key.label(),
                id: key.id.clone(),
            });
        }
        Ok(loaded)
    }

    fn save_kept(&self, change: impl FnOnce(&mut Kept)) -> Result<(), SchedulerError> {
        let kept = {
            let mut inner = self.inner();
            change(&mut inner.kept);
            inner.kept.clone()
        };
        kept.write(&self.kept_path)
    }

    /// Remembers `project` as one whose jobs the scheduler reads.
    fn know_project(&self, project: &Path) {
        if self.inner().kept.projects.iter().any(|p| p == project) {
            return;
        }
        let project = project.to_path_buf();
        if let Err(err) = self.save_kept(|kept| kept.projects.push(project)) {
            tracing::warn!(%err, "the scheduler's state could not be written");
        }
    }

    /// The key of `id` in `scope` for a session (or person) working in `cwd`.
    fn key(
        &self,
        scope: codaris_tools::scheduler::JobScope,
        id: &str,
        cwd: &Path,
    ) -> Result<JobKey, SchedulerError> {
        let project = project_root(cwd);
        let dir = files::dir_for(scope, self.user_dir.as_deref(), &project)?;
        if scope == codaris_tools::scheduler::JobScope::Project {
            self.know_project(&project);
        }
        Ok(JobKey {
            scope,
            dir,
            id: id.to_owned(),
        })
    }

    fn is_approved(&self, key: &JobKey, digest: &str) -> bool {
        files::is_approved(&self.inner().approved, key, digest)
    }

    /// The operator approves `key`'s file as it is now: recorded in the ledger with its digest
    /// before it counts, so a changed file needs approving again.
    pub async fn approve(
        &self,
        scope: codaris_tools::scheduler::JobScope,
        id: &str,
        cwd: &Path,
    ) -> Result<(JobKey, String), SchedulerError> {
        let key = self.key(scope, id, cwd)?;
        let loaded =
            files::load(&key)?.ok_or_else(|| SchedulerError::NoJob { job: key.label() })?;
        let services = self.services.get().ok_or(SchedulerError::Disabled)?;
        let file = key.file();
        let session = self.inner().kept.sessions.get(&file).cloned();
        let record = codaris_ledger::JobApprovalRecord::new(
            session.unwrap_or_default(),
            key.scope.as_str(),
            key.id.clone(),
            file.display().to_string(),
            loaded.digest.clone(),
            crate::sessions::store::now_ms(),
        );
        let ledger = services.ledger.clone();
        let record_error = |reason: String| SchedulerError::Record { reason };
        tokio::task::spawn_blocking(move || ledger.append_job_approval(&record))
            .await
            .map_err(|err| record_error(err.to_string()))?
            .map_err(|err| record_error(err.to_string()))?;
        self.inner().approved.insert(file, loaded.digest.clone());
        tracing::info!(job = %key.label(), digest = %loaded.digest, "the operator approved a project job");
        self.refresh(&key, false);
        Ok((key, loaded.digest))
    }

    /// Moves a hand-moved clock; `false` on the system clock.
    pub fn set_clock(&self, to: DateTime<Utc>) -> bool {
        let moved = self.clock.set(to);
        if moved {
            self.changed.notify_one();
        }
        moved
    }

    /// How many jobs are scheduled, and when the first is due.
    pub fn scheduled(&self) -> (u32, Option<DateTime<Utc>>) {
        let inner = self.inner();
        (
            u32::try_from(inner.queue.len()).unwrap_or(u32::MAX),
            inner.queue.first().map(|(at, _)| at),
        )
    }

    /// `manual` for a hand-moved clock, else `system`.
    pub fn clock_name(&self) -> &'static str {
        self.clock.name()
    }

    fn sidecar_of(&self, key: &JobKey) -> Sidecar {
        files::sidecar(key)
    }
}

/// The project a session working in `cwd` belongs to: `cwd` itself (a project job lives in
/// `<session cwd>/.codaris/scheduler`, as the catalogue says).
fn project_root(cwd: &Path) -> PathBuf {
    cwd.to_path_buf()
}
