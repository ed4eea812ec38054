//! `run_command`: a shell command in the fence, in the foreground or the background.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::args::{boolean, count, required_string, string};
use super::landlock::landlock_status;
use super::pool::Started;
use super::pools::ShellPools;
use super::task::TaskStatus;
use crate::context::{ToolContext, normalize};
use crate::tool::{Tool, ToolError, ToolOutput};

const NAME: &str = codaris_catalogue::RUN_COMMAND.name;
/// Foreground timeout when the model gives none, and the most it may ask for.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 120;
pub const MAX_TIMEOUT_SECONDS: u64 = codaris_catalogue::limits::COMMAND_MAX_TIMEOUT_SECONDS;
/// Bytes shown of each stream in a result (the end of it); `background_output` has the rest.
pub const RESULT_STREAM_BYTES: usize = 32 * 1024;

/// `run_command`: the host shell (`/bin/sh -c`) in a directory inside the fence.
#[derive(Debug, Clone)]
pub struct RunCommand {
    pools: Arc<ShellPools>,
}

impl RunCommand {
    pub fn new(pools: Arc<ShellPools>) -> Self {
        Self { pools }
    }
}

/// A directory argument (`name`, e.g. `cwd`) taken against the context's working directory,
/// inside the fence both as written and with symlinks resolved (a link out of the roots is
/// refused).
pub(crate) fn resolve_dir(
    ctx: &ToolContext,
    name: &str,
    value: Option<&str>,
) -> Result<PathBuf, ToolError> {
    let shown = value.unwrap_or(".");
    let outside = || ToolError::model(format!("`{name}` `{shown}` is outside the allowed roots"));
    let normal = normalize(&ctx.absolute(shown)).ok_or_else(outside)?;
    ctx.fence.locate(&normal).ok_or_else(outside)?;
    let resolved = std::fs::canonicalize(&normal)
        .map_err(|error| ToolError::model(format!("`{name}` `{shown}` cannot be used: {error}")))?;
    ctx.fence.locate(&resolved).ok_or_else(outside)?;
    if !resolved.is_dir() {
        return Err(ToolError::model(format!(
            "`{name}` `{shown}` is not a directory"
        )));
    }
    Ok(resolved)
}

/// The lines a result carries when the command was confined less than it could be, so the
/// model and the user know: reads and writes not confined (no Landlock), or processes it
/// leaves behind tracked by process group only (no cgroup).
fn sandbox_note(started: &Started, wanted: bool) -> String {
    let mut note = match (started.confined, wanted) {
        (true, _) => String::new(),
        (false, false) => "note: reads and writes are not confined (Landlock is off)\n".to_owned(),
        (false, true) => format!(
            "note: reads and writes are not confined ({})\n",
            landlock_status()
        ),
    };
    if !started.containment.tracks_every_descendant() {
        note.push_str(&format!(
            "note: processes it leaves behind are tracked by {}\n",
            started.containment
        ));
    }
    note
}

/// Kills a foreground command whose call was dropped (the turn cancelled) while waiting for
/// it: it is neither listed nor awaited, so nobody could read or stop it any more.
struct Abandon<'a> {
    started: &'a Started,
    armed: bool,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if self.armed && self.started.task.status().is_running() {
            self.started.task.kill_now();
        }
    }
}

/// How often a running command's last line is looked at, and so the most often it is sent:
/// a build printing thousands of lines a second sends two a second.
const OUTPUT_EVERY: Duration = Duration::from_millis(500);
/// The longest line sent; the status line shows less anyway.
const OUTPUT_LINE_CHARS: usize = 300;

/// Waits up to `limit` for the task to end, reporting the last line it printed whenever a new
/// one arrived since the last look. Progress goes to the person watching, never the model (the
/// result carries the output as always).
async fn wait_showing_output(
    task: &super::task::BackgroundTask,
    limit: Duration,
    progress: &crate::progress::Progress,
) -> TaskStatus {
    let deadline = tokio::time::Instant::now() + limit;
    let mut shown = 0;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let status = task.wait(left.min(OUTPUT_EVERY)).await;
        if !status.is_running() || left <= OUTPUT_EVERY {
            return status;
        }
        if let Some((seen, line)) = task.last_line()
            && seen != shown
        {
            shown = seen;
            let cut: String = line.chars().take(OUTPUT_LINE_CHARS).collect();
            progress.report(&cut);
        }
    }
}

/// `exit code: 0`, or how else it ended.
pub(crate) fn status_line(status: TaskStatus) -> String {
    match status {
        TaskStatus::Exited(code) => format!("exit code: {code}"),
        other => format!("status: {other}"),
    }
}

#[async_trait::async_trait]
impl Tool for RunCommand {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::RUN_COMMAND
    }

    fn preview(&self, ctx: &ToolContext, args: &Value) -> Option<crate::preview::CallPreview> {
        crate::preview::command_preview(ctx, args)
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let command = required_string(args, "command")?;
        let cwd = resolve_dir(ctx, "cwd", string(args, "cwd")?)?;
        let timeout = count(args, "timeout_seconds")?
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
            .clamp(1, MAX_TIMEOUT_SECONDS);
        let background = boolean(args, "background", false)?;
        let notify = boolean(args, "notify_on_finish", true)?;
        let estimate = count(args, "expected_seconds")?.map(Duration::from_secs);
        let pool = self
            .pools
            .pool(&ctx.session_id)
            .map_err(|error| error.into_tool_error(NAME))?;
        let background_on = pool.config().background;
        if background && !background_on {
            return Err(ToolError::model(format!(
                "{NAME}: background tasks are switched off here (tools.background = false); run the command in the foreground"
            )));
        }
        let started = pool
            .start(
                command,
                &cwd,
                ctx.fence.roots(),
                Some(&ctx.workspace),
                estimate,
                background,
                notify,
            )
            .map_err(|error| error.into_tool_error(NAME))?;
        let note = sandbox_note(&started, pool.config().landlock);
        let id = &started.task_id;
        if background {
            return Ok(ToolOutput::text(format!(
                "started background task `{id}`{}\n{note}",
                if notify {
                    "; you will be told when it finishes"
                } else {
                    ""
                }
            )));
        }
        let mut abandon = Abandon {
            started: &started,
            armed: true,
        };
        let status = wait_showing_output(
            &started.task,
            Duration::from_secs(timeout),
            &crate::progress::current(),
        )
        .await;
        if status.is_running() && !background_on {
            // Nothing could reach it afterwards: stop it here, as a dropped call would.
            started.task.kill_now();
            let _ = started.task.wait(Duration::from_secs(5)).await;
            let so_far = started.task.output(RESULT_STREAM_BYTES, None).render();
            pool.retire(&started);
            return Ok(ToolOutput::text(format!(
                "still running after {timeout}s, so it was stopped (background tasks are off here)\n{note}output so far:\n{so_far}"
            )));
        }
        abandon.armed = false;
        if status.is_running() && pool.hand_over(&started, notify) {
            let so_far = started.task.output(RESULT_STREAM_BYTES, None).render();
            return Ok(ToolOutput::text(format!(
                "still running after {timeout}s: handed to the background as task `{id}` (background_output, background_wait, background_stop)\n{note}output so far:\n{so_far}"
            )));
        }
        // Ended, possibly in the instant between the timeout and the hand-over.
        let status = started.task.wait(Duration::from_secs(5)).await;
        let captured = started.task.output(RESULT_STREAM_BYTES, None);
        // Which path the sandbox refused and the key that would open it, after the output.
        let refused = started
            .sandbox
            .as_ref()
            .map(|view| super::denied::explain(&captured.stderr, view))
            .unwrap_or_default();
        pool.retire(&started);
        Ok(ToolOutput::text(format!(
            "{}\n{note}{}{refused}",
            status_line(status),
            captured.render()
        )))
    }
}
