//! Who owns a session's pool: the session, through its [`PoolLease`]. [`super::ShellPools`]
//! keeps each session's place (its pool once a command made it) only while a lease holds it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::pool::TaskPool;

/// One session's place in [`super::ShellPools`]: its pool once a command made it, and how many
/// leases hold it.
#[derive(Debug, Default)]
pub(super) struct Held {
    /// The [`PoolLease`]s of the session alive. An entry no lease holds (the daemon's probe,
    /// tests) is kept until [`super::ShellPools::close`].
    pub(super) leases: usize,
    pub(super) pool: Option<Arc<TaskPool>>,
}

pub(super) type HeldPools = Arc<Mutex<HashMap<String, Held>>>;

pub(super) fn held(pools: &HeldPools) -> MutexGuard<'_, HashMap<String, Held>> {
    pools.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A session's hold on its pool ([`super::ShellPools::lease`]); the session's value owns it.
/// Dropping the last one of a session ends its pool as [`super::ShellPools::close`] does.
#[derive(Debug)]
#[must_use = "the pool ends when the lease is dropped"]
pub struct PoolLease {
    pools: HeldPools,
    session_id: String,
}

impl PoolLease {
    pub(super) fn new(pools: HeldPools, session_id: &str) -> Self {
        Self {
            pools,
            session_id: session_id.to_owned(),
        }
    }
}

impl Drop for PoolLease {
    fn drop(&mut self) {
        let mut pools = held(&self.pools);
        let Some(entry) = pools.get_mut(&self.session_id) else {
            return;
        };
        entry.leases = entry.leases.saturating_sub(1);
        if entry.leases > 0 {
            return;
        }
        let pool = pools.remove(&self.session_id).and_then(|held| held.pool);
        // Ended outside the lock: killing a cgroup waits for the kernel.
        drop(pools);
        if let Some(pool) = pool {
            pool.end();
        }
    }
}
