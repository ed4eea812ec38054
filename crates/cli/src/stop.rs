//! What stops `codaris run` before its turns are done: SIGINT (Ctrl-C), SIGTERM, or its
//! standard output closed under it (`codaris run … | head`). The command then cancels the
//! turn and ends the session instead of leaving both behind in the daemon.

use rustix::event::{PollFd, PollFlags};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::oneshot;

/// Why the program is stopping early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT: exit 130, as a shell reports a Ctrl-C.
    Interrupt,
    /// SIGTERM: exit 143.
    Terminate,
    /// Nobody reads the output any more: exit 0, as for any closed pipe.
    ClosedOutput,
}

/// The signals and the output watched while a session runs.
#[derive(Debug)]
pub struct Stops {
    interrupt: Option<Signal>,
    terminate: Option<Signal>,
    closed: Option<oneshot::Receiver<()>>,
}

impl Stops {
    /// Starts watching. From here SIGINT and SIGTERM no longer kill the program; [`Stops::next`]
    /// reports them. A signal that cannot be watched keeps its default action.
    pub fn watch() -> Self {
        Self {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
            closed: Some(watch_stdout()),
        }
    }

    /// The next reason to stop; pending for as long as none arrives.
    pub async fn next(&mut self) -> Stop {
        tokio::select! {
            Some(()) = recv(&mut self.interrupt) => Stop::Interrupt,
            Some(()) = recv(&mut self.terminate) => Stop::Terminate,
            Ok(()) = closed(&mut self.closed) => Stop::ClosedOutput,
            // Nothing is watched (or every watch failed): nothing stops the program early.
            else => std::future::pending().await,
        }
    }
}

async fn recv(signal: &mut Option<Signal>) -> Option<()> {
    match signal {
        Some(signal) => signal.recv().await,
        None => None,
    }
}

async fn closed(
    watch: &mut Option<oneshot::Receiver<()>>,
) -> Result<(), oneshot::error::RecvError> {
    match watch {
        Some(receiver) => {
            let closed = receiver.await;
            // A receiver may not be polled again once it has answered.
            *watch = None;
            closed
        }
        None => std::future::pending().await,
    }
}

/// Reports once standard output is a pipe or socket whose reader is gone. The output is only
/// written when an event arrives, and a long command sends none for minutes, so the closing is
/// watched for rather than found at the next write: a thread blocks in `poll` asking for no
/// event, which returns only on an error or hang-up (`POLLERR` on a pipe without readers). A
/// regular file or `/dev/null` never reports one. The thread is never joined: the process
/// exits around it.
fn watch_stdout() -> oneshot::Receiver<()> {
    let (sender, receiver) = oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("stdout-watch".to_owned())
        .spawn(move || {
            let stdout = std::io::stdout();
            loop {
                let mut fds = [PollFd::new(&stdout, PollFlags::empty())];
                match rustix::event::poll(&mut fds, None) {
                    Err(rustix::io::Errno::INTR) => continue,
                    Ok(_) if fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP) => {
                        let _ = sender.send(());
                        return;
                    }
                    // `POLLNVAL` (no standard output at all) or a failed poll: nothing to
                    // watch, and looping could spin.
                    Ok(_) | Err(_) => return,
                }
            }
        });
    // Without the thread the sender is dropped and the receiver reports nothing.
    drop(spawned);
    receiver
}
