//! One long-lived thread that forks every command.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not the process:
//! a command forked on a tokio blocking thread (which exits after a while idle) or on a
//! worker of a runtime that shuts down would be killed long before the daemon dies. So every
//! fork happens on this thread, which lives as long as the pools that own it. When it ends
//! (the pools dropped, the daemon exiting or killed) the commands' shells get SIGKILL, which
//! is the point.

use std::sync::mpsc;
use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;

type Job = Box<dyn FnOnce() + Send>;

/// The thread and the queue of work it runs, in order.
#[derive(Debug)]
pub(crate) struct Spawner {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Option<JoinHandle<()>>,
}

impl Spawner {
    pub(crate) fn start() -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("codaris-spawner".to_owned())
            .spawn(move || {
                while let Ok(job) = queue.recv() {
                    job();
                }
            })?;
        Ok(Self {
            jobs: Mutex::new(Some(jobs)),
            thread: Some(thread),
        })
    }

    /// Runs `work` on the spawner thread and waits for its result; `None` if the thread is
    /// gone (it only ends when this is dropped, or if a job panicked).
    pub(crate) fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (reply, answer) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            let _ = reply.send(work());
        });
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()?
            .send(job)
            .ok()?;
        answer.recv().ok()
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        // Closing the queue ends the thread's loop.
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}
