//! Shell: `run_command`, the session's background tasks, `preview_server`, `share_file`,
//! `worktree_create` and `ssh_run_command`.
//!
//! Every command runs through `/bin/sh -c` in a directory inside the fence, leading its own
//! process group (so stopping it reaches all it spawned), with a private `TMPDIR`,
//! `no_new_privs`, no capabilities, an environment from an allowlist (`env.rs`), a mount
//! namespace of its own where `.git` is read-only (`mounts.rs`), and, where the kernel
//! supports Landlock, reads and writes confined (`sandbox.rs`: the roots, the session
//! workspace, that temp dir, system and configured locations; never the daemon's state or
//! configuration); a path it was refused is named in its result (`denied.rs`). Everything it starts
//! dies with its session and with the daemon (`contain.rs`). The pools live in a
//! `ShellPools` the daemon owns, one per session, and report finished tasks on a channel the
//! daemon forwards into the session.
//!
//! Non-goals: deciding whether a command may run (the policy), a terminal (stdin is closed).

mod args;
mod background;
mod contain;
mod denied;
mod env;
mod group;
mod landlock;
mod limits;
mod limits_cgroup;
mod mounts;
mod pool;
mod pool_lease;
mod pools;
mod preview_server;
mod privileges;
mod proc_stat;
mod reaper;
mod ring;
mod run;
mod sandbox;
mod share;
mod spawn;
mod spawner;
mod ssh;
mod task;
mod toolchains;
mod worktree;

use std::sync::Arc;

pub use background::BackgroundList;
pub use background::BackgroundOutput;
pub use background::BackgroundReap;
pub use background::BackgroundStop;
pub use background::BackgroundWait;
pub use background::WAIT_DEFAULT_SECONDS;
pub use background::WAIT_MAX_SECONDS;
pub use contain::Containment;
pub use contain::owner_of;
pub use env::is_variable_name;
pub use env::passes;
pub use landlock::LandlockStatus;
pub use landlock::landlock_status;
pub use limits::DEFAULT_PIDS_MAX;
pub use limits::LimitMechanism;
pub use limits::LimitStatus;
pub use limits::SessionLimits;
pub use limits::bytes;
pub use limits::default_memory_max;
pub use mounts::MountStatus;
pub use mounts::mount_status;
pub use pool::PoolConfig;
pub use pool::PoolLease;
pub use pool::Reaped;
pub use pool::ShellError;
pub use pool::Started;
pub use pool::TaskPool;
pub use pool::TaskSummary;
pub use pools::ShellPools;
pub use preview_server::PreviewServer;
pub use proc_stat::ProcStat;
pub use reaper::reap_orphans;
pub use reaper::spawn_registered;
pub use reaper::unregister;
pub use run::DEFAULT_TIMEOUT_SECONDS;
pub use run::MAX_TIMEOUT_SECONDS;
pub use run::RESULT_STREAM_BYTES;
pub use run::RunCommand;
pub use sandbox::DEVICES_READABLE;
pub use sandbox::ETC_SECRETS;
pub use sandbox::HOME_CARVED;
pub use sandbox::HOME_SECRETS;
pub use sandbox::HOME_TOOLCHAINS;
pub use sandbox::SYSTEM_READABLE;
pub use sandbox::SandboxPaths;
pub use sandbox::default_readable;
pub use sandbox::home_carved;
pub use sandbox::home_secrets;
pub use share::SHARE_FILE_LIMIT;
pub use share::SHARE_SESSION_LIMIT;
pub use share::ShareFile;
pub use share::SharedFile;
pub use share::shared_file_path;
pub use share::shared_files;
pub use ssh::SshRunCommand;
pub use task::BackgroundTask;
pub use task::Captured;
pub use task::TaskNotice;
pub use task::TaskStatus;
pub use toolchains::Runtime;
pub use toolchains::daemon_runtimes;
pub use toolchains::readable_by_commands;
pub use worktree::Worktree;
pub use worktree::WorktreeCreate;
pub use worktree::create_worktree;

/// The shell tools, all sharing `pools`, in catalogue order.
pub fn tools(pools: &Arc<ShellPools>) -> Vec<Arc<dyn crate::Tool>> {
    let config = pools.config();
    let mut tools: Vec<Arc<dyn crate::Tool>> = vec![Arc::new(RunCommand::new(pools.clone()))];
    if config.background {
        tools.extend([
            Arc::new(BackgroundList::new(pools.clone())) as Arc<dyn crate::Tool>,
            Arc::new(BackgroundOutput::new(pools.clone())),
            Arc::new(BackgroundWait::new(pools.clone())),
            Arc::new(BackgroundStop::new(pools.clone())),
            Arc::new(BackgroundReap::new(pools.clone())),
        ]);
        if config.preview_server {
            tools.push(Arc::new(PreviewServer::new(pools.clone())));
        }
    }
    tools.extend([
        Arc::new(ShareFile::new()) as Arc<dyn crate::Tool>,
        Arc::new(SshRunCommand::default().with_pools(pools.clone())),
        Arc::new(WorktreeCreate::default().with_pools(pools.clone())),
    ]);
    tools
}
