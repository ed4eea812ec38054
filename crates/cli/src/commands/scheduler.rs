//! `codaris scheduler`: the daemon's scheduled jobs through `codaris.v1.Scheduler` — list,
//! show, runs, run, cancel, pause, resume, and `approve` (a project job runs only once the
//! operator approved it as its file is; no tool can). The same answers the scheduler's tools
//! give: a line, or with `--json` the JSON object, whose fields are only ever added to.

use std::path::Path;

use codaris_proto::v1;
use codaris_proto::v1::scheduler_client::SchedulerClient;
use serde_json::Value;

use super::Outcome;
use crate::cli::{SchedulerCommand, SchedulerJob};
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

pub async fn run(
    target: &Target,
    autostart: bool,
    json: bool,
    command: SchedulerCommand,
    here: &Path,
) -> Result<Outcome, CliError> {
    let mut scheduler = SchedulerClient::new(client::open(target, autostart).await?);
    let request = |job: &SchedulerJob| v1::SchedulerJobRequest {
        scope: job.scope.clone(),
        job_id: job.job_id.clone(),
        cwd: here.display().to_string(),
        limit: 0,
        include_body: false,
    };
    let reply = match &command {
        SchedulerCommand::List { include_body } => {
            scheduler
                .list(v1::SchedulerJobRequest {
                    cwd: here.display().to_string(),
                    include_body: *include_body,
                    ..Default::default()
                })
                .await?
        }
        SchedulerCommand::Show(job) => scheduler.show(request(job)).await?,
        SchedulerCommand::Runs { job, limit } => {
            scheduler
                .runs(v1::SchedulerJobRequest {
                    limit: *limit,
                    ..request(job)
                })
                .await?
        }
        SchedulerCommand::Run(job) => scheduler.run(request(job)).await?,
        SchedulerCommand::Cancel(job) => scheduler.cancel(request(job)).await?,
        SchedulerCommand::Pause(job) => scheduler.pause(request(job)).await?,
        SchedulerCommand::Resume(job) => scheduler.resume(request(job)).await?,
        SchedulerCommand::Approve(job) => scheduler.approve(request(job)).await?,
        SchedulerCommand::Clock { to } => {
            scheduler
                .set_clock(v1::SetClockRequest { to: to.clone() })
                .await?
        }
    }
    .into_inner();
    let value: Value = serde_json::from_str(&reply.json).unwrap_or(Value::Null);
    if json {
        output::json(&value)?;
    } else {
        output::line(&text(&command, &reply.line, &value))?;
    }
    Ok(Outcome::Success)
}

/// What a person reads: the line, and for a listing one row per job or run.
fn text(command: &SchedulerCommand, line: &str, value: &Value) -> String {
    let field = |v: &Value, k: &str| -> String {
        match v.get(k) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => "-".to_owned(),
            Some(other) => other.to_string(),
        }
    };
    let rows: Vec<String> = match command {
        SchedulerCommand::List { .. } => value["jobs"]
            .as_array()
            .map(|jobs| {
                jobs.iter()
                    .map(|job| {
                        let state = if job["paused"] == Value::Bool(true) {
                            "paused"
                        } else if job["approved"] == Value::Bool(false) {
                            "not approved"
                        } else {
                            "active"
                        };
                        format!(
                            "{}:{}  {}  {}  next {}  {}",
                            field(job, "scope"),
                            field(job, "job_id"),
                            field(job, "schedule"),
                            state,
                            field(job, "next_run"),
                            field(job, "description"),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        SchedulerCommand::Runs { .. } => value["runs"]
            .as_array()
            .map(|runs| {
                runs.iter()
                    .map(|run| {
                        format!(
                            "{}  {}  {}  started {}  {}s",
                            field(run, "run_session"),
                            field(run, "trigger"),
                            field(run, "status"),
                            field(run, "started"),
                            field(run, "seconds"),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        SchedulerCommand::Show(_) => serde_json::to_string_pretty(value)
            .map(|s| vec![s])
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let mut text = line.to_owned();
    for row in rows {
        text.push('\n');
        text.push_str(&row);
    }
    text
}
