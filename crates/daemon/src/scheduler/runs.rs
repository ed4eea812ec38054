//! A job's run: a child session of the job's session, in the modes the job names, its turn
//! followed in the background until it ends, its outcome written to the job's sidecar.

use std::sync::Arc;

use codaris_policy::{Activity, PermissionMode};
use codaris_proto::v1;
use tokio::sync::mpsc;

use super::Scheduler;
use super::error::SchedulerError;
use super::files::{self, JobKey, RunRecord, RunStatus, Trigger};
use crate::sessions::store::{ChildOf, NewSession, SessionRecord};

fn start_error(reason: impl std::fmt::Display) -> SchedulerError {
    SchedulerError::Start {
        reason: reason.to_string(),
    }
}

impl Scheduler {
    /// Starts one run of `key` now; `from` is the session whose tool asked (its provider and
    /// script make the job's session when it has none yet). Answers with the run session.
    pub(super) async fn start_run(
        self: &Arc<Self>,
        key: &JobKey,
        trigger: Trigger,
        from: Option<&SessionRecord>,
    ) -> Result<String, SchedulerError> {
        if !self.enabled {
            return Err(SchedulerError::Disabled);
        }
        let services = self.services.get().ok_or(SchedulerError::Disabled)?;
        let family = services.family.get().ok_or(SchedulerError::Disabled)?;
        let loaded = self.runnable(key)?;
        let job = loaded.job;
        if let Some(run) = self.inner().running.get(key) {
            return Err(SchedulerError::InFlight {
                job: key.label(),
                run: run.clone(),
            });
        }
        let cwd = self.run_cwd(key, job.cwd.as_deref())?;
        let parent = self.job_session(services, key, &cwd, from)?;
        let agents_dir = self.agents_dir.clone();
        let find_cwd = cwd.clone();
        let found = tokio::task::spawn_blocking(move || {
            crate::toolset::agents::find(agents_dir.as_deref(), &find_cwd)
        })
        .await
        .map_err(start_error)?;
        let agent = job.agent.clone().unwrap_or_else(|| "general".to_owned());
        let definition = found
            .get(&agent)
            .ok_or_else(|| start_error(format!("no agent definition is named `{agent}`")))?;
        let model = match job.model.as_ref().or(definition.model.as_ref()) {
            Some(wanted) => Some(
                crate::sessions::turns::model_named(
                    wanted,
                    parent.model.as_deref(),
                    &services.config.get(),
                )
                .map_err(start_error)?,
            ),
            None => parent.model.clone(),
        };
        let narrowed = (definition.tools.is_some() || !definition.disallowed_tools.is_empty())
            .then(|| codaris_policy::Narrowed {
                agent: definition.name.clone(),
                tools: definition.tools.clone(),
                disallowed: definition.disallowed_tools.clone(),
            });
        let new = NewSession {
            instructions: crate::sessions::instructions::find(&cwd),
            cwd,
            // The job's front matter, never the parent's or the asking session's: a run gets
            // no more than its file says.
            activity: activity_of(&job.mode),
            permission_mode: permission_mode_of(&job.permission_mode),
            provider: parent.provider,
            model,
            script: parent.script.clone(),
            base_url: parent.base_url.clone(),
            additional_dirs: Vec::new(),
            child: Some(ChildOf {
                parent: parent.id.clone(),
                root: parent.id.clone(),
                depth: 1,
                agent: definition.name.clone(),
                description: format!("job {}", key.label()),
                instructions: definition.instructions.clone(),
                narrowed,
                // The N-th run plays the N-th entry of the job session's script's `children`.
                script_path: vec![parent.children.len()],
                job: Some(key.label()),
                memory: None,
            }),
            reasoning: None,
            title: crate::sessions::store::title_of(&job.body),
        };
        // Claimed before anything starts, so two triggers at once cannot both run it.
        {
            let mut inner = self.inner();
            if let Some(run) = inner.running.get(key) {
                return Err(SchedulerError::InFlight {
                    job: key.label(),
                    run: run.clone(),
                });
            }
            inner.running.insert(key.clone(), String::new());
        }
        let started = async {
            let run = services.sessions.create(new).map_err(start_error)?;
            services
                .sessions
                .add_child(&parent.id, &run.id)
                .map_err(start_error)?;
            let events = family
                .start(&run.id, job.body.clone())
                .await
                .map_err(start_error)?;
            Ok::<_, SchedulerError>((run.id, events))
        }
        .await;
        let (run_id, events) = match started {
            Ok(started) => started,
            Err(err) => {
                self.inner().running.remove(key);
                return Err(err);
            }
        };
        self.inner().running.insert(key.clone(), run_id.clone());
        let now = self.clock.now();
        let mut sidecar = files::sidecar(key);
        sidecar.last_run = Some(now);
        sidecar.runs.push(RunRecord {
            run_session: run_id.clone(),
            trigger,
            status: RunStatus::Running,
            started: now,
            ended: None,
            error: String::new(),
        });
        let excess = sidecar.runs.len().saturating_sub(files::RUNS_KEPT);
        sidecar.runs.drain(..excess);
        if let Err(err) = files::save_sidecar(key, &sidecar) {
            tracing::warn!(job = %key.label(), %err, "a job's state could not be written");
        }
        tracing::info!(job = %key.label(), run = %run_id, trigger = ?trigger, "a job's run started");
        let scheduler = self.clone();
        let (key, run) = (key.clone(), run_id.clone());
        tokio::spawn(async move {
            let (status, error) = follow(events).await;
            scheduler.ended(&key, &run, status, error);
        });
        Ok(run_id)
    }

    /// Records how `run` of `key` ended and lets it go.
    fn ended(&self, key: &JobKey, run: &str, status: RunStatus, error: String) {
        let cancelled = {
            let mut inner = self.inner();
            inner.running.remove(key);
            status
        };
        let now = self.clock.now();
        let mut sidecar = files::sidecar(key);
        if let Some(record) = sidecar.runs.iter_mut().rev().find(|r| r.run_session == run) {
            record.status = cancelled;
            record.ended = Some(now);
            record.error = error;
        }
        if let Err(err) = files::save_sidecar(key, &sidecar) {
            tracing::warn!(job = %key.label(), %err, "a job's state could not be written");
        }
        if let Some(services) = self.services.get() {
            if let Some(family) = services.family.get() {
                family.release(run);
            }
            // A run is one turn: its session ends with it (its record and transcript stay), so
            // a nightly job does not leave a live session behind every night.
            if let Err(err) = services.sessions.end_if_active(run) {
                tracing::warn!(%run, %err, "a job's run session could not be ended");
            }
        }
        tracing::info!(job = %key.label(), %run, status = status.as_str(), "a job's run ended");
    }

    /// Stops `key`'s run in flight.
    pub(super) fn cancel(&self, key: &JobKey) -> Result<String, SchedulerError> {
        let run = self
            .inner()
            .running
            .get(key)
            .cloned()
            .filter(|r| !r.is_empty())
            .ok_or_else(|| SchedulerError::NotRunning { job: key.label() })?;
        if let Some(family) = self.services.get().and_then(|s| s.family.get()) {
            family.cancel(&run);
        }
        Ok(run)
    }

    /// The run in flight of `key`, if any.
    pub(super) fn in_flight(&self, key: &JobKey) -> Option<String> {
        self.inner().running.get(key).cloned()
    }

    /// Where `key`'s runs work: the job's `cwd`, an existing absolute directory (inside the
    /// project, for a project job), else the project (or the home) directory.
    pub(super) fn run_cwd(
        &self,
        key: &JobKey,
        cwd: Option<&str>,
    ) -> Result<std::path::PathBuf, SchedulerError> {
        let bad = |reason| SchedulerError::BadCwd {
            cwd: cwd.unwrap_or_default().to_owned(),
            reason,
        };
        let Some(cwd) = cwd else {
            return key
                .project()
                .map(std::path::Path::to_path_buf)
                .or_else(|| self.home.clone())
                .ok_or(bad("is needed: there is no home directory to run in"));
        };
        let path = std::path::Path::new(cwd);
        if !path.is_absolute() {
            return Err(bad("is not absolute"));
        }
        let real = std::fs::canonicalize(path).map_err(|_| bad("cannot be resolved"))?;
        if !real.is_dir() {
            return Err(bad("is not a directory"));
        }
        if let Some(project) = key.project() {
            let project = std::fs::canonicalize(project).map_err(|_| bad("cannot be resolved"))?;
            if !real.starts_with(&project) {
                return Err(bad("is outside the project; a project job runs inside it"));
            }
        }
        Ok(real)
    }

    /// `key`'s session, made when it has none: the parent of its runs, which never runs a
    /// turn itself (so nobody watches a run's cards: they are answered by the job's rule).
    pub(super) fn job_session(
        &self,
        services: &crate::sessions::turns::Services,
        key: &JobKey,
        cwd: &std::path::Path,
        from: Option<&SessionRecord>,
    ) -> Result<SessionRecord, SchedulerError> {
        let file = key.file();
        let known = self.inner().kept.sessions.get(&file).cloned();
        if let Some(id) = known
            && let Ok(record) = services.sessions.get(&id)
            && record.state == crate::sessions::store::SessionState::Active
        {
            return Ok(record);
        }
        let (provider, model, script, base_url) = match from {
            Some(asking) => (
                asking.provider,
                asking.model.clone(),
                asking.script.clone(),
                asking.base_url.clone(),
            ),
            None => {
                let settings = services.providers.current();
                let choice = crate::sessions::model_choice::ModelChoice::resolve(
                    &settings,
                    crate::sessions::model_choice::Asked::default(),
                )
                .map_err(start_error)?;
                (choice.provider, choice.model, None, choice.base_url)
            }
        };
        let record = services
            .sessions
            .create(NewSession {
                cwd: cwd.to_path_buf(),
                activity: Activity::Ask,
                permission_mode: PermissionMode::Ask,
                provider,
                model,
                script,
                base_url,
                instructions: Vec::new(),
                additional_dirs: Vec::new(),
                child: None,
                reasoning: None,
                title: format!("scheduled job {}", key.label()),
            })
            .map_err(start_error)?;
        let id = record.id.clone();
        self.save_kept(|kept| {
            kept.sessions.insert(file, id);
        })?;
        Ok(record)
    }
}

/// A job's `mode` as the session's activity (the job was checked: one of agent, plan, ask).
fn activity_of(mode: &str) -> Activity {
    match mode {
        "agent" => Activity::Agent,
        "plan" => Activity::Plan,
        _ => Activity::Ask,
    }
}

/// A job's `permission_mode` (checked: one of ask, accept_edits, bypass); anything else is the
/// narrowest.
fn permission_mode_of(mode: &str) -> PermissionMode {
    match mode {
        "accept_edits" => PermissionMode::AcceptEdits,
        "bypass" => PermissionMode::Bypass,
        _ => PermissionMode::Ask,
    }
}

/// Follows a run's turn to its end.
async fn follow(mut events: mpsc::Receiver<v1::TurnEvent>) -> (RunStatus, String) {
    while let Some(event) = events.recv().await {
        if let Some(v1::turn_event::Event::TurnEnded(ended)) = event.event {
            return match ended.reason.as_str() {
                "end_turn" => (RunStatus::Succeeded, String::new()),
                "cancelled" | "interrupted" => (RunStatus::Cancelled, String::new()),
                reason => (
                    RunStatus::Failed,
                    if ended.error.is_empty() {
                        reason.to_owned()
                    } else {
                        ended.error
                    },
                ),
            };
        }
    }
    (
        RunStatus::Failed,
        "the run's turn stopped without ending".to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_mode_maps_to_no_more_than_it_names() {
        assert_eq!(activity_of("agent"), Activity::Agent);
        assert_eq!(activity_of("plan"), Activity::Plan);
        assert_eq!(activity_of("anything"), Activity::Ask);
        assert_eq!(permission_mode_of("bypass"), PermissionMode::Bypass);
        assert_eq!(permission_mode_of("yolo"), PermissionMode::Ask);
        for mode in codaris_config::jobs::MODES {
            assert_eq!(activity_of(mode).as_str(), mode);
        }
        for mode in codaris_config::jobs::PERMISSION_MODES {
            assert_eq!(permission_mode_of(mode).as_str(), mode);
        }
    }
}
