//! Every session's background task pool, held by the daemon: made on a session's first command,
//! owned by the session through its [`PoolLease`], and the one channel their completion notices
//! arrive on. What one pool does with its tasks is `pool.rs`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tokio::sync::mpsc;

use super::contain::{Containment, Tracker, kill_marked, remove_leftover_temp_dirs, temp_prefix};
use super::limits::{LimitStatus, Limiter};
use super::pool_lease::PoolLease;
use super::pool_lease::{HeldPools, held};
use super::sandbox::SandboxPaths;
use super::spawner::Spawner;
use super::task::TaskNotice;

use super::pool::{PoolConfig, Shared, ShellError, TaskPool};

/// Every session's pool, and the one channel their completion notices arrive on.
#[derive(Debug)]
pub struct ShellPools {
    config: PoolConfig,
    pools: HeldPools,
    notices: mpsc::UnboundedSender<TaskNotice>,
    sandbox: Arc<SandboxPaths>,
    /// Names this daemon's cgroup and temp dirs, so that its next start finds what it left.
    owner: String,
    /// Made on first use: a pool that never runs a command needs no cgroup nor thread.
    tracker: OnceLock<Tracker>,
    /// Where the sessions' limits are kept, chosen on first use after the tracker.
    limiter: OnceLock<Limiter>,
    /// Numbers the sessions' marks.
    next_session: AtomicU64,
    spawner: Mutex<Option<Arc<Spawner>>>,
}

/// Tells apart the pools of one process that name no owner (tests).
static UNNAMED: AtomicU64 = AtomicU64::new(1);

impl ShellPools {
    /// The pools and the receiver of their notices, which the daemon forwards into sessions.
    pub fn new(config: PoolConfig) -> (Self, mpsc::UnboundedReceiver<TaskNotice>) {
        let (notices, receiver) = mpsc::unbounded_channel();
        let owner = format!(
            "p{}-{}",
            std::process::id(),
            UNNAMED.fetch_add(1, Ordering::Relaxed)
        );
        let pools = Self {
            config,
            pools: HeldPools::default(),
            notices,
            sandbox: Arc::new(SandboxPaths::default()),
            owner,
            tracker: OnceLock::new(),
            limiter: OnceLock::new(),
            next_session: AtomicU64::new(1),
            spawner: Mutex::new(None),
        };
        (pools, receiver)
    }

    /// Directories outside the fence that commands may write to under Landlock as well (a
    /// tool's cache such as `~/.nextflow` or `~/.cargo`), as the configuration names them.
    #[must_use]
    pub fn with_extra_writable(mut self, dirs: Vec<PathBuf>) -> Self {
        Arc::make_mut(&mut self.sandbox).writable = dirs;
        self
    }

    /// What commands may read beyond the fence and what they may never touch (see
    /// [`SandboxPaths`]); replaces `with_extra_writable`'s list with `paths.writable`.
    #[must_use]
    pub fn with_sandbox(mut self, paths: SandboxPaths) -> Self {
        self.sandbox = Arc::new(paths);
        self
    }

    /// Names the daemon these pools belong to (`owner_of(state dir)`): its cgroup is
    /// `codaris-<owner>-<pid>` and its temp dirs `codaris-shell-<owner>-*`, which the next start of
    /// the same daemon cleans up (`clean_leftovers`).
    #[must_use]
    pub fn with_owner(mut self, owner: &str) -> Self {
        owner.clone_into(&mut self.owner);
        self
    }

    pub fn config(&self) -> PoolConfig {
        self.config
    }

    /// Which mechanism keeps the sessions' processes (creating the cgroup subtree if it can).
    pub fn containment(&self) -> Containment {
        self.tracker().containment()
    }

    /// The sessions' process and memory limits and what keeps them.
    pub fn limits(&self) -> LimitStatus {
        self.limiter().status()
    }

    fn limiter(&self) -> &Limiter {
        self.limiter.get_or_init(|| {
            let v2_root = self.tracker().v2_root();
            Limiter::new(
                self.config.limits,
                &self.owner,
                self.config.cgroups,
                v2_root,
            )
        })
    }

    fn tracker(&self) -> &Tracker {
        self.tracker.get_or_init(|| {
            if self.config.cgroups {
                Tracker::new(&self.owner)
            } else {
                Tracker::without_cgroup(
                    &self.owner,
                    "switched off (PoolConfig::cgroups)".to_owned(),
                )
            }
        })
    }

    /// Removes what a killed daemon of the same owner left: its cgroup subtree with every
    /// process still in it, every process still carrying its mark, and its private temp
    /// dirs. How many temp dirs went.
    pub fn clean_leftovers(&self) -> usize {
        // Creating the subtrees replaces (kills) a leftover one.
        self.tracker();
        self.limiter();
        let prefix = format!("{}/", self.owner);
        kill_marked(|mark| mark.starts_with(&prefix));
        remove_leftover_temp_dirs(&std::env::temp_dir(), &self.owner)
    }

    fn spawner(&self) -> Result<Arc<Spawner>, ShellError> {
        let mut slot = self.spawner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(spawner) = slot.as_ref() {
            return Ok(spawner.clone());
        }
        let spawner = Arc::new(Spawner::start().map_err(|source| ShellError::Spawner { source })?);
        *slot = Some(spawner.clone());
        Ok(spawner)
    }

    /// Makes the session the owner of its pool: the pool (made on first use, by a command)
    /// lives until the last lease of the session is dropped, which ends it.
    pub fn lease(&self, session_id: &str) -> PoolLease {
        held(&self.pools)
            .entry(session_id.to_owned())
            .or_default()
            .leases += 1;
        PoolLease::new(self.pools.clone(), session_id)
    }

    /// How many sessions have a place here (a lease, or a pool no lease holds).
    pub fn sessions_held(&self) -> usize {
        held(&self.pools).len()
    }

    /// The session's pool, created on first use.
    pub fn pool(&self, session_id: &str) -> Result<Arc<TaskPool>, ShellError> {
        let mut pools = held(&self.pools);
        if let Some(pool) = pools.get(session_id).and_then(|held| held.pool.as_ref()) {
            return Ok(pool.clone());
        }
        let number = self.next_session.fetch_add(1, Ordering::Relaxed);
        let cgroup = self.tracker().session();
        let limit = Arc::new(self.limiter().session(number, cgroup.as_ref()));
        let pool = TaskPool::create(
            session_id,
            self.config,
            self.notices.clone(),
            Shared {
                sandbox: self.sandbox.clone(),
                spawner: self.spawner()?,
                cgroup,
                limit,
                containment: self.tracker().containment(),
                temp_prefix: temp_prefix(&self.owner),
                mark: format!("{}/{number}", self.owner),
            },
        )?;
        let pool = Arc::new(pool);
        pools.entry(session_id.to_owned()).or_default().pool = Some(pool.clone());
        Ok(pool)
    }

    /// Ends a session's pool: everything its commands started is killed now (the session's
    /// cgroup, every task's process group), and its temp dir removed once the last handle to
    /// the pool is dropped. For a pool no lease holds; a leased one ends with its lease.
    pub fn close(&self, session_id: &str) {
        let removed = held(&self.pools).remove(session_id);
        if let Some(pool) = removed.and_then(|held| held.pool) {
            pool.end();
        }
    }
}
