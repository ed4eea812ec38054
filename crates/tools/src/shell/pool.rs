//! One session's background task pool: its commands started in the sandbox and contained in the
//! session's cgroup, listed, waited on, stopped and reaped. Every session's pool is made by the
//! `ShellPools` the daemon holds (`pools.rs`) and owned by the session through its
//! [`PoolLease`]: dropping the lease (the session ended) ends the pool and forgets it.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rustix::process::Signal;
use tokio::sync::mpsc;

use super::contain::{Containment, SessionCgroup, kill_marked};
use super::denied::SandboxView;
use super::group::{Scope, group_alive, signal_group};
use super::limits::{SessionLimit, SessionLimits};
use super::mounts::{GitDirs, MountPlan, mount_status};
pub use super::pool_lease::PoolLease;
use super::sandbox::{Access, Request, SandboxPaths, plan};
use super::spawn::{Launch, spawn};
use super::spawner::Spawner;
use super::task::{BackgroundTask, Limited, NoticeTarget, TaskNotice, TaskStatus};

/// Failures of the pool, split by the tools into the model's and Codaris's.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    #[error("no background task `{task_id}` in this session")]
    UnknownTask { task_id: String },
    #[error("could not start `{command}` in `{cwd}`: {source}")]
    Spawn {
        command: String,
        cwd: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("could not create the session's private temp dir: {source}")]
    TempDir {
        #[source]
        source: io::Error,
    },
    #[error("could not signal process group {pgid}: {source}")]
    Signal {
        pgid: i32,
        #[source]
        source: io::Error,
    },
    #[error("commands are refused here: {reason}")]
    Refused { reason: String },
    #[error("could not start the thread that forks commands: {source}")]
    Spawner {
        #[source]
        source: io::Error,
    },
}

/// Tunables of every pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// Bytes kept of each stream of each task (the most recent).
    pub buffer_bytes: usize,
    /// Between SIGTERM and SIGKILL when a task is stopped.
    pub stop_grace: Duration,
    /// Confine commands with Landlock where the kernel supports it.
    pub landlock: bool,
    /// `tools.background`: commands may run on in the background (`background: true`, or a
    /// foreground one handed over at its timeout), and the `background_*` tools exist.
    pub background: bool,
    /// `tools.preview_server`: `preview_server` exists (only with `background` as well).
    pub preview_server: bool,
    /// Keep each session's processes in a cgroup where the machine allows it (off: process
    /// groups and the environment mark only, as on a machine without cgroups).
    pub cgroups: bool,
    /// `tools.session_pids_max` and `tools.session_memory_max` (see `limits.rs`).
    pub limits: SessionLimits,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            buffer_bytes: 1024 * 1024,
            stop_grace: Duration::from_secs(3),
            landlock: true,
            background: true,
            preview_server: true,
            cgroups: true,
            limits: SessionLimits::default(),
        }
    }
}

/// What a pool gets from `ShellPools`.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) sandbox: Arc<SandboxPaths>,
    pub(super) spawner: Arc<Spawner>,
    pub(super) cgroup: Option<SessionCgroup>,
    pub(super) limit: Arc<SessionLimit>,
    pub(super) containment: Containment,
    pub(super) temp_prefix: String,
    pub(super) mark: String,
}

#[derive(Debug)]
struct Entry {
    task: Arc<BackgroundTask>,
    /// Shown to the model: started with `background: true` or handed over on timeout.
    listed: bool,
}

/// What one launch asks for: the command, where, and how much of the fence it may change.
struct Launched<'a> {
    command: &'a str,
    cwd: &'a Path,
    roots: &'a [PathBuf],
    roots_access: Access,
    workspace: Option<&'a Path>,
    /// Names this launch alone adds to `tools.env_passthrough` (a pipeline run's
    /// `[nextflow] pass_env`); the withheld names still never pass.
    pass_env: &'a [String],
}

/// One session's tasks. Dropping it kills everything it started.
#[derive(Debug)]
pub struct TaskPool {
    session_id: String,
    config: PoolConfig,
    temp_dir: tempfile::TempDir,
    notices: mpsc::UnboundedSender<TaskNotice>,
    tasks: Mutex<BTreeMap<u64, Entry>>,
    next_id: Mutex<u64>,
    sandbox: Arc<SandboxPaths>,
    spawner: Arc<Spawner>,
    /// The session's cgroup, when the machine allows one.
    cgroup: Option<SessionCgroup>,
    /// Its process and memory limits.
    limit: Arc<SessionLimit>,
    /// Where its commands' processes can be, for the liveness checks.
    scope: Scope,
    containment: Containment,
    /// `CODARIS_TASK` of this session's commands.
    mark: String,
    /// The `.git` paths under the session's roots, made read-only in its commands.
    git_dirs: Arc<GitDirs>,
}

/// A line of `background_list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSummary {
    pub task_id: String,
    pub command: String,
    pub status: TaskStatus,
    pub elapsed: Duration,
    pub estimate: Option<Duration>,
}

/// A started command and the id it is known by.
#[derive(Debug, Clone)]
pub struct Started {
    pub task_id: String,
    pub task: Arc<BackgroundTask>,
    /// Whether Landlock confines its reads and writes.
    pub confined: bool,
    /// What kills whatever it leaves behind with the session and the daemon.
    pub containment: Containment,
    /// What the sandbox gave it, to explain a refusal; `None` when not confined.
    pub(crate) sandbox: Option<SandboxView>,
}

/// A process group that outlived its task and was killed by `reap`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaped {
    pub task_id: String,
    pub command: String,
    pub pgid: i32,
}

fn task_id(number: u64) -> String {
    format!("bg-{number}")
}

impl TaskPool {
    pub(super) fn create(
        session_id: &str,
        config: PoolConfig,
        notices: mpsc::UnboundedSender<TaskNotice>,
        shared: Shared,
    ) -> Result<Self, ShellError> {
        let temp_dir = tempfile::Builder::new()
            .prefix(&shared.temp_prefix)
            .tempdir()
            .map_err(|source| ShellError::TempDir { source })?;
        let containment = match (&shared.cgroup, shared.containment) {
            (None, Containment::Cgroup { root }) => Containment::ProcessGroups {
                reason: format!("cannot create a session cgroup beneath {}", root.display()),
            },
            (_, containment) => containment,
        };
        Ok(Self {
            session_id: session_id.to_owned(),
            config,
            temp_dir,
            notices,
            tasks: Mutex::new(BTreeMap::new()),
            next_id: Mutex::new(1),
            sandbox: shared.sandbox,
            spawner: shared.spawner,
            cgroup: shared.cgroup,
            scope: Scope {
                members: shared.limit.members(),
            },
            limit: shared.limit,
            containment,
            mark: shared.mark,
            git_dirs: Arc::default(),
        })
    }

    /// Which mechanism keeps this session's processes.
    pub fn containment(&self) -> &Containment {
        &self.containment
    }

    /// The private TMPDIR of this session's commands.
    pub fn temp_dir(&self) -> &Path {
        self.temp_dir.path()
    }

    pub fn config(&self) -> PoolConfig {
        self.config
    }

    fn tasks(&self) -> MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `command` in `cwd` (already checked against the fence). Where the kernel
    /// supports Landlock, it reads and writes only beneath `roots`, `workspace` (both
    /// writable) and the temp dir, and reads the system locations and the configured ones
    /// (see `sandbox.rs`). A task started with `listed` shows in the list at once; otherwise
    /// it stays hidden until `hand_over`.
    #[expect(
        clippy::too_many_arguments,
        reason = "each is one plain fact of the call"
    )]
    pub fn start(
        &self,
        command: &str,
        cwd: &Path,
        roots: &[PathBuf],
        workspace: Option<&Path>,
        estimate: Option<Duration>,
        listed: bool,
        notify: bool,
    ) -> Result<Started, ShellError> {
        let request = Launched {
            command,
            cwd,
            roots,
            roots_access: Access::Write,
            workspace,
            pass_env: &[],
        };
        self.launch(request, estimate, listed, notify)
    }

    /// Starts a pipeline run's `nextflow`: as [`TaskPool::start`] does (listed and announced
    /// when `background`, else hidden), its environment given also the daemon's variables
    /// `pass_env` names (`[nextflow] pass_env`). They reach this command alone, by its
    /// environment, never its command line, which cards show and `/proc` lets anyone read.
    pub fn start_pipeline_run(
        &self,
        command: &str,
        cwd: &Path,
        roots: &[PathBuf],
        workspace: Option<&Path>,
        background: bool,
        pass_env: &[String],
    ) -> Result<Started, ShellError> {
        let request = Launched {
            command,
            cwd,
            roots,
            roots_access: Access::Write,
            workspace,
            pass_env,
        };
        self.launch(request, None, background, background)
    }

    /// Starts a program a read-only tool runs on the session's behalf (nf-core's lint): as
    /// [`TaskPool::start`] would, hidden and without a notice, but where Landlock confines it
    /// the roots are readable only; it writes only the workspace and the temp dir.
    pub fn start_read_only(
        &self,
        command: &str,
        cwd: &Path,
        roots: &[PathBuf],
        workspace: Option<&Path>,
    ) -> Result<Started, ShellError> {
        let request = Launched {
            command,
            cwd,
            roots,
            roots_access: Access::Read,
            workspace,
            pass_env: &[],
        };
        self.launch(request, None, false, false)
    }

    fn launch(
        &self,
        request: Launched<'_>,
        estimate: Option<Duration>,
        listed: bool,
        notify: bool,
    ) -> Result<Started, ShellError> {
        let Launched {
            command,
            cwd,
            roots,
            roots_access,
            workspace,
            pass_env,
        } = request;
        let refused = |reason: String| ShellError::Refused { reason };
        let mounts = match (self.config.landlock, mount_status()) {
            (false, _) => None,
            (true, status) if status.refuses() => return Err(refused(status.to_string())),
            (true, super::mounts::MountStatus::Active { .. }) => Some(
                MountPlan::new(cwd, roots, self.git_dirs.current(roots)).ok_or_else(|| {
                    refused(format!(
                        "`{}` cannot be passed to the kernel",
                        cwd.display()
                    ))
                })?,
            ),
            (true, _) => None,
        };
        let confine_to: Option<Arc<[super::sandbox::Grant]>> = self.config.landlock.then(|| {
            let mut own = vec![self.temp_dir().to_path_buf()];
            own.extend(workspace.map(Path::to_path_buf));
            plan(Request {
                roots,
                roots_access,
                own: &own,
                paths: &self.sandbox,
            })
            .into()
        });
        let passthrough: Vec<String> = self
            .sandbox
            .env_passthrough
            .iter()
            .chain(pass_env)
            .cloned()
            .collect();
        let launch = Launch {
            command,
            cwd,
            temp_dir: self.temp_dir(),
            confine_to: confine_to.clone(),
            cgroup: self.cgroup.as_ref().map(SessionCgroup::procs),
            limits: Some(self.limit.clone()),
            mark: &self.mark,
            mounts,
            passthrough: &passthrough,
        };
        let before = self.limit.hits();
        let spawned = spawn(&launch, &self.spawner).map_err(|source| ShellError::Spawn {
            command: command.to_owned(),
            cwd: cwd.to_path_buf(),
            source,
        })?;
        let task = BackgroundTask::watch_limited(
            spawned.child,
            command.to_owned(),
            estimate,
            self.config.buffer_bytes,
            Some(Limited {
                limit: self.limit.clone(),
                before,
            }),
        );
        let task_id = self.register(&task, listed, notify);
        self.walk_git_when_done(&task, roots);
        Ok(Started {
            task_id,
            task,
            confined: spawned.confined,
            containment: self.containment.clone(),
            sandbox: confine_to
                .filter(|_| spawned.confined)
                .map(|grants| SandboxView {
                    grants,
                    paths: self.sandbox.clone(),
                    cwd: cwd.to_path_buf(),
                }),
        })
    }

    /// Once `task` ended, walks the roots for `.git` again (it may have made one).
    fn walk_git_when_done(&self, task: &Arc<BackgroundTask>, roots: &[PathBuf]) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (task, dirs, roots) = (task.clone(), self.git_dirs.clone(), roots.to_vec());
        runtime.spawn(async move {
            while task.wait(Duration::from_secs(3600)).await.is_running() {}
            dirs.command_ended(roots);
        });
    }

    /// Starts another program on the session's behalf (the OpenSSH client): contained like
    /// its commands (cgroup, mark, parent-death signal, no capabilities) but not confined by
    /// Landlock, which would keep it from its keys. The caller watches the child.
    pub(crate) fn spawn_program(
        &self,
        command: tokio::process::Command,
    ) -> io::Result<tokio::process::Child> {
        super::spawn::spawn_program(
            command,
            self.cgroup.as_ref().map(SessionCgroup::procs),
            Some(self.limit.clone()),
            &self.mark,
            &self.spawner,
        )
    }

    /// Starts another program on the session's behalf that must write the roots (git adding
    /// a worktree): contained like its commands and, where Landlock is on, confined as they
    /// are, the roots writable, and `readable` (the program's own configuration) readable.
    /// The caller watches the child.
    pub(crate) fn spawn_confined_program(
        &self,
        command: tokio::process::Command,
        roots: &[PathBuf],
        readable: &[PathBuf],
    ) -> io::Result<super::spawn::Spawned> {
        let confine_to = self.config.landlock.then(|| {
            let mut paths = SandboxPaths::clone(&self.sandbox);
            paths.readable.extend_from_slice(readable);
            plan(Request {
                roots,
                roots_access: Access::Write,
                own: &[self.temp_dir().to_path_buf()],
                paths: &paths,
            })
        });
        // Its own mount namespace where commands get one, without the `.git` binds (git
        // writes there; what could run from it is switched off), so a program that slips
        // past git's switches reaches neither the session's buses nor the machine's secrets.
        let mounts = match (self.config.landlock, mount_status()) {
            (true, status) if status.refuses() => {
                return Err(io::Error::other(status.to_string()));
            }
            (true, super::mounts::MountStatus::Active { .. }) => {
                let cwd = command
                    .as_std()
                    .get_current_dir()
                    .map_or_else(|| self.temp_dir().to_path_buf(), Path::to_path_buf);
                MountPlan::new(&cwd, roots, Vec::new().into())
            }
            _ => None,
        };
        super::spawn::spawn_program_confined(
            command,
            confine_to.as_deref(),
            super::spawn::Contained {
                cgroup: self.cgroup.as_ref().map(SessionCgroup::procs),
                limits: Some(self.limit.clone()),
                mounts,
            },
            &self.mark,
            &self.spawner,
        )
    }

    /// Runs `work` inside the daemon as a listed task (a preview server), known by `label`.
    pub(crate) fn start_in_process<F>(
        &self,
        label: String,
        work: impl FnOnce(super::task::Log) -> F,
        notify: bool,
    ) -> Started
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let task = BackgroundTask::in_process(label, self.config.buffer_bytes, work);
        let task_id = self.register(&task, true, notify);
        Started {
            task_id,
            task,
            confined: false,
            containment: self.containment.clone(),
            sandbox: None,
        }
    }

    /// Gives `task` the next id and files it.
    fn register(&self, task: &Arc<BackgroundTask>, listed: bool, notify: bool) -> String {
        let number = {
            let mut next = self.next_id.lock().unwrap_or_else(PoisonError::into_inner);
            let number = *next;
            *next += 1;
            number
        };
        let id = task_id(number);
        if listed && notify {
            task.notify_when_done(Some(self.target(&id)));
        }
        self.tasks().insert(
            number,
            Entry {
                task: task.clone(),
                listed,
            },
        );
        id
    }

    fn target(&self, task_id: &str) -> NoticeTarget {
        NoticeTarget {
            session_id: self.session_id.clone(),
            task_id: task_id.to_owned(),
            sender: self.notices.clone(),
        }
    }

    /// Lists a hidden task (a foreground command that outlived its timeout). `false` if it
    /// ended in the meantime, in which case it stays hidden and the caller reports it whole.
    pub fn hand_over(&self, started: &Started, notify: bool) -> bool {
        let target = notify.then(|| self.target(&started.task_id));
        if !started.task.notify_when_done(target) {
            return false;
        }
        let number: Option<u64> = started.task_id.trim_start_matches("bg-").parse().ok();
        let mut tasks = self.tasks();
        if let Some(entry) = number.and_then(|n| tasks.get_mut(&n)) {
            entry.listed = true;
        }
        true
    }

    /// A listed task by its id.
    pub fn get(&self, task_id: &str) -> Result<Arc<BackgroundTask>, ShellError> {
        let unknown = || ShellError::UnknownTask {
            task_id: task_id.to_owned(),
        };
        let number: u64 = task_id
            .strip_prefix("bg-")
            .and_then(|n| n.parse().ok())
            .ok_or_else(unknown)?;
        self.tasks()
            .get(&number)
            .filter(|entry| entry.listed)
            .map(|entry| entry.task.clone())
            .ok_or_else(unknown)
    }

    pub fn list(&self) -> Vec<TaskSummary> {
        self.tasks()
            .iter()
            .filter(|(_, entry)| entry.listed)
            .map(|(number, entry)| TaskSummary {
                task_id: task_id(*number),
                command: entry.task.command.clone(),
                status: entry.task.status(),
                elapsed: entry.task.elapsed(),
                estimate: entry.task.estimate,
            })
            .collect()
    }

    /// Stops a listed task and everything it spawned.
    pub async fn stop(&self, task_id: &str) -> Result<TaskStatus, ShellError> {
        let task = self.get(task_id)?;
        task.stop(self.config.stop_grace)
            .await
            .map_err(|source| ShellError::Signal {
                pgid: task.pgid,
                source,
            })
    }

    /// Kills the process groups of ended tasks (listed or not) that still have processes:
    /// a daemon a script left behind, a `sleep &` nobody waited for.
    pub fn reap(&self) -> Result<Vec<Reaped>, ShellError> {
        let strays: Vec<Reaped> = self
            .tasks()
            .iter()
            .filter(|(_, entry)| !entry.task.status().is_running() && entry.task.pgid > 0)
            .filter(|(_, entry)| group_alive(entry.task.pgid, &self.scope))
            .map(|(number, entry)| Reaped {
                task_id: task_id(*number),
                command: entry.task.command.clone(),
                pgid: entry.task.pgid,
            })
            .collect();
        for stray in &strays {
            signal_group(stray.pgid, Signal::KILL).map_err(|source| ShellError::Signal {
                pgid: stray.pgid,
                source,
            })?;
        }
        Ok(strays)
    }

    /// Forgets a hidden task that ended, keeping only what `reap` needs: its output buffers
    /// go, so a session running thousands of short commands does not hoard their output.
    pub fn retire(&self, started: &Started) {
        let Some(number) = started
            .task_id
            .strip_prefix("bg-")
            .and_then(|n| n.parse().ok())
        else {
            return;
        };
        let mut tasks = self.tasks();
        let spent = tasks
            .get(&number)
            .is_some_and(|entry| !entry.listed && !group_alive(entry.task.pgid, &self.scope));
        if spent {
            tasks.remove(&number);
        }
    }
}

impl TaskPool {
    /// The session is over: nothing it started may outlive it. Its cgroup (every descendant,
    /// `setsid` or not) and every task's process group are killed.
    pub fn end(&self) {
        match &self.cgroup {
            Some(cgroup) => cgroup.kill(),
            // Without a cgroup, what left its process group is found by its mark.
            None => {
                kill_marked(|mark| mark == self.mark);
            }
        }
        self.limit.kill();
        for entry in self.tasks().values() {
            // A group gone since its task ended is not signalled: its number may be reused.
            if entry.task.status().is_running()
                || (entry.task.pgid > 0 && group_alive(entry.task.pgid, &self.scope))
            {
                entry.task.kill_now();
            }
        }
    }
}

impl Drop for TaskPool {
    fn drop(&mut self) {
        self.end();
    }
}

impl ShellError {
    /// What the model can act on goes back to it; the rest is Codaris's own failure.
    pub(crate) fn into_tool_error(self, tool: &'static str) -> crate::tool::ToolError {
        match self {
            Self::UnknownTask { .. } | Self::Spawn { .. } | Self::Refused { .. } => {
                crate::tool::ToolError::model(self.to_string())
            }
            Self::TempDir { source } | Self::Signal { source, .. } | Self::Spawner { source } => {
                crate::tool::ToolError::Fatal { tool, source }
            }
        }
    }
}
