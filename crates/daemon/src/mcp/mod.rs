//! The daemon's MCP servers: the configured ones and those added at run time (kept in the
//! ledger's store), started in the background through `codaris-mcp`'s registry; their tools in
//! the one index as kind `mcp`; the policy's spec of each tool; pinning; and their calls.
//!
//! A call reaches [`McpHub::run`] only with the dispatcher's permit, like a built-in's.

pub mod builtin;
pub mod launch;
mod listing;
pub mod paths;
mod pins;
pub mod reconfigure;
pub mod session;

pub use listing::McpDecisionInput;
use listing::{described, entry, external_spec, marks_of, run_on};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use codaris_agent::{ToolDefinition, ToolRun, ToolTier};
use codaris_index::Server;
use codaris_ledger::{Ledger, McpState};
use codaris_mcp::names::McpTool;
use codaris_mcp::{ServerName, ServerRegistry, ServerSpec, ServerView, State, ToolDef};
use codaris_policy::ExternalSpec;
use serde_json::Value;

pub use pins::Pins;

use crate::calls::builtins::Pictures;
use crate::error::DaemonError;
use crate::sessions::store::now_ms;
use crate::toolset::registry::ToolRegistry;

pub use paths::PATH_ARGS;

/// Where a server's registration came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `[mcp.servers.NAME]` in the configuration file.
    Config,
    /// `codaris mcp add` or the gRPC API; kept in the ledger's store.
    Runtime,
}

/// One server as `codaris mcp list` shows it.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub view: ServerView,
    pub origin: Origin,
    /// Tools held back until the server is approved again.
    pub held: usize,
}

/// One tool of a server as `codaris mcp tools` shows it.
#[derive(Debug, Clone)]
pub struct ToolInfo {
    pub name: String,
    pub tool: ToolDef,
    /// Switched on (not off in the Tools panel).
    pub enabled: bool,
    /// Why it is held back, when it is.
    pub held: Option<String>,
    /// Counted as read-only by the policy (its server is trusted and it says so).
    pub read_only: bool,
}

/// The daemon's MCP servers.
#[derive(Debug)]
pub struct McpHub {
    registry: ServerRegistry,
    state: McpState,
    tools: Arc<ToolRegistry>,
    /// The configuration's servers by name, as last put in force (at start or by a commit).
    configured: Mutex<BTreeMap<ServerName, ServerSpec>>,
    pins: Mutex<BTreeMap<ServerName, Pins>>,
    /// The servers to start at [`McpHub::launch`].
    pending: Mutex<Vec<ServerSpec>>,
    /// Each server's tools as last listed while it was ready: a call of one while its server
    /// restarts or is off is still decided on its definition, and told why it cannot run.
    last_tools: Mutex<BTreeMap<ServerName, Arc<Vec<ToolDef>>>>,
    /// The built-in server was switched on as a whole (`codaris mcp enable seqera`): its tools
    /// are on unless switched off one by one. Otherwise they are off until switched on.
    builtin_on: AtomicBool,
    /// Held while the index is republished, so that two publishes never interleave and the
    /// later one always indexes the newer servers.
    publishing: Mutex<()>,
    /// Each session's own servers (an editor's), by session id: outside the daemon's index.
    sessions: session::SessionServers,
    /// The daemon's allowed folders, told to a session's server that shares roots.
    roots: Mutex<Vec<std::path::PathBuf>>,
}

impl McpHub {
    /// Reads the servers to run (started by [`McpHub::launch`], in the background: the daemon
    /// serves before any is ready) and keeps the index following their tools. Must be called
    /// within the daemon's runtime.
    /// `roots` (the daemon's allowed folders) are what a server that shares roots is told.
    pub fn start(
        configured: Vec<ServerSpec>,
        roots: Vec<std::path::PathBuf>,
        ledger: &Ledger,
        tools: Arc<ToolRegistry>,
    ) -> Result<Arc<McpHub>, DaemonError> {
        let state = ledger.mcp_state()?;
        let (registered, corrupt) = state.registrations::<ServerSpec>()?;
        for bad in corrupt {
            tracing::warn!(%bad, "an MCP server registration does not read; it is not started");
        }
        let (switches, corrupt) = state.switches()?;
        for bad in corrupt {
            tracing::warn!(%bad, "an MCP server's switch does not read; it counts as off");
        }
        let (pins, corrupt) = state.pins::<Pins>()?;
        for bad in &corrupt {
            // No approval is the safe reading only for a server seen for the first time; an
            // unreadable one holds every tool back until approved again.
            tracing::warn!(%bad, "an MCP server's approval does not read; its tools are held back");
        }
        let mut pins: BTreeMap<ServerName, Pins> = pins
            .into_iter()
            .filter_map(|(name, pins)| ServerName::parse(&name).ok().map(|n| (n, pins)))
            .collect();
        for bad in corrupt {
            if let Ok(name) = ServerName::parse(&bad.key) {
                pins.insert(
                    name,
                    Pins {
                        launch: "unreadable".to_owned(),
                        tools: BTreeMap::new(),
                        approved_at_ms: 0,
                    },
                );
            }
        }
        let hub = Arc::new(McpHub {
            registry: ServerRegistry::with_roots(roots.clone()),
            sessions: Mutex::new(BTreeMap::new()),
            roots: Mutex::new(roots),
            state,
            tools,
            configured: Mutex::new(
                configured
                    .iter()
                    .map(|s| (s.name.clone(), s.clone()))
                    .collect(),
            ),
            pins: Mutex::new(pins),
            last_tools: Mutex::new(BTreeMap::new()),
            pending: Mutex::new(Vec::new()),
            builtin_on: AtomicBool::new(switches.get(builtin::SEQERA) == Some(&true)),
            publishing: Mutex::new(()),
        });
        let mut specs = configured;
        for (name, spec) in registered {
            if hub.is_configured(&spec.name) || spec.name.as_str() != name {
                tracing::warn!(server = %name, "a run-time MCP registration shadows the configuration or is misnamed; it is not started");
                continue;
            }
            specs.push(spec);
        }
        for spec in &mut specs {
            if let Some(&enabled) = switches.get(spec.name.as_str()) {
                spec.enabled = enabled;
            }
        }
        *hub.pending.lock().unwrap_or_else(PoisonError::into_inner) = specs;
        hub.follow();
        Ok(hub)
    }

    /// Starts the servers read at [`McpHub::start`], each in the background. The daemon calls
    /// it once its socket serves, so starting them (a process spawned each) never delays it.
    pub fn launch(&self) {
        let specs =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        for spec in specs {
            self.registry.add(spec);
        }
    }

    /// Republishes the index whenever the registry changes, approving a server's first tool
    /// set (its registration was the approval).
    fn follow(self: &Arc<Self>) {
        let mut changes = self.registry.changes();
        let hub = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let Some(strong) = hub.upgrade() else { return };
                strong.publish();
                drop(strong);
                if changes.changed().await.is_err() {
                    return;
                }
            }
        });
    }

    /// Whether `name` is one of the configuration's servers.
    fn is_configured(&self, name: &ServerName) -> bool {
        self.configured
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(name)
    }

    fn pins(&self) -> std::sync::MutexGuard<'_, BTreeMap<ServerName, Pins>> {
        self.pins.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Indexes the servers' tools as they are now and returns the servers it indexed. What
    /// `codaris mcp list` shows comes from here, so a server it shows ready has its tools in
    /// the index already: a script that waits for `ready` and then searches finds them.
    fn publish(&self) -> Vec<ServerView> {
        let _one_at_a_time = self
            .publishing
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let servers = self.registry.servers();
        for server in &servers {
            // The built-in server changes with Codaris itself: nothing of it is pinned.
            let unapproved = !builtin::is_builtin(&server.spec.name)
                && !self.pins().contains_key(&server.spec.name);
            if server.state == State::Ready
                && unapproved
                && let Err(err) = self.record_approval(&server.spec, &server.tools)
            {
                tracing::error!(server = %server.spec.name, %err, "recording an MCP server's approval failed; it is approved at its next listing");
            }
        }
        {
            let mut last = self
                .last_tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            last.retain(|name, _| servers.iter().any(|s| &s.spec.name == name));
            for server in servers.iter().filter(|s| s.state == State::Ready) {
                last.insert(server.spec.name.clone(), server.tools.clone());
            }
        }
        let mut entries = Vec::new();
        let mut index_servers = Vec::new();
        for server in servers.iter().filter(|s| s.state == State::Ready) {
            index_servers.push(Server {
                name: server.spec.name.to_string(),
                keywords: server.spec.keywords.clone(),
            });
            let off_by_default =
                builtin::is_builtin(&server.spec.name) && !self.builtin_on.load(Ordering::Relaxed);
            for tool in server.tools.iter() {
                let mut entry = entry(&server.spec, tool);
                entry.enabled = !off_by_default;
                entries.push(entry);
            }
        }
        let ready = index_servers.len();
        let count = entries.len();
        match self.tools.set_mcp(entries, index_servers) {
            Ok(true) => tracing::info!(servers = ready, tools = count, "MCP tools re-indexed"),
            Ok(false) => {}
            Err(err) => tracing::error!(%err, "re-indexing the MCP tools failed"),
        }
        servers
    }

    fn record_approval(&self, spec: &ServerSpec, tools: &[ToolDef]) -> Result<(), DaemonError> {
        let pins = Pins::approve(spec, tools, now_ms());
        self.state.put_pins(spec.name.as_str(), &pins)?;
        self.pins().insert(spec.name.clone(), pins);
        tracing::info!(server = %spec.name, tools = tools.len(), "MCP server's tool definitions approved");
        Ok(())
    }

    /// The server and tool a called name refers to, when it is an MCP tool of a known server:
    /// from its current list when it is ready, else from the list it last had, else from its
    /// approval. A server switched off since the daemon started was never listed: a call of
    /// any tool under its prefix is still its tool (withheld), not an unknown one.
    fn lookup(&self, called: &McpTool) -> Option<(ServerView, ToolDef)> {
        let server = ServerName::of(called);
        let prefixed = called.prefixed();
        let view = self.registry.server(&server)?;
        let tool = match view.tool(prefixed) {
            Some(tool) => tool.clone(),
            None if view.state == State::Ready => return None,
            None => self
                .known_tool(&server, prefixed)
                .or_else(|| (view.state == State::Disabled).then(|| unlisted(called)))?,
        };
        Some((view, tool))
    }

    /// A tool of a server that is not ready, from its last listing or its approval.
    fn known_tool(&self, server: &ServerName, prefixed: &str) -> Option<ToolDef> {
        let find = |tools: &[&ToolDef]| {
            tools
                .iter()
                .find(|t| t.prefixed(server) == prefixed)
                .map(|t| (*t).clone())
        };
        let last = self
            .last_tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(server)
            .and_then(|tools| find(&tools.iter().collect::<Vec<_>>()));
        last.or_else(|| {
            self.pins()
                .get(server)
                .and_then(|pins| find(&pins.tools.values().collect::<Vec<_>>()))
        })
    }

    /// Everything the policy is told about an MCP tool of a known server, from one lookup:
    /// the name it is decided under (`mcp__server__tool` read as `server__tool`), its spec,
    /// what its arguments name, and whether its server is switched off.
    pub fn decision_input(&self, called: &McpTool) -> Option<McpDecisionInput> {
        let (view, tool) = self.lookup(called)?;
        Some(McpDecisionInput {
            tool: called.canonical(),
            spec: self.spec_of(&view, &tool),
            marks: marks_of(&view, &tool),
            switched_off: view.state == State::Disabled,
        })
    }

    /// What the policy is told about an MCP tool: annotations believed only for a trusted
    /// server, file-naming arguments as paths, `approval = "ask"` as a card on every call, the
    /// definition's digest, and why it is held back, if it is.
    pub fn external_spec(&self, called: &McpTool) -> Option<ExternalSpec> {
        let (view, tool) = self.lookup(called)?;
        Some(self.spec_of(&view, &tool))
    }

    fn spec_of(&self, view: &ServerView, tool: &ToolDef) -> ExternalSpec {
        let held = match self.pins().get(&view.spec.name) {
            Some(pins) if !builtin::is_builtin(&view.spec.name) => pins.held(&view.spec, tool),
            _ => None,
        };
        external_spec(view, tool, held)
    }

    /// What the daemon reads of an MCP tool's arguments: its input schema, whether its server is
    /// trusted, and the variables its server's environment expands (`~` and `$HOME` are the
    /// server's home, as its process would read them).
    pub fn argument_marks(&self, called: &McpTool) -> Option<paths::ArgumentMarks> {
        let (view, tool) = self.lookup(called)?;
        Some(marks_of(&view, &tool))
    }

    /// The schema the model is shown for the tool `server` lists as `prefixed` (an index
    /// entry's server and name).
    pub fn listed_spec(&self, server: &str, prefixed: &str) -> Option<ToolDefinition> {
        let server = ServerName::parse(server).ok()?;
        let view = self.registry.server(&server)?;
        let tool = match view.tool(prefixed) {
            Some(tool) => tool.clone(),
            None if view.state == State::Ready => return None,
            None => self.known_tool(&server, prefixed)?,
        };
        Some(ToolDefinition {
            name: prefixed.to_owned(),
            description: described(&view.spec, &tool),
            input_schema: tool.input_schema.clone(),
            tier: ToolTier::Added,
        })
    }

    /// The action label of an MCP call: "calling `tool` on the MCP server `server`", with what
    /// it acts on from its `path`, `url` or `name` argument.
    pub fn action(called: &McpTool, args: &Value) -> Option<String> {
        let (server, tool) = (called.server(), called.tool());
        let target = ["path", "url", "name"]
            .iter()
            .find_map(|key| args.get(*key).and_then(Value::as_str))
            .filter(|t| !t.contains('\n') && t.chars().count() <= 200);
        Some(match target {
            Some(target) => format!("calling `{tool}` on the MCP server `{server}`: {target}"),
            None => format!("calling `{tool}` on the MCP server `{server}`"),
        })
    }

    /// Runs a permitted call on its server and renders the result for the model (the host cuts
    /// it to the output limits after, the server's own where it sets them).
    /// `cwd` is the session's directory, against which the policy resolved the call's paths:
    /// the built-in server gets them absolute (it runs in the daemon's directory).
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

    /// Adds a server at run time: recorded in the ledger's store (it survives restarts) and
    /// started in the background. Its first tool list is approved when it is ready.
    pub fn add(&self, spec: ServerSpec) -> Result<(), DaemonError> {
        if builtin::is_builtin(&spec.name) {
            return Err(DaemonError::McpServer {
                name: spec.name.to_string(),
                reason: "is Codaris's built-in server; choose another name".to_owned(),
            });
        }
        if self.is_configured(&spec.name) {
            return Err(DaemonError::McpServer {
                name: spec.name.to_string(),
                reason: "is declared in the configuration file; change it there".to_owned(),
            });
        }
        if self.registry.server(&spec.name).is_some() {
            return Err(DaemonError::McpServer {
                name: spec.name.to_string(),
                reason: "already exists; remove it first".to_owned(),
            });
        }
        if self
            .session_servers()
            .values()
            .any(|s| s.names().contains(&spec.name.to_string()))
        {
            return Err(DaemonError::McpServer {
                name: spec.name.to_string(),
                reason: "is a session's own server (an editor's); choose another name".to_owned(),
            });
        }
        if let codaris_mcp::Transport::Stdio { command, .. } = &spec.transport
            && !program_exists(command, spec_cwd(&spec))
        {
            return Err(DaemonError::McpServer {
                name: spec.name.to_string(),
                reason: format!("cannot start: the program `{command}` does not exist"),
            });
        }
        // A new registration is a new approval, in the store too: approvals an earlier server
        // of the name left must not come back at the next start.
        self.state.forget_approvals(spec.name.as_str())?;
        self.pins().remove(&spec.name);
        self.state.put_registration(spec.name.as_str(), &spec)?;
        self.registry.add(spec);
        Ok(())
    }

    /// Stops and forgets a run-time server, its approvals and its switch.
    pub async fn remove(&self, name: &str) -> Result<(), DaemonError> {
        let name = self.known(name)?;
        if builtin::is_builtin(&name) {
            return Err(DaemonError::McpServer {
                name: name.to_string(),
                reason:
                    "is Codaris's built-in server; switch it off with `codaris mcp disable seqera`"
                        .to_owned(),
            });
        }
        if self.is_configured(&name) {
            return Err(DaemonError::McpServer {
                name: name.to_string(),
                reason: "is declared in the configuration file; remove it there".to_owned(),
            });
        }
        self.state.remove(name.as_str())?;
        self.pins().remove(&name);
        self.registry.remove(&name).await;
        Ok(())
    }

    pub fn restart(&self, name: &str) -> Result<(), DaemonError> {
        let name = self.known(name)?;
        self.registry.restart(&name);
        Ok(())
    }

    /// Switches a server on or off, durably.
    /// Switching the built-in server on also switches on its tools (off until then).
    pub async fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), DaemonError> {
        let name = self.known(name)?;
        self.state.set_switch(name.as_str(), enabled)?;
        if builtin::is_builtin(&name) {
            self.builtin_on.store(enabled, Ordering::Relaxed);
        }
        self.registry.set_enabled(&name, enabled).await;
        if builtin::is_builtin(&name) {
            // Switched on while already running: its entries change with no registry change
            // to republish them.
            self.publish();
        }
        Ok(())
    }

    /// Accepts the server's current tool definitions and launch: nothing of it is held back
    /// until it changes again. Refused while the server is not ready (nothing to approve).
    /// A name that is no daemon server's but a session's own (an editor's) approves that
    /// server in every session that has one ready: the policy's sentence for a held tool names
    /// this command whichever server holds it.
    pub fn approve(&self, name: &str) -> Result<usize, DaemonError> {
        if let Ok(parsed) = ServerName::parse(name)
            && self.registry.server(&parsed).is_none()
        {
            let sessions: Vec<_> = self.session_servers().values().cloned().collect();
            let approved: Vec<usize> = sessions
                .iter()
                .filter_map(|own| own.approve(&parsed))
                .collect();
            if let Some(most) = approved.iter().max() {
                return Ok(*most);
            }
        }
        let name = self.known(name)?;
        let Some(view) = self.registry.server(&name) else {
            return Err(DaemonError::McpUnknown {
                name: name.to_string(),
            });
        };
        if view.state != State::Ready {
            return Err(DaemonError::McpServer {
                name: name.to_string(),
                reason: format!("is {}; approve it once it is ready", view.state.as_str()),
            });
        }
        self.record_approval(&view.spec, &view.tools)?;
        self.publish();
        Ok(view.tools.len())
    }

    /// Every server, configured first then run-time, each by name.
    pub fn list(&self) -> Vec<ServerInfo> {
        let servers = self.publish();
        let pins = self.pins().clone();
        servers
            .into_iter()
            .map(|view| {
                let held = match pins.get(&view.spec.name) {
                    Some(pins) => view
                        .tools
                        .iter()
                        .filter(|t| pins.held(&view.spec, t).is_some())
                        .count(),
                    None => 0,
                };
                ServerInfo {
                    origin: if self.is_configured(&view.spec.name) {
                        Origin::Config
                    } else {
                        Origin::Runtime
                    },
                    view,
                    held,
                }
            })
            .collect()
    }

    /// The names of every server's tools that are switched on, sorted: what a model may reach
    /// beside the built-ins, for the `unknown_tool` refusal to name the closest of.
    pub fn tool_names(&self) -> Vec<String> {
        let index = self.tools.snapshot();
        let mut names: Vec<String> = self
            .publish()
            .iter()
            .flat_map(|view| {
                view.tools
                    .iter()
                    .map(|tool| tool.prefixed(&view.spec.name))
                    .collect::<Vec<_>>()
            })
            .filter(|name| index.get(name).is_none_or(|e| e.enabled))
            .collect();
        names.sort();
        names
    }

    /// The tools of one server.
    pub fn tools_of(&self, name: &str) -> Result<Vec<ToolInfo>, DaemonError> {
        let name = self.known(name)?;
        // As indexed, so that each tool's `enabled` is read from an index that holds it.
        let Some(view) = self.publish().into_iter().find(|s| s.spec.name == name) else {
            return Err(DaemonError::McpUnknown {
                name: name.to_string(),
            });
        };
        let index = self.tools.snapshot();
        let pins = self.pins().get(&name).cloned();
        Ok(view
            .tools
            .iter()
            .map(|tool| {
                let prefixed = tool.prefixed(&name);
                ToolInfo {
                    enabled: index.get(&prefixed).is_none_or(|e| e.enabled),
                    held: pins.as_ref().and_then(|p| p.held(&view.spec, tool)),
                    read_only: view.spec.trust && tool.claims_read_only(),
                    name: prefixed,
                    tool: tool.clone(),
                }
            })
            .collect())
    }

    fn known(&self, name: &str) -> Result<ServerName, DaemonError> {
        let parsed = ServerName::parse(name).map_err(|err| DaemonError::InvalidArgument {
            field: "name",
            reason: err.to_string(),
        })?;
        if self.registry.server(&parsed).is_none() {
            return Err(DaemonError::McpUnknown {
                name: name.to_owned(),
            });
        }
        Ok(parsed)
    }

    /// Stops every server (for the daemon's stop), the sessions' own too: none outlives the
    /// daemon.
    pub async fn shutdown(&self) {
        let sessions = std::mem::take(&mut *self.session_servers());
        for own in sessions.values() {
            own.shutdown().await;
        }
        self.registry.shutdown().await;
    }

    fn session_servers(
        &self,
    ) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<session::SessionMcp>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Refuses a session's own servers before the session is made: a name that is the
    /// built-in's, a daemon server's (configured or added) or another of them, twice in the
    /// list, or a program that does not exist. Names stay apart so that a `server__tool` a
    /// session calls names one server only.
    pub fn check_session_servers(&self, specs: &[ServerSpec]) -> Result<(), DaemonError> {
        let refused = |spec: &ServerSpec, reason: &str| DaemonError::McpServer {
            name: spec.name.to_string(),
            reason: reason.to_owned(),
        };
        let pending: BTreeSet<ServerName> = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|s| s.name.clone())
            .collect();
        let mut seen = BTreeSet::new();
        for spec in specs {
            if builtin::is_builtin(&spec.name)
                || self.is_configured(&spec.name)
                || pending.contains(&spec.name)
                || self.registry.server(&spec.name).is_some()
            {
                return Err(refused(
                    spec,
                    "is one of codarisd's servers already; rename the editor's server",
                ));
            }
            if !seen.insert(spec.name.clone()) {
                return Err(refused(
                    spec,
                    "is named twice; give each server its own name",
                ));
            }
            if let codaris_mcp::Transport::Stdio { command, .. } = &spec.transport
                && !program_exists(command, spec_cwd(spec))
            {
                return Err(refused(
                    spec,
                    &format!("cannot start: the program `{command}` does not exist"),
                ));
            }
        }
        Ok(())
    }

    /// Starts `specs` as the session's own servers (checked by
    /// [`McpHub::check_session_servers`]), stopping any it had, and waits until each is ready
    /// or failed: the editor's first prompt finds their tools. Those that share roots are told
    /// the daemon's allowed folders and the session's own `extra` roots (its additional
    /// directories), the folders its tools may use.
    pub async fn join(
        &self,
        session: &str,
        specs: Vec<ServerSpec>,
        extra: Vec<std::path::PathBuf>,
    ) {
        let roots = self
            .roots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let own = Arc::new(session::SessionMcp::start(specs, roots, extra));
        let old = self
            .session_servers()
            .insert(session.to_owned(), own.clone());
        if let Some(old) = old {
            old.shutdown().await;
        }
        own.settled().await;
    }

    /// The session's own servers, when it has any.
    pub fn session(&self, session: &str) -> Option<Arc<session::SessionMcp>> {
        self.session_servers().get(session).cloned()
    }

    /// Stops the session's own servers (it ended).
    pub async fn leave(&self, session: &str) {
        let own = self.session_servers().remove(session);
        if let Some(own) = own {
            own.shutdown().await;
        }
    }
}

/// A tool known only by the name it was called under (its server is switched off and was never
/// listed): no arguments, no claims, so the policy counts it as mutating, and withholds it.
fn unlisted(called: &McpTool) -> ToolDef {
    ToolDef {
        name: called.tool().to_owned(),
        description: String::new(),
        input_schema: serde_json::json!({"type": "object"}),
        output_schema: None,
        annotations: None,
    }
}

fn spec_cwd(spec: &ServerSpec) -> Option<&std::path::Path> {
    match &spec.transport {
        codaris_mcp::Transport::Stdio { cwd, .. } => cwd.as_deref(),
        codaris_mcp::Transport::Http { .. } => None,
    }
}

/// Whether `command` names a program that exists: a path (against `cwd` when relative), or a
/// name found on the daemon's `PATH`.
fn program_exists(command: &str, cwd: Option<&std::path::Path>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |path: &std::path::Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let path = std::path::Path::new(command);
        return match (path.is_absolute(), cwd) {
            (false, Some(cwd)) => runnable(&cwd.join(path)),
            _ => runnable(path),
        };
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| runnable(&dir.join(command))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use codaris_index::{Index, SearchRequest, Searcher};
    use serde_json::json;

    /// What a server publishes beside the description reaches search: the annotations' title
    /// and the arguments' descriptions, so a word found only there finds the tool.
    #[test]
    fn a_tools_title_and_argument_descriptions_are_searched() {
        let Ok(name) = codaris_mcp::ServerName::parse("tickets") else {
            panic!("a valid server name");
        };
        let spec = ServerSpec::stdio(name, "tickets-server", Vec::new());
        let tool = ToolDef {
            name: "add_note".to_owned(),
            description: "Add a note.".to_owned(),
            input_schema: json!({"type": "object", "properties": {
                "requester": {"type": "string", "description": "The customer waiting on the reply"}
            }}),
            output_schema: None,
            annotations: Some(json!({"title": "Reply to a support request"})),
        };
        let entry = entry(&spec, &tool);
        assert_eq!(entry.title.as_deref(), Some("Reply to a support request"));
        assert_eq!(
            entry.arg_descriptions,
            ["The customer waiting on the reply"]
        );
        let index = Index::build(vec![entry]);
        let mut searcher = Searcher::new();
        for query in ["support request", "customer waiting"] {
            let outcome = searcher.search(&index, &SearchRequest::new(query));
            assert_eq!(outcome.bindable(), ["tickets__add_note"], "{query}");
        }
    }
}
