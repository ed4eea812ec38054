//! Shell: `run_command`, the session's background tasks, `preview_server`, `share_file`,
//! `worktree_create` and `ssh_run_command`.
//!
//! Every command runs through `/bin/sh -c` in a directory inside the fence, leading its own
//! process group (so stopping it reaches all it spawned), with a private `TMPDIR` and, where
//! the kernel supports Landlock, writes confined to the allowed roots, the session workspace
//! and that temp dir. The pools live in a `ShellPools` the daemon owns (no globals), one per
//! session, and report finished tasks on a channel the daemon forwards into the session.
//!
//! Non-goals: deciding whether a command may run (the policy), a terminal (stdin is closed).

mod args;
mod background;
mod group;
mod landlock;
mod pool;
mod preview;
mod ring;
mod run;
mod share;
mod spawn;
mod ssh;
mod task;
mod worktree;

use std::sync::Arc;

pub use background::BackgroundList;
pub use background::BackgroundOutput;
pub use background::BackgroundReap;
pub use background::BackgroundStop;
pub use background::BackgroundWait;
pub use background::WAIT_DEFAULT_SECONDS;
pub use background::WAIT_MAX_SECONDS;
pub use landlock::LandlockStatus;
pub use landlock::landlock_status;
pub use pool::PoolConfig;
pub use pool::Reaped;
pub use pool::ShellError;
pub use pool::ShellPools;
pub use pool::Started;
pub use pool::TaskPool;
pub use pool::TaskSummary;
pub use preview::PreviewServer;
pub use run::DEFAULT_TIMEOUT_SECONDS;
pub use run::MAX_TIMEOUT_SECONDS;
pub use run::RESULT_STREAM_BYTES;
pub use run::RunCommand;
pub use share::SHARE_FILE_LIMIT;
pub use share::SHARE_SESSION_LIMIT;
pub use share::ShareFile;
pub use share::SharedFile;
pub use share::shared_file_path;
pub use share::shared_files;
pub use ssh::SshRunCommand;
pub use task::Captured;
pub use task::Task;
pub use task::TaskNotice;
pub use task::TaskStatus;
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
        Arc::new(SshRunCommand::default()),
        Arc::new(WorktreeCreate),
    ]);
    tools
}
