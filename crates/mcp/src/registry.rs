//! Every server the daemon runs, by name: added, removed, restarted, switched, and their tools
//! as one published set. The daemon watches [`ServerRegistry::changes`] and rebuilds its index from
//! [`ServerRegistry::servers`] whenever a server's tools or state change.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::client::Roots;
use crate::error::{CallError, ToolError};
use crate::names::{McpTool, ServerName, ToolId};
use crate::render::{self, Rendered};
use crate::spec::{ServerSpec, Transport};
use crate::supervisor::{self, State, Status, Supervised};
use crate::tool::ToolDef;

/// How long stopping every server may take before the rest are killed outright.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(7);
/// How long telling one server its roots changed may take.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(5);

/// One server as the registry reports it.
#[derive(Debug, Clone)]
pub struct ServerView {
    pub spec: ServerSpec,
    pub state: State,
    pub tools: Arc<Vec<ToolDef>>,
    pub error: Option<String>,
    pub protocol: String,
    pub server_info: String,
    pub restarts: u32,
    /// `tools/list_changed` notifications received and full listings done since it was added.
    pub list_changed: u64,
    pub listings: u64,
}

impl ServerView {
    pub fn transport(&self) -> &'static str {
        self.spec.transport.kind()
    }

    /// The tool offered as `prefixed`, if this server has it.
    pub fn tool(&self, prefixed: &str) -> Option<&ToolDef> {
        self.tools
            .iter()
            .find(|tool| tool.prefixed(&self.spec.name) == prefixed)
    }
}

#[derive(Debug)]
struct Server {
    spec: ServerSpec,
    run: Supervised,
}

/// The servers, shared by every session of the daemon.
#[derive(Debug, Clone)]
pub struct ServerRegistry {
    servers: Arc<Mutex<BTreeMap<ServerName, Server>>>,
    changes: Arc<watch::Sender<u64>>,
    /// What a server that shares roots is told (`roots/list`); the daemon's allowed folders,
    /// which a committed configuration may change ([`ServerRegistry::set_roots`]).
    roots: Roots,
}

impl Default for ServerRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerRegistry {
    pub fn new() -> ServerRegistry {
        ServerRegistry::with_roots(Vec::new())
    }

    /// A registry whose servers that share roots are told `roots` (absolute directories).
    pub fn with_roots(roots: Vec<PathBuf>) -> ServerRegistry {
        ServerRegistry {
            servers: Arc::new(Mutex::new(BTreeMap::new())),
            changes: Arc::new(watch::channel(0).0),
            roots: Roots::new(roots),
        }
    }

    /// A counter that moves whenever a server is added, removed, or changes state or tools.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<ServerName, Server>> {
        self.servers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(changes: &watch::Sender<u64>) {
        changes.send_modify(|n| *n += 1);
    }

    /// Starts `spec` in the background (the caller does not wait for its handshake), replacing
    /// a server of the same name. Must be called within a Tokio runtime.
    pub fn add(&self, spec: ServerSpec) {
        let changes = self.changes.clone();
        let published: Arc<dyn Fn() + Send + Sync> =
            Arc::new(move || ServerRegistry::bump(&changes));
        let run = supervisor::start(spec.clone(), self.roots.clone(), published);
        let replaced = self.lock().insert(spec.name.clone(), Server { spec, run });
        if let Some(old) = replaced {
            old.run.stop.cancel();
        }
        ServerRegistry::bump(&self.changes);
    }

    /// Puts `roots` in force for the servers that share roots: a running one is told they
    /// changed (`notifications/roots/list_changed`, and it asks again), one starting reads
    /// them at its `roots/list`. The servers told, by name; none when the roots are the same.
    pub async fn set_roots(&self, roots: Vec<PathBuf>) -> Vec<ServerName> {
        if !self.roots.set(roots) {
            return Vec::new();
        }
        let running: Vec<(ServerName, Arc<crate::client::Connection>)> = self
            .lock()
            .iter()
            .filter(|(_, server)| server.spec.share_roots)
            .filter_map(|(name, server)| Some((name.clone(), server.run.connection()?)))
            .collect();
        // Side by side: one server slow to take it holds the others up by nothing.
        let mut telling = tokio::task::JoinSet::new();
        for (name, connection) in running {
            telling.spawn(async move {
                let told = connection.notify_roots_changed(NOTIFY_TIMEOUT).await;
                (name, told)
            });
        }
        let mut told = Vec::new();
        while let Some(joined) = telling.join_next().await {
            match joined {
                Ok((name, true)) => told.push(name),
                // It will read them when it next asks, or when it starts again.
                Ok((name, false)) => {
                    tracing::warn!(server = %name, "could not tell the MCP server its roots changed");
                }
                Err(err) => tracing::warn!(%err, "telling an MCP server its roots changed failed"),
            }
        }
        told.sort();
        told
    }

    /// Stops and forgets the server; false when there was none.
    pub async fn remove(&self, name: &ServerName) -> bool {
        let removed = self.lock().remove(name);
        let Some(server) = removed else {
            return false;
        };
        stop(server).await;
        ServerRegistry::bump(&self.changes);
        true
    }

    /// Drops the server's connection and starts it again (a failed one at once).
    pub fn restart(&self, name: &ServerName) -> bool {
        let servers = self.lock();
        match servers.get(name) {
            Some(server) => {
                server.run.restart.notify_one();
                true
            }
            None => false,
        }
    }

    /// Restarts the server if `connection` is still the one it serves: a check that took a
    /// while must not end the connection that replaced it meanwhile.
    fn restart_connection(&self, name: &ServerName, connection: &Arc<crate::Connection>) {
        let servers = self.lock();
        if let Some(server) = servers.get(name)
            && server
                .run
                .connection()
                .is_some_and(|current| Arc::ptr_eq(&current, connection))
        {
            server.run.restart.notify_one();
        }
    }

    /// Switches the server on (starting it) or off (stopping it); false when there is none.
    pub async fn set_enabled(&self, name: &ServerName, enabled: bool) -> bool {
        let Some(mut spec) = self.lock().get(name).map(|s| s.spec.clone()) else {
            return false;
        };
        if spec.enabled == enabled {
            return true;
        }
        spec.enabled = enabled;
        // The guard must be gone before the stop is awaited: held across it, any other use of
        // the registry on this runtime would block its thread while the server stops.
        let removed = self.lock().remove(name);
        if let Some(old) = removed {
            stop(old).await;
        }
        self.add(spec);
        true
    }

    /// Every server, by name.
    pub fn servers(&self) -> Vec<ServerView> {
        self.lock().values().map(view).collect()
    }

    pub fn server(&self, name: &ServerName) -> Option<ServerView> {
        self.lock().get(name).map(view)
    }

    /// Waits until the server is no longer starting (or `timeout` passes), and returns it.
    pub async fn settled(&self, name: &ServerName, timeout: Duration) -> Option<ServerView> {
        let mut status = self.lock().get(name)?.run.status.clone();
        let _ =
            tokio::time::timeout(timeout, status.wait_for(|s| s.state != State::Starting)).await;
        self.server(name)
    }

    /// Calls the tool offered as `called` (`server__tool` or `mcp__server__tool`): reads the
    /// name, then [`ServerRegistry::call_tool`]. For a caller that holds only the name.
    pub async fn call(&self, called: &str, arguments: Value) -> Result<Rendered, ToolError> {
        match ToolId::parse(called) {
            ToolId::Mcp(tool) => self.call_tool(&tool, arguments).await,
            _ => Err(ToolError::UnknownServer(called.to_owned())),
        }
    }

    /// Calls the tool `called` names (read once where the call entered) with `arguments`,
    /// within the server's tool timeout, and renders its result.
    pub async fn call_tool(
        &self,
        called: &McpTool,
        arguments: Value,
    ) -> Result<Rendered, ToolError> {
        let server_name = ServerName::of(called);
        let prefixed = called.prefixed().to_owned();
        let (spec, status, connection) = {
            let servers = self.lock();
            let Some(server) = servers.get(&server_name) else {
                return Err(ToolError::UnknownServer(server_name.to_string()));
            };
            (
                server.spec.clone(),
                server.run.status.borrow().clone(),
                server.run.connection(),
            )
        };
        let unavailable = |status: &Status| ToolError::Unavailable {
            server: server_name.to_string(),
            state: match status.state {
                State::Failed => "restarting after a failure",
                _ => "still starting",
            },
            why: status.error.clone(),
        };
        if status.state == State::Disabled {
            return Err(ToolError::Disabled {
                server: server_name.to_string(),
            });
        }
        let (State::Ready, Some(connection)) = (status.state, connection) else {
            return Err(unavailable(&status));
        };
        // Ended but not yet seen to by its supervisor (a crash a moment ago): already down.
        if let Some(why) = connection.ended_reason() {
            return Err(ToolError::Unavailable {
                server: server_name.to_string(),
                state: "restarting after a failure",
                why: Some(why),
            });
        }
        let Some(tool) = status
            .tools
            .iter()
            .find(|t| t.prefixed(&server_name) == prefixed)
        else {
            return Err(ToolError::UnknownTool {
                server: server_name.to_string(),
                tool: prefixed,
            });
        };
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            // The policy refuses non-object arguments before a call gets here.
            other => {
                return Err(ToolError::Call {
                    server: server_name.to_string(),
                    tool: tool.name.clone(),
                    source: CallError::Protocol(format!(
                        "arguments must be a JSON object, not {other}"
                    )),
                });
            }
        };
        match connection
            .call(&tool.name, arguments, spec.tool_timeout())
            .await
        {
            Ok(result) => Ok(render::result(&result)),
            Err(source) => {
                if matches!(source, CallError::Timeout(_) | CallError::Closed(_))
                    && matches!(spec.transport, Transport::Http { .. })
                {
                    // An HTTP server that went away or stopped answering leaves rmcp's
                    // transport open, the server shown ready: when it no longer answers a
                    // ping, the connection is started again (and the server shown failed
                    // until it is back).
                    let registry = self.clone();
                    let name = server_name.clone();
                    tokio::spawn(async move {
                        if !connection.ping(Duration::from_secs(5)).await {
                            registry.restart_connection(&name, &connection);
                        }
                    });
                }
                Err(ToolError::Call {
                    server: server_name.to_string(),
                    tool: tool.name.clone(),
                    source,
                })
            }
        }
    }

    /// Stops every server, each given its grace, and waits for them.
    pub async fn shutdown(&self) {
        let servers: Vec<Server> = std::mem::take(&mut *self.lock()).into_values().collect();
        // Every server is told at once, so they stop side by side, not one grace after another.
        for server in &servers {
            server.run.stop.cancel();
        }
        let all = async {
            for server in servers {
                let _ = server.run.task.await;
            }
        };
        if tokio::time::timeout(SHUTDOWN_GRACE, all).await.is_err() {
            tracing::warn!("some MCP servers did not stop in time");
        }
        ServerRegistry::bump(&self.changes);
    }
}

fn view(server: &Server) -> ServerView {
    let status = server.run.status.borrow();
    ServerView {
        spec: server.spec.clone(),
        state: status.state,
        tools: status.tools.clone(),
        error: status.error.clone(),
        protocol: status.protocol.clone(),
        server_info: status.server_info.clone(),
        restarts: status.restarts,
        list_changed: status.list_changed,
        listings: status.listings,
    }
}

/// Stops a server's task and waits until its connection (and process group) is gone.
async fn stop(server: Server) {
    server.run.stop.cancel();
    let _ = server.run.task.await;
}
