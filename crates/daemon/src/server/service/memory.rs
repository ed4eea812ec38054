//! `Memory`: the memory subagent's notes for people, read and removed through the same store
//! the memory tools use (`codaris_tools::memory`), so a person's `codaris memory rm` is held to
//! the scopes exactly as the subagent's calls are.

use std::path::{Path, PathBuf};

use codaris_proto::v1;
use codaris_tools::memory::{MemoryError, NotePath, Roots, Scope};
use tonic::{Request, Response, Status};

use crate::config::Config;

#[derive(Debug)]
pub struct MemoryService {
    pub config: codaris_tools::Live<Config>,
}

impl MemoryService {
    fn roots(&self, cwd: &str) -> Result<Roots, Status> {
        if !cwd.is_empty() && !Path::new(cwd).is_absolute() {
            return Err(Status::invalid_argument("`cwd` must be an absolute path"));
        }
        Ok(Roots {
            user: self.config.get().memory.config_dir.clone(),
            project: (!cwd.is_empty()).then(|| PathBuf::from(cwd)),
        })
    }
}

/// A refusal as the person reads it: a path outside its scope or a note that is not there is
/// their argument; anything else the daemon's failure.
fn status(err: MemoryError) -> Status {
    match err {
        MemoryError::NotFound { .. } => Status::not_found(err.to_string()),
        MemoryError::Io { .. } => Status::internal(err.to_string()),
        _ => Status::invalid_argument(err.to_string()),
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, MemoryError> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| Status::internal(err.to_string()))?
        .map_err(status)
}

fn note_path(path: &str) -> Result<NotePath, Status> {
    NotePath::parse(path).map_err(|err| status(err.into()))
}

#[tonic::async_trait]
impl v1::memory_server::Memory for MemoryService {
    async fn list_notes(
        &self,
        request: Request<v1::ListNotesRequest>,
    ) -> Result<Response<v1::ListNotesResponse>, Status> {
        let request = request.into_inner();
        let roots = self.roots(&request.cwd)?;
        let scopes = match request.scope.as_str() {
            "" => Scope::ALL.to_vec(),
            name => vec![Scope::parse(name).ok_or_else(|| {
                Status::invalid_argument(format!(
                    "`{name}` is not a memory scope; the scopes are `user` and `project`"
                ))
            })?],
        };
        let dir = |scope| {
            roots
                .folder(scope)
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        let (user_dir, project_dir) = (dir(Scope::User), dir(Scope::Project));
        let notes = blocking(move || roots.notes(&scopes)).await?;
        Ok(Response::new(v1::ListNotesResponse {
            notes: notes
                .iter()
                .map(|note| v1::NoteSummary {
                    path: note.path.to_string(),
                    title: note.title.clone(),
                    bytes: note.text().len() as u64,
                })
                .collect(),
            user_dir,
            project_dir,
            enabled: self.config.get().memory.enabled,
        }))
    }

    async fn read_note(
        &self,
        request: Request<v1::ReadNoteRequest>,
    ) -> Result<Response<v1::Note>, Status> {
        let request = request.into_inner();
        let roots = self.roots(&request.cwd)?;
        let path = note_path(&request.path)?;
        let note = blocking(move || roots.read(&path)).await?;
        Ok(Response::new(v1::Note {
            path: note.path.to_string(),
            title: note.title,
            body: note.body,
        }))
    }

    async fn delete_note(
        &self,
        request: Request<v1::DeleteNoteRequest>,
    ) -> Result<Response<v1::DeleteNoteResponse>, Status> {
        let request = request.into_inner();
        let roots = self.roots(&request.cwd)?;
        let path = note_path(&request.path)?;
        let folder = blocking(move || roots.delete(&path)).await?;
        Ok(Response::new(v1::DeleteNoteResponse { folder }))
    }
}
