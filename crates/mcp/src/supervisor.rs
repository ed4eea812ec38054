//! One task per server: connect, list, publish, follow `tools/list_changed`, and after a crash
//! start again with backoff. The registry reads what it publishes; calls go through the
//! connection it holds while the server is ready.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::client::{Connection, Roots};
use crate::error::CallError;
use crate::spec::ServerSpec;
use crate::tool::ToolDef;

/// The first pause before a failed server is started again; it doubles up to [`BACKOFF_MAX`].
pub const BACKOFF_FIRST: Duration = Duration::from_millis(500);
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Notifications closer together than this are one change.
pub const DEBOUNCE: Duration = Duration::from_millis(150);
/// The longest a burst of notifications may put off a refresh.
const DEBOUNCE_MAX: Duration = Duration::from_secs(2);

/// Where a server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Starting,
    Ready,
    Failed,
    Disabled,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Ready => "ready",
            State::Failed => "failed",
            State::Disabled => "disabled",
        }
    }
}

/// What a server's task publishes.
#[derive(Debug, Clone)]
pub struct Status {
    pub state: State,
    /// The tools of the last full listing (empty unless ready).
    pub tools: Arc<Vec<ToolDef>>,
    /// Why the server is not ready, when it failed.
    pub error: Option<String>,
    /// The protocol version and server the last handshake agreed.
    pub protocol: String,
    pub server_info: String,
    /// Times it was started again after a failure.
    pub restarts: u32,
    /// `tools/list_changed` notifications received, over every connection.
    pub list_changed: u64,
    /// Full `tools/list` rounds done (each one every page), over every connection.
    pub listings: u64,
}

impl Status {
    fn new(state: State) -> Status {
        Status {
            state,
            tools: Arc::new(Vec::new()),
            error: None,
            protocol: String::new(),
            server_info: String::new(),
            restarts: 0,
            list_changed: 0,
            listings: 0,
        }
    }
}

/// A running server task's handles.
#[derive(Debug)]
pub(crate) struct Supervised {
    pub status: watch::Receiver<Status>,
    pub connection: Arc<Mutex<Option<Arc<Connection>>>>,
    pub stop: CancellationToken,
    pub task: tokio::task::JoinHandle<()>,
    /// Set to ask the task to drop its connection and start again.
    pub restart: Arc<Notify>,
}

impl Supervised {
    pub fn connection(&self) -> Option<Arc<Connection>> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Starts `spec`'s task; `published` is called after each change of its status. `roots` are
/// what the server is told when its registration shares roots.
pub(crate) fn start(
    spec: ServerSpec,
    roots: Roots,
    published: Arc<dyn Fn() + Send + Sync>,
) -> Supervised {
    let initial = if spec.enabled {
        State::Starting
    } else {
        State::Disabled
    };
    let (status_tx, status) = watch::channel(Status::new(initial));
    let connection = Arc::new(Mutex::new(None));
    let stop = CancellationToken::new();
    let restart = Arc::new(Notify::new());
    let task = if spec.enabled {
        let run = Run {
            spec,
            roots,
            notified: Arc::new(AtomicU64::new(0)),
            status: status_tx,
            connection: connection.clone(),
            stop: stop.clone(),
            restart: restart.clone(),
            published,
        };
        tokio::spawn(run.supervise())
    } else {
        tokio::spawn(async {})
    };
    Supervised {
        status,
        connection,
        stop,
        task,
        restart,
    }
}

struct Run {
    spec: ServerSpec,
    roots: Roots,
    /// `tools/list_changed` received, shared with every connection's handler.
    notified: Arc<AtomicU64>,
    status: watch::Sender<Status>,
    connection: Arc<Mutex<Option<Arc<Connection>>>>,
    stop: CancellationToken,
    restart: Arc<Notify>,
    published: Arc<dyn Fn() + Send + Sync>,
}

/// How a connection's life ended.
enum Ended {
    Stopped,
    Failed(String),
    Restart,
}

impl Run {
    async fn supervise(self) {
        let mut backoff = BACKOFF_FIRST;
        let mut restarts = 0;
        loop {
            let ended = self.connect_and_serve(restarts).await;
            self.set_connection(None);
            let error = match ended {
                Ended::Stopped => return,
                Ended::Restart => {
                    backoff = BACKOFF_FIRST;
                    self.publish(|s| {
                        s.state = State::Starting;
                        s.tools = Arc::new(Vec::new());
                        s.error = None;
                    });
                    restarts += 1;
                    continue;
                }
                Ended::Failed(error) => error,
            };
            tracing::warn!(server = %self.spec.name, %error, retry_in_ms = backoff.as_millis() as u64, "MCP server failed");
            self.publish(|s| {
                s.state = State::Failed;
                s.tools = Arc::new(Vec::new());
                s.error = Some(error);
            });
            tokio::select! {
                () = self.stop.cancelled() => return,
                () = tokio::time::sleep(backoff) => {}
                () = self.restart.notified() => backoff = BACKOFF_FIRST,
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
            restarts += 1;
            self.publish(|s| {
                s.state = State::Starting;
                s.restarts = restarts;
            });
        }
    }

    async fn connect_and_serve(&self, restarts: u32) -> Ended {
        let changed = Arc::new(Notify::new());
        let opened = tokio::select! {
            () = self.stop.cancelled() => return Ended::Stopped,
            opened = Connection::open(&self.spec, changed.clone(), &self.roots, self.notified.clone()) => opened,
        };
        let connection = match opened {
            Ok(connection) => Arc::new(connection),
            Err(err) => return Ended::Failed(err.to_string()),
        };
        let ended = self.serve(&connection, &changed, restarts).await;
        connection.close().await;
        ended
    }

    async fn serve(&self, connection: &Arc<Connection>, changed: &Notify, restarts: u32) -> Ended {
        let timeout = self.spec.startup_timeout();
        // The first listing, then any change that arrived meanwhile (server-everything sends
        // a burst while it handles `initialized`): published once, whole.
        let mut tools = match self.listing(connection, timeout).await {
            Ok(tools) => tools,
            Err(err) => return Ended::Failed(format!("listing its tools failed: {err}")),
        };
        while pending(changed).await {
            self.settle(changed).await;
            tools = match self.listing(connection, timeout).await {
                Ok(tools) => tools,
                Err(err) => return Ended::Failed(format!("listing its tools failed: {err}")),
            };
        }
        self.set_connection(Some(connection.clone()));
        tracing::info!(server = %self.spec.name, tools = tools.len(), protocol = %connection.protocol, peer = %connection.server_info, "MCP server ready");
        self.publish(|s| {
            s.state = State::Ready;
            s.tools = Arc::new(tools);
            s.error = None;
            s.protocol = connection.protocol.clone();
            s.server_info = connection.server_info.clone();
            s.restarts = restarts;
        });
        loop {
            tokio::select! {
                () = self.stop.cancelled() => return Ended::Stopped,
                () = self.restart.notified() => return Ended::Restart,
                reason = connection.ended() => return Ended::Failed(reason),
                () = changed.notified() => {
                    self.settle(changed).await;
                    match self.listing(connection, timeout).await {
                        Ok(tools) => {
                            tracing::info!(server = %self.spec.name, tools = tools.len(), "MCP server's tools changed");
                            self.publish(|s| s.tools = Arc::new(tools));
                        }
                        Err(err) => return Ended::Failed(format!("listing its tools failed: {err}")),
                    }
                }
            }
        }
    }

    /// The server's tools, each under a name no other of them has: a model API refuses a tool
    /// set with two tools of one name, and a call or a pin must mean one definition. The first
    /// tool listed under a name keeps it; a later one (a server listing a tool twice, or two
    /// names meeting once shortened) is left out, with a warning.
    async fn listing(
        &self,
        connection: &Connection,
        timeout: Duration,
    ) -> Result<Vec<ToolDef>, CallError> {
        let listed = connection.list_tools(timeout).await;
        let list_changed = self.notified.load(Ordering::Relaxed);
        self.status.send_modify(|s| {
            s.listings += 1;
            s.list_changed = list_changed;
        });
        let listed = listed?;
        let mut taken = HashSet::new();
        let mut tools = Vec::with_capacity(listed.len());
        for tool in listed {
            let name = tool.prefixed(&self.spec.name);
            if taken.insert(name.clone()) {
                tools.push(tool);
            } else {
                tracing::warn!(server = %self.spec.name, tool = %tool.name, offered_as = %name, "MCP server lists a second tool under a name already taken; it is left out");
            }
        }
        Ok(tools)
    }

    /// Waits until no notification has come for [`DEBOUNCE`] (at most [`DEBOUNCE_MAX`]).
    async fn settle(&self, changed: &Notify) {
        let deadline = tokio::time::Instant::now() + DEBOUNCE_MAX;
        loop {
            let quiet = tokio::time::sleep(DEBOUNCE);
            tokio::select! {
                () = changed.notified() => {
                    if tokio::time::Instant::now() >= deadline {
                        return;
                    }
                }
                () = quiet => return,
            }
        }
    }

    fn set_connection(&self, connection: Option<Arc<Connection>>) {
        *self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = connection;
    }

    fn publish(&self, change: impl FnOnce(&mut Status)) {
        self.status.send_modify(change);
        (self.published)();
    }
}

/// Whether a notification is already waiting, without waiting for one.
async fn pending(changed: &Notify) -> bool {
    tokio::time::timeout(Duration::ZERO, changed.notified())
        .await
        .is_ok()
}
