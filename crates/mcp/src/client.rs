//! One connection to one server, on rmcp: the handshake pinned to protocol `2025-11-25`, a full
//! paginated `tools/list` with its own caps, calls with a timeout, and a close that leaves no
//! process behind.
//!
//! rmcp sets no timeout on any request and can wait forever (a stdio reply over its line limit
//! is dropped; an HTTP server that restarted answers the stale session with an id-less error).
//! Every request here is bounded, and a stdio reply over [`MAX_LINE`] closes the connection
//! (see `lines.rs`) so the caller hears why at once.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ErrorData, Implementation,
    PaginatedRequestParams, ProtocolVersion,
};
// rmcp marks roots deprecated because the drafts after 2025-11-25 drop them (SEP-2577); the
// version Codaris pins has them.
#[expect(
    deprecated,
    reason = "roots are part of protocol 2025-11-25, the one pinned"
)]
use rmcp::model::{ListRootsResult, Root, RootsCapabilities};
use rmcp::service::{
    NotificationContext, RequestContext, RunningService, RunningServiceCancellationToken,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;
use tokio::sync::{Notify, watch};

use crate::env::server_env;
use crate::error::{CallError, ConnectError};
use crate::http::SessionWatch;
use crate::lines::{BoundedLines, MAX_LINE};
use crate::spec::{ServerSpec, Transport};
use crate::tool::ToolDef;

/// The protocol version Codaris speaks: every peer it is tested with speaks it, and the
/// conformance suite checks it (rmcp would send a newer draft by default).
pub const PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;
/// Pages of `tools/list` read before a server counts as looping.
pub const PAGE_CAP: usize = 100;
/// Tools one server may offer.
pub const TOOL_CAP: usize = 2_000;
/// How long a stopping server gets after its input closes, and again after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// What the client tells servers: no sampling, no elicitation, and roots only to a server whose
/// registration shares them (a filesystem server takes them over its own directories).
#[derive(Debug, Clone)]
struct Handler {
    info: ClientConfig,
    changed: Arc<Notify>,
    /// `tools/list_changed` notifications received on this connection.
    notified: Arc<AtomicU64>,
    server: String,
    /// The roots answered to `roots/list`, when the server is told any: read at each request,
    /// so a server told the list changed gets the one in force.
    roots: Option<Roots>,
}

/// The roots servers that share them are told (absolute directories), shared by the registry,
/// which changes them, and every connection's handler, which answers `roots/list` with them.
#[derive(Debug, Clone, Default)]
pub struct Roots(Arc<std::sync::Mutex<Arc<Vec<PathBuf>>>>);

impl Roots {
    pub fn new(roots: Vec<PathBuf>) -> Roots {
        Roots(Arc::new(std::sync::Mutex::new(Arc::new(roots))))
    }

    /// The roots in force.
    pub fn get(&self) -> Arc<Vec<PathBuf>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Puts `roots` in force; `true` when they differ from the ones before.
    pub fn set(&self, roots: Vec<PathBuf>) -> bool {
        let mut held = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let changed = **held != roots;
        *held = Arc::new(roots);
        changed
    }
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        // Never blocks the connection: the supervisor coalesces and re-lists.
        tracing::debug!(server = %self.server, "tools/list_changed");
        self.notified.fetch_add(1, Ordering::Relaxed);
        self.changed.notify_one();
        std::future::ready(())
    }

    #[expect(
        deprecated,
        reason = "roots are part of protocol 2025-11-25, the one pinned"
    )]
    fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> impl Future<Output = Result<ListRootsResult, ErrorData>> + Send + '_ {
        let now = self.roots.as_ref().map(Roots::get);
        let roots = now
            .iter()
            .flat_map(|roots| roots.iter())
            .filter_map(|path| url::Url::from_directory_path(path).ok())
            .map(|uri| Root::new(uri.to_string()))
            .collect();
        std::future::ready(Ok(ListRootsResult::new(roots)))
    }

    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }
}

fn client_info(shares_roots: bool) -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    if shares_roots {
        // Told when they change (`notifications/roots/list_changed`) rather than started again:
        // a server keeps its state (a browser, a cache) when the person widens the fence.
        let mut roots = RootsCapabilities::default();
        roots.list_changed = Some(true);
        capabilities.roots = Some(roots);
    }
    ClientConfig::new(
        capabilities,
        Implementation::new("codaris", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(PROTOCOL)
}

/// A live connection.
pub struct Connection {
    server: String,
    peer: Peer<RoleClient>,
    /// Taken by the first close.
    cancel: std::sync::Mutex<Option<RunningServiceCancellationToken>>,
    /// Set once the connection ended, with why.
    closed: watch::Receiver<Option<String>>,
    /// A stdio server's reply went over [`MAX_LINE`].
    overflowed: Arc<AtomicBool>,
    child: Option<tokio::sync::Mutex<Child>>,
    /// The protocol version and server the handshake agreed.
    pub protocol: String,
    pub server_info: String,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.server)
            .field("protocol", &self.protocol)
            .field("server_info", &self.server_info)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Starts or reaches the server and completes the handshake within its startup timeout.
    /// `changed` is notified on every `notifications/tools/list_changed`.
    /// `roots` are what a server whose registration shares roots is told; `notified` counts the
    /// notifications received.
    pub async fn open(
        spec: &ServerSpec,
        changed: Arc<Notify>,
        roots: &Roots,
        notified: Arc<AtomicU64>,
    ) -> Result<Connection, ConnectError> {
        let handler = Handler {
            info: client_info(spec.share_roots),
            changed: changed.clone(),
            notified,
            server: spec.name.to_string(),
            roots: spec.share_roots.then(|| roots.clone()),
        };
        let overflowed = Arc::new(AtomicBool::new(false));
        let timeout = spec.startup_timeout();
        let (service, child) = match &spec.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut child = spawn(spec, command, args, env, cwd.as_deref())?;
                let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                    return Err(ConnectError::Spawn {
                        command: command.clone(),
                        reason: "its input and output could not be opened".to_owned(),
                    });
                };
                if let Some(stderr) = child.stderr.take() {
                    drain_stderr(spec.name.to_string(), stderr);
                }
                let reader = BoundedLines::new(stdout, MAX_LINE, overflowed.clone());
                // rmcp's own bound sits above ours, so ours is the one that acts.
                let transport =
                    AsyncRwTransport::new_client(reader, stdin).with_max_line_length(MAX_LINE + 1);
                let served = tokio::time::timeout(timeout, handler.serve(transport)).await;
                let service = match served {
                    Ok(Ok(service)) => service,
                    Ok(Err(err)) => {
                        stop_child(&mut child).await;
                        return Err(ConnectError::Handshake(err.to_string()));
                    }
                    Err(_) => {
                        stop_child(&mut child).await;
                        return Err(ConnectError::StartupTimeout(timeout));
                    }
                };
                (service, Some(child))
            }
            Transport::Http { url, headers } => {
                let mut parsed = std::collections::HashMap::new();
                for (name, value) in headers {
                    let name = http::HeaderName::try_from(name.as_str())
                        .map_err(|_| ConnectError::Header(name.clone()))?;
                    let value = http::HeaderValue::try_from(value.as_str())
                        .map_err(|_| ConnectError::Header(name.to_string()))?;
                    parsed.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(parsed)
                    .max_json_response_size(MAX_LINE)
                    .max_sse_event_size(MAX_LINE)
                    .reinit_on_expired_session(true);
                // A new HTTP session counts as a change of the tool list (see `http.rs`).
                let client = SessionWatch::new(changed).map_err(ConnectError::Handshake)?;
                let transport = StreamableHttpClientTransport::with_client(client, config);
                let service = match tokio::time::timeout(timeout, handler.serve(transport)).await {
                    Ok(Ok(service)) => service,
                    Ok(Err(err)) => return Err(ConnectError::Handshake(err.to_string())),
                    Err(_) => return Err(ConnectError::StartupTimeout(timeout)),
                };
                (service, None)
            }
        };
        Ok(Connection::watch(spec, service, child, overflowed).await)
    }

    async fn watch(
        spec: &ServerSpec,
        service: RunningService<RoleClient, Handler>,
        child: Option<Child>,
        overflowed: Arc<AtomicBool>,
    ) -> Connection {
        let peer = service.peer().clone();
        // Codaris re-lists after every change and must never be handed a stale list.
        peer.set_response_cache_config(rmcp::service::ClientCacheConfig::disabled())
            .await;
        let (protocol, server_info) = match peer.peer_info() {
            Some(info) => (
                info.protocol_version.to_string(),
                info.server_info
                    .as_ref()
                    .map(|s| format!("{} {}", s.name, s.version))
                    .unwrap_or_default(),
            ),
            None => (String::new(), String::new()),
        };
        let cancel = service.cancellation_token();
        let (closed_tx, closed) = watch::channel(None);
        let flag = overflowed.clone();
        tokio::spawn(async move {
            let reason = match service.waiting().await {
                _ if flag.load(Ordering::Relaxed) => format!(
                    "it sent a message larger than {} MiB, which ends the connection",
                    MAX_LINE / (1024 * 1024)
                ),
                Ok(reason) => format!("the connection ended ({reason:?})"),
                Err(err) => format!("the connection's task failed: {err}"),
            };
            let _ = closed_tx.send(Some(reason));
        });
        Connection {
            server: spec.name.to_string(),
            peer,
            cancel: std::sync::Mutex::new(Some(cancel)),
            closed,
            overflowed,
            child: child.map(tokio::sync::Mutex::new),
            protocol,
            server_info,
        }
    }

    /// Every tool the server offers, page by page: at most [`PAGE_CAP`] pages and
    /// [`TOOL_CAP`] tools, and a cursor seen before ends it as an error.
    pub async fn list_tools(&self, timeout: Duration) -> Result<Vec<ToolDef>, CallError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..PAGE_CAP {
            let params = cursor
                .take()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = self.bounded(timeout, self.peer.list_tools(params)).await?;
            tools.extend(page.tools.iter().map(ToolDef::from_listed));
            if tools.len() > TOOL_CAP {
                return Err(CallError::Listing(format!(
                    "it lists more than {TOOL_CAP} tools"
                )));
            }
            match page.next_cursor {
                None => return Ok(tools),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(CallError::Listing(format!(
                        "its tool list repeats the cursor `{}`",
                        shorten(&next)
                    )));
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(CallError::Listing(format!(
            "its tool list did not end within {PAGE_CAP} pages"
        )))
    }

    /// Calls `tool` (its own name on the server) and returns the result as sent, as JSON.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let result = self.bounded(timeout, self.peer.call_tool(params)).await?;
        serde_json::to_value(result).map_err(|err| CallError::Protocol(err.to_string()))
    }

    /// Whether the server still answers, within `timeout`.
    /// Tells the server its roots changed (`notifications/roots/list_changed`); it asks for
    /// them again when it wants them. `false` when the notification could not be sent in
    /// `timeout`.
    pub async fn notify_roots_changed(&self, timeout: Duration) -> bool {
        matches!(
            tokio::time::timeout(timeout, self.peer.notify_roots_list_changed()).await,
            Ok(Ok(()))
        )
    }

    pub async fn ping(&self, timeout: Duration) -> bool {
        let ping = self
            .peer
            .send_request(rmcp::model::ClientRequest::PingRequest(
                rmcp::model::PingRequest::default(),
            ));
        matches!(tokio::time::timeout(timeout, ping).await, Ok(Ok(_)))
    }

    /// A request bounded by `timeout`; dropping it on the timeout sends `notifications/cancelled`.
    async fn bounded<T>(
        &self,
        timeout: Duration,
        request: impl Future<Output = Result<T, rmcp::service::ServiceError>>,
    ) -> Result<T, CallError> {
        let mut closed = self.closed.clone();
        let answered = tokio::select! {
            answered = tokio::time::timeout(timeout, request) => Some(answered),
            // A connection that ends mid-request ends the request with its reason.
            _ = closed.wait_for(Option::is_some) => None,
        };
        match answered {
            None => Err(CallError::Closed(self.closed_reason())),
            Some(Ok(Ok(value))) => Ok(value),
            Some(Ok(Err(err))) => {
                // Over stdio a closed transport is the end of the connection; over HTTP rmcp
                // also says so of one request whose reply it dropped.
                if matches!(err, rmcp::service::ServiceError::TransportClosed)
                    && self.child.is_some()
                {
                    // The connection's task records why it ended a moment after its transport
                    // closed; the caller is told that, not just that it ended.
                    let mut ended = self.closed.clone();
                    let _ = tokio::time::timeout(
                        Duration::from_secs(1),
                        ended.wait_for(Option::is_some),
                    )
                    .await;
                }
                Err(self.failure(err))
            }
            Some(Err(_)) => Err(CallError::Timeout(timeout)),
        }
    }

    fn failure(&self, err: rmcp::service::ServiceError) -> CallError {
        match err {
            rmcp::service::ServiceError::McpError(error) => CallError::Server {
                code: error.code.0,
                message: error.message.to_string(),
            },
            // Over HTTP a request that could not be sent (the server is down) leaves the
            // connection open for the next one: say what happened, not that it ended.
            rmcp::service::ServiceError::TransportSend(err)
                if self.closed.borrow().is_none() && !self.overflowed.load(Ordering::Relaxed) =>
            {
                CallError::Closed(format!(
                    "the request could not be sent: {}",
                    shorten(&err.to_string())
                ))
            }
            rmcp::service::ServiceError::TransportClosed
                if self.closed.borrow().is_none() && !self.overflowed.load(Ordering::Relaxed) =>
            {
                CallError::Closed(format!(
                    "its reply was dropped on the way (the transport drops a reply over {} MiB)",
                    MAX_LINE / (1024 * 1024)
                ))
            }
            rmcp::service::ServiceError::TransportClosed
            | rmcp::service::ServiceError::TransportSend(_) => {
                CallError::Closed(self.closed_reason())
            }
            other => CallError::Protocol(other.to_string()),
        }
    }

    fn closed_reason(&self) -> String {
        if self.overflowed.load(Ordering::Relaxed) {
            return format!(
                "the server sent a message larger than {} MiB, which ends the connection",
                MAX_LINE / (1024 * 1024)
            );
        }
        self.closed
            .borrow()
            .clone()
            .unwrap_or_else(|| "the connection ended".to_owned())
    }

    /// Why the connection ended, once it has.
    pub fn ended_reason(&self) -> Option<String> {
        self.closed.borrow().is_some().then(|| self.closed_reason())
    }

    /// Resolves when the connection has ended, with why.
    pub async fn ended(&self) -> String {
        let mut closed = self.closed.clone();
        let _ = closed.wait_for(Option::is_some).await;
        self.closed_reason()
    }

    /// Ends the connection: input closed, then SIGTERM and SIGKILL to the server's whole
    /// process group if it lingers. Nothing it started outlives this.
    pub async fn close(&self) {
        let cancel = self
            .cancel
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(cancel) = cancel {
            cancel.cancel();
        }
        if let Some(child) = &self.child {
            stop_child(&mut *child.lock().await).await;
        }
        tracing::debug!(server = %self.server, "connection closed");
    }

    /// The stdio server's process id.
    pub async fn pid(&self) -> Option<u32> {
        match &self.child {
            Some(child) => child.lock().await.id(),
            None => None,
        }
    }
}

fn spawn(
    spec: &ServerSpec,
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cwd: Option<&std::path::Path>,
) -> Result<Child, ConnectError> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .env_clear()
        .envs(server_env(std::env::vars_os(), env))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group: a Ctrl-C at the daemon's terminal does not reach it, and stopping it
        // reaches everything it started.
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    cmd.spawn()
        .map_err(|err| ConnectError::Spawn {
            command: command.to_owned(),
            reason: match err.kind() {
                std::io::ErrorKind::NotFound => "no such program".to_owned(),
                _ => err.to_string(),
            },
        })
        .inspect(|child| {
            tracing::info!(server = %spec.name, pid = child.id(), command, "MCP server started");
        })
}

/// Reads a server's stderr into the daemon's log, line by line, so a chatty server never
/// blocks on a full pipe.
fn drain_stderr(server: String, stderr: tokio::process::ChildStderr) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::info!(server = %server, "stderr: {}", shorten(&shown(&line)));
        }
    });
}

/// Stops a child and its process group: input already closed by the caller's cancel, then a
/// grace period, SIGTERM to the group, another grace period, SIGKILL to the group.
async fn stop_child(child: &mut Child) {
    let Some(pid) = child.id() else {
        return;
    };
    let group = rustix::process::Pid::from_raw(pid.cast_signed());
    drop(child.stdin.take());
    if tokio::time::timeout(STOP_GRACE, child.wait())
        .await
        .is_err()
    {
        if let Some(group) = group {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
        }
        if tokio::time::timeout(STOP_GRACE, child.wait())
            .await
            .is_err()
        {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }
    // Whatever the leader left running in its group goes with it.
    if let Some(group) = group {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}

/// A server's line with its control characters (a colour, a cursor move, a title change)
/// written out as `\u{1b}`-style text: the log a person reads in a terminal obeys none of them.
fn shown(line: &str) -> String {
    line.chars()
        .map(|c| {
            if c.is_control() && c != '\t' {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A line for a log or an error: at most 300 characters.
pub(crate) fn shorten(text: &str) -> String {
    const MAX: usize = 300;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
