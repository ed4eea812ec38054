//! `codaris acp`: the Agent Client Protocol (v1) on standard input and output, so an editor
//! (Zed, JetBrains, Neovim, Emacs) drives `codarisd` with no plugin. A thin translator: every
//! method is one or a few daemon calls, and nothing here decides what a call may do — the
//! daemon's policy does, at dispatch, as for any client. Standard output carries only ACP
//! messages; everything else goes to standard error. The editor's `fs/*` and `terminal/*` are
//! never used: tools run inside Codaris's fence, recorded in its ledger and replayable.
//!
//! Every handler that waits on the daemon runs in a task of its own: a handler holds the
//! connection's dispatch loop, and a turn waiting there would hold back `session/cancel` and
//! the editor's answers to its own cards.

mod adapter;
mod mcp;
mod modes;
mod questions;
mod sessions;
pub mod setup;
mod turn;
mod updates;

use std::future::Future;
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, LoadSessionRequest, McpCapabilities,
    NewSessionRequest, PromptCapabilities, PromptRequest, ResumeSessionRequest,
    SessionAdditionalDirectoriesCapabilities, SessionCapabilities, SessionCloseCapabilities,
    SessionListCapabilities, SessionResumeCapabilities, SetSessionConfigOptionRequest,
    SetSessionModeRequest,
};
use agent_client_protocol::{
    Agent, JsonRpcResponse, Stdio, on_receive_notification, on_receive_request,
};

use adapter::Adapter;
pub use adapter::Defaults;

use crate::client::Target;
use crate::commands::Outcome;
use crate::error::CliError;

/// mimalloc's setting that keeps the adapter small (see [`lean_allocator`]).
const EAGER_COMMIT: &str = "MIMALLOC_ARENA_EAGER_COMMIT";

/// Starts this program again with mimalloc's eager arena commit off, once, before anything is
/// read or written. `codaris` runs on mimalloc for the offline replay (docs/performance.md),
/// whose first arena is committed eagerly on Linux and, with transparent huge pages, 8 MiB of
/// it resident: 18 MiB for an adapter that lives as long as an editor, 11 MiB without (the
/// issue's budget is 15). mimalloc reads the setting when the process starts, so only a new
/// process image takes it. Does nothing when it is already set; if the exec fails, the adapter
/// simply runs as it is.
pub fn lean_allocator() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os(EAGER_COMMIT).is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(EAGER_COMMIT, "0")
        .exec();
    eprintln!("codaris acp: could not restart with a lean allocator ({err}); going on");
}

/// Serves one editor until it closes standard input; then cancels every turn still running
/// (the sessions stay, for `session/load` or `codaris chat --resume`).
pub async fn serve(
    target: Target,
    autostart: bool,
    defaults: Defaults,
) -> Result<Outcome, CliError> {
    let adapter = Arc::new(Adapter::new(target, autostart, defaults));
    let served = connection(Arc::clone(&adapter))
        .connect_to(Stdio::new())
        .await;
    for id in adapter.running() {
        sessions::cancel(&adapter, &id).await;
    }
    match served {
        Ok(()) => Ok(Outcome::Success),
        // The editor went away (closed its end of a pipe): that ends the connection, it is
        // not a failure of the adapter's.
        Err(err)
            if agent_client_protocol::is_connection_terminated(&err)
                || agent_client_protocol::is_incoming_transport_closed(&err) =>
        {
            Ok(Outcome::Success)
        }
        Err(err) => Err(CliError::Acp {
            message: match &err.data {
                Some(data) => format!("{} ({data})", err.message),
                None => err.message,
            },
        }),
    }
}

/// Answers `responder` with what `work` gives, in a task of its own; a reply that cannot be
/// sent (the editor went away) is only logged, since a failing task would end the connection.
fn answer<T, F>(
    cx: &agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Client>,
    responder: agent_client_protocol::v1::Responder<T>,
    work: F,
) -> Result<(), agent_client_protocol::Error>
where
    T: JsonRpcResponse + Send + 'static,
    F: Future<Output = Result<T, agent_client_protocol::Error>> + Send + 'static,
{
    cx.spawn(async move {
        let result = work.await;
        if let Err(err) = responder.respond_with_result(result) {
            eprintln!("codaris acp: a reply was not sent: {}", err.message);
        }
        Ok(())
    })
}

/// [`answer`], the slash commands of the session it reopened sent first: the editor named the
/// session, so it knows it before the answer, and an editor that closes the connection as
/// soon as it has the answer never makes the adapter write into a closed pipe.
fn commands_then_answer<T, F>(
    cx: &agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Client>,
    responder: agent_client_protocol::v1::Responder<T>,
    session: String,
    work: F,
) -> Result<(), agent_client_protocol::Error>
where
    T: JsonRpcResponse + Send + 'static,
    F: Future<Output = Result<T, agent_client_protocol::Error>> + Send + 'static,
{
    let cx2 = cx.clone();
    cx.spawn(async move {
        let result = work.await;
        if result.is_ok() {
            sessions::announce_commands(&cx2, &session);
        }
        if let Err(err) = responder.respond_with_result(result) {
            eprintln!("codaris acp: a reply was not sent: {}", err.message);
        }
        Ok(())
    })
}

fn connection(
    adapter: Arc<Adapter>,
) -> agent_client_protocol::v1::Builder<
    Agent,
    impl agent_client_protocol::HandleDispatchFrom<agent_client_protocol::Client> + 'static,
> {
    // Each handler owns its handle on the one adapter.
    let [
        initialize,
        new,
        prompt,
        cancel,
        list,
        load,
        resume,
        close,
        set_mode,
    ] = std::array::from_fn(|_| Arc::clone(&adapter));
    let set_option = adapter;
    Agent
        .v1()
        .name("codaris")
        .on_receive_request(
            async move |request: InitializeRequest, responder, cx| {
                let adapter = Arc::clone(&initialize);
                answer(&cx, responder, async move {
                    adapter.set_client(request.client_info.as_ref().map(|c| c.name.as_str()));
                    let caps = &request.client_capabilities;
                    adapter.set_traits(adapter::ClientTraits {
                        compaction: caps
                            .session
                            .as_ref()
                            .is_some_and(|s| s.compaction.is_some()),
                        forms: caps.elicitation.as_ref().is_some_and(|e| e.form.is_some()),
                    });
                    adapter.connect().await?;
                    Ok(initialize_response())
                })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let adapter = Arc::clone(&new);
                let cx2 = cx.clone();
                cx.spawn(async move {
                    let result = sessions::new(&adapter, request).await;
                    let id = result.as_ref().ok().map(|r| r.session_id.0.to_string());
                    if let Err(err) = responder.respond_with_result(result) {
                        eprintln!("codaris acp: a reply was not sent: {}", err.message);
                    } else if let Some(id) = id {
                        sessions::announce_commands(&cx2, &id);
                    }
                    Ok(())
                })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                let adapter = Arc::clone(&prompt);
                let cx2 = cx.clone();
                answer(&cx, responder, turn::play(adapter, cx2, request))
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, cx| {
                let adapter = Arc::clone(&cancel);
                let id = notification.session_id.0.to_string();
                if adapter.cancel_turn(&id) {
                    cx.spawn(async move {
                        sessions::cancel(&adapter, &id).await;
                        Ok(())
                    })?;
                }
                Ok(())
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, cx| {
                let adapter = Arc::clone(&list);
                answer(&cx, responder, async move {
                    sessions::list(&adapter, request).await
                })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let adapter = Arc::clone(&load);
                let cx2 = cx.clone();
                let id = request.session_id.0.to_string();
                commands_then_answer(&cx, responder, id, async move {
                    sessions::load(&adapter, &cx2, request).await
                })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest, responder, cx| {
                let adapter = Arc::clone(&resume);
                let id = request.session_id.0.to_string();
                commands_then_answer(&cx, responder, id, async move {
                    sessions::resume(&adapter, request).await
                })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest, responder, cx| {
                let adapter = Arc::clone(&close);
                answer(&cx, responder, async move {
                    sessions::close(&adapter, request).await
                })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, cx| {
                let adapter = Arc::clone(&set_mode);
                let cx2 = cx.clone();
                answer(&cx, responder, async move {
                    sessions::set_mode(&adapter, &cx2, request).await
                })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, cx| {
                let adapter = Arc::clone(&set_option);
                let cx2 = cx.clone();
                answer(&cx, responder, async move {
                    sessions::set_config_option(&adapter, &cx2, request).await
                })
            },
            on_receive_request!(),
        )
}

/// What the adapter can do, and nothing more: text and resource links in a prompt, sessions
/// listed, loaded (history replayed), resumed and closed, additional directories as roots of
/// the session that names them, the editor's stdio and HTTP MCP servers as the session's own.
/// No auth methods: provider keys
/// live in the daemon.
fn initialize_response() -> InitializeResponse {
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_info(Implementation::new("codaris", env!("CARGO_PKG_VERSION")))
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .mcp_capabilities(McpCapabilities::new().http(true))
                .prompt_capabilities(PromptCapabilities::new())
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .resume(SessionResumeCapabilities::new())
                        .close(SessionCloseCapabilities::new())
                        .additional_directories(SessionAdditionalDirectoriesCapabilities::new()),
                ),
        )
}
