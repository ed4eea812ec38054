//! `keep_result`: marks a page already read, or a grep result, as worth keeping when older tool
//! results are evicted from the context.
//!
//! The tool holds no state. Eviction is the agent's, and like the surface binding it is a
//! function of the conversation history: the call itself (its `path`, `offset`, `limit`,
//! `pattern`), like a `keep: true` argument on `read_file` or `grep`, is the mark it reads. All
//! this tool does is check the mark names something real, so the model learns at once when it
//! does not.

use serde_json::Value;

use super::fence::{Beneath, opt_str, opt_usize};
use crate::context::ToolContext;
use crate::tool::{ToolError, ToolOutput};

const TOOL: &str = codaris_catalogue::KEEP_RESULT.name;

#[derive(Debug, Default, Clone, Copy)]
pub struct KeepResult;

#[async_trait::async_trait]
impl crate::tool::Tool for KeepResult {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::KEEP_RESULT
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        super::blocking(TOOL, ctx, args, keep).await
    }
}

fn keep(ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
    let path = opt_str(TOOL, args, "path")?;
    let pattern = opt_str(TOOL, args, "pattern")?;
    let offset = opt_usize(TOOL, args, "offset")?;
    let limit = opt_usize(TOOL, args, "limit")?;
    let shown = match path {
        Some(path) => {
            let at = Beneath::locate(ctx, TOOL, path)?;
            at.dir.metadata(&at.rel).map_err(|e| at.err(ctx, e))?;
            Some(at.shown(ctx))
        }
        None => None,
    };
    let what = match (shown, pattern) {
        (None, None) => {
            return Err(ToolError::model(format!(
                "{TOOL}: give the `path` of a page read or the `pattern` of a grep result"
            )));
        }
        (Some(path), None) => {
            let first = offset.unwrap_or(1);
            match limit {
                Some(limit) => {
                    format!("`{path}` lines {first}-{}", first + limit.saturating_sub(1))
                }
                None if offset.is_some() => format!("`{path}` from line {first}"),
                None => format!("`{path}`"),
            }
        }
        (Some(path), Some(pattern)) => format!("grep `{pattern}` in `{path}`"),
        (None, Some(pattern)) => format!("grep `{pattern}`"),
    };
    Ok(ToolOutput::text(format!(
        "kept: {what} stays in context when older results are evicted"
    )))
}
