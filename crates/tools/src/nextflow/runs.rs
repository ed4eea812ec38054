//! `check_run_status`, `analyze_run_log` and `debug_last_run`: what a Nextflow run left on disk,
//! read by `codaris-nextflow`'s parsers. They only read (the launch directory is located under
//! the fence like any path), so they run in the daemon, off the async threads.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use codaris_nextflow::runlog::{self, LogReport};
use codaris_nextflow::runs;
use serde_json::Value;

use super::args::{optional_string, pipeline_dir};
use super::launch::LaunchShared;
use crate::context::{Fence, ToolContext};
use crate::files::fence::open::{self, Fenced, OpenError};
use crate::tool::{Tool, ToolError, ToolOutput};

/// Log files Nextflow keeps: the last run's, and up to nine older ones it rotated.
const ROTATED_LOGS: usize = 9;
/// How much of the log's end `check_run_status` reads for the task submitted last.
const LOG_TAIL_BYTES: u64 = 256 * 1024;

pub(super) fn tools(launch: &Arc<LaunchShared>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(CheckRunStatus),
        Arc::new(AnalyzeRunLog(launch.clone())),
        Arc::new(DebugLastRun),
    ]
}

/// Runs `work` off the async threads; its error is the model's.
async fn reading(
    tool: &'static str,
    work: impl FnOnce() -> Result<String, String> + Send + 'static,
) -> Result<ToolOutput, ToolError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(text)) => Ok(ToolOutput::text(text)),
        Ok(Err(why)) => Err(ToolError::model(format!("{tool}: {why}"))),
        Err(join) => Err(ToolError::Fatal {
            tool,
            source: std::io::Error::other(join.to_string()),
        }),
    }
}

#[derive(Debug)]
struct CheckRunStatus;

#[async_trait::async_trait]
impl Tool for CheckRunStatus {
    fn name(&self) -> &'static str {
        codaris_catalogue::CHECK_RUN_STATUS.name
    }

    fn description(&self) -> &'static str {
        codaris_catalogue::CHECK_RUN_STATUS.description
    }

    fn schema(&self) -> Value {
        codaris_catalogue::CHECK_RUN_STATUS.schema()
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let launch = pipeline_dir(ctx, tool, args)?;
        let run = optional_string(tool, args, "run")?.map(str::to_owned);
        let fence = ctx.fence.clone();
        reading(tool, move || {
            let mut query = runs::RunQuery::new(&launch)
                .run(run.as_deref())
                .files(Fenced::shared(&fence));
            // The log names the task submitted last, which has no trace row while it runs.
            match log_tail(&fence, &launch.join(".nextflow.log")) {
                Ok(tail) => query = query.log_tail(&tail),
                // No log (or not a file): the status comes from the history and the trace.
                Err(OpenError::NotFound { .. } | OpenError::NotAFile { .. }) => {}
                Err(refused) => return Err(refused.to_string()),
            }
            query
                .status()
                .map(|status| status.render())
                .map_err(|err| err.to_string())
        })
        .await
    }
}

/// Reads the log, and the console of the run when Codaris launched it (both console styles:
/// classic, and agent mode's `[ERROR]` block).
#[derive(Debug)]
struct AnalyzeRunLog(Arc<LaunchShared>);

#[async_trait::async_trait]
impl Tool for AnalyzeRunLog {
    fn name(&self) -> &'static str {
        codaris_catalogue::ANALYZE_RUN_LOG.name
    }

    fn description(&self) -> &'static str {
        codaris_catalogue::ANALYZE_RUN_LOG.description
    }

    fn schema(&self) -> Value {
        codaris_catalogue::ANALYZE_RUN_LOG.schema()
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let launch = pipeline_dir(ctx, tool, args)?;
        let run = optional_string(tool, args, "run")?.map(str::to_owned);
        let console = self.0.launches.console(&launch, run.as_deref());
        let fence = ctx.fence.clone();
        reading(tool, move || {
            let (path, log) = match run.as_deref() {
                None => {
                    let path = launch.join(".nextflow.log");
                    let log = read_log(&fence, &path)?;
                    (path, log)
                }
                Some(run) => log_of_run(&fence, &launch, run)?,
            };
            let console = console.map(|(name, text)| (name, runlog::read_console(&text)));
            let console_line = console.as_ref().map_or(String::new(), |(name, report)| {
                format!(
                    "\nconsole: of run `{name}` as Codaris launched it ({})",
                    report.style.label()
                )
            });
            Ok(format!(
                "log: `{}`{console_line}\n{}",
                path.display(),
                runlog::render_analysis(Some(&log), console.as_ref().map(|(_, report)| report))
            ))
        })
        .await
    }
}

/// The end of the log at `path` (its last [`LOG_TAIL_BYTES`]), opened beneath the fence.
fn log_tail(fence: &Fence, path: &Path) -> Result<String, OpenError> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut file = open::open(fence, path)?;
    let io = |source| OpenError::Io {
        path: path.to_path_buf(),
        source,
    };
    let len = file.metadata().map_err(io)?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL_BYTES)))
        .map_err(io)?;
    let mut bytes = Vec::new();
    file.take(LOG_TAIL_BYTES)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The log at `path`, opened beneath the fence and streamed (bounded memory however long it
/// is).
pub(super) fn read_log(fence: &Fence, path: &Path) -> Result<LogReport, String> {
    let file = open::open(fence, path).map_err(|err| match err {
        OpenError::NotFound { .. } => format!(
            "no Nextflow log at `{}`; give the directory the run was launched from",
            path.display()
        ),
        refused => refused.to_string(),
    })?;
    runlog::read_log(BufReader::new(file)).map_err(|err| err.to_string())
}

/// The log (the last or a rotated one) of the run named `run`: the one whose launch line
/// names it (`Launching `main.nf` [run] …`). A rotated log that leads out of the root or into
/// Codaris's state is refused, not passed over.
fn log_of_run(fence: &Fence, launch: &Path, run: &str) -> Result<(PathBuf, LogReport), String> {
    let named = format!("[{run}]");
    let candidates = std::iter::once(launch.join(".nextflow.log"))
        .chain((1..=ROTATED_LOGS).map(|n| launch.join(format!(".nextflow.log.{n}"))));
    for path in candidates {
        let file = match open::open(fence, &path) {
            Ok(file) => file,
            Err(OpenError::NotFound { .. } | OpenError::NotAFile { .. }) => continue,
            Err(refused) => return Err(refused.to_string()),
        };
        if mentions(file, &named) {
            let log = read_log(fence, &path)?;
            return Ok((path, log));
        }
    }
    Err(format!(
        "no Nextflow log in `{}` is of the run `{run}`",
        launch.display()
    ))
}

/// Whether the first lines of the log `file` (where Nextflow writes the launch line) contain
/// `needle`.
fn mentions(file: std::fs::File, needle: &str) -> bool {
    use std::io::BufRead as _;
    BufReader::new(file)
        .split(b'\n')
        .take(200)
        .map_while(Result::ok)
        .any(|line| String::from_utf8_lossy(&line).contains(needle))
}

#[derive(Debug)]
struct DebugLastRun;

#[async_trait::async_trait]
impl Tool for DebugLastRun {
    fn name(&self) -> &'static str {
        codaris_catalogue::DEBUG_LAST_RUN.name
    }

    fn description(&self) -> &'static str {
        codaris_catalogue::DEBUG_LAST_RUN.description
    }

    fn schema(&self) -> Value {
        codaris_catalogue::DEBUG_LAST_RUN.schema()
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let launch = pipeline_dir(ctx, tool, args)?;
        let files = Fenced::shared(&ctx.fence);
        reading(tool, move || {
            runs::RunQuery::new(&launch)
                .files(files)
                .failing_task(&launch)
                .map(|task| task.render())
                .map_err(|err| err.to_string())
        })
        .await
    }
}
