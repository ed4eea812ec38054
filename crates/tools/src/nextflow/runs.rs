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
use crate::files::fence::{Beneath, opt_str};
use crate::tool::{Tool, ToolError, ToolOutput};

/// Log files Nextflow keeps: the last run's, and up to nine older ones it rotated.
const ROTATED_LOGS: usize = 9;
/// How much of the log's end `check_run_status` reads for the task submitted last.
const LOG_TAIL_BYTES: u64 = 256 * 1024;
/// The most of a log file `analyze_run_log` reads, from its end: 1 GiB, past any real run's
/// log, so a file that never ends (or a huge one) costs bounded time.
const MAX_LOG_BYTES: u64 = 1024 * 1024 * 1024;
/// The reading buffer: large reads, a fixed amount of memory.
const READ_BUFFER: usize = 64 * 1024;

pub(super) fn tools(launch: &Arc<LaunchShared>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(CheckRunStatus(launch.clone())),
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

/// The status of a run from what it left on disk; a run Codaris launched in the directory
/// that Nextflow has not recorded yet is reported as starting (or as ended before it was
/// recorded), never passed over for the run before it.
#[derive(Debug)]
struct CheckRunStatus(Arc<LaunchShared>);

#[async_trait::async_trait]
impl Tool for CheckRunStatus {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::CHECK_RUN_STATUS
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let launch = pipeline_dir(ctx, tool, args)?;
        let run = optional_string(tool, args, "run")?.map(str::to_owned);
        // The run Codaris launched here last, when it is the one asked about.
        let launched = self
            .0
            .launches
            .newest(&launch)
            .filter(|l| run.as_deref().is_none_or(|r| r == l.run_name));
        let fence = ctx.fence.clone();
        reading(tool, move || {
            if let Some(launched) = launched {
                let recorded = runs::RunQuery::new(&launch)
                    .run(Some(&launched.run_name))
                    .files(Fenced::shared(&fence))
                    .is_recorded()
                    .map_err(|err| err.to_string())?;
                if !recorded {
                    let previous = runs::RunQuery::new(&launch)
                        .files(Fenced::shared(&fence))
                        .status()
                        .ok();
                    return Ok(not_recorded(&launched, previous.as_ref()));
                }
            }
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
            let mut status = query.status().map_err(|err| err.to_string())?;
            // A queued or running job's state is the scheduler's to say, where its client is.
            status.scheduler = super::scheduler::scheduler_states(
                &status.listed_job_ids(),
                std::env::var_os("PATH").as_deref(),
            );
            Ok(status.render())
        })
        .await
    }
}

/// The answer for a run Codaris launched that `.nextflow/history` has no row for yet: starting
/// while its process runs, else ended before Nextflow recorded it (a bad option, a config that
/// does not parse). Its first line is `run:` as every status's is.
fn not_recorded(launched: &super::launch::Launched, previous: Option<&runs::RunStatus>) -> String {
    use std::fmt::Write as _;
    let elapsed =
        runs::format_duration(u64::try_from(launched.elapsed.as_millis()).unwrap_or(u64::MAX));
    let tool = launched.tool;
    let mut out = format!("run: {}\n", launched.run_name);
    if launched.status.is_running() {
        out.push_str("state: starting\nstatus: none yet (Nextflow has not recorded the run)\n");
        let _ = writeln!(
            out,
            "note: launched by {tool} {elapsed} ago; Nextflow writes the run to .nextflow/history once it has started, so ask again in a few seconds"
        );
    } else {
        let _ = writeln!(
            out,
            "state: ended before Nextflow recorded it\nstatus: {}",
            launched.status
        );
        let _ = writeln!(
            out,
            "note: launched by {tool} {elapsed} ago and never reached .nextflow/history; analyze_run_log reads the console Codaris kept of it"
        );
    }
    if let Some(previous) = previous {
        let status = match &previous.status {
            runs::HistoryStatus::Ok => "OK",
            runs::HistoryStatus::Err => "ERR",
            runs::HistoryStatus::Running => "running",
            runs::HistoryStatus::Other(s) => s.as_str(),
        };
        let _ = writeln!(
            out,
            "note: the last run recorded here, `{}` ({status}), is an earlier one; ask for it by name with `run`",
            previous.run
        );
    }
    out
}

/// Reads what a run left: a launch directory's log (and the console of the run when Codaris
/// launched it, both console styles: classic, and agent mode's `[ERROR]` block), a log or
/// console file of any name, or pasted `text`. Every form is read as a log and as a console at
/// once, so a console saved as `.nextflow.log` or pasted names its error too.
#[derive(Debug)]
struct AnalyzeRunLog(Arc<LaunchShared>);

#[async_trait::async_trait]
impl Tool for AnalyzeRunLog {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::ANALYZE_RUN_LOG
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let run = optional_string(tool, args, "run")?.map(str::to_owned);
        if let Some(text) = opt_str(tool, args, "text")? {
            return pasted(tool, args, run.is_some(), text).await;
        }
        let path = optional_string(tool, args, "path")?.unwrap_or(".");
        let at = Beneath::locate(ctx, tool, path)?.real().ok_or_else(|| {
            ToolError::model(format!(
                "{tool}: `{path}` leads outside its allowed root or through a symlink loop"
            ))
        })?;
        let fence = ctx.fence.clone();
        if !at.is_dir() {
            // A log or console file of any name (`nextflow.log`, `log.txt`, `console.txt`),
            // opened beneath the fence like the log of a directory: no FIFO, device, link out
            // of the root or into Codaris's state.
            if run.is_some() {
                return Err(ToolError::model(format!(
                    "{tool}: `run` picks a run's log in a launch directory, and `{path}` is a file; give the directory, or the file alone"
                )));
            }
            return reading(tool, move || {
                let (log, read) = read_log_part(&fence, &at)?;
                let console = log.console.as_ref();
                Ok(format!(
                    "log: `{}`{}\n{}",
                    at.display(),
                    read.note(),
                    runlog::render_analysis(Some(&log), console)
                ))
            })
            .await;
        }
        let launch = at;
        let console = self.0.launches.console(&launch, run.as_deref());
        reading(tool, move || {
            let (path, (log, read)) = match run.as_deref() {
                None => {
                    let path = launch.join(".nextflow.log");
                    let log = read_log_part(&fence, &path)?;
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
            // Codaris's own capture of the console first; else the console the log file
            // holds (a console saved as `.nextflow.log`).
            let shown = console
                .as_ref()
                .map(|(_, report)| report)
                .or(log.console.as_ref());
            let mut answer = format!(
                "log: `{}`{console_line}{}\n{}",
                path.display(),
                read.note(),
                runlog::render_analysis(Some(&log), shown)
            );
            answer.push_str(&version_lines(&fence, &launch, &log, shown));
            answer.push_str(&native_id_line(&fence, &path, &log));
            Ok(answer)
        })
        .await
    }
}

/// For a script that did not compile: the pipeline's `manifest.nextflowVersion` (from the
/// launch directory's `nextflow.config`, read through the fence) against the Nextflow that
/// ran, in a sentence. Nothing when the error is another, or either version is unknown.
fn version_lines(
    fence: &Fence,
    launch: &Path,
    log: &LogReport,
    console: Option<&runlog::ConsoleReport>,
) -> String {
    use std::io::Read as _;
    let compile_error = log
        .error
        .as_ref()
        .and_then(runlog::diagnose)
        .is_some_and(|d| d.cause == runlog::LikelyCause::CompileError);
    let running = log
        .version
        .as_deref()
        .or(console.and_then(|c| c.version.as_deref()));
    let (true, Some(running)) = (compile_error, running) else {
        return String::new();
    };
    let config = launch.join("nextflow.config");
    let Ok(file) = open::open(fence, &config) else {
        return String::new();
    };
    let mut text = String::new();
    // A config is small; a larger file is not one to read here.
    if file
        .take(MAX_CONFIG_BYTES)
        .read_to_string(&mut text)
        .is_err()
    {
        return String::new();
    }
    let parsed = codaris_nextflow::parse::parse_config("nextflow.config", &text);
    let Some(codaris_nextflow::parse::Value::Str(requirement)) =
        parsed.get("manifest.nextflowVersion").map(|s| &s.value)
    else {
        return String::new();
    };
    runlog::render_requirement(requirement, running)
}

/// The most of a launch directory's `nextflow.config` read for its manifest.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// `analyze_run_log` on pasted `text`: its last [`runlog::MAX_PASTED_BYTES`] read as a log and
/// a console. No path is derived from it; `path` and `run` cannot go with it.
async fn pasted(
    tool: &'static str,
    args: &Value,
    with_run: bool,
    text: &str,
) -> Result<ToolOutput, ToolError> {
    if args.get("path").is_some_and(|p| !p.is_null()) || with_run {
        return Err(ToolError::model(format!(
            "{tool}: `text` is read on its own; give `text`, or `path` (and `run`), not both"
        )));
    }
    if text.trim().is_empty() {
        return Err(ToolError::model(format!(
            "{tool}: `text` must not be empty"
        )));
    }
    let total = text.len();
    let (kept, cut) = runlog::pasted_tail(text);
    let kept = kept.to_owned();
    reading(tool, move || {
        let log = runlog::read_log(kept.as_bytes()).map_err(|err| err.to_string())?;
        let first = if cut > 0 {
            format!(
                "text: pasted, {total} bytes; the first {cut} were cut, the last {} read (at most {} are, from the end, where the error is)",
                kept.len(),
                runlog::MAX_PASTED_BYTES
            )
        } else {
            format!("text: pasted, {total} bytes")
        };
        Ok(format!(
            "{first}\n{}",
            runlog::render_analysis(Some(&log), log.console.as_ref())
        ))
    })
    .await
}

/// How much of a log file was read: all of it, or its last [`MAX_LOG_BYTES`].
#[derive(Debug, Clone, Copy)]
struct ReadSpan {
    len: u64,
    skipped: u64,
}

impl ReadSpan {
    /// The answer's words for a log read in part; nothing for a whole one.
    fn note(self) -> String {
        if self.skipped == 0 {
            return String::new();
        }
        format!(
            "\nlog_read: the last {} of its {} bytes (the first {} skipped)",
            self.len - self.skipped,
            self.len,
            self.skipped
        )
    }
}

/// The failed task's job id on its executor (a Slurm job id), from the log's submission line
/// for its work directory: the id to ask the scheduler about. Empty when the log has none.
fn native_id_line(fence: &Fence, path: &Path, log: &LogReport) -> String {
    let Some(hash) = log
        .error
        .as_ref()
        .and_then(|e| e.work_dir.as_deref())
        .and_then(runs::short_hash)
    else {
        return String::new();
    };
    let Ok(tail) = log_tail(fence, path) else {
        return String::new();
    };
    runs::job_ids(&tail)
        .get(&hash)
        .map_or_else(String::new, |id| {
            format!("native_id: {id} (the executor's job id of the failed task, from the log)\n")
        })
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
/// is); past [`MAX_LOG_BYTES`] only its end is read, where the run's error is.
pub(super) fn read_log(fence: &Fence, path: &Path) -> Result<LogReport, String> {
    read_log_part(fence, path).map(|(log, _)| log)
}

/// [`read_log`], with how much of the file was read.
fn read_log_part(fence: &Fence, path: &Path) -> Result<(LogReport, ReadSpan), String> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut file = open::open(fence, path).map_err(|err| match err {
        OpenError::NotFound { .. } => format!(
            "no Nextflow log at `{}`; give the directory the run was launched from, the log file, or the text itself as `text`",
            path.display()
        ),
        refused => refused.to_string(),
    })?;
    let io = |err: std::io::Error| format!("cannot read `{}`: {err}", path.display());
    let len = file.metadata().map_err(io)?.len();
    let skipped = len.saturating_sub(MAX_LOG_BYTES);
    if skipped > 0 {
        file.seek(SeekFrom::Start(skipped)).map_err(io)?;
    }
    // `take` bounds the reading even for a file that grows while it is read.
    let reader = BufReader::with_capacity(READ_BUFFER, file.take(MAX_LOG_BYTES));
    let log = runlog::read_log(reader).map_err(|err| err.to_string())?;
    Ok((log, ReadSpan { len, skipped }))
}

/// The log (the last or a rotated one) of the run named `run`: the one whose launch line
/// names it (`Launching `main.nf` [run] …`). A rotated log that leads out of the root or into
/// Codaris's state is refused, not passed over.
fn log_of_run(
    fence: &Fence,
    launch: &Path,
    run: &str,
) -> Result<(PathBuf, (LogReport, ReadSpan)), String> {
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
            let log = read_log_part(fence, &path)?;
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
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::DEBUG_LAST_RUN
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
