//! The file tools of the catalogue: `read_file`, `keep_result`, `glob`, `grep`, `print_tree`, `edit`, `write`,
//! `apply_patch`, `mkdir`, `rmdir`, `touch`, `rm`, `mv`.
//!
//! Every one opens its paths beneath the allowed root they lie in (`fence`), so what runs is
//! what the policy checked even if the file system changed in between.

pub mod checkpoint;
mod decode;
mod edit;
pub(crate) mod fence;
mod keep;
mod list;
mod nested_git;
mod ops;
pub(crate) mod patch;
mod patch_parse;
pub(crate) mod preview;
mod read;
mod search;

use std::sync::Arc;

use serde_json::Value;

use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

pub use checkpoint::Checkpoint;
pub use decode::human_size;
pub use edit::{Edit, WriteFile};
pub use keep::KeepResult;
pub use list::PrintTree;
pub use nested_git::{GitScan, MAX_SCANNED, scan_for_git};
pub use ops::{Mkdir, Mv, Rm, Rmdir, Touch};
pub use patch::ApplyPatch;
#[cfg(feature = "count-parses")]
pub use patch_parse::parse_count as patch_parse_count;
pub use patch_parse::{ParseError, ReadPatch, patch_targets};
pub use preview::{FileDiff, MAX_DIFF_BYTES, MAX_DIFF_LINES, diff_of};
pub use read::ReadFile;
pub use search::{Glob, Grep};

/// The whole text file at `path` (absolute), read beneath `fence` exactly as a tool reads one
/// (symlinks and `..` leading out refused, the state directory secret), at most `limit` bytes;
/// the error is one line naming the path. For what the daemon reads on a session's behalf
/// before a decision (a Platform launch's params file).
pub fn read_beneath(
    fence: &crate::context::Fence,
    path: &std::path::Path,
    limit: u64,
) -> Result<String, String> {
    fence::open::read_text(fence, path, limit).map_err(|err| err.to_string())
}

/// Every file tool, in the catalogue's order.
/// `.NAME.codaris-KIND-PID-N` beside `rel` (a file `NAME`): where a temporary file or a
/// backup of a write is made before it is renamed into place, in the same directory so the
/// rename is atomic.
pub(crate) fn side_name(rel: &std::path::Path, kind: &str, n: usize) -> std::path::PathBuf {
    let name = rel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    rel.with_file_name(format!(".{name}.codaris-{kind}-{}-{n}", std::process::id()))
}

pub fn file_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadFile),
        Arc::new(KeepResult),
        Arc::new(Glob),
        Arc::new(Grep),
        Arc::new(PrintTree),
        Arc::new(Edit),
        Arc::new(WriteFile),
        Arc::new(ApplyPatch),
        Arc::new(Mkdir),
        Arc::new(Rmdir),
        Arc::new(Touch),
        Arc::new(Rm),
        Arc::new(Mv),
    ]
}

/// Runs a tool body on the blocking pool: file system calls would otherwise stall the
/// runtime's worker threads (a grep over a large tree takes seconds).
async fn blocking(
    tool: &'static str,
    ctx: &ToolContext,
    args: &Value,
    body: fn(&ToolContext, &Value) -> Result<ToolOutput, ToolError>,
) -> Result<ToolOutput, ToolError> {
    let (ctx, args) = (ctx.clone(), args.clone());
    tokio::task::spawn_blocking(move || body(&ctx, &args))
        .await
        .map_err(|e| ToolError::Fatal {
            tool,
            source: std::io::Error::other(e),
        })?
}
