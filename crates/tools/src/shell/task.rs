//! One running command: its process group, its captured output, its fate.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Child;
use tokio::sync::{mpsc, watch};

use super::group::Scope;
use super::limits::{Hits, SessionLimit};
use super::ring::Ring;

/// How a task ended, or that it has not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    Running,
    /// The shell exited with this code.
    Exited(i32),
    /// The shell died of this signal (not one `background_stop` sent).
    Signaled(i32),
    /// Stopped by `background_stop` or when the session ended.
    Stopped,
    /// Waiting for the process failed; what became of it is unknown.
    Lost,
}

impl TaskStatus {
    pub fn is_running(self) -> bool {
        self == Self::Running
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Running => f.write_str("running"),
            Self::Exited(code) => write!(f, "exited with code {code}"),
            Self::Signaled(signal) => write!(f, "killed by signal {signal}"),
            Self::Stopped => f.write_str("stopped"),
            Self::Lost => f.write_str("lost (waiting for it failed)"),
        }
    }
}

/// Sent when a background task ends, for the daemon to wake the session with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskNotice {
    pub session_id: String,
    pub task_id: String,
    pub command: String,
    pub status: TaskStatus,
    pub elapsed: Duration,
}

/// Where a finished task announces itself: set when it joins the listed pool.
#[derive(Debug)]
pub(crate) struct NoticeTarget {
    pub(crate) session_id: String,
    pub(crate) task_id: String,
    pub(crate) sender: mpsc::UnboundedSender<TaskNotice>,
}

#[derive(Debug)]
struct State {
    status: TaskStatus,
    finished: Option<Instant>,
    stop_requested: bool,
    notice: Option<NoticeTarget>,
}

#[derive(Debug)]
pub struct BackgroundTask {
    pub(crate) command: String,
    pub(crate) pgid: i32,
    pub(crate) started: Instant,
    pub(crate) estimate: Option<Duration>,
    stdout: Arc<Mutex<Ring>>,
    stderr: Arc<Mutex<Ring>>,
    /// The last line either stream printed, for a person watching (never the model).
    last_line: Arc<Mutex<LastLine>>,
    state: Mutex<State>,
    done: watch::Receiver<bool>,
    /// For a task run inside the daemon (a preview server) rather than as a process.
    abort: Option<tokio::task::AbortHandle>,
    /// Where its group's processes can be, for the liveness checks.
    pub(crate) scope: Scope,
}

/// The session's limits a command ran under, and their counters when it started.
#[derive(Debug, Clone)]
pub(crate) struct Limited {
    pub(crate) limit: Arc<SessionLimit>,
    pub(crate) before: Hits,
}

/// Where an in-process task writes what it would have printed.
#[derive(Debug, Clone)]
pub(crate) struct Log(Arc<Mutex<Ring>>);

impl Log {
    pub(crate) fn line(&self, line: &str) {
        let mut ring = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        ring.push(line.as_bytes());
        ring.push(b"\n");
    }
}

/// How long the readers may keep draining after the shell exited: output the shell wrote is
/// in the pipe by then, but a grandchild left running may hold the pipe open indefinitely.
const DRAIN: Duration = Duration::from_millis(500);

impl BackgroundTask {
    /// Watches `child` (already leading its own process group) and captures its output.
    pub(crate) fn watch(
        child: Child,
        command: String,
        estimate: Option<Duration>,
        buffer_bytes: usize,
    ) -> Arc<Self> {
        Self::watch_limited(child, command, estimate, buffer_bytes, None)
    }

    /// [`BackgroundTask::watch`] for a command of a session with limits: when it ends, whether it hit
    /// one is told in its stderr, and a group that hit the process limit is killed.
    pub(crate) fn watch_limited(
        mut child: Child,
        command: String,
        estimate: Option<Duration>,
        buffer_bytes: usize,
        limited: Option<Limited>,
    ) -> Arc<Self> {
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .unwrap_or(0);
        let stdout = Arc::new(Mutex::new(Ring::new(buffer_bytes)));
        let stderr = Arc::new(Mutex::new(Ring::new(buffer_bytes)));
        let last_line = Arc::new(Mutex::new(LastLine::default()));
        let (done_tx, done) = watch::channel(false);
        let task = Arc::new(Self {
            command,
            pgid,
            started: Instant::now(),
            estimate,
            stdout: stdout.clone(),
            stderr: stderr.clone(),
            last_line: last_line.clone(),
            state: Mutex::new(State {
                status: TaskStatus::Running,
                finished: None,
                stop_requested: false,
                notice: None,
            }),
            done,
            abort: None,
            scope: Scope {
                members: limited.as_ref().and_then(|l| l.limit.members()),
            },
        });
        let readers = [
            child
                .stdout
                .take()
                .map(|pipe| tokio::spawn(capture(pipe, stdout, last_line.clone()))),
            child
                .stderr
                .take()
                .map(|pipe| tokio::spawn(capture(pipe, stderr, last_line))),
        ];
        let watched = task.clone();
        tokio::spawn(async move {
            let exit = child.wait().await;
            // Waited for: a zombie of this number is no longer this task's (see `reaper.rs`).
            super::reaper::unregister(pgid);
            for reader in readers.into_iter().flatten() {
                // A reader still blocked after the drain period belongs to a lingering
                // grandchild; it keeps capturing in the background.
                let _ = tokio::time::timeout(DRAIN, reader).await;
            }
            if let Some(limited) = limited {
                watched.judge_limits(&limited).await;
            }
            watched.finish(exit);
            let _ = done_tx.send(true);
        });
        task
    }

    /// Runs `work` inside the daemon as a task: no process group; stopping it aborts it, and
    /// its end (the work returning) counts as exit code 0.
    pub(crate) fn in_process<F>(
        command: String,
        buffer_bytes: usize,
        work: impl FnOnce(Log) -> F,
    ) -> Arc<Self>
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        use std::os::unix::process::ExitStatusExt;
        let stdout = Arc::new(Mutex::new(Ring::new(buffer_bytes)));
        let (done_tx, done) = watch::channel(false);
        let handle = tokio::spawn(work(Log(stdout.clone())));
        let task = Arc::new(Self {
            command,
            pgid: 0,
            started: Instant::now(),
            estimate: None,
            stdout,
            stderr: Arc::new(Mutex::new(Ring::new(0))),
            last_line: Arc::default(),
            state: Mutex::new(State {
                status: TaskStatus::Running,
                finished: None,
                stop_requested: false,
                notice: None,
            }),
            done,
            abort: Some(handle.abort_handle()),
            scope: Scope::default(),
        });
        let watched = task.clone();
        tokio::spawn(async move {
            let ended = handle.await;
            let status = std::process::ExitStatus::from_raw(0);
            watched.finish(ended.map(|()| status).map_err(std::io::Error::other));
            let _ = done_tx.send(true);
        });
        task
    }

    /// Once the command ended: if the session hit a limit meanwhile, says so at the end of its
    /// stderr (where the model reads it, as `background_output` does) and, for the process
    /// limit, kills what its group left running (a fork bomb keeps forking otherwise, and the
    /// session's next command could not start).
    async fn judge_limits(&self, limited: &Limited) {
        let Some(verdict) = limited.limit.verdict(limited.before, limited.limit.hits()) else {
            return;
        };
        if verdict.kill_group && self.pgid > 0 {
            // A group signal reaches every member at once, and the kernel fails a fork racing
            // it; a few rounds for one that slipped through.
            for _ in 0..50 {
                let _ = super::group::signal_group(self.pgid, rustix::process::Signal::KILL);
                if !super::group::group_alive(self.pgid, &self.scope) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let mut stderr = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        stderr.push(b"\n");
        stderr.push(verdict.note.as_bytes());
        stderr.push(b"\n");
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is plain data, consistent after every write; a panic elsewhere cannot
        // leave it half-updated, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn finish(&self, exit: std::io::Result<std::process::ExitStatus>) {
        use std::os::unix::process::ExitStatusExt;
        let mut state = self.lock();
        state.status = match exit {
            _ if state.stop_requested => TaskStatus::Stopped,
            Ok(status) => match (status.code(), status.signal()) {
                (Some(code), _) => TaskStatus::Exited(code),
                (None, Some(signal)) => TaskStatus::Signaled(signal),
                (None, None) => TaskStatus::Lost,
            },
            Err(_) => TaskStatus::Lost,
        };
        let finished = Instant::now();
        state.finished = Some(finished);
        if let Some(target) = state.notice.take() {
            // The daemon may have gone away with its receiver; nobody is left to tell.
            let _ = target.sender.send(TaskNotice {
                session_id: target.session_id,
                task_id: target.task_id,
                command: self.command.clone(),
                status: state.status,
                elapsed: finished - self.started,
            });
        }
    }

    pub fn status(&self) -> TaskStatus {
        self.lock().status
    }

    /// Running time so far, or until it ended.
    pub fn elapsed(&self) -> Duration {
        self.lock().finished.unwrap_or_else(Instant::now) - self.started
    }

    /// Arranges the completion notice; `false` if the task already ended (nothing to wait for).
    pub(crate) fn notify_when_done(&self, target: Option<NoticeTarget>) -> bool {
        let mut state = self.lock();
        if !state.status.is_running() {
            return false;
        }
        state.notice = target;
        true
    }

    /// Waits up to `limit` for the task to end; its status then.
    pub async fn wait(&self, limit: Duration) -> TaskStatus {
        let mut done = self.done.clone();
        let _ = tokio::time::timeout(limit, done.wait_for(|finished| *finished)).await;
        self.status()
    }

    /// Stops the task: SIGTERM to its whole process group, `grace`, SIGKILL; an in-process
    /// task is aborted.
    pub async fn stop(&self, grace: Duration) -> std::io::Result<TaskStatus> {
        {
            let mut state = self.lock();
            if state.status.is_running() {
                state.stop_requested = true;
            }
        }
        if self.pgid > 0 {
            super::group::terminate_group(self.pgid, &self.scope, grace).await?;
        }
        if let Some(abort) = &self.abort {
            abort.abort();
        }
        Ok(self.wait(Duration::from_secs(5)).await)
    }

    /// SIGKILL to the whole group (or abort), without waiting: for when nobody is left to
    /// wait (the session closed, the call was abandoned).
    pub(crate) fn kill_now(&self) {
        {
            let mut state = self.lock();
            if state.status.is_running() {
                state.stop_requested = true;
            }
        }
        if self.pgid > 0 {
            let _ = super::group::signal_group(self.pgid, rustix::process::Signal::KILL);
        }
        if let Some(abort) = &self.abort {
            abort.abort();
        }
    }

    /// The last line the command printed on either stream, with a number that grows each time
    /// a new one arrives; `None` before the first.
    pub fn last_line(&self) -> Option<(u64, String)> {
        let last = self
            .last_line
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        (last.seen > 0).then(|| (last.seen, last.line.clone()))
    }

    /// The captured stdout and stderr, each cut to `max_bytes` from its end (and to
    /// `tail_lines` lines), with the number of bytes not shown.
    pub fn output(&self, max_bytes: usize, tail_lines: Option<usize>) -> Captured {
        let read = |ring: &Mutex<Ring>| {
            ring.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .tail(max_bytes, tail_lines)
        };
        let (stdout, stdout_hidden) = read(&self.stdout);
        let (stderr, stderr_hidden) = read(&self.stderr);
        Captured {
            stdout,
            stdout_hidden,
            stderr,
            stderr_hidden,
        }
    }
}

/// What a task printed, as far as it is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    pub stdout: String,
    pub stdout_hidden: u64,
    pub stderr: String,
    pub stderr_hidden: u64,
}

impl Captured {
    /// The two streams as the model reads them; empty streams are left out.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, text, hidden) in [
            ("stdout", &self.stdout, self.stdout_hidden),
            ("stderr", &self.stderr, self.stderr_hidden),
        ] {
            if text.is_empty() && hidden == 0 {
                continue;
            }
            out.push_str(name);
            out.push_str(":\n");
            if hidden > 0 {
                out.push_str(&format!("[{hidden} earlier bytes not shown]\n"));
            }
            out.push_str(text);
            if !text.ends_with('\n') {
                out.push('\n');
            }
        }
        if out.is_empty() {
            out.push_str("(no output)\n");
        }
        out
    }
}

async fn capture(
    mut pipe: impl AsyncRead + Unpin,
    ring: Arc<Mutex<Ring>>,
    last: Arc<Mutex<LastLine>>,
) {
    let mut chunk = vec![0_u8; 8192];
    let mut partial = Vec::new();
    while let Ok(read) = pipe.read(&mut chunk).await {
        if read == 0 {
            break;
        }
        ring.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(&chunk[..read]);
        if let Some(line) = last_complete_line(&mut partial, &chunk[..read]) {
            last.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .set(line);
        }
    }
}

/// The most of an unfinished line kept while waiting for its end: a line longer than this is
/// shown by its start.
const MAX_PARTIAL_LINE: usize = 4096;

/// The last line a stream printed, shared by its two readers.
#[derive(Debug, Default)]
struct LastLine {
    line: String,
    /// Lines seen so far (0: none).
    seen: u64,
}

impl LastLine {
    fn set(&mut self, line: String) {
        self.line = line;
        self.seen += 1;
    }
}

/// Adds `chunk` to the unfinished line in `partial`; the last complete line that is not blank
/// once it ends, if the chunk finished one. A line rewritten with carriage returns (a progress
/// bar) reads as its last version.
fn last_complete_line(partial: &mut Vec<u8>, chunk: &[u8]) -> Option<String> {
    let mut found = None;
    for piece in chunk.split_inclusive(|b| *b == b'\n') {
        if partial.len() < MAX_PARTIAL_LINE {
            let room = MAX_PARTIAL_LINE - partial.len();
            partial.extend_from_slice(&piece[..piece.len().min(room)]);
        }
        if piece.ends_with(b"\n") {
            let text = String::from_utf8_lossy(partial);
            let line = text
                .trim_end_matches(['\n', '\r'])
                .rsplit('\r')
                .find(|part| !part.trim().is_empty())
                .map(|part| part.trim_end().to_owned());
            if line.is_some() {
                found = line;
            }
            partial.clear();
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::last_complete_line;

    #[test]
    fn the_last_complete_line_of_what_a_stream_printed() {
        let mut partial = Vec::new();
        assert_eq!(
            last_complete_line(&mut partial, b"compiling a\ncomp"),
            Some("compiling a".to_owned())
        );
        assert_eq!(
            last_complete_line(&mut partial, b"iling b"),
            None,
            "not finished yet"
        );
        assert_eq!(
            last_complete_line(&mut partial, b"\n\n   \n"),
            Some("compiling b".to_owned())
        );
        assert_eq!(
            last_complete_line(&mut partial, b"10%\r50%\r100%\r\n"),
            Some("100%".to_owned()),
            "a rewritten line reads as its last version"
        );
        let long = vec![b'x'; 10_000];
        assert_eq!(last_complete_line(&mut partial, &long), None);
        let line = last_complete_line(&mut partial, b"\n").unwrap();
        assert_eq!(line.len(), super::MAX_PARTIAL_LINE);
    }
}
