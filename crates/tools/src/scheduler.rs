//! The scheduler's eleven tools (`codaris_scheduler_*`): their arguments read and checked here,
//! into a [`JobRequest`]; the daemon owns the jobs, their runs and the clock
//! ([`JobsHost`]) and answers.

use std::sync::Arc;

use codaris_catalogue::{BuiltinTool, CatalogueEntry};
use codaris_config::jobs::{Job, JobError, job_id};
use serde_json::Value;

use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

/// Where a job's file lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobScope {
    /// `<config dir>/scheduler`.
    User,
    /// `<session cwd>/.codaris/scheduler`: runs only once the operator approved it.
    Project,
}

impl JobScope {
    pub const fn as_str(self) -> &'static str {
        match self {
            JobScope::User => "user",
            JobScope::Project => "project",
        }
    }

    pub fn parse(name: &str) -> Option<JobScope> {
        match name {
            "user" => Some(JobScope::User),
            "project" => Some(JobScope::Project),
            _ => None,
        }
    }
}

/// The fields a patch changes; `None` leaves one as it is (`Some(None)` clears an optional
/// one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobPatch {
    pub description: Option<String>,
    pub schedule: Option<String>,
    pub timezone: Option<Option<String>>,
    pub paused: Option<bool>,
    pub cwd: Option<Option<String>>,
    pub model: Option<Option<String>>,
    pub mode: Option<String>,
    pub agent: Option<Option<String>>,
    pub permission_mode: Option<String>,
    pub body: Option<String>,
}

impl JobPatch {
    /// `job` with this patch applied (not yet checked).
    pub fn apply(&self, job: &Job) -> Job {
        let mut next = job.clone();
        let set = |into: &mut String, from: &Option<String>| {
            if let Some(value) = from {
                into.clone_from(value);
            }
        };
        let set_opt = |into: &mut Option<String>, from: &Option<Option<String>>| {
            if let Some(value) = from {
                into.clone_from(value);
            }
        };
        set(&mut next.description, &self.description);
        set(&mut next.schedule, &self.schedule);
        set_opt(&mut next.timezone, &self.timezone);
        if let Some(paused) = self.paused {
            next.paused = paused;
        }
        set_opt(&mut next.cwd, &self.cwd);
        set_opt(&mut next.model, &self.model);
        set(&mut next.mode, &self.mode);
        set_opt(&mut next.agent, &self.agent);
        set(&mut next.permission_mode, &self.permission_mode);
        set(&mut next.body, &self.body);
        next
    }
}

/// What a scheduler tool asks of the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobRequest {
    List {
        include_body: bool,
    },
    Get {
        scope: JobScope,
        job_id: String,
    },
    Runs {
        scope: JobScope,
        job_id: String,
        limit: usize,
    },
    /// Create (`replace: false`, refused when the job exists) or replace (refused when not).
    Write {
        scope: JobScope,
        job_id: String,
        job: Job,
        replace: bool,
    },
    Patch {
        scope: JobScope,
        job_id: String,
        new_job_id: Option<String>,
        patch: JobPatch,
    },
    /// Pause (`true`) or resume (`false`).
    Pause {
        scope: JobScope,
        job_id: String,
        paused: bool,
    },
    Delete {
        scope: JobScope,
        job_id: String,
    },
    Run {
        scope: JobScope,
        job_id: String,
    },
    Cancel {
        scope: JobScope,
        job_id: String,
    },
}

/// The daemon's side: it finds and writes the job files, starts and stops runs.
#[async_trait::async_trait]
pub trait JobsHost: Send + Sync + std::fmt::Debug {
    /// Carries out `request` for the session `session` working in `cwd`: the model's answer,
    /// or the sentence saying why not.
    async fn handle(
        &self,
        session: &str,
        cwd: &std::path::Path,
        request: JobRequest,
    ) -> Result<String, String>;
}

/// One of the eleven tools: reads its arguments, hands them to the host.
#[derive(Debug, Clone)]
pub struct SchedulerTool {
    entry: &'static CatalogueEntry,
    host: Arc<dyn JobsHost>,
}

/// The eleven tools, all answered by `host`.
pub fn scheduler_tools(host: &Arc<dyn JobsHost>) -> Vec<Arc<dyn Tool>> {
    use codaris_catalogue::scheduler as c;
    [
        &c::JOBS_LIST,
        &c::JOB_GET,
        &c::JOB_RUNS,
        &c::JOB_CREATE,
        &c::JOB_REPLACE,
        &c::JOB_PATCH,
        &c::JOB_PAUSE,
        &c::JOB_RESUME,
        &c::JOB_DELETE,
        &c::JOB_RUN,
        &c::JOB_CANCEL,
    ]
    .into_iter()
    .map(|entry| {
        Arc::new(SchedulerTool {
            entry,
            host: host.clone(),
        }) as Arc<dyn Tool>
    })
    .collect()
}

#[async_trait::async_trait]
impl Tool for SchedulerTool {
    fn entry(&self) -> &'static CatalogueEntry {
        self.entry
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let name = self.entry.name;
        let request = read_request(self.entry.id, args)
            .map_err(|e| ToolError::model(format!("{name}: {e}")))?;
        self.host
            .handle(&ctx.session_id, &ctx.cwd, request)
            .await
            .map(ToolOutput::text)
            .map_err(|e| ToolError::model(format!("{name}: {e}")))
    }
}

/// Why a scheduler tool's arguments do not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobArgsError {
    #[error("`{name}` must be {what}")]
    Shape {
        name: &'static str,
        what: &'static str,
    },
    #[error("`scope` is `user` or `project`, not `{value}`")]
    Scope { value: String },
    #[error("{0}")]
    Job(#[from] JobError),
    #[error("`{tool}` is not a scheduler tool")]
    NotScheduler { tool: &'static str },
}

/// Reads the arguments of the tool `tool`.
pub fn read_request(tool: BuiltinTool, args: &Value) -> Result<JobRequest, JobArgsError> {
    use BuiltinTool as B;
    let text = |name: &'static str| -> Result<Option<String>, JobArgsError> {
        match args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(JobArgsError::Shape {
                name,
                what: "a string",
            }),
        }
    };
    let flag = |name: &'static str| -> Result<Option<bool>, JobArgsError> {
        match args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(JobArgsError::Shape {
                name,
                what: "true or false",
            }),
        }
    };
    let scope = || -> Result<JobScope, JobArgsError> {
        match text("scope")? {
            None => Ok(JobScope::User),
            Some(value) => JobScope::parse(value.trim()).ok_or(JobArgsError::Scope {
                value: value.chars().take(40).collect(),
            }),
        }
    };
    let id = || -> Result<String, JobArgsError> {
        let id = text("job_id")?.unwrap_or_default();
        Ok(job_id(id.trim())?.to_owned())
    };
    // Optional text: absent leaves it, empty clears it.
    let optional = |name: &'static str| -> Result<Option<Option<String>>, JobArgsError> {
        Ok(text(name)?.map(|v| {
            let v = v.trim().to_owned();
            (!v.is_empty()).then_some(v)
        }))
    };
    let patch = || -> Result<JobPatch, JobArgsError> {
        Ok(JobPatch {
            description: text("description")?.map(|s| s.trim().to_owned()),
            schedule: text("schedule")?.map(|s| s.trim().to_owned()),
            timezone: optional("timezone")?,
            paused: flag("paused")?,
            cwd: optional("cwd")?,
            model: optional("model")?,
            mode: text("mode")?.map(|s| s.trim().to_owned()),
            agent: optional("agent")?,
            permission_mode: text("permission_mode")?.map(|s| s.trim().to_owned()),
            body: text("body")?,
        })
    };
    let write = |replace: bool| -> Result<JobRequest, JobArgsError> {
        let job = patch()?.apply(&Job::default());
        job.check()?;
        Ok(JobRequest::Write {
            scope: scope()?,
            job_id: id()?,
            job,
            replace,
        })
    };
    Ok(match tool {
        B::CodarisSchedulerJobsList => JobRequest::List {
            include_body: flag("include_body")?.unwrap_or(false),
        },
        B::CodarisSchedulerJobGet => JobRequest::Get {
            scope: scope()?,
            job_id: id()?,
        },
        B::CodarisSchedulerJobRuns => {
            let limit = match args.get("limit") {
                None | Some(Value::Null) => 20,
                Some(value) => match value.as_u64() {
                    Some(n @ 1..=codaris_catalogue::scheduler::RUNS_LIMIT_MAX) => n as usize,
                    _ => {
                        return Err(JobArgsError::Shape {
                            name: "limit",
                            what: "a whole number from 1 to 100",
                        });
                    }
                },
            };
            JobRequest::Runs {
                scope: scope()?,
                job_id: id()?,
                limit,
            }
        }
        B::CodarisSchedulerJobCreate => write(false)?,
        B::CodarisSchedulerJobReplace => write(true)?,
        B::CodarisSchedulerJobPatch => JobRequest::Patch {
            scope: scope()?,
            job_id: id()?,
            new_job_id: match text("new_job_id")? {
                None => None,
                Some(new) => Some(job_id(new.trim())?.to_owned()),
            },
            patch: patch()?,
        },
        B::CodarisSchedulerJobPause | B::CodarisSchedulerJobResume => JobRequest::Pause {
            scope: scope()?,
            job_id: id()?,
            paused: tool == B::CodarisSchedulerJobPause,
        },
        B::CodarisSchedulerJobDelete => JobRequest::Delete {
            scope: scope()?,
            job_id: id()?,
        },
        B::CodarisSchedulerJobRun => JobRequest::Run {
            scope: scope()?,
            job_id: id()?,
        },
        B::CodarisSchedulerJobCancel => JobRequest::Cancel {
            scope: scope()?,
            job_id: id()?,
        },
        other => {
            return Err(JobArgsError::NotScheduler {
                tool: other.as_str(),
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_create_reads_a_whole_job_and_refuses_a_bad_one() {
        let request = read_request(
            BuiltinTool::CodarisSchedulerJobCreate,
            &json!({"job_id": "nightly", "description": "d", "schedule": "every 1h", "body": "go"}),
        )
        .unwrap();
        let JobRequest::Write {
            scope,
            job,
            replace,
            ..
        } = request
        else {
            panic!("not a write: {request:?}");
        };
        assert_eq!(scope, JobScope::User);
        assert!(!replace);
        assert_eq!(job.mode, "agent");
        assert_eq!(job.permission_mode, "ask");
        let err = |args: Value| {
            read_request(BuiltinTool::CodarisSchedulerJobCreate, &args)
                .unwrap_err()
                .to_string()
        };
        assert!(
            err(json!({"job_id": "../x", "description": "d", "schedule": "every 1h", "body": "b"}))
                .contains("not a job id")
        );
        assert!(err(json!({"job_id": "x", "scope": "everywhere", "description": "d", "schedule": "every 1h", "body": "b"})).contains("`scope`"));
        assert!(
            err(json!({"job_id": "x", "description": "d", "schedule": "every 5s", "body": "b"}))
                .contains("more often")
        );
        assert!(
            err(json!({"job_id": "x", "description": "d", "schedule": "every 1h"}))
                .contains("`body`")
        );
    }

    #[test]
    fn a_patch_changes_only_what_it_names_and_renames() {
        let request = read_request(
            BuiltinTool::CodarisSchedulerJobPatch,
            &json!({"job_id": "a", "new_job_id": "b", "paused": true, "model": ""}),
        )
        .unwrap();
        let JobRequest::Patch {
            new_job_id, patch, ..
        } = request
        else {
            panic!("not a patch");
        };
        assert_eq!(new_job_id.as_deref(), Some("b"));
        let before = Job {
            model: Some("m".to_owned()),
            description: "d".to_owned(),
            ..Job::default()
        };
        let after = patch.apply(&before);
        assert!(after.paused);
        assert_eq!(after.model, None);
        assert_eq!(after.description, "d");
    }
}
