//! The `background_*` tools: list, read, wait for, stop and reap the session's tasks.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::args::{count, required_string};
use super::pool::TaskPool;
use super::pools::ShellPools;
use super::run::{RESULT_STREAM_BYTES, status_line};
use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

/// `background_wait` waits this long when not told, and never longer than the maximum.
pub const WAIT_DEFAULT_SECONDS: u64 = 30;
pub const WAIT_MAX_SECONDS: u64 = codaris_catalogue::limits::WAIT_MAX_SECONDS;

fn pool(
    pools: &ShellPools,
    ctx: &ToolContext,
    tool: &'static str,
) -> Result<Arc<TaskPool>, ToolError> {
    pools
        .pool(&ctx.session_id)
        .map_err(|error| error.into_tool_error(tool))
}

fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs())
}

macro_rules! pool_tool {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            pools: Arc<ShellPools>,
        }

        impl $name {
            pub fn new(pools: Arc<ShellPools>) -> Self {
                Self { pools }
            }
        }
    };
}

pool_tool!(
    /// `background_list`: every task of the session with status, elapsed time and estimate.
    BackgroundList
);
pool_tool!(
    /// `background_output`: a task's captured stdout and stderr.
    BackgroundOutput
);
pool_tool!(
    /// `background_wait`: wait, bounded, for a task to finish.
    BackgroundWait
);
pool_tool!(
    /// `background_stop`: terminate a task and its whole process group.
    BackgroundStop
);
pool_tool!(
    /// `background_reap`: kill what ended tasks of the session left running.
    BackgroundReap
);

#[async_trait::async_trait]
impl Tool for BackgroundList {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::BACKGROUND_LIST
    }

    async fn call(&self, ctx: &ToolContext, _args: &Value) -> Result<ToolOutput, ToolError> {
        let tasks = pool(&self.pools, ctx, self.name())?.list();
        if tasks.is_empty() {
            return Ok(ToolOutput::text("no background tasks in this session"));
        }
        let mut out = String::new();
        for task in tasks {
            let estimate = task
                .estimate
                .map(|e| format!(" (estimate {})", seconds(e)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{}  {}  {}{estimate}  {}",
                task.task_id,
                task.status,
                seconds(task.elapsed),
                task.command
            );
        }
        Ok(ToolOutput::text(out))
    }
}

#[async_trait::async_trait]
impl Tool for BackgroundOutput {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::BACKGROUND_OUTPUT
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let task_id = required_string(args, "task_id")?;
        let tail_lines =
            count(args, "tail_lines")?.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let task = pool(&self.pools, ctx, self.name())?
            .get(task_id)
            .map_err(|error| error.into_tool_error(self.name()))?;
        let status = task.status();
        let output = task.output(RESULT_STREAM_BYTES, tail_lines).render();
        Ok(ToolOutput::text(format!(
            "task `{task_id}`: {status} after {}\n{output}",
            seconds(task.elapsed())
        )))
    }
}

#[async_trait::async_trait]
impl Tool for BackgroundWait {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::BACKGROUND_WAIT
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let task_id = required_string(args, "task_id")?;
        let limit = count(args, "timeout_seconds")?
            .unwrap_or(WAIT_DEFAULT_SECONDS)
            .clamp(1, WAIT_MAX_SECONDS);
        let task = pool(&self.pools, ctx, self.name())?
            .get(task_id)
            .map_err(|error| error.into_tool_error(self.name()))?;
        let status = task.wait(Duration::from_secs(limit)).await;
        if status.is_running() {
            return Ok(ToolOutput::text(format!(
                "task `{task_id}` still running after waiting {limit}s ({} in all)",
                seconds(task.elapsed())
            )));
        }
        let output = task.output(RESULT_STREAM_BYTES, None).render();
        Ok(ToolOutput::text(format!(
            "task `{task_id}` finished after {}, {}\n{output}",
            seconds(task.elapsed()),
            status_line(status)
        )))
    }
}

#[async_trait::async_trait]
impl Tool for BackgroundStop {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::BACKGROUND_STOP
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let task_id = required_string(args, "task_id")?;
        let status = pool(&self.pools, ctx, self.name())?
            .stop(task_id)
            .await
            .map_err(|error| error.into_tool_error(self.name()))?;
        Ok(ToolOutput::text(format!("task `{task_id}`: {status}")))
    }
}

#[async_trait::async_trait]
impl Tool for BackgroundReap {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::BACKGROUND_REAP
    }

    async fn call(&self, ctx: &ToolContext, _args: &Value) -> Result<ToolOutput, ToolError> {
        let reaped = pool(&self.pools, ctx, self.name())?
            .reap()
            .map_err(|error| error.into_tool_error(self.name()))?;
        if reaped.is_empty() {
            return Ok(ToolOutput::text("nothing to reap"));
        }
        let mut out = format!("killed {} process group(s):\n", reaped.len());
        for group in reaped {
            let _ = writeln!(
                out,
                "{}  group {}  {}",
                group.task_id, group.pgid, group.command
            );
        }
        Ok(ToolOutput::text(out))
    }
}
