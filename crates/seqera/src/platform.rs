//! Seqera Platform's read-only set: workspaces, pipelines, runs, a run, its tasks, its log.
//! `GET`s only (the one `POST`, a launch, is `launch.rs`'s), with the token as a bearer token, against `platform_url` (the public
//! `https://api.cloud.seqera.io` or an Enterprise install's API). Answers are compact text.

use serde_json::{Value, json};

use crate::args::{Args, count, cut};
use crate::http::{self, QUOTED_BODY, redact};
use crate::{SeqeraSetup, SeqeraTool, ToolFailure};

/// Runs (or pipelines, tasks) listed unless `max` says otherwise.
const DEFAULT_MAX: u64 = 20;
const MAX_MAX: u64 = 100;
/// Log lines shown unless `tail` says otherwise.
const DEFAULT_TAIL: u64 = 200;
const MAX_TAIL: u64 = 2000;

/// The Platform API client of one server.
#[derive(Clone)]
pub(crate) struct Platform {
    pub(crate) url: String,
    pub(crate) token: Option<String>,
}

impl std::fmt::Debug for Platform {
    /// The token is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Platform")
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Platform {
    /// `GET {url}{path}` with `query`, as JSON.
    pub(crate) async fn get(
        &self,
        path: &str,
        query: &[(&str, String)],
        what: &str,
    ) -> Result<Value, ToolFailure> {
        self.send("GET", path, query, None, what).await
    }

    /// `POST {url}{path}` with `query` and exactly `body` (JSON bytes), as JSON.
    pub(crate) async fn post(
        &self,
        path: &str,
        query: &[(&str, String)],
        body: Vec<u8>,
        what: &str,
    ) -> Result<Value, ToolFailure> {
        self.send("POST", path, query, Some(body), what).await
    }

    async fn send(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, String)],
        body: Option<Vec<u8>>,
        what: &str,
    ) -> Result<Value, ToolFailure> {
        let Some(token) = &self.token else {
            return Err(ToolFailure::new(
                "no Seqera token: set [seqera] token or TOWER_ACCESS_TOKEN",
            ));
        };
        let client = http::client()?;
        let url = format!("{}{path}", self.url);
        let request = match body {
            Some(body) => client
                .post(url)
                .header("Content-Type", "application/json")
                .body(body),
            None => client.get(url),
        };
        let answer = request
            .query(query)
            .bearer_auth(token)
            .header("Accept", "application/json")
            .send()
            .await
            .map_err(|err| http::unreachable("Seqera Platform", &self.url, &err, Some(token)))?;
        let status = answer.status();
        let text = answer
            .text()
            .await
            .map_err(|err| http::unreachable("Seqera Platform", &self.url, &err, Some(token)))?;
        let said = || {
            let message = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| text.clone());
            cut(&redact(&message, Some(token)), QUOTED_BODY)
        };
        match status.as_u16() {
            200 => serde_json::from_str(&text).map_err(|_| {
                ToolFailure::new(format!(
                    "Seqera Platform's answer to {method} {path} is not JSON: {}",
                    cut(&redact(&text, Some(token)), QUOTED_BODY)
                ))
            }),
            401 => Err(ToolFailure::new(
                "Seqera Platform: invalid Seqera token (401 Unauthorized); check [seqera] token or TOWER_ACCESS_TOKEN",
            )),
            403 => Err(ToolFailure::new(format!(
                "Seqera Platform refused access (403) to {what}: the token's user may not see it ({})",
                said()
            ))),
            404 => Err(ToolFailure::new(format!(
                "Seqera Platform has no {what} (404): check the id and the workspace ({})",
                said()
            ))),
            _ => Err(ToolFailure::new(format!(
                "Seqera Platform answered {status} to {method} {path}: {}",
                said()
            ))),
        }
    }
}

/// Which of the set a tool is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ListWorkspaces,
    ListPipelines,
    ListRuns,
    DescribeRun,
    ListRunTasks,
    GetRunLog,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::ListWorkspaces,
        Kind::ListPipelines,
        Kind::ListRuns,
        Kind::DescribeRun,
        Kind::ListRunTasks,
        Kind::GetRunLog,
    ];
}

/// One tool of the read-only set.
#[derive(Debug, Clone)]
pub struct PlatformTool {
    kind: Kind,
    platform: Platform,
}

impl PlatformTool {
    pub fn new(kind: Kind, setup: &SeqeraSetup) -> Self {
        Self {
            kind,
            platform: Platform {
                url: setup.platform_url.clone(),
                token: setup.token.clone(),
            },
        }
    }

    /// Every tool of the set.
    pub fn all(setup: &SeqeraSetup) -> Vec<PlatformTool> {
        Kind::ALL
            .iter()
            .map(|kind| PlatformTool::new(*kind, setup))
            .collect()
    }
}

fn schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn workspace_property() -> Value {
    json!({"type": ["integer", "string"], "description": "Workspace id (from list_workspaces); leave out for the personal workspace"})
}

#[async_trait::async_trait]
impl SeqeraTool for PlatformTool {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::ListWorkspaces => "list_workspaces",
            Kind::ListPipelines => "list_pipelines",
            Kind::ListRuns => "list_runs",
            Kind::DescribeRun => "describe_run",
            Kind::ListRunTasks => "list_run_tasks",
            Kind::GetRunLog => "get_run_log",
        }
    }

    fn description(&self) -> &'static str {
        match self.kind {
            Kind::ListWorkspaces => {
                "Seqera Platform: the organisations and workspaces the token's user belongs to, with their ids."
            }
            Kind::ListPipelines => "Seqera Platform: the pipelines of a workspace (the launchpad).",
            Kind::ListRuns => {
                "Seqera Platform: the latest runs of a workspace, with status, optionally searched by name."
            }
            Kind::DescribeRun => {
                "Seqera Platform: one run: pipeline, revision, status, times, exit status, error message and task counts."
            }
            Kind::ListRunTasks => {
                "Seqera Platform: the tasks of a run, with status, exit code and duration."
            }
            Kind::GetRunLog => "Seqera Platform: the last lines of a run's Nextflow log.",
        }
    }

    fn input_schema(&self) -> Value {
        let max = json!({"type": "integer", "minimum": 1, "maximum": MAX_MAX});
        let run_id = json!({"type": "string", "description": "The run (workflow) id"});
        match self.kind {
            Kind::ListWorkspaces => schema(json!({}), &[]),
            Kind::ListPipelines | Kind::ListRuns => schema(
                json!({"workspace_id": workspace_property(), "search": {"type": "string"}, "max": max}),
                &[],
            ),
            Kind::DescribeRun => schema(
                json!({"run_id": run_id, "workspace_id": workspace_property()}),
                &["run_id"],
            ),
            Kind::ListRunTasks => schema(
                json!({"run_id": run_id, "workspace_id": workspace_property(), "max": max}),
                &["run_id"],
            ),
            Kind::GetRunLog => schema(
                json!({"run_id": run_id, "workspace_id": workspace_property(), "tail": {"type": "integer", "minimum": 1, "maximum": MAX_TAIL}}),
                &["run_id"],
            ),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, value: &Value) -> Result<String, ToolFailure> {
        let args = Args::of(self.name(), value)?;
        match self.kind {
            Kind::ListWorkspaces => self.list_workspaces().await,
            Kind::ListPipelines => self.list_pipelines(&args).await,
            Kind::ListRuns => self.list_runs(&args).await,
            Kind::DescribeRun => self.describe_run(&args).await,
            Kind::ListRunTasks => self.list_run_tasks(&args).await,
            Kind::GetRunLog => self.get_run_log(&args).await,
        }
    }
}

fn text(value: &Value, key: &str) -> String {
    match value.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

fn items<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Milliseconds as `1h 9m`, `1m 15s`, `42s`.
fn duration(ms: Option<u64>) -> String {
    let Some(ms) = ms else { return String::new() };
    let secs = ms / 1000;
    match (secs / 3600, secs % 3600 / 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s}s"),
        (h, m, _) => format!("{h}h {m}m"),
    }
}

pub(crate) fn where_(workspace: Option<u64>) -> String {
    workspace.map_or("the personal workspace".to_owned(), |id| {
        format!("workspace {id}")
    })
}

impl PlatformTool {
    fn workspace_query(workspace: Option<u64>) -> Vec<(&'static str, String)> {
        workspace
            .map(|id| ("workspaceId", id.to_string()))
            .into_iter()
            .collect()
    }

    async fn list_workspaces(&self) -> Result<String, ToolFailure> {
        let info = self
            .platform
            .get("/user-info", &[], "the token's user")
            .await?;
        let user = info.get("user").unwrap_or(&Value::Null);
        let id = user.get("id").and_then(Value::as_u64).ok_or_else(|| {
            ToolFailure::new("Seqera Platform's /user-info answer has no user id")
        })?;
        let listed = self
            .platform
            .get(
                &format!("/user/{id}/workspaces"),
                &[],
                "the user's workspaces",
            )
            .await?;
        let entries = items(&listed, "orgsAndWorkspaces");
        let workspaces: Vec<&Value> = entries
            .iter()
            .filter(|e| e.get("workspaceId").is_some_and(|w| !w.is_null()))
            .collect();
        let mut out = format!(
            "{} for {}",
            count(
                workspaces.len(),
                "Seqera Platform workspace",
                "Seqera Platform workspaces"
            ),
            text(user, "userName")
        );
        out.push_str("\npersonal: the user's own workspace (leave workspace_id out)");
        for workspace in workspaces {
            out.push_str(&format!(
                "\n{}  {}/{}  {}  ({}; {})",
                text(workspace, "workspaceId"),
                text(workspace, "orgName"),
                text(workspace, "workspaceName"),
                text(workspace, "workspaceFullName"),
                text(workspace, "visibility").to_lowercase(),
                workspace
                    .get("roles")
                    .and_then(Value::as_array)
                    .map(|roles| roles
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", "))
                    .unwrap_or_default()
            ));
        }
        Ok(out)
    }

    async fn list_pipelines(&self, args: &Args<'_>) -> Result<String, ToolFailure> {
        let workspace = args.optional_workspace("workspace_id")?;
        let max = args.optional_u64("max", 1, MAX_MAX)?.unwrap_or(DEFAULT_MAX);
        let mut query = Self::workspace_query(workspace);
        query.push(("max", max.to_string()));
        if let Some(search) = args.optional_str("search")? {
            query.push(("search", search.to_owned()));
        }
        let listed = self
            .platform
            .get("/pipelines", &query, &where_(workspace))
            .await?;
        let pipelines = items(&listed, "pipelines");
        let total = listed
            .get("totalSize")
            .and_then(Value::as_u64)
            .unwrap_or(pipelines.len() as u64);
        let mut out = format!(
            "{} in {}",
            count(pipelines.len(), "pipeline", "pipelines"),
            where_(workspace)
        );
        if total > pipelines.len() as u64 {
            out.push_str(&format!(" (of {total})"));
        }
        for pipeline in pipelines {
            out.push_str(&format!(
                "\n{}  {}  {}",
                text(pipeline, "pipelineId"),
                text(pipeline, "name"),
                text(pipeline, "repository")
            ));
            let description = text(pipeline, "description");
            if !description.is_empty() {
                out.push_str(&format!("  — {}", cut(&description, 120)));
            }
        }
        Ok(out)
    }

    async fn list_runs(&self, args: &Args<'_>) -> Result<String, ToolFailure> {
        let workspace = args.optional_workspace("workspace_id")?;
        let max = args.optional_u64("max", 1, MAX_MAX)?.unwrap_or(DEFAULT_MAX);
        let mut query = Self::workspace_query(workspace);
        query.push(("max", max.to_string()));
        let search = args.optional_str("search")?;
        if let Some(search) = search {
            query.push(("search", search.to_owned()));
        }
        let listed = self
            .platform
            .get("/workflow", &query, &where_(workspace))
            .await?;
        let runs = items(&listed, "workflows");
        let total = listed
            .get("totalSize")
            .and_then(Value::as_u64)
            .unwrap_or(runs.len() as u64);
        let mut out = format!(
            "{} in {}",
            count(runs.len(), "run", "runs"),
            where_(workspace)
        );
        if let Some(search) = search {
            out.push_str(&format!(" matching \"{search}\""));
        }
        if total > runs.len() as u64 {
            out.push_str(&format!(" (of {total})"));
        }
        for entry in runs {
            let run = entry.get("workflow").unwrap_or(&Value::Null);
            out.push_str(&format!(
                "\n{}  {}  {}  {} {}  submitted {}",
                text(run, "id"),
                text(run, "status"),
                text(run, "runName"),
                text(run, "projectName"),
                text(run, "revision"),
                text(run, "submit")
            ));
        }
        Ok(out)
    }

    fn run_path(args: &Args<'_>, tail: &str) -> Result<(String, String, Option<u64>), ToolFailure> {
        let run = args.required_id("run_id")?.to_owned();
        let workspace = args.optional_workspace("workspace_id")?;
        Ok((format!("/workflow/{run}{tail}"), run, workspace))
    }

    async fn describe_run(&self, args: &Args<'_>) -> Result<String, ToolFailure> {
        let (path, id, workspace) = Self::run_path(args, "")?;
        let what = format!("run {id} in {}", where_(workspace));
        let answer = self
            .platform
            .get(&path, &Self::workspace_query(workspace), &what)
            .await?;
        let run = answer.get("workflow").unwrap_or(&Value::Null);
        let mut out = format!(
            "run {id} ({}): {}",
            text(run, "runName"),
            text(run, "status")
        );
        let mut field = |label: &str, value: String| {
            if !value.is_empty() {
                out.push_str(&format!("\n{label}: {value}"));
            }
        };
        field(
            "pipeline",
            format!("{} {}", text(run, "projectName"), text(run, "revision"))
                .trim()
                .to_owned(),
        );
        field("repository", text(run, "repository"));
        field("commit", text(run, "commitId"));
        field("user", text(run, "userName"));
        field("submitted", text(run, "submit"));
        field("started", text(run, "start"));
        field("completed", text(run, "complete"));
        field(
            "duration",
            duration(run.get("duration").and_then(Value::as_u64)),
        );
        field("exit status", text(run, "exitStatus"));
        field("work dir", text(run, "workDir"));
        field("error", cut(&text(run, "errorMessage"), 1000));
        if let Some(progress) = answer.pointer("/progress/workflowProgress") {
            let counts: Vec<String> = [
                "succeeded",
                "failed",
                "cached",
                "running",
                "pending",
                "submitted",
                "aborted",
            ]
            .iter()
            .filter_map(|key| {
                let n = progress.get(*key).and_then(Value::as_u64)?;
                (n > 0).then(|| format!("{n} {key}"))
            })
            .collect();
            field("tasks", counts.join(", "));
        }
        Ok(out)
    }

    async fn list_run_tasks(&self, args: &Args<'_>) -> Result<String, ToolFailure> {
        let (path, id, workspace) = Self::run_path(args, "/tasks")?;
        let max = args
            .optional_u64("max", 1, MAX_MAX)?
            .unwrap_or(DEFAULT_MAX * 5);
        let mut query = Self::workspace_query(workspace);
        query.push(("max", max.to_string()));
        let what = format!("run {id} in {}", where_(workspace));
        let answer = self.platform.get(&path, &query, &what).await?;
        let tasks = items(&answer, "tasks");
        let total = answer
            .get("total")
            .and_then(Value::as_u64)
            .unwrap_or(tasks.len() as u64);
        let mut out = format!("{} of run {id}", count(tasks.len(), "task", "tasks"));
        if total > tasks.len() as u64 {
            out.push_str(&format!(" (of {total})"));
        }
        for entry in tasks {
            let task = entry.get("task").unwrap_or(&Value::Null);
            let exit = text(task, "exit");
            out.push_str(&format!(
                "\n{}  {}{}  {}  {}  {}",
                text(task, "taskId"),
                text(task, "status"),
                if exit.is_empty() {
                    String::new()
                } else {
                    format!(" exit {exit}")
                },
                text(task, "name"),
                text(task, "hash"),
                duration(task.get("duration").and_then(Value::as_u64))
            ));
            // The executor's own id for the task's job (a Batch job, a Slurm job id), as a
            // local run's trace shows it in `native_id`.
            let native = text(task, "nativeId");
            if !native.is_empty() {
                let executor = text(task, "executor");
                out.push_str(&format!("  job {}", cut(&native, 120)));
                if !executor.is_empty() {
                    out.push_str(&format!(" ({executor})"));
                }
            }
        }
        Ok(out)
    }

    async fn get_run_log(&self, args: &Args<'_>) -> Result<String, ToolFailure> {
        let (path, id, workspace) = Self::run_path(args, "/log")?;
        let tail = args
            .optional_u64("tail", 1, MAX_TAIL)?
            .unwrap_or(DEFAULT_TAIL);
        let what = format!("run {id} in {}", where_(workspace));
        let answer = self
            .platform
            .get(&path, &Self::workspace_query(workspace), &what)
            .await?;
        let log = answer.get("log").unwrap_or(&Value::Null);
        let lines: Vec<&str> = items(log, "entries")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let shown = &lines[lines.len().saturating_sub(tail as usize)..];
        let mut out = if shown.len() < lines.len() {
            format!(
                "log of run {id}: the last {} of {} lines",
                shown.len(),
                lines.len()
            )
        } else {
            format!("log of run {id}: {}", count(lines.len(), "line", "lines"))
        };
        if log.get("truncated").and_then(Value::as_bool) == Some(true) {
            out.push_str(" (Platform truncated it)");
        }
        if log.get("pending").and_then(Value::as_bool) == Some(true) {
            out.push_str(" (more is pending: the run is still writing)");
        }
        for line in shown {
            out.push('\n');
            out.push_str(&cut(line, 2000));
        }
        // The whole log read as a local run's console is (`analyze_run_log`): the failed task,
        // its exit, its stderr's tail and the likely cause, in the same words.
        let report = codaris_nextflow::runlog::read_console(&lines.join("\n"));
        if report.error.is_some() {
            out.push_str("\n\nanalysis (as analyze_run_log reads a console):\n");
            out.push_str(codaris_nextflow::runlog::render_analysis(None, Some(&report)).trim_end());
        }
        Ok(out)
    }
}

#[cfg(test)]
#[path = "platform_tests.rs"]
mod tests;
