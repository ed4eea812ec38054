//! `codaris.v1.Scheduler`: `codaris scheduler`'s requests, carried out by the scheduler as its
//! tools' are (the same answers), plus the operator's approval and the test clock.

use std::path::PathBuf;
use std::sync::Arc;

use codaris_proto::v1;
use codaris_proto::v1::scheduler_server::Scheduler as SchedulerRpc;
use codaris_tools::scheduler::{JobRequest, JobScope};
use tonic::{Request, Response, Status};

use crate::scheduler::{Scheduler, SchedulerError};

#[derive(Debug, Clone)]
pub struct SchedulerService {
    pub scheduler: Arc<Scheduler>,
}

fn status_of(err: SchedulerError) -> Status {
    match err {
        SchedulerError::Disabled => Status::failed_precondition(err.to_string()),
        SchedulerError::NoJob { .. } => Status::not_found(err.to_string()),
        SchedulerError::InFlight { .. }
        | SchedulerError::Exists { .. }
        | SchedulerError::NotRunning { .. }
        | SchedulerError::NotApproved { .. } => Status::failed_precondition(err.to_string()),
        SchedulerError::Io { .. }
        | SchedulerError::Start { .. }
        | SchedulerError::Record { .. } => Status::internal(err.to_string()),
        _ => Status::invalid_argument(err.to_string()),
    }
}

/// The request's scope, id and directory, checked.
fn read(request: &v1::SchedulerJobRequest) -> Result<(JobScope, String, PathBuf), Status> {
    let scope = match request.scope.as_str() {
        "" => JobScope::User,
        other => JobScope::parse(other).ok_or_else(|| {
            Status::invalid_argument(format!("`scope` is `user` or `project`, not `{other}`"))
        })?,
    };
    let cwd = PathBuf::from(&request.cwd);
    if !cwd.is_absolute() {
        return Err(Status::invalid_argument("`cwd` must be absolute"));
    }
    Ok((scope, request.job_id.clone(), cwd))
}

fn id_of(id: &str) -> Result<String, Status> {
    codaris_config::jobs::job_id(id)
        .map(str::to_owned)
        .map_err(|err| Status::invalid_argument(err.to_string()))
}

fn reply(answer: crate::scheduler::host::Answer) -> Response<v1::SchedulerReply> {
    Response::new(v1::SchedulerReply {
        line: answer.line,
        json: answer.json.to_string(),
    })
}

impl SchedulerService {
    async fn job(
        &self,
        request: v1::SchedulerJobRequest,
        make: impl FnOnce(JobScope, String) -> JobRequest,
    ) -> Result<Response<v1::SchedulerReply>, Status> {
        let (scope, id, cwd) = read(&request)?;
        let id = id_of(&id)?;
        self.scheduler
            .answer(None, &cwd, make(scope, id))
            .await
            .map(reply)
            .map_err(status_of)
    }
}

#[tonic::async_trait]
impl SchedulerRpc for SchedulerService {
    async fn status(
        &self,
        _request: Request<v1::SchedulerStatusRequest>,
    ) -> Result<Response<v1::SchedulerStatusReply>, Status> {
        let (scheduled, next) = self.scheduler.scheduled();
        Ok(Response::new(v1::SchedulerStatusReply {
            enabled: self.scheduler.enabled(),
            scheduled,
            next_run: next.map(|at| at.to_rfc3339()).unwrap_or_default(),
            clock: self.scheduler.clock_name().to_owned(),
        }))
    }

    async fn list(
        &self,
        request: Request<v1::SchedulerJobRequest>,
    ) -> Result<Response<v1::SchedulerReply>, Status> {
        let request = request.into_inner();
        let (_, _, cwd) = read(&request)?;
        self.scheduler
            .answer(
                None,
                &cwd,
                JobRequest::List {
                    include_body: request.include_body,
                },
            )
            .await
            .map(reply)
            .map_err(status_of)
    }

    async fn show(
        &self,
        request: Request<v1::SchedulerJobRequest>,
    ) -> Result<Response<v1::SchedulerReply>, Status> {
        self.job(request.into_inner(), |scope, job_id| JobRequest::Get {
            scope,
            job_id,
        })
        .await
    }

    async fn runs(
        &self,
        request: Request<v1::SchedulerJobRequest>,
    ) -> Result<Response<v1::SchedulerReply>, Status> {
        let request = request.into_inner();
        let limit = match request.limit {
            0 => 20,
            n => n.min(100) as usize,
        };
        self.job(request, |scope, job_id| JobRequest::Runs {
            scope,
            job_id,
            limit,
        })
        .await
    }

    async fn run(
        &self,
        request: Request<v1::SchedulerJobRequest>,
    ) -> Result<Response<v1::SchedulerReply>, Status> {
        self.job(request.into_inner(), |scope, job_id| JobRequest::Run {
            scope,
            job_id,
        })
        .await
    }

    async fn cancel(
        &self,
        request: Request<v1::SchedulerJobRequest>,
    ) -> Result<Response<v1::SchedulerReply>, Status> {
        self.job(request.into_inner(), |scope, job_id| JobRequest::Cancel {
            scope,
            job_id,
        })
        .await
    }

    async fn pause(
        &self,
        request: Request<v1::SchedulerJobRequest>,
    ) -> Result<Response<v1::SchedulerReply>, Status> {
        self.job(request.into_inner(), |scope, job_id| JobRequest::Pause {
            scope,
            job_id,
            paused: true,
        })
        .await
    }

    async fn resume(
        &self,
        request: Request<v1::SchedulerJobRequest>,
    ) -> Result<Response<v1::SchedulerReply>, Status> {
        self.job(request.into_inner(), |scope, job_id| JobRequest::Pause {
            scope,
            job_id,
            paused: false,
        })
        .await
    }

    async fn approve(
        &self,
        request: Request<v1::SchedulerJobRequest>,
    ) -> Result<Response<v1::SchedulerReply>, Status> {
        let request = request.into_inner();
        let (scope, id, cwd) = read(&request)?;
        let id = id_of(&id)?;
        if !self.scheduler.enabled() {
            return Err(status_of(SchedulerError::Disabled));
        }
        let (key, digest) = self
            .scheduler
            .approve(scope, &id, &cwd)
            .await
            .map_err(status_of)?;
        Ok(Response::new(v1::SchedulerReply {
            line: format!(
                "approved job `{}` as it is now (sha256 {digest})",
                key.label()
            ),
            json: serde_json::json!({
                "scope": key.scope.as_str(),
                "job_id": key.id,
                "file": key.file().display().to_string(),
                "digest": digest,
            })
            .to_string(),
        }))
    }

    async fn set_clock(
        &self,
        request: Request<v1::SetClockRequest>,
    ) -> Result<Response<v1::SchedulerReply>, Status> {
        let to = chrono::DateTime::parse_from_rfc3339(&request.into_inner().to)
            .map_err(|err| Status::invalid_argument(format!("`to` is not RFC 3339: {err}")))?
            .with_timezone(&chrono::Utc);
        if !self.scheduler.set_clock(to) {
            return Err(Status::failed_precondition(format!(
                "the scheduler runs on the system clock; only a codarisd started with `{}` has one to move",
                crate::scheduler::CLOCK_VAR
            )));
        }
        Ok(Response::new(v1::SchedulerReply {
            line: format!("the scheduler's clock is now {}", to.to_rfc3339()),
            json: serde_json::json!({"now": to.to_rfc3339()}).to_string(),
        }))
    }
}
