//! Serving: the ledger database, the services, the Unix socket and the optional loopback TCP
//! listener, and the orderly stop that flushes the ledger and removes the socket.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use codaris_ledger::Ledger;
use codaris_proto::v1;
use tokio::net::{TcpListener, UnixListener};
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};
use tonic::service::Routes;
use tonic::transport::Server;

use crate::config::Config;
use crate::error::StartError;
use crate::server::auth::TcpGuardLayer;
use crate::server::on_first_call::OnFirstCall;
use crate::server::service::daemon::DaemonService;
use crate::server::service::ledger::LedgerService;
use crate::server::service::mcp::McpService;
use crate::server::service::sessions::SessionsService;
use crate::server::service::tools::ToolsService;
use crate::server::shutdown::{DRAIN, Shutdown};
use crate::server::state::StateClaim;
use crate::sessions::store::{SessionStore, now_ms};
use crate::toolset::registry::ToolRegistry;
use crate::toolset::skills;

/// Runs the daemon until `shutdown` fires, then stops in order: in-flight calls finish, the
/// ledger is flushed to disk, and the socket, token and pid file are removed.
pub async fn serve(
    config: Config,
    claim: StateClaim,
    shutdown: Shutdown,
) -> Result<(), StartError> {
    let inputs = crate::config::LoadInputs::of(&config);
    serve_reloading(config, inputs, claim, shutdown).await
}

/// [`serve`], with what the configuration was loaded from: a committed configuration
/// (`config_commit`) is resolved from the same environment and flags.
pub async fn serve_reloading(
    config: Config,
    inputs: crate::config::LoadInputs,
    claim: StateClaim,
    shutdown: Shutdown,
) -> Result<(), StartError> {
    let started = Instant::now();
    let layout = claim.layout().clone();
    // What the services read is live (a commit replaces it); what is set up once here reads
    // the configuration the daemon started with.
    let live = codaris_tools::Live::new(config);
    let config = live.get();

    let ledger = Arc::new(Ledger::open_with(
        &layout.ledger(),
        codaris_ledger::LedgerOptions {
            cache_bytes: config.ledger_cache_bytes,
        },
    )?);
    crate::server::chain_head::start_publishing(&ledger, &config);
    let wedged = watch_ledger(&ledger, &shutdown);
    let sessions = SessionStore::open(ledger.clone(), &layout.sessions()).map_err(|err| {
        StartError::StateDir {
            path: layout.sessions(),
            source: std::io::Error::other(err.to_string()),
        }
    })?;
    // Only what has a real implementation is registered: the built-in tools that run here,
    // and skills and references.
    let skills = skills::scan(&config.skills_dirs);
    let mut setup = crate::calls::builtins::Setup::from_config(&config);
    setup.skills.entries = skills.clone();
    // `load_skill` asks the registry, made below from the same entries, whether a skill is
    // switched on: a skill `codaris tools disable` switched off is neither found nor loaded.
    let registry: Arc<std::sync::OnceLock<Arc<ToolRegistry>>> = Arc::default();
    setup.skills.switch = Some({
        let registry = registry.clone();
        Arc::new(move |name: &str| {
            registry
                .get()
                .is_none_or(|tools| tools.snapshot().get(name).is_none_or(|e| e.enabled))
        })
    });
    setup.gates = Some(Arc::new(crate::calls::gates::LedgerGates(ledger.gates()?)));
    setup.filing = Some(Arc::new(crate::sessions::filing::RecordFiling(
        sessions.clone(),
    )));
    let editor = Arc::new(crate::reconfig::ConfigEditing::new(inputs, ledger.clone()));
    setup.config_editor = Some(editor.clone());
    // The scheduler's tools are offered only while it is on; its runs start once the turns
    // exist (`routes`).
    let scheduler =
        crate::scheduler::Scheduler::new(&config, crate::scheduler::Scheduler::clock_from_env());
    if scheduler.enabled() {
        setup.scheduler = Some(Arc::new(crate::scheduler::host::SchedulerTools(
            scheduler.clone(),
        )));
    }
    let (builtins, notices) = crate::calls::builtins::Builtins::new(setup);
    let builtins = builtins.with_limits(codaris_tools::OutputLimits {
        max_bytes: config.output_max_bytes,
        max_lines: config.output_max_lines,
    });
    let mut entries = crate::calls::builtins::loop_entries(config.compaction.enable);
    entries.extend(builtins.entries());
    entries.extend(skills);
    let tools = Arc::new(ToolRegistry::open(entries, &ledger).map_err(StartError::ToolIndex)?);
    let _ = registry.set(tools.clone());
    // MCP servers start in the background: the daemon serves before any of them is ready, and
    // their tools join the index as each one lists them.
    let servers = crate::reconfig::servers_of(&config);
    let mcp =
        crate::mcp::McpHub::start(servers, config.allowed_dirs.clone(), &ledger, tools.clone())
            .map_err(StartError::ToolIndex)?;

    let routes = routes(
        &live,
        &editor,
        layout.socket().display().to_string(),
        sessions,
        tools,
        builtins,
        mcp.clone(),
        notices,
        ledger.clone(),
        &shutdown,
        started,
        scheduler,
    )
    .await?;

    // TCP is bound before the socket, so a client that reaches the socket finds TCP up too.
    let tcp = match config.listen {
        Some(addr) => {
            let token = claim.write_token()?;
            let listener = TcpListener::bind(addr)
                .await
                .map_err(|source| StartError::Listen {
                    what: addr.to_string(),
                    source,
                })?;
            tracing::info!(%addr, token_file = %layout.token().display(), "listening on loopback TCP");
            let server = Server::builder()
                .layer(TcpGuardLayer::new(token))
                .add_routes(routes.clone())
                .serve_with_incoming_shutdown(TcpListenerStream::new(listener), shutdown.wait());
            let shutdown = shutdown.clone();
            Some(tokio::spawn(async move {
                crate::server::shutdown::drained(server, &shutdown, DRAIN, "tcp").await
            }))
        }
        None => None,
    };

    if claim.remove_stale_socket()? {
        tracing::info!(socket = %layout.socket().display(), "removed a stale socket left by a previous daemon");
    }
    let socket = layout.socket();
    let unix = UnixListener::bind(&socket).map_err(|source| StartError::Listen {
        what: socket.display().to_string(),
        source,
    })?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).map_err(
        |source| StartError::StateDir {
            path: socket.clone(),
            source,
        },
    )?;

    tracing::info!(
        socket = %socket.display(),
        pid = std::process::id(),
        version = env!("CARGO_PKG_VERSION"),
        "codarisd serving"
    );
    crate::server::notify::ready(&socket);
    let stopping = shutdown.clone();
    tokio::spawn(async move {
        stopping.wait().await;
        crate::server::notify::stopping();
    });
    // Now that the socket is bound, the MCP servers start, each in the background.
    mcp.launch();
    let unix_server = Server::builder()
        .add_routes(routes)
        .serve_with_incoming_shutdown(
            // The daemon's own commands and their children are refused before any RPC.
            crate::server::peer::guard(UnixListenerStream::new(unix)),
            shutdown.wait(),
        );
    // The calls in flight finish, but a connection nobody reads does not hold the stop.
    let unix_result =
        crate::server::shutdown::drained(unix_server, &shutdown, DRAIN, "socket").await;
    // Whatever ended the socket server ends the TCP one too.
    shutdown.trigger("socket server stopped");
    // No MCP server outlives the daemon.
    mcp.shutdown().await;
    let tcp_result = match tcp {
        Some(handle) => handle.await.unwrap_or(Ok(())),
        None => Ok(()),
    };

    // Every write was durable when it returned; this leaves the store nothing to write at close,
    // and folds the journal into it, so the next start has nothing to replay.
    let flushing = ledger.clone();
    let folded = move || {
        flushing.fold_journal().or_else(|err| {
            // A ledger that halted keeps its journal for the next open to replay: still flush.
            tracing::warn!(%err, "the journal was not folded into the ledger's store");
            flushing.flush()
        })
    };
    match tokio::task::spawn_blocking(folded).await {
        Ok(Ok(())) => crate::server::chain_head::publish_at_stop(&ledger),
        Ok(Err(err)) => tracing::error!(%err, "flushing the ledger failed"),
        Err(err) => tracing::error!(%err, "flushing the ledger failed"),
    }
    drop(ledger);
    claim.release();
    tracing::info!("codarisd stopped");
    unix_result?;
    tcp_result?;
    match wedged.get() {
        Some(reason) => Err(StartError::LedgerWedged { reason: *reason }),
        None => Ok(()),
    }
}

/// How often the ledger is asked whether it can still record: three atomic loads.
const LEDGER_WATCH: std::time::Duration = std::time::Duration::from_millis(500);

/// Stops the daemon in order once its ledger records nothing more (sled keeps the first I/O
/// error of a full disk for the life of its handle, so freeing space does not bring it back):
/// a log line, `STOPPING=1` from the orderly stop, and an exit status the service manager
/// restarts for. Every call until then fails with the ledger's error; the next start replays
/// the journal, which holds everything acknowledged.
fn watch_ledger(
    ledger: &Arc<Ledger>,
    shutdown: &Shutdown,
) -> Arc<std::sync::OnceLock<codaris_ledger::Wedged>> {
    let wedged = Arc::new(std::sync::OnceLock::new());
    let (ledger, shutdown, found) = (Arc::downgrade(ledger), shutdown.clone(), wedged.clone());
    tokio::spawn(async move {
        let mut every = tokio::time::interval(LEDGER_WATCH);
        loop {
            every.tick().await;
            let Some(ledger) = ledger.upgrade() else {
                return;
            };
            if let Some(reason) = ledger.wedged() {
                tracing::error!(
                    %reason,
                    status = crate::server::state::EXIT_LEDGER_WEDGED,
                    "the ledger records nothing more until codarisd starts again; stopping for \
                     the service manager to start it (the next start replays the journal, \
                     nothing acknowledged is lost)"
                );
                let _ = found.set(reason);
                shutdown.trigger("the ledger records nothing more");
                return;
            }
        }
    });
    wedged
}

#[expect(
    clippy::too_many_arguments,
    reason = "everything the routes share, built once in serve"
)]
async fn routes(
    live: &codaris_tools::Live<Config>,
    editor: &Arc<crate::reconfig::ConfigEditing>,
    socket: String,
    sessions: SessionStore,
    tools: Arc<ToolRegistry>,
    builtins: crate::calls::builtins::Builtins,
    mcp: Arc<crate::mcp::McpHub>,
    mut notices: tokio::sync::mpsc::UnboundedReceiver<codaris_tools::shell::TaskNotice>,
    ledger: Arc<Ledger>,
    shutdown: &Shutdown,
    started: Instant,
    scheduler: Arc<crate::scheduler::Scheduler>,
) -> Result<Routes, StartError> {
    let config = &live.get();
    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<v1::daemon_server::DaemonServer<DaemonService>>()
        .await;
    health
        .set_serving::<v1::sessions_server::SessionsServer<SessionsService>>()
        .await;
    health
        .set_serving::<v1::tools_server::ToolsServer<ToolsService>>()
        .await;
    health
        .set_serving::<v1::ledger_server::LedgerServer<LedgerService>>()
        .await;
    health
        .set_serving::<v1::mcp_server::McpServer<McpService>>()
        .await;
    health
        .set_serving::<v1::memory_server::MemoryServer<crate::server::service::memory::MemoryService>>()
        .await;

    // Made on the first reflection request: see `on_first_call`.
    let reflection = OnFirstCall::new(|| {
        reflection_builder()
            .build_v1()
            .map_err(|err| format!("server reflection: {err}"))
    });
    let reflection_alpha = OnFirstCall::new(|| {
        reflection_builder()
            .build_v1alpha()
            .map_err(|err| format!("server reflection: {err}"))
    });

    let default_cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let providers = Arc::new(crate::sessions::providers::LiveProviders::new(
        config.provider_inputs.clone(),
        config.providers.clone(),
        config
            .state_dir
            .join(crate::config::providers::CREDENTIALS_FILE),
    ));
    let daemon = DaemonService {
        config: live.clone(),
        providers: providers.clone(),
        socket,
        started_at_ms: now_ms(),
        started,
        sessions: sessions.clone(),
        shutdown: shutdown.clone(),
        tools_indexed: tools.indexed(),
        sandbox: builtins.sandbox_status(),
        limits: builtins
            .limits_status()
            .map(|limits| codaris_proto::v1::SessionLimits {
                pids_max: limits.pids_max,
                pids_mechanism: limits.pids.as_str().to_owned(),
                memory_max_bytes: limits.memory_max,
                memory_mechanism: limits.memory.as_str().to_owned(),
                summary: limits.to_string(),
                reasons: limits.reasons,
            }),
        programs: Arc::new(crate::calls::programs::ProgramProbe::new(
            config.nextflow.clone(),
            builtins.pools(),
        )),
        editor: editor.clone(),
    };
    let mcp_service = McpService { hub: mcp.clone() };
    let limits = builtins.output_limits();
    let hub = mcp.clone();
    let turns = crate::sessions::turns::Turns::new(
        live.clone(),
        ledger.clone(),
        sessions.clone(),
        tools.clone(),
        builtins,
        mcp,
        providers.clone(),
    );
    editor.connect(crate::reconfig::InForce {
        live: live.clone(),
        dispatcher: turns.dispatcher().clone(),
        limits,
        profiles: config.nextflow.profiles.clone(),
        pass_env: config.nextflow.pass_env.clone(),
        hub,
    });
    // A background command that finishes tells its session at the next turn. A weak handle,
    // so this task does not keep the turns (and the ledger) alive after the server stops: the
    // sender lives in the shell pools they own, and dropping them ends the loop.
    let deliver_to = Arc::downgrade(&turns);
    tokio::spawn(async move {
        while let Some(notice) = notices.recv().await {
            match deliver_to.upgrade() {
                Some(turns) => turns.deliver(&notice),
                None => break,
            }
        }
    });
    // A stopping daemon ends its turns first: a turn waiting on a card (or a command) keeps its
    // stream open, and the servers stop only once every call finished.
    let closing = Arc::downgrade(&turns);
    let stopping = shutdown.clone();
    tokio::spawn(async move {
        stopping.wait().await;
        if let Some(turns) = closing.upgrade() {
            turns.close_all();
        }
    });
    scheduler.start(turns.services());
    let sessions = SessionsService {
        config: live.clone(),
        providers,
        sessions,
        default_cwd,
        turns,
    };

    let mut builder = Routes::builder();
    builder
        .add_service(health_service)
        .add_service(reflection)
        .add_service(reflection_alpha)
        .add_service(v1::daemon_server::DaemonServer::new(daemon))
        .add_service(v1::sessions_server::SessionsServer::new(sessions))
        .add_service(v1::tools_server::ToolsServer::new(ToolsService {
            registry: tools,
        }))
        .add_service(v1::ledger_server::LedgerServer::new(LedgerService {
            ledger,
        }))
        .add_service(v1::mcp_server::McpServer::new(mcp_service))
        .add_service(v1::scheduler_server::SchedulerServer::new(
            crate::server::service::scheduler::SchedulerService { scheduler },
        ))
        .add_service(v1::memory_server::MemoryServer::new(
            crate::server::service::memory::MemoryService {
                config: live.clone(),
            },
        ));
    Ok(builder.routes())
}

/// Server reflection over the daemon's services and the health service.
fn reflection_builder() -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(codaris_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
}
