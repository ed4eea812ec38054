//! A session's own MCP servers: those an editor names in ACP's `session/new {mcpServers}`
//! (`CreateSessionRequest.mcp_servers`). They run for that session only, started and called
//! exactly as the daemon's servers are (`codaris-mcp`'s registry: the same scrubbed
//! environment, the same timeouts, no sandbox, as for every MCP server), and their tools are
//! decided by the policy on the same spec a daemon server's tool gets.
//!
//! Pinning follows `codaris mcp add`: naming the server was the person's approval of its first
//! tool list, so that list is pinned when the server is first ready, and a tool that changes
//! or appears after is held back. The approval lives in memory for this session only (the
//! ledger's MCP store is the daemon's servers', keyed by name, and an editor's server of the
//! same name in another project is another server); a held tool is released by opening the
//! session again with the server. Nothing of a server's environment or headers is written.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use codaris_agent::{ToolDefinition, ToolRun, ToolTier};
use codaris_index::{Entry, Server};
use codaris_mcp::names::McpTool;
use codaris_mcp::{ServerName, ServerRegistry, ServerSpec, ServerView, State, ToolDef};
use serde_json::Value;

use super::listing::{McpDecisionInput, described, entry, external_spec, marks_of, run_on};
use super::pins::Pins;
use crate::calls::builtins::Pictures;
use crate::sessions::store::now_ms;

/// How long opening a session waits for its servers: below an editor's own patience with
/// `session/new` (CodeCompanion's is 20 s).
const SETTLE: std::time::Duration = std::time::Duration::from_secs(10);

/// The MCP servers of one session, and the approval of each one's first tool list.
#[derive(Debug)]
pub struct SessionMcp {
    registry: ServerRegistry,
    pins: Mutex<BTreeMap<ServerName, Pins>>,
    /// The session's own additional roots, told after the daemon's to servers that share roots.
    extra: Vec<PathBuf>,
}

/// The daemon's roots, then the session's own that are not among them.
fn with_extra(mut roots: Vec<PathBuf>, extra: &[PathBuf]) -> Vec<PathBuf> {
    for dir in extra {
        if !roots.contains(dir) {
            roots.push(dir.clone());
        }
    }
    roots
}

impl SessionMcp {
    /// Starts `specs` in the background (a call of one of their tools before it is ready is
    /// told so, like a daemon server's), those that share roots told the daemon's `roots` and
    /// the session's `extra`. Must be called within the daemon's runtime.
    pub fn start(specs: Vec<ServerSpec>, roots: Vec<PathBuf>, extra: Vec<PathBuf>) -> SessionMcp {
        let registry = ServerRegistry::with_roots(with_extra(roots, &extra));
        for spec in specs {
            registry.add(spec);
        }
        SessionMcp {
            registry,
            pins: Mutex::new(BTreeMap::new()),
            extra,
        }
    }

    /// Waits until each of its servers is ready or failed, at most [`SETTLE`] in all (they
    /// start side by side), so that the session's first turn finds their tools. One still
    /// starting after that keeps starting, and its tools join the session's index when it is
    /// ready.
    pub async fn settled(&self) {
        let deadline = tokio::time::Instant::now() + SETTLE;
        for view in self.registry.servers() {
            let timeout = view
                .spec
                .startup_timeout
                .unwrap_or(codaris_mcp::DEFAULT_STARTUP_TIMEOUT)
                .min(deadline.saturating_duration_since(tokio::time::Instant::now()));
            if let Some(view) = self.registry.settled(&view.spec.name, timeout).await
                && view.state != State::Ready
            {
                tracing::warn!(server = %view.spec.name, state = view.state.as_str(), error = ?view.error, "a session's own MCP server is not ready yet; its tools join when it is");
            }
        }
        // The lists they came up with are the ones the editor approved.
        self.servers();
    }

    /// Puts the daemon's new roots (with the session's own) in force for those of its servers
    /// that share roots (told, not started again); the servers told.
    pub async fn set_roots(&self, roots: Vec<PathBuf>) -> Vec<ServerName> {
        self.registry
            .set_roots(with_extra(roots, &self.extra))
            .await
    }

    /// The names of its servers.
    pub fn names(&self) -> Vec<String> {
        self.registry
            .servers()
            .iter()
            .map(|v| v.spec.name.to_string())
            .collect()
    }

    /// A counter that moves whenever one of its servers changes state or tools: the session's
    /// index is rebuilt when it moved.
    pub fn generation(&self) -> u64 {
        *self.registry.changes().borrow()
    }

    fn pins(&self) -> std::sync::MutexGuard<'_, BTreeMap<ServerName, Pins>> {
        self.pins.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The servers as they are now, each ready one's first tool list approved.
    fn servers(&self) -> Vec<ServerView> {
        let servers = self.registry.servers();
        let mut pins = self.pins();
        for server in servers.iter().filter(|s| s.state == State::Ready) {
            if !pins.contains_key(&server.spec.name) {
                tracing::info!(server = %server.spec.name, tools = server.tools.len(), "a session's own MCP server's tool definitions approved by the editor that named it");
                pins.insert(
                    server.spec.name.clone(),
                    Pins::approve(&server.spec, &server.tools, now_ms()),
                );
            }
        }
        servers
    }

    /// The server and tool `called` names, when it is one of this session's; a tool of a
    /// server not ready is found in its approval.
    fn lookup(&self, called: &McpTool) -> Option<(ServerView, ToolDef)> {
        let name = ServerName::of(called);
        let view = self.servers().into_iter().find(|v| v.spec.name == name)?;
        let prefixed = called.prefixed();
        let tool = match view.tool(prefixed) {
            Some(tool) => tool.clone(),
            None => self
                .pins()
                .get(&name)?
                .tools
                .values()
                .find(|t| t.prefixed(&name) == prefixed)?
                .clone(),
        };
        Some((view, tool))
    }

    /// Accepts the current tool definitions of its server `name` when it is ready (`codaris mcp
    /// approve NAME`); answers how many tools that approved.
    pub fn approve(&self, name: &ServerName) -> Option<usize> {
        let view = self
            .registry
            .server(name)
            .filter(|v| v.state == State::Ready)?;
        self.pins().insert(
            name.clone(),
            Pins::approve(&view.spec, &view.tools, now_ms()),
        );
        tracing::info!(server = %name, tools = view.tools.len(), "a session's own MCP server approved again");
        Some(view.tools.len())
    }

    /// Whether `called` names a server of this session (its calls go here, never to a daemon
    /// server: the names are kept apart when the session is made).
    pub fn has_server(&self, called: &McpTool) -> bool {
        self.registry.server(&ServerName::of(called)).is_some()
    }

    /// As [`super::McpHub::decision_input`], for this session's servers.
    pub fn decision_input(&self, called: &McpTool) -> Option<McpDecisionInput> {
        let (view, tool) = self.lookup(called)?;
        let held = self
            .pins()
            .get(&view.spec.name)
            .and_then(|pins| pins.held(&view.spec, &tool));
        Some(McpDecisionInput {
            tool: called.canonical(),
            spec: external_spec(&view, &tool, held),
            marks: marks_of(&view, &tool),
            switched_off: false,
        })
    }

    /// As [`super::McpHub::listed_spec`], for this session's servers.
    pub fn listed_spec(&self, server: &str, prefixed: &str) -> Option<ToolDefinition> {
        let server = ServerName::parse(server).ok()?;
        let view = self.registry.server(&server)?;
        let tool = view.tool(prefixed)?;
        Some(ToolDefinition {
            name: prefixed.to_owned(),
            description: described(&view.spec, tool),
            input_schema: tool.input_schema.clone(),
            tier: ToolTier::Added,
        })
    }

    /// The index entries of its ready servers' tools, and those servers.
    pub fn entries(&self) -> (Vec<Entry>, Vec<Server>) {
        let mut entries = Vec::new();
        let mut servers = Vec::new();
        for view in self.servers().iter().filter(|s| s.state == State::Ready) {
            servers.push(Server {
                name: view.spec.name.to_string(),
                keywords: view.spec.keywords.clone(),
            });
            entries.extend(view.tools.iter().map(|tool| entry(&view.spec, tool)));
        }
        (entries, servers)
    }

    /// Its tools' names, for the `unknown_tool` refusal to name the closest of.
    pub fn tool_names(&self) -> Vec<String> {
        self.servers()
            .iter()
            .flat_map(|v| {
                v.tools
                    .iter()
                    .map(|t| t.prefixed(&v.spec.name))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Runs a permitted call on its server.
    pub async fn run(
        &self,
        called: &McpTool,
        args: &Value,
        cwd: &str,
        pictures: &Pictures,
    ) -> ToolRun {
        run_on(&self.registry, called, args, cwd, pictures).await
    }

    /// The output limits of the server behind `called`, when it sets its own.
    pub fn output_limits(&self, called: &McpTool) -> Option<codaris_mcp::OutputLimitOverrides> {
        self.registry
            .server(&ServerName::of(called))?
            .spec
            .output_limits
    }

    /// Stops its servers.
    pub async fn shutdown(&self) {
        self.registry.shutdown().await;
    }
}

/// A session's servers: kept by the hub, by session id.
pub type SessionServers = Mutex<BTreeMap<String, Arc<SessionMcp>>>;

#[cfg(test)]
mod tests {
    use super::*;
    use codaris_mcp::names::ToolId;
    use serde_json::json;
    use std::time::{Duration, Instant};

    fn called(name: &str) -> McpTool {
        match ToolId::parse(name) {
            ToolId::Mcp(tool) => tool,
            _ => panic!("`{name}` reads as an MCP tool"),
        }
    }

    /// An editor's server is pinned like an added one: its first list approved, a definition
    /// that changes after held back (with its own reason) until approved again.
    #[tokio::test]
    async fn a_changed_definition_of_a_sessions_own_server_is_held_until_approved() {
        let fixture = codaris_test_support::sandbox::binary("codaris-mcp-fixture");
        let Ok(name) = ServerName::parse("ed") else {
            panic!("a valid server name");
        };
        let spec = ServerSpec::stdio(name.clone(), fixture.display().to_string(), Vec::new());
        let own = SessionMcp::start(vec![spec], Vec::new(), Vec::new());
        own.settled().await;
        let echo = called("ed__echo");
        let held = |own: &SessionMcp| own.decision_input(&echo).and_then(|i| i.spec.held);
        assert_eq!(held(&own), None);
        assert!(own.tool_names().contains(&"ed__echo".to_owned()));

        let pulled = own
            .registry
            .call_tool(&called("ed__rug_pull"), json!({}))
            .await;
        assert!(pulled.is_ok(), "{pulled:?}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while held(&own).is_none() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let reason = held(&own).unwrap_or_default();
        assert!(reason.contains("description"), "{reason}");

        assert!(own.approve(&name).is_some());
        assert_eq!(held(&own), None);
        own.shutdown().await;
    }

    /// The real server-everything (installed by `.ci/mcp-peers.sh`), when it is; under CI a
    /// missing one fails the test.
    fn everything() -> Option<PathBuf> {
        let dir = std::env::var_os("CODARIS_MCP_PEERS")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::home_dir().map(|home| home.join(".cache/codaris-mcp-peers")))?;
        let program = dir.join("npm/node_modules/.bin/mcp-server-everything");
        if program.exists() {
            return Some(program);
        }
        assert!(
            std::env::var_os("CI").is_none_or(|ci| ci.is_empty()),
            "server-everything is not installed in {}: run .ci/mcp-peers.sh",
            dir.display()
        );
        None
    }

    /// A session's own server that shares roots is told the session's additional directories
    /// beside the daemon's allowed folders, and keeps them when the daemon's change (told, not
    /// started again).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sessions_server_that_shares_roots_is_told_the_sessions_own_roots_too() {
        let Some(program) = everything() else {
            return;
        };
        let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let [daemon, own_dir, wider] = [0, 1, 2].map(|i| dirs[i].path().canonicalize().unwrap());
        let Ok(name) = ServerName::parse("ed") else {
            panic!("a valid server name");
        };
        let mut spec = ServerSpec::stdio(
            name.clone(),
            program.display().to_string(),
            vec!["stdio".to_owned()],
        );
        spec.share_roots = true;
        spec.startup_timeout = Some(Duration::from_secs(60));
        let own = SessionMcp::start(vec![spec], vec![daemon.clone()], vec![own_dir.clone()]);
        own.settled().await;
        let uri = |dir: &std::path::Path| format!("file://{}", dir.display());
        let roots = || async {
            own.registry
                .call_tool(&called("ed__get-roots-list"), json!({}))
                .await
                .map(|r| r.text)
                .unwrap_or_default()
        };
        let listed = roots().await;
        assert!(
            listed.contains(&uri(&daemon)) && listed.contains(&uri(&own_dir)),
            "{listed}"
        );

        assert_eq!(own.set_roots(vec![wider.clone()]).await, [name]);
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut listed = roots().await;
        while !listed.contains(&uri(&wider)) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
            listed = roots().await;
        }
        assert!(
            listed.contains(&uri(&wider))
                && listed.contains(&uri(&own_dir))
                && !listed.contains(&uri(&daemon)),
            "{listed}"
        );
        own.shutdown().await;
    }
}
