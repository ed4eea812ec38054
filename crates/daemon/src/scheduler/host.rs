//! The scheduler's answers to its tools and to `codaris scheduler`: each request carried out,
//! answered with a first line that says what happened and the JSON of what it is about.

use std::path::Path;
use std::sync::Arc;

use codaris_tools::scheduler::{JobRequest, JobScope, JobsHost};
use serde_json::{Value, json};

use super::Scheduler;
use super::error::SchedulerError;
use super::files::{self, JobKey, Trigger};

/// An answer: its first line for people and models, and the JSON `--json` prints.
#[derive(Debug, Clone)]
pub struct Answer {
    pub line: String,
    pub json: Value,
}

impl Answer {
    /// What a tool's model reads: the line, then the JSON.
    pub fn text(&self) -> String {
        let body = serde_json::to_string_pretty(&self.json).unwrap_or_default();
        format!("{}\n{body}", self.line)
    }
}

fn rfc3339(at: Option<chrono::DateTime<chrono::Utc>>) -> Value {
    at.map_or(Value::Null, |at| Value::String(at.to_rfc3339()))
}

impl Scheduler {
    /// The JSON of one job as it is now.
    fn job_json(&self, key: &JobKey, include_body: bool) -> Value {
        let sidecar = self.sidecar_of(key);
        let mut value = json!({
            "scope": key.scope.as_str(),
            "job_id": key.id,
            "file": key.file().display().to_string(),
            "last_run": rfc3339(sidecar.last_run),
            "next_run": rfc3339(self.inner().queue.due(key)),
            "in_flight": self.in_flight(key).filter(|r| !r.is_empty()),
        });
        match files::load(key) {
            Ok(Some(loaded)) => {
                let approved = self.is_approved(key, &loaded.digest);
                let job = &loaded.job;
                value["description"] = json!(job.description);
                value["schedule"] = json!(job.schedule);
                value["timezone"] = json!(job.timezone);
                value["paused"] = json!(job.paused);
                value["cwd"] = json!(job.cwd);
                value["model"] = json!(job.model);
                value["mode"] = json!(job.mode);
                value["agent"] = json!(job.agent);
                value["permission_mode"] = json!(job.permission_mode);
                value["approved"] = json!(approved);
                value["digest"] = json!(loaded.digest);
                if include_body {
                    value["body"] = json!(job.body);
                }
            }
            Ok(None) => value["error"] = json!("no such file"),
            Err(err) => value["error"] = json!(err.to_string()),
        }
        value
    }

    fn runs_json(&self, key: &JobKey, limit: usize) -> Value {
        let sidecar = self.sidecar_of(key);
        let runs: Vec<Value> = sidecar
            .runs
            .iter()
            .rev()
            .take(limit)
            .map(|run| {
                let seconds = run
                    .ended
                    .map(|ended| (ended - run.started).num_seconds().max(0));
                json!({
                    "run_session": run.run_session,
                    "trigger": run.trigger,
                    "status": run.status.as_str(),
                    "started": run.started.to_rfc3339(),
                    "ended": rfc3339(run.ended),
                    "seconds": seconds,
                    "error": run.error,
                })
            })
            .collect();
        json!({"scope": key.scope.as_str(), "job_id": key.id, "runs": runs})
    }

    /// Carries out `request` for a session (or, with `from` absent, a person) working in `cwd`.
    pub async fn answer(
        self: &Arc<Self>,
        from: Option<&str>,
        cwd: &Path,
        request: JobRequest,
    ) -> Result<Answer, SchedulerError> {
        if !self.enabled {
            return Err(SchedulerError::Disabled);
        }
        match request {
            JobRequest::List { include_body } => {
                let mut keys = self.known_keys();
                if let Ok(key) = self.key(JobScope::Project, "x", cwd) {
                    for id in files::ids_in(&key.dir) {
                        let key = JobKey { id, ..key.clone() };
                        if !keys.contains(&key) {
                            keys.push(key);
                        }
                    }
                }
                // A listing reads the files again: an edit by hand shows (and is scheduled).
                for key in &keys {
                    self.refresh(key, false);
                }
                let jobs: Vec<Value> = keys
                    .iter()
                    .map(|k| self.job_json(k, include_body))
                    .collect();
                Ok(Answer {
                    line: format!("{} scheduled jobs", jobs.len()),
                    json: json!({"jobs": jobs}),
                })
            }
            JobRequest::Get { scope, job_id } => {
                let key = self.existing(scope, &job_id, cwd)?;
                Ok(Answer {
                    line: format!("job `{}`", key.label()),
                    json: self.job_json(&key, true),
                })
            }
            JobRequest::Runs {
                scope,
                job_id,
                limit,
            } => {
                let key = self.existing(scope, &job_id, cwd)?;
                let json = self.runs_json(&key, limit);
                let count = json["runs"].as_array().map_or(0, Vec::len);
                Ok(Answer {
                    line: format!("{count} runs of `{}`, newest first", key.label()),
                    json,
                })
            }
            JobRequest::Write {
                scope,
                job_id,
                mut job,
                replace,
            } => {
                let key = self.key(scope, &job_id, cwd)?;
                let exists = files::load(&key)?.is_some() || key.file().exists();
                if exists && !replace {
                    return Err(SchedulerError::Exists { job: key.label() });
                }
                if !exists && replace {
                    return Err(SchedulerError::NoJob { job: key.label() });
                }
                if job.cwd.is_none() && scope == JobScope::User {
                    // A job a session made works where that session works.
                    job.cwd = Some(cwd.display().to_string());
                }
                let run_cwd = self.run_cwd(&key, job.cwd.as_deref())?;
                files::save(&key, &job)?;
                // A job a session made runs with that session's provider and model: its
                // session is made now, from the asking one.
                if let Some(services) = self.services.get()
                    && let Some(asking) = from.and_then(|id| services.sessions.get(id).ok())
                {
                    self.job_session(services, &key, &run_cwd, Some(&asking))?;
                }
                let next = self.refresh(&key, true);
                Ok(Answer {
                    line: format!(
                        "{} job `{}`; {}",
                        if replace { "replaced" } else { "created" },
                        key.label(),
                        next_line(next, &key, false),
                    ),
                    json: self.job_json(&key, true),
                })
            }
            JobRequest::Patch {
                scope,
                job_id,
                new_job_id,
                patch,
            } => {
                let key = self.existing(scope, &job_id, cwd)?;
                let loaded =
                    files::load(&key)?.ok_or_else(|| SchedulerError::NoJob { job: key.label() })?;
                let job = patch.apply(&loaded.job);
                job.check().map_err(|source| SchedulerError::BadJob {
                    job: key.label(),
                    source,
                })?;
                self.run_cwd(&key, job.cwd.as_deref())?;
                let target = match &new_job_id {
                    Some(new) if *new != key.id => {
                        if let Some(run) = self.in_flight(&key) {
                            return Err(SchedulerError::InFlight {
                                job: key.label(),
                                run,
                            });
                        }
                        let target = JobKey {
                            id: new.clone(),
                            ..key.clone()
                        };
                        if target.file().exists() {
                            return Err(SchedulerError::Exists {
                                job: target.label(),
                            });
                        }
                        target
                    }
                    _ => key.clone(),
                };
                files::save(&target, &job)?;
                if target != key {
                    // The history follows the job to its new name; the old name is gone.
                    let sidecar = self.sidecar_of(&key);
                    files::save_sidecar(&target, &sidecar)?;
                    files::remove(&key)?;
                    let (old, new) = (key.file(), target.file());
                    self.save_kept(|kept| {
                        if let Some(session) = kept.sessions.remove(&old) {
                            kept.sessions.insert(new, session);
                        }
                    })?;
                    self.refresh(&key, true);
                }
                let next = self.refresh(&target, true);
                Ok(Answer {
                    line: format!(
                        "patched job `{}`{}; {}",
                        target.label(),
                        if target == key {
                            String::new()
                        } else {
                            format!(" (was `{}`)", key.id)
                        },
                        next_line(next, &target, false),
                    ),
                    json: self.job_json(&target, true),
                })
            }
            JobRequest::Pause {
                scope,
                job_id,
                paused,
            } => {
                let key = self.existing(scope, &job_id, cwd)?;
                let loaded =
                    files::load(&key)?.ok_or_else(|| SchedulerError::NoJob { job: key.label() })?;
                let mut job = loaded.job;
                job.paused = paused;
                // The approval's digest leaves `paused` out: pausing keeps a job approved.
                files::save(&key, &job)?;
                let next = self.refresh(&key, true);
                Ok(Answer {
                    line: format!(
                        "{} job `{}`; {}",
                        if paused { "paused" } else { "resumed" },
                        key.label(),
                        next_line(next, &key, false)
                    ),
                    json: self.job_json(&key, false),
                })
            }
            JobRequest::Delete { scope, job_id } => {
                let key = self.existing(scope, &job_id, cwd)?;
                if let Some(run) = self.in_flight(&key) {
                    return Err(SchedulerError::InFlight {
                        job: key.label(),
                        run,
                    });
                }
                files::remove(&key)?;
                let file = key.file();
                self.save_kept(|kept| {
                    kept.sessions.remove(&file);
                })?;
                self.refresh(&key, true);
                Ok(Answer {
                    line: format!(
                        "deleted job `{}`, its state and its run history",
                        key.label()
                    ),
                    json: json!({"scope": key.scope.as_str(), "job_id": key.id, "deleted": true}),
                })
            }
            JobRequest::Run { scope, job_id } => {
                let key = self.existing(scope, &job_id, cwd)?;
                let asking =
                    from.and_then(|id| self.services.get().and_then(|s| s.sessions.get(id).ok()));
                let run = self
                    .start_run(&key, Trigger::Manual, asking.as_ref())
                    .await?;
                Ok(Answer {
                    line: format!(
                        "started a run of `{}` in the background: run session `{run}`",
                        key.label()
                    ),
                    json: json!({"scope": key.scope.as_str(), "job_id": key.id, "run_session": run, "trigger": "manual"}),
                })
            }
            JobRequest::Cancel { scope, job_id } => {
                let key = self.existing(scope, &job_id, cwd)?;
                let run = self.cancel(&key)?;
                Ok(Answer {
                    line: format!("cancelling run `{run}` of `{}`", key.label()),
                    json: json!({"scope": key.scope.as_str(), "job_id": key.id, "run_session": run}),
                })
            }
        }
    }

    /// The key of a job whose file exists.
    fn existing(&self, scope: JobScope, id: &str, cwd: &Path) -> Result<JobKey, SchedulerError> {
        let key = self.key(scope, id, cwd)?;
        files::refuse_link(&key.file())?;
        if !key.file().is_file() {
            return Err(SchedulerError::NoJob { job: key.label() });
        }
        Ok(key)
    }
}

fn next_line(next: Option<chrono::DateTime<chrono::Utc>>, key: &JobKey, approved: bool) -> String {
    match next {
        Some(at) => format!("next run {}", at.to_rfc3339()),
        None if key.scope == JobScope::Project && !approved => format!(
            "it runs once the operator approves it (`codaris scheduler approve {} --scope project`)",
            key.id
        ),
        None => "no run scheduled".to_owned(),
    }
}

/// The tools' side of the scheduler.
#[derive(Debug, Clone)]
pub struct SchedulerTools(pub Arc<Scheduler>);

#[async_trait::async_trait]
impl JobsHost for SchedulerTools {
    async fn handle(
        &self,
        session: &str,
        cwd: &Path,
        request: JobRequest,
    ) -> Result<String, String> {
        let (cwd, from) = match self
            .0
            .services
            .get()
            .and_then(|s| s.sessions.get(session).ok())
        {
            // A project job lives under the session's own directory.
            Some(record) => (record.cwd.clone(), Some(session)),
            None => (cwd.to_path_buf(), None),
        };
        self.0
            .answer(from, &cwd, request)
            .await
            .map(|answer| answer.text())
            .map_err(|err| err.to_string())
    }
}
