//! One shutdown signal shared by the signal handlers, the Shutdown RPC and the servers.

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
