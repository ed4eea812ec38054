//! The session methods: new, list, load (with its history replayed), resume, close, and the
//! two mode switches. Each is one or two daemon calls; none decides anything about a call.

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AvailableCommandsUpdate, CloseSessionRequest, CloseSessionResponse, ConfigOptionUpdate,
    CurrentModeUpdate, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, NewSessionRequest, NewSessionResponse, ResumeSessionRequest,
    ResumeSessionResponse, SessionConfigOptionValue, SessionInfo, SessionNotification,
    SessionUpdate, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::{Client, Error, ErrorCode};
use codaris_proto::v1;

use super::adapter::{Adapter, rpc_error, unknown_session};
use super::{mcp, modes, updates};

/// `session/new`: a daemon session in the editor's project, with this command's model and
/// modes; then the slash commands.
pub async fn new(
    adapter: &Adapter,
    request: NewSessionRequest,
) -> Result<NewSessionResponse, Error> {
    let additional_dirs = utf8_dirs(&request.additional_directories)?;
    let cwd = request.cwd.to_str().ok_or_else(|| {
        Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("cwd `{}` is not UTF-8", request.cwd.display()),
        )
    })?;
    check_cwd(
        &request.cwd,
        adapter.state_dir(),
        std::env::var_os("HOME").as_deref(),
    )?;
    let mcp_servers = mcp::registrations(&request.mcp_servers, &request.cwd)?;
    let defaults = &adapter.defaults;
    let session = adapter
        .sessions()?
        .create_session(v1::CreateSessionRequest {
            cwd: cwd.to_owned(),
            activity: defaults.activity.into(),
            permission_mode: defaults.permission_mode.into(),
            provider: defaults.provider.clone(),
            model: defaults.model.clone(),
            script: defaults.script.clone(),
            base_url: defaults.base_url.clone(),
            // The daemon resolves each and refuses what a project may not be.
            additional_dirs,
            // The daemon checks each and refuses a clash before any session is made.
            mcp_servers,
        })
        .await
        .map_err(|status| rpc_error(&status))?
        .into_inner();
    adapter.attach(&session);
    Ok(NewSessionResponse::new(session.id.clone())
        .modes(modes::modes(&session))
        .config_options(modes::config_options(&session)))
}

/// The editor's additional directories as the daemon takes them; one that is not UTF-8 is
/// refused (the daemon's paths are strings).
fn utf8_dirs(dirs: &[std::path::PathBuf]) -> Result<Vec<String>, Error> {
    dirs.iter()
        .map(|dir| {
            dir.to_str().map(str::to_owned).ok_or_else(|| {
                Error::new(
                    ErrorCode::INVALID_PARAMS,
                    format!("additional directory `{}` is not UTF-8", dir.display()),
                )
            })
        })
        .collect()
}

/// A session keeps the additional directories it was opened with: `session/load` and
/// `session/resume` take none or the same ones (resolved), never others, so what its ledger
/// shows as its roots is what it was created with.
fn same_dirs(session: &v1::Session, asked: &[std::path::PathBuf]) -> Result<(), Error> {
    if asked.is_empty() {
        return Ok(());
    }
    let resolved: Vec<String> = asked
        .iter()
        .map(|dir| {
            dir.canonicalize()
                .unwrap_or_else(|_| dir.clone())
                .display()
                .to_string()
        })
        .collect();
    let mut kept = session.additional_dirs.clone();
    let mut wanted = resolved;
    kept.sort();
    wanted.sort();
    wanted.dedup();
    if kept == wanted {
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::INVALID_PARAMS,
        format!(
            "session `{}` keeps the additional directories it was opened with ({}); open a new session for others",
            session.id,
            if kept.is_empty() {
                "none".to_owned()
            } else {
                kept.iter()
                    .map(|d| format!("`{d}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
    ))
}

/// Refuses a project the editor names that would open the whole disk or the home directory
/// to the session's tools (`/`, `$HOME` or above it), or that lies in the daemon's state
/// directory; links and `..` resolved first. A missing folder is the daemon's to refuse.
fn check_cwd(
    cwd: &std::path::Path,
    state_dir: &std::path::Path,
    home: Option<&std::ffi::OsStr>,
) -> Result<(), Error> {
    let Ok(real) = cwd.canonicalize() else {
        return Ok(());
    };
    let state = state_dir
        .canonicalize()
        .unwrap_or_else(|_| state_dir.to_path_buf());
    let home = home.map(std::path::Path::new);
    let refused = |why: &str| {
        Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("cwd `{}` {why}; open a project folder", cwd.display()),
        ))
    };
    if real.starts_with(&state) {
        return refused("is inside codarisd's state directory");
    }
    if real.parent().is_none() || home.is_some_and(|home| home.starts_with(&real)) {
        return refused("would open the whole disk or the home directory to the session's tools");
    }
    Ok(())
}

/// Sends the slash commands; after the session's answer, which names the session.
pub fn announce_commands(cx: &ConnectionTo<Client>, id: &str) {
    let _ = cx.send_notification(SessionNotification::new(
        id.to_owned(),
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(modes::commands())),
    ));
}

/// `session/list`: the daemon's sessions (ended ones too: they can be loaded), those of one
/// project when the editor names it.
pub async fn list(
    adapter: &Adapter,
    request: ListSessionsRequest,
) -> Result<ListSessionsResponse, Error> {
    let sessions = adapter
        .sessions()?
        .list_sessions(v1::ListSessionsRequest {
            include_ended: true,
            ..Default::default()
        })
        .await
        .map_err(|status| rpc_error(&status))?
        .into_inner()
        .sessions;
    let infos = sessions
        .into_iter()
        .filter(|s| {
            request
                .cwd
                .as_ref()
                .is_none_or(|cwd| cwd.as_os_str() == s.cwd.as_str())
        })
        .map(|s| {
            let updated = s.last_activity_at.map(|t| t.to_string());
            SessionInfo::new(s.id.clone(), s.cwd.clone())
                .additional_directories(s.additional_dirs.iter().map(Into::into).collect())
                .title((!s.title.is_empty()).then(|| s.title.clone()))
                .updated_at(updated)
        })
        .collect();
    Ok(ListSessionsResponse::new(infos))
}

/// Reopens a stored session for this connection (the daemon keeps its cwd, additional roots
/// and grants rules); the editor's MCP servers, which the daemon never stores, start again
/// from `servers`.
async fn reopen(
    adapter: &Adapter,
    id: &str,
    dirs: &[std::path::PathBuf],
    servers: &[agent_client_protocol::v1::schema::McpServer],
    cwd: &std::path::Path,
) -> Result<v1::Session, Error> {
    let mcp_servers = mcp::registrations(servers, cwd)?;
    let mut sessions = adapter.sessions()?;
    let stored = sessions
        .get_session(v1::GetSessionRequest { id: id.to_owned() })
        .await
        .map_err(|status| rpc_error(&status))?
        .into_inner();
    same_dirs(&stored, dirs)?;
    let session = sessions
        .resume_session(v1::ResumeSessionRequest {
            id: id.to_owned(),
            mcp_servers,
        })
        .await
        .map_err(|status| rpc_error(&status))?
        .into_inner();
    adapter.attach(&session);
    Ok(session)
}

/// `session/load`: the session reopened and its conversation replayed as the person and the
/// model wrote it, before the answer.
pub async fn load(
    adapter: &Adapter,
    cx: &ConnectionTo<Client>,
    request: LoadSessionRequest,
) -> Result<LoadSessionResponse, Error> {
    let id = request.session_id.0.to_string();
    let session = reopen(
        adapter,
        &id,
        &request.additional_directories,
        &request.mcp_servers,
        &request.cwd,
    )
    .await?;
    let history = adapter
        .sessions()?
        .get_history(v1::GetHistoryRequest {
            session_id: id.clone(),
            limit: 0,
        })
        .await
        .map_err(|status| rpc_error(&status))?
        .into_inner()
        .messages;
    let compaction = adapter.traits().compaction;
    for (n, message) in history.iter().enumerate() {
        let update = match message.role.as_str() {
            "user" => updates::user_chunk(&message.text),
            // Where the history was folded: the editor's compaction entry where it takes
            // them, else the line that says so, as the model's.
            "compaction" if compaction => updates::replayed_compaction(n, &message.text),
            _ => updates::text_chunk(&message.text),
        };
        cx.send_notification(SessionNotification::new(id.clone(), update))?;
    }
    Ok(LoadSessionResponse::new()
        .modes(modes::modes(&session))
        .config_options(modes::config_options(&session)))
}

/// `session/resume`: the session reopened, nothing replayed.
pub async fn resume(
    adapter: &Adapter,
    request: ResumeSessionRequest,
) -> Result<ResumeSessionResponse, Error> {
    let id = request.session_id.0.to_string();
    let session = reopen(
        adapter,
        &id,
        &request.additional_directories,
        &request.mcp_servers,
        &request.cwd,
    )
    .await?;
    Ok(ResumeSessionResponse::new()
        .modes(modes::modes(&session))
        .config_options(modes::config_options(&session)))
}

/// `session/close`: this connection lets the session go, its running turn cancelled; the
/// session itself stays in the daemon (it is not ended).
pub async fn close(
    adapter: &Adapter,
    request: CloseSessionRequest,
) -> Result<CloseSessionResponse, Error> {
    let id = request.session_id.0.to_string();
    let live = adapter.detach(&id).ok_or_else(|| unknown_session(&id))?;
    if live.running {
        cancel(adapter, &id).await;
    }
    Ok(CloseSessionResponse::new())
}

/// Cancels the session's running turn in the daemon (its commands are killed), best effort.
pub async fn cancel(adapter: &Adapter, id: &str) {
    let Ok(mut sessions) = adapter.sessions() else {
        return;
    };
    let call = sessions.cancel_turn(v1::CancelTurnRequest {
        session_id: id.to_owned(),
    });
    match tokio::time::timeout(std::time::Duration::from_secs(3), call).await {
        Ok(Ok(_)) => {}
        Ok(Err(status)) => eprintln!(
            "codaris acp: cancelling the turn of `{id}` failed: {}",
            status.message()
        ),
        Err(_) => eprintln!("codaris acp: codarisd did not answer the cancel of `{id}`"),
    }
}

/// Changes the session's modes in the daemon and tells the editor.
async fn update(
    adapter: &Adapter,
    cx: &ConnectionTo<Client>,
    id: &str,
    activity: Option<v1::Activity>,
    permission_mode: Option<v1::PermissionMode>,
) -> Result<v1::Session, Error> {
    if adapter.live(id).is_none() {
        return Err(unknown_session(id));
    }
    let session = adapter
        .sessions()?
        .update_session(v1::UpdateSessionRequest {
            id: id.to_owned(),
            model: String::new(),
            activity: activity.map_or(0, i32::from),
            permission_mode: permission_mode.map_or(0, i32::from),
        })
        .await
        .map_err(|status| rpc_error(&status))?
        .into_inner();
    let notify = |update| cx.send_notification(SessionNotification::new(id.to_owned(), update));
    notify(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
        modes::activity_id(session.activity),
    )))?;
    notify(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
        modes::config_options(&session),
    )))?;
    Ok(session)
}

/// `session/set_mode`: agent, plan or ask.
pub async fn set_mode(
    adapter: &Adapter,
    cx: &ConnectionTo<Client>,
    request: SetSessionModeRequest,
) -> Result<SetSessionModeResponse, Error> {
    let id = request.session_id.0.to_string();
    let activity = modes::activity_of(&request.mode_id.0)
        .ok_or_else(|| unknown_value(&request.mode_id.0, "agent, plan or ask"))?;
    update(adapter, cx, &id, Some(activity), None).await?;
    Ok(SetSessionModeResponse::new())
}

/// `session/set_config_option`: the operating or the permission mode.
pub async fn set_config_option(
    adapter: &Adapter,
    cx: &ConnectionTo<Client>,
    request: SetSessionConfigOptionRequest,
) -> Result<SetSessionConfigOptionResponse, Error> {
    let id = request.session_id.0.to_string();
    let SessionConfigOptionValue::ValueId { value } = &request.value else {
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            "codaris's config options are selects; send a value id",
        ));
    };
    let (activity, permission) = match request.config_id.0.as_ref() {
        modes::MODE_OPTION => (
            Some(
                modes::activity_of(&value.0)
                    .ok_or_else(|| unknown_value(&value.0, "agent, plan or ask"))?,
            ),
            None,
        ),
        modes::PERMISSION_OPTION => (
            None,
            Some(
                modes::permission_of(&value.0)
                    .ok_or_else(|| unknown_value(&value.0, "ask, accept_edits or bypass"))?,
            ),
        ),
        other => {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "no config option `{}`; codaris has `mode` and `permission_mode`",
                    other.escape_debug()
                ),
            ));
        }
    };
    let session = update(adapter, cx, &id, activity, permission).await?;
    Ok(SetSessionConfigOptionResponse::new(modes::config_options(
        &session,
    )))
}

fn unknown_value(given: &str, known: &str) -> Error {
    Error::new(
        ErrorCode::INVALID_PARAMS,
        format!("unknown value `{}`; one of {known}", given.escape_debug()),
    )
}
