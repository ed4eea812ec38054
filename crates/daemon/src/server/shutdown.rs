//! One shutdown signal shared by the signal handlers, the Shutdown RPC and the servers.

use std::time::Duration;

use tokio::sync::watch;

/// Cloneable trigger and waiter; triggering twice is harmless.
#[derive(Debug, Clone)]
pub struct Shutdown {
    sender: watch::Sender<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    pub fn new() -> Self {
        let (sender, _) = watch::channel(false);
        Self { sender }
    }

    pub fn trigger(&self, why: &str) {
        if !*self.sender.borrow() {
            tracing::info!(why, "shutting down");
        }
        self.sender.send_replace(true);
    }

    /// Resolves once [`Shutdown::trigger`] was called, even if it was called before this.
    pub fn wait(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut receiver = self.sender.subscribe();
        async move {
            // An error means every sender is gone, which also means stop.
            let _ = receiver.wait_for(|stop| *stop).await;
        }
    }
}

/// Triggers `shutdown` on SIGINT or SIGTERM.
pub fn on_signals(shutdown: Shutdown) -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        let why = tokio::select! {
            _ = interrupt.recv() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        shutdown.trigger(why);
    });
    Ok(())
}

/// How long the calls in flight have to finish once the shutdown fired. A connection still
/// open then is closed with its server: a client that holds one without reading (a `codaris`
/// suspended with Ctrl-Z, a frozen editor) never acknowledges HTTP/2's goodbye, and would
/// otherwise keep the daemon from stopping for as long as it lives. Shorter than the 10 s
/// `codaris daemon stop` waits and the 15 s the systemd unit gives, with room for the ledger's
/// fold after it.
pub const DRAIN: Duration = Duration::from_secs(5);

/// Runs `server` (a server that stops accepting when `shutdown` fires and then waits for its
/// connections) until it ends, or until `drain` has passed since the shutdown fired, whichever
/// is first; `what` names it in the warning about the connections cut.
pub async fn drained<E>(
    server: impl Future<Output = Result<(), E>>,
    shutdown: &Shutdown,
    drain: Duration,
    what: &str,
) -> Result<(), E> {
    let stopped = shutdown.wait();
    let expired = async move {
        stopped.await;
        tokio::time::sleep(drain).await;
    };
    tokio::select! {
        result = server => result,
        () = expired => {
            tracing::warn!(server = what, ?drain, "connections still open after the drain; closing them");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::pending;
    use std::time::Duration;

    use super::{Shutdown, drained};

    #[tokio::test]
    async fn a_server_whose_connections_never_close_is_given_up_after_the_drain() {
        let shutdown = Shutdown::new();
        let server = pending::<Result<(), ()>>();
        let stop = shutdown.clone();
        let run =
            tokio::spawn(
                async move { drained(server, &stop, Duration::from_millis(20), "test").await },
            );
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !run.is_finished(),
            "nothing is cut before the shutdown fires"
        );
        shutdown.trigger("test");
        let ended = tokio::time::timeout(Duration::from_secs(30), run).await;
        assert!(matches!(ended, Ok(Ok(Ok(())))), "{ended:?}");
    }

    #[tokio::test]
    async fn a_server_that_stops_in_time_ends_with_its_own_result() {
        let shutdown = Shutdown::new();
        shutdown.trigger("test");
        let ended = drained(
            async { Err::<(), _>("bind failed") },
            &shutdown,
            Duration::from_secs(3600),
            "test",
        )
        .await;
        assert_eq!(ended, Err("bind failed"));
    }
}
