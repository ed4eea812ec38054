//! `run_built_pipeline`: a Nextflow run in the background of the session, answered at once
//! with its name and files; the session is told when it ends (the task pool's notice).

use std::sync::Arc;

use serde_json::Value;

use super::launch::{LaunchShared, card_preview, gate_lines, pool_of, prepare, start, where_lines};
use crate::context::ToolContext;
use crate::preview::CallPreview;
use crate::tool::{Tool, ToolError, ToolOutput};

#[derive(Debug)]
pub(super) struct RunBuiltPipeline(pub Arc<LaunchShared>);

#[async_trait::async_trait]
impl Tool for RunBuiltPipeline {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::RUN_BUILT_PIPELINE
    }

    fn card_check(
        &self,
        ctx: &ToolContext,
        args: &Value,
    ) -> Option<Result<CallPreview, ToolError>> {
        Some(card_preview(&self.0, ctx, self.name(), args, false))
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let shared = &self.0;
        let prepared = prepare(shared, ctx, tool, args, false)?;
        let pool = pool_of(shared, ctx, tool)?;
        let plan = &prepared.plan;
        let run = shared
            .launches
            .start_exclusive(tool, plan, &ctx.session_id, || {
                start(&pool, ctx, tool, &prepared, true)
            })?;
        let follow = serde_json::json!({
            "path": plan.launch_dir.display().to_string(),
            "run": plan.run_name,
        });
        Ok(ToolOutput::text(format!(
            "launched run `{}` of `{}` in the background (task {})\n{}{}\nfollow it: check_run_status {follow}; its console: background_output {{\"task_id\": \"{}\"}}; you will be told when it ends, then analyze_run_log explains a failure",
            plan.run_name,
            plan.pipeline.display(),
            run.started.task_id,
            where_lines(plan, &prepared.work_dir),
            gate_lines(&prepared.gates),
            run.started.task_id,
        )))
    }
}
