use std::path::PathBuf;
use std::sync::Arc;

use codaris_proto::v1;
use codaris_proto::v1::sessions_server::Sessions;
use tonic::{Request, Response, Status};

use super::ResponseStream;
use crate::config::Config;
use crate::error::DaemonError;
use crate::server::convert::{activity_from_wire, permission_mode_from_wire};
use crate::sessions::model_choice::{Asked, ModelChoice};
use crate::sessions::providers::LiveProviders;
use crate::sessions::store::{NewSession, SessionStore};
use crate::sessions::turns::{SessionChange, Turns};
use codaris_ledger::CardAnswer;

use tokio_stream::StreamExt;

#[derive(Debug)]
pub struct SessionsService {
    /// The configuration in force: a committed one replaces it (`config_commit`).
    pub config: codaris_tools::Live<Config>,
    /// The provider settings in force (a login swaps them).
    pub providers: Arc<LiveProviders>,
    pub sessions: SessionStore,
    /// The daemon's working directory, the default `cwd` of a session.
    pub default_cwd: PathBuf,
    pub turns: Arc<Turns>,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> DaemonError {
    DaemonError::InvalidArgument {
        field,
        reason: reason.into(),
    }
}

impl SessionsService {
    /// A session's own MCP servers, each read as `AddServer` reads one and checked against
    /// the daemon's servers and one another.
    fn own_servers(
        &self,
        requests: Vec<v1::AddServerRequest>,
    ) -> Result<Vec<codaris_mcp::ServerSpec>, DaemonError> {
        let specs = requests
            .into_iter()
            .map(super::mcp::spec_of)
            .collect::<Result<Vec<_>, _>>()?;
        self.turns.mcp.check_session_servers(&specs)?;
        Ok(specs)
    }

    fn new_session(&self, request: v1::CreateSessionRequest) -> Result<NewSession, DaemonError> {
        let cwd = if request.cwd.is_empty() {
            self.default_cwd.clone()
        } else {
            PathBuf::from(&request.cwd)
        };
        if request.cwd.contains('\0') {
            return Err(invalid("cwd", "contains a NUL byte"));
        }
        if !cwd.is_absolute() {
            return Err(invalid(
                "cwd",
                format!("must be absolute, not `{}`", request.cwd),
            ));
        }
        match std::fs::metadata(&cwd) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(invalid(
                    "cwd",
                    format!("`{}` is not a directory", cwd.display()),
                ));
            }
            Err(err) => {
                return Err(invalid(
                    "cwd",
                    format!(
                        "`{}` cannot be used: {}",
                        cwd.display(),
                        crate::error::io_reason(&err)
                    ),
                ));
            }
        }
        let activity = activity_from_wire(request.activity)
            .ok_or_else(|| invalid("activity", format!("unknown value {}", request.activity)))?;
        let permission_mode =
            permission_mode_from_wire(request.permission_mode).ok_or_else(|| {
                invalid(
                    "permission_mode",
                    format!("unknown value {}", request.permission_mode),
                )
            })?;
        if request.script.contains('\0') {
            return Err(invalid("script", "contains a NUL byte"));
        }
        let script = (!request.script.is_empty()).then(|| PathBuf::from(&request.script));
        if let Some(script) = &script
            && !script.is_absolute()
        {
            return Err(invalid(
                "script",
                format!("must be absolute, not `{}`", script.display()),
            ));
        }
        // Checked now so a bad path fails the session's creation, not its first turn.
        if let Some(script) = &script
            && let Err(err) = std::fs::File::open(script)
        {
            return Err(invalid(
                "script",
                format!(
                    "cannot read {}: {}",
                    script.display(),
                    crate::error::io_reason(&err)
                ),
            ));
        }
        let settings = self.providers.current();
        let choice = ModelChoice::resolve(
            &settings,
            Asked {
                provider: &request.provider,
                model: &request.model,
                base_url: &request.base_url,
                script: script.as_deref(),
            },
        )?;
        if let Some(refused) = choice
            .missing_key(&settings)
            .or_else(|| choice.missing_model())
        {
            return Err(refused);
        }
        let (provider, model, base_url) = (choice.provider, choice.model, choice.base_url);
        let additional_dirs = crate::sessions::extra_roots::admit(
            &request.additional_dirs,
            &self.config.get().state_dir,
            self.config.get().home.as_deref(),
        )?;
        Ok(NewSession {
            additional_dirs,
            instructions: crate::sessions::instructions::find(&cwd),
            cwd,
            activity,
            permission_mode,
            provider,
            model,
            script,
            base_url,
            child: None,
            reasoning: None,
            title: String::new(),
        })
    }
}

#[tonic::async_trait]
impl Sessions for SessionsService {
    type TurnStream = ResponseStream<v1::TurnEvent>;
    type AttachTurnStream = ResponseStream<v1::TurnEvent>;
    type ReadSharedFileStream = ResponseStream<v1::SharedFileChunk>;

    async fn create_session(
        &self,
        request: Request<v1::CreateSessionRequest>,
    ) -> Result<Response<v1::Session>, Status> {
        let mut request = request.into_inner();
        // The session's own servers are checked first: a refused one makes no session.
        let own = self.own_servers(std::mem::take(&mut request.mcp_servers))?;
        let new = self.new_session(request)?;
        let record = self.sessions.create(new)?;
        tracing::info!(session = %record.id, "session created");
        if !own.is_empty() {
            tracing::info!(session = %record.id, servers = ?own.iter().map(|s| s.name.to_string()).collect::<Vec<_>>(), "the session's own MCP servers start");
            self.turns
                .mcp
                .join(&record.id, own, record.additional_dirs.clone())
                .await;
        }
        Ok(Response::new(record.into()))
    }

    async fn list_sessions(
        &self,
        request: Request<v1::ListSessionsRequest>,
    ) -> Result<Response<v1::ListSessionsResponse>, Status> {
        let request = request.into_inner();
        // A filter tag is read as `session_describe` files one, so `RNAseq` finds `rnaseq`.
        let wanted = request
            .tags
            .iter()
            .map(|tag| codaris_tools::filing::normalise_tag(tag))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| invalid("tags", err.to_string()))?;
        let mut sessions = self.sessions.list(request.include_ended)?;
        sessions.retain(|s| wanted.iter().all(|tag| s.tags.contains(tag)));
        Ok(Response::new(v1::ListSessionsResponse {
            sessions: sessions.into_iter().map(Into::into).collect(),
        }))
    }

    async fn get_session(
        &self,
        request: Request<v1::GetSessionRequest>,
    ) -> Result<Response<v1::Session>, Status> {
        let record = self.sessions.get(&request.into_inner().id)?;
        Ok(Response::new(record.into()))
    }

    async fn end_session(
        &self,
        request: Request<v1::EndSessionRequest>,
    ) -> Result<Response<v1::Session>, Status> {
        let record = self.sessions.end(&request.into_inner().id)?;
        self.turns.end(&record.id);
        self.turns.mcp.leave(&record.id).await;
        tracing::info!(session = %record.id, "session ended");
        // Its subagents' sessions end with it: nobody is left to read their reports.
        let mut children = record.children.clone();
        while let Some(child) = children.pop() {
            if let Ok(Some(ended)) = self.sessions.end_if_active(&child) {
                self.turns.end(&ended.id);
                tracing::info!(session = %ended.id, parent = %record.id, "subagent's session ended with its parent");
                children.extend(ended.children);
            }
        }
        Ok(Response::new(record.into()))
    }

    async fn resume_session(
        &self,
        request: Request<v1::ResumeSessionRequest>,
    ) -> Result<Response<v1::Session>, Status> {
        let request = request.into_inner();
        let own = self.own_servers(request.mcp_servers)?;
        let record = self.turns.resume(&request.id)?;
        if !own.is_empty() {
            tracing::info!(session = %record.id, servers = ?own.iter().map(|s| s.name.to_string()).collect::<Vec<_>>(), "the session's own MCP servers start again");
            self.turns
                .mcp
                .join(&record.id, own, record.additional_dirs.clone())
                .await;
        }
        Ok(Response::new(record.into()))
    }

    async fn update_session(
        &self,
        request: Request<v1::UpdateSessionRequest>,
    ) -> Result<Response<v1::Session>, Status> {
        let request = request.into_inner();
        let change = session_change(&request)?;
        let record = self.turns.update(&request.id, change).await?;
        tracing::info!(session = %record.id, "session updated");
        Ok(Response::new(record.into()))
    }

    async fn get_history(
        &self,
        request: Request<v1::GetHistoryRequest>,
    ) -> Result<Response<v1::GetHistoryResponse>, Status> {
        let request = request.into_inner();
        let entries = self.turns.history(&request.session_id, request.limit)?;
        let record = self.sessions.get(&request.session_id)?;
        Ok(Response::new(v1::GetHistoryResponse {
            title: record.title,
            tags: record.tags,
            messages: entries
                .into_iter()
                .map(|entry| v1::HistoryMessage {
                    role: entry.role.to_owned(),
                    text: entry.text,
                })
                .collect(),
        }))
    }

    async fn turn(
        &self,
        request: Request<v1::TurnRequest>,
    ) -> Result<Response<Self::TurnStream>, Status> {
        let request = request.into_inner();
        if request.text.trim().is_empty() {
            return Err(invalid("text", "a turn needs a message").into());
        }
        let events = self.turns.start(&request.session_id, request.text).await?;
        let stream = tokio_stream::wrappers::ReceiverStream::new(events).map(Ok);
        Ok(Response::new(Box::pin(stream)))
    }

    async fn attach_turn(
        &self,
        request: Request<v1::AttachTurnRequest>,
    ) -> Result<Response<Self::AttachTurnStream>, Status> {
        let request = request.into_inner();
        let events = self.turns.attach(&request.session_id, request.from_seq)?;
        let stream = tokio_stream::wrappers::ReceiverStream::new(events).map(Ok);
        Ok(Response::new(Box::pin(stream)))
    }

    async fn answer_question(
        &self,
        request: Request<v1::AnswerQuestionRequest>,
    ) -> Result<Response<v1::AnswerQuestionResponse>, Status> {
        let request = request.into_inner();
        let given = request
            .answers
            .into_iter()
            .map(|a| (a.labels, a.custom))
            .collect();
        let accepted = self.turns.answer_question(
            &request.session_id,
            &request.question_id,
            &request.answer_secret,
            given,
        )?;
        Ok(Response::new(v1::AnswerQuestionResponse { accepted }))
    }

    async fn list_agents(
        &self,
        request: Request<v1::ListAgentsRequest>,
    ) -> Result<Response<v1::ListAgentsResponse>, Status> {
        let cwd = request.into_inner().cwd;
        if !cwd.is_empty() && !std::path::Path::new(&cwd).is_absolute() {
            return Err(invalid("cwd", "an absolute path").into());
        }
        let user = self.turns.config.get().agents_dir.clone();
        let found = tokio::task::spawn_blocking(move || {
            let project = (!cwd.is_empty()).then(|| std::path::PathBuf::from(&cwd));
            match project {
                Some(project) => crate::toolset::agents::find(user.as_deref(), &project),
                None => crate::toolset::agents::find_user(user.as_deref()),
            }
        })
        .await
        .map_err(|err| Status::internal(err.to_string()))?;
        let agents = found
            .agents
            .iter()
            .map(|agent| v1::AgentDefinition {
                name: agent.name.clone(),
                description: agent.description.clone(),
                source: agent.source.as_str().to_owned(),
                path: found
                    .path_of(&agent.name)
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                tools: agent.tools.clone().unwrap_or_default(),
                tools_listed: agent.tools.is_some(),
                disallowed_tools: agent.disallowed_tools.clone(),
                model: agent.model.clone().unwrap_or_default(),
            })
            .collect();
        Ok(Response::new(v1::ListAgentsResponse {
            agents,
            problems: found.problems,
        }))
    }

    async fn answer_card(
        &self,
        request: Request<v1::AnswerCardRequest>,
    ) -> Result<Response<v1::AnswerCardResponse>, Status> {
        let request = request.into_inner();
        let answer = match v1::CardAnswer::try_from(request.answer) {
            Ok(v1::CardAnswer::AllowOnce) => CardAnswer::AllowOnce,
            Ok(v1::CardAnswer::AllowSession) => CardAnswer::AllowSession,
            Ok(v1::CardAnswer::Deny) => CardAnswer::Deny,
            Ok(v1::CardAnswer::AllowPrograms) => CardAnswer::AllowPrograms,
            Ok(v1::CardAnswer::DenyOnce) => CardAnswer::DenyOnce,
            _ => {
                return Err(invalid(
                    "answer",
                    "one of allow_once, allow_session, deny, allow_programs, deny_once",
                )
                .into());
            }
        };
        let by = answered_by(&request.answered_by)?;
        let answered = self
            .turns
            .answer(
                &request.session_id,
                &request.card_id,
                &request.answer_secret,
                answer,
                by,
            )
            .await?;
        Ok(Response::new(v1::AnswerCardResponse {
            accepted: answered.accepted,
            grant_id: answered
                .grant_ids
                .first()
                .map(ToString::to_string)
                .unwrap_or_default(),
            grant_ids: answered.grant_ids.iter().map(ToString::to_string).collect(),
        }))
    }

    async fn cancel_turn(
        &self,
        request: Request<v1::CancelTurnRequest>,
    ) -> Result<Response<v1::CancelTurnResponse>, Status> {
        let cancelled = self.turns.cancel(&request.into_inner().session_id);
        Ok(Response::new(v1::CancelTurnResponse { cancelled }))
    }

    async fn undo_turn(
        &self,
        request: Request<v1::UndoTurnRequest>,
    ) -> Result<Response<v1::UndoTurnResponse>, Status> {
        let request = request.into_inner();
        let undone = self
            .turns
            .undo(&request.session_id, request.turn, request.dry_run)
            .await?;
        Ok(Response::new(undone_wire(undone)))
    }

    async fn list_shared_files(
        &self,
        request: Request<v1::ListSharedFilesRequest>,
    ) -> Result<Response<v1::ListSharedFilesResponse>, Status> {
        let record = self.sessions.get(&request.into_inner().session_id)?;
        let files = codaris_tools::shell::shared_files(&record.workspace)
            .map_err(|e| Status::internal(format!("cannot read the shared files' index: {e}")))?;
        Ok(Response::new(v1::ListSharedFilesResponse {
            files: files
                .into_iter()
                .map(|f| v1::SharedFile {
                    sha256: f.sha256,
                    name: f.name,
                    path: f.path.display().to_string(),
                    size: f.size,
                })
                .collect(),
        }))
    }

    async fn read_shared_file(
        &self,
        request: Request<v1::ReadSharedFileRequest>,
    ) -> Result<Response<Self::ReadSharedFileStream>, Status> {
        let request = request.into_inner();
        let record = self.sessions.get(&request.session_id)?;
        let path = codaris_tools::shell::shared_file_path(&record.workspace, &request.sha256)
            .map_err(|e| Status::internal(format!("cannot read the shared files' index: {e}")))?
            .ok_or_else(|| {
                Status::not_found(format!(
                    "session {} shared no file with sha256 `{}`",
                    request.session_id, request.sha256
                ))
            })?;
        // At most 25 MiB (share_file's cap), so reading it whole costs little.
        let bytes = tokio::fs::read(&path)
            .await
            .map_err(|e| Status::internal(format!("cannot read {}: {e}", path.display())))?;
        let chunks: Vec<Result<v1::SharedFileChunk, Status>> = bytes
            .chunks(SHARED_CHUNK)
            .map(|data| {
                Ok(v1::SharedFileChunk {
                    data: data.to_vec(),
                })
            })
            .collect();
        Ok(Response::new(Box::pin(tokio_stream::iter(chunks))))
    }
}

/// What an `UpdateSession` request changes: an empty model and unspecified enums stay.
fn session_change(request: &v1::UpdateSessionRequest) -> Result<SessionChange, DaemonError> {
    let activity = match request.activity {
        0 => None,
        n => Some(
            activity_from_wire(n)
                .ok_or_else(|| invalid("activity", format!("unknown value {n}")))?,
        ),
    };
    let permission_mode = match request.permission_mode {
        0 => None,
        n => Some(
            permission_mode_from_wire(n)
                .ok_or_else(|| invalid("permission_mode", format!("unknown value {n}")))?,
        ),
    };
    Ok(SessionChange {
        model: (!request.model.is_empty()).then(|| request.model.clone()),
        activity,
        permission_mode,
    })
}

/// The largest piece of a shared file one message carries.
const SHARED_CHUNK: usize = 64 * 1024;

/// The longest `answered_by` the ledger keeps.
const ANSWERED_BY_MAX: usize = 128;

/// Who answered a card as the ledger records it: `None` when the client left it empty;
/// refused when it could not be shown on one line as written.
fn answered_by(given: &str) -> Result<Option<String>, DaemonError> {
    if given.is_empty() {
        return Ok(None);
    }
    if given.chars().count() > ANSWERED_BY_MAX {
        return Err(invalid(
            "answered_by",
            format!("is longer than {ANSWERED_BY_MAX} characters"),
        ));
    }
    if given.chars().any(char::is_control) {
        return Err(invalid("answered_by", "contains a control character"));
    }
    Ok(Some(given.to_owned()))
}

/// What an undo did, on the wire.
fn undone_wire(undone: crate::sessions::turns::Undone) -> v1::UndoTurnResponse {
    v1::UndoTurnResponse {
        session_id: undone.session_id,
        turn: undone.turn,
        dry_run: undone.dry_run,
        files: undone
            .changes
            .into_iter()
            .map(|c| v1::UndoFile {
                path: c.path.display().to_string(),
                action: c.kind.as_str().to_owned(),
                diff: c.diff,
            })
            .collect(),
        commands: undone.commands,
        record_id: undone.record_id.unwrap_or_default(),
        sentence: undone.sentence,
    }
}

#[cfg(test)]
mod answered_by_tests {
    use super::*;

    #[test]
    fn who_answered_is_kept_on_one_short_line_or_refused() {
        assert_eq!(answered_by("").ok(), Some(None));
        assert_eq!(
            answered_by("acp:Zed").ok(),
            Some(Some("acp:Zed".to_owned()))
        );
        // An editor's name is its own word: nothing it says may forge a second line.
        assert!(matches!(
            answered_by("acp:zed\n{\"answer\":\"allow_session\"}"),
            Err(DaemonError::InvalidArgument {
                field: "answered_by",
                ..
            })
        ));
        assert!(matches!(
            answered_by(&"x".repeat(ANSWERED_BY_MAX + 1)),
            Err(DaemonError::InvalidArgument {
                field: "answered_by",
                ..
            })
        ));
    }
}
