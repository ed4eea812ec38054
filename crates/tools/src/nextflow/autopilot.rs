//! `autopilot_pipeline`: one attempt per call at getting a pipeline to run, the model
//! repairing between calls. An attempt runs in the foreground (resuming after the first, so
//! the tasks that passed are cached), reports each task as its trace row lands, and answers
//! the success summary or the failing task's diagnosis with the files to change. Attempts are
//! counted per pipeline in the session; past `max_attempts` it stops with every attempt's
//! report.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use codaris_nextflow::runlog;
use codaris_nextflow::runs::{RunQuery, Trace, format_duration};
use serde_json::Value;

use super::launch::{LaunchShared, card_preview, gate_lines, pool_of, prepare, start, where_lines};
use crate::context::{Fence, ToolContext};
use crate::files::fence::open::{self, Fenced};
use crate::preview::CallPreview;
use crate::progress::Progress;
use crate::shell::TaskStatus;
use crate::tool::{Tool, ToolError, ToolOutput};

/// Attempts allowed when the call does not say.
pub const DEFAULT_MAX_ATTEMPTS: u64 = 3;
/// The most a call may allow (the schema's maximum).
const MAX_MAX_ATTEMPTS: u64 = 10;
/// How long an attempt is waited for before it is handed to the background.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2 * 60 * 60);
/// How often the trace is read for progress.
const POLL: Duration = Duration::from_millis(500);

/// One attempt, as the final report lists it.
#[derive(Debug, Clone)]
struct Attempt {
    number: usize,
    run_name: String,
    /// `succeeded`, `failed (exit 1): …`, `still running …`.
    outcome: String,
}

#[derive(Debug)]
pub(super) struct AutopilotPipeline {
    pub shared: Arc<LaunchShared>,
    /// By session and pipeline (real path).
    attempts: Mutex<HashMap<(String, PathBuf), Vec<Attempt>>>,
}

impl AutopilotPipeline {
    pub fn new(shared: Arc<LaunchShared>) -> Self {
        Self {
            shared,
            attempts: Mutex::new(HashMap::new()),
        }
    }

    fn attempts(&self) -> std::sync::MutexGuard<'_, HashMap<(String, PathBuf), Vec<Attempt>>> {
        self.attempts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn max_attempts(tool: &'static str, args: &Value) -> Result<u64, ToolError> {
    match args.get("max_attempts") {
        None | Some(Value::Null) => Ok(DEFAULT_MAX_ATTEMPTS),
        Some(value) => value
            .as_u64()
            .filter(|n| (1..=MAX_MAX_ATTEMPTS).contains(n))
            .ok_or_else(|| {
                ToolError::model(format!(
                    "{tool}: `max_attempts` must be a whole number from 1 to {MAX_MAX_ATTEMPTS}"
                ))
            }),
    }
}

impl AutopilotPipeline {
    /// Whether another attempt may be made: the arguments are this tool's and the session has
    /// attempts left on the pipeline. The pipeline's real path, the attempts so far, and the
    /// maximum.
    fn allowed_attempt(
        &self,
        ctx: &ToolContext,
        args: &Value,
    ) -> Result<(PathBuf, Vec<Attempt>, u64), ToolError> {
        let tool = self.name();
        // An attempt runs in the pipeline's directory with its defaults: the launch tool's
        // other arguments are not this one's (nor checked by the policy as its paths).
        if let Some(other) = ["params_file", "outdir", "launch_dir", "resume"]
            .into_iter()
            .find(|name| args.get(name).is_some_and(|v| !v.is_null()))
        {
            return Err(ToolError::model(format!(
                "{tool}: `{other}` is not an argument of {tool} (it takes path, profile, params, max_attempts); use run_built_pipeline for it"
            )));
        }
        let max = max_attempts(tool, args)?;
        // Located first so the count is kept under the pipeline's real path.
        let pipeline = super::args::pipeline_dir(ctx, tool, args)?;
        let key = (ctx.session_id.clone(), pipeline.clone());
        let before = self.attempts().get(&key).cloned().unwrap_or_default();
        if before.len() as u64 >= max {
            return Err(ToolError::model(format!(
                "{tool}: stopped: {} attempts made on `{}` in this session (max_attempts {max}), none succeeded. The attempts:\n{}\nRepair it by hand, or raise max_attempts if another attempt is worth it.",
                before.len(),
                pipeline.display(),
                report(&before)
            )));
        }
        Ok((pipeline, before, max))
    }
}

#[async_trait::async_trait]
impl Tool for AutopilotPipeline {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::AUTOPILOT_PIPELINE
    }

    fn card_check(
        &self,
        ctx: &ToolContext,
        args: &Value,
    ) -> Option<Result<CallPreview, ToolError>> {
        let tool = self.name();
        Some(self.allowed_attempt(ctx, args).and_then(|(_, before, _)| {
            card_preview(&self.shared, ctx, tool, args, !before.is_empty())
        }))
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let (pipeline, before, max) = self.allowed_attempt(ctx, args)?;
        let key = (ctx.session_id.clone(), pipeline.clone());
        let number = before.len() + 1;
        let prepared = prepare(&self.shared, ctx, tool, args, !before.is_empty())?;
        let plan = prepared.plan.clone();
        let pool = pool_of(&self.shared, ctx, tool)?;
        let run = self
            .shared
            .launches
            .start_exclusive(tool, &plan, &ctx.session_id, || {
                start(&pool, ctx, tool, &prepared, false)
            })?;
        let progress = crate::progress::current();
        progress.report(&format!(
            "attempt {number} of {max}: run `{}`{}",
            plan.run_name,
            if plan.resume { " (-resume)" } else { "" }
        ));
        let deadline = Instant::now() + ATTEMPT_TIMEOUT;
        let mut cursor = TraceCursor::default();
        let status = loop {
            let status = run.started.task.wait(POLL).await;
            cursor = report_rows(&ctx.fence, &plan.trace, cursor, &progress).await;
            if !status.is_running() {
                break status;
            }
            if Instant::now() >= deadline {
                break status;
            }
        };
        let head = format!("attempt {number} of {max} on `{}`", plan.pipeline.display());
        if status.is_running() {
            pool.hand_over(&run.started, true);
            let outcome = format!(
                "still running after {} (handed to the background as {})",
                format_duration(u64::try_from(ATTEMPT_TIMEOUT.as_millis()).unwrap_or(u64::MAX)),
                run.started.task_id
            );
            self.record(&key, number, &plan.run_name, outcome.clone());
            return Ok(ToolOutput::text(format!(
                "{head}: run `{}` {outcome}; follow it with check_run_status and call {tool} again once it ends\n{}",
                plan.run_name,
                where_lines(&plan, &prepared.work_dir)
            )));
        }
        pool.retire(&run.started);
        let elapsed = format_duration(
            u64::try_from(run.started.task.elapsed().as_millis()).unwrap_or(u64::MAX),
        );
        let (launch, name, pipeline_dir, fence) = (
            plan.launch_dir.clone(),
            plan.run_name.clone(),
            plan.pipeline.clone(),
            ctx.fence.clone(),
        );
        if status == TaskStatus::Exited(0) {
            self.attempts().remove(&key);
            let summary = blocking(tool, move || {
                RunQuery::new(&launch)
                    .run(Some(&name))
                    .files(Fenced::shared(&fence))
                    .status()
                    .map(|status| status.render())
                    .map_err(|err| err.to_string())
            })
            .await
            .unwrap_or_else(|why| format!("(its status could not be read: {why})"));
            return Ok(ToolOutput::text(format!(
                "{head}: run `{}` succeeded in {elapsed}{}\n{summary}",
                plan.run_name,
                gate_lines(&prepared.gates)
            )));
        }
        let console = self
            .shared
            .launches
            .console(&plan.launch_dir, Some(&plan.run_name))
            .map(|(_, text)| text);
        let diagnosis = blocking(tool, move || {
            Ok(diagnose(&fence, &launch, &pipeline_dir, console))
        })
        .await
        .map_or_else(|why| (why.clone(), why), split_cause);
        let (cause, diagnosis) = diagnosis;
        let outcome = format!("failed ({status}) after {elapsed}: {cause}");
        self.record(&key, number, &plan.run_name, outcome.clone());
        let next = if number as u64 >= max {
            format!(
                "That was the last attempt (max_attempts {max}); a further call reports every attempt and stops."
            )
        } else {
            format!(
                "Repair the files named above, then call {tool} again: attempt {} resumes (-resume) with the tasks that passed cached ({} left).",
                number + 1,
                max - number as u64
            )
        };
        Ok(ToolOutput::text(format!(
            "{head}: run `{}` {outcome}\n{}\n\n{diagnosis}\n\n{next}",
            plan.run_name,
            where_lines(&plan, &prepared.work_dir),
        )))
    }
}

impl AutopilotPipeline {
    fn record(&self, key: &(String, PathBuf), number: usize, run_name: &str, outcome: String) {
        self.attempts()
            .entry(key.clone())
            .or_default()
            .push(Attempt {
                number,
                run_name: run_name.to_owned(),
                outcome,
            });
    }
}

/// One line per attempt.
fn report(attempts: &[Attempt]) -> String {
    attempts
        .iter()
        .map(|a| format!("  {}. run `{}`: {}", a.number, a.run_name, a.outcome))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The diagnosis's text after its first line, which [`diagnose`] gives as the one-line cause.
fn split_cause(text: String) -> (String, String) {
    match text.split_once('\n') {
        Some((cause, rest)) => (cause.to_owned(), rest.to_owned()),
        None => (text.clone(), text),
    }
}

/// A one-line cause, a newline, then the failing task's work directory (as `debug_last_run`
/// opens it), else what the log says (a configuration or script error before any task ran).
fn diagnose(fence: &Fence, launch: &Path, pipeline: &Path, console: Option<String>) -> String {
    let query = RunQuery::new(launch).files(Fenced::shared(fence));
    match query.failing_task(pipeline) {
        Ok(task) => {
            let name = task.task.name.as_deref().unwrap_or("a task");
            let exit = task
                .task_dir
                .as_ref()
                .and_then(|dir| dir.exit_code())
                .or(task.task.exit)
                .map_or_else(
                    || "no exit status".to_owned(),
                    |code| format!("exit {code}"),
                );
            format!("task `{name}` failed with {exit}\n{}", task.render())
        }
        Err(task_err) => {
            let console = console.map(|text| runlog::read_console(&text));
            let analysis = match super::runs::read_log(fence, &launch.join(".nextflow.log")) {
                Ok(log) => runlog::render_analysis(Some(&log), console.as_ref()),
                Err(_) if console.is_some() => runlog::render_analysis(None, console.as_ref()),
                Err(why) => return format!("no failing task and no log\n{task_err}; {why}"),
            };
            format!("the run failed before a task did ({task_err})\n{analysis}")
        }
    }
}

/// How far the trace has been read: its header, and the offset past the last whole row.
#[derive(Debug, Clone, Default)]
struct TraceCursor {
    header: Option<String>,
    offset: u64,
}

/// Reports the rows the trace gained since `cursor` (each a task that finished or was
/// cached), reading only the new bytes, so a long run's trace is not read again every poll.
async fn report_rows(
    fence: &Fence,
    trace: &Path,
    cursor: TraceCursor,
    progress: &Progress,
) -> TraceCursor {
    let (fence, trace, progress) = (fence.clone(), trace.to_path_buf(), progress.clone());
    let kept = cursor.clone();
    tokio::task::spawn_blocking(move || read_new_rows(&fence, &trace, cursor, &progress))
        .await
        .unwrap_or(kept)
}

fn read_new_rows(
    fence: &Fence,
    trace: &Path,
    mut cursor: TraceCursor,
    progress: &Progress,
) -> TraceCursor {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let Ok(mut file) = open::open(fence, trace) else {
        return cursor;
    };
    let mut fresh = Vec::new();
    if file.seek(SeekFrom::Start(cursor.offset)).is_err() || file.read_to_end(&mut fresh).is_err() {
        return cursor;
    }
    // Only whole lines: the row being written is read at the next poll.
    let Some(end) = fresh.iter().rposition(|&b| b == b'\n') else {
        return cursor;
    };
    let whole = fresh.get(..=end).unwrap_or_default();
    cursor.offset += whole.len() as u64;
    let mut text = String::from_utf8_lossy(whole).into_owned();
    let header = match cursor.header.clone() {
        Some(header) => header,
        None => {
            let (header, rest) = text.split_once('\n').unwrap_or((text.as_str(), ""));
            let (header, rest) = (header.to_owned(), rest.to_owned());
            cursor.header = Some(header.clone());
            text = rest;
            header
        }
    };
    let rows_text = format!("{header}\n{text}");
    let Ok(rows) = Trace::read(BufReader::new(rows_text.as_bytes())) else {
        return cursor;
    };
    for row in rows.map_while(Result::ok) {
        let status = row.status.as_ref().map_or("-", |s| s.as_str());
        let name = row.name.as_deref().unwrap_or("a task");
        let exit = match row.exit {
            Some(code) if code != 0 => format!(" (exit {code})"),
            _ => String::new(),
        };
        progress.report(&format!("{status} {name}{exit}"));
    }
    cursor
}

/// Runs `work` off the async threads.
async fn blocking(
    tool: &'static str,
    work: impl FnOnce() -> Result<String, String> + Send + 'static,
) -> Result<String, String> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|join| Err(format!("{tool}: {join}")))
}
