//! A turn's checkpoint: where it is kept (`<state>/checkpoints/<session>/<turn>/`), sealing it
//! when the turn ends, and what of a turn it cannot take back. Undoing is `undo.rs`; the turn's
//! host and the live sessions need only this.

use std::path::{Path, PathBuf};

use codaris_policy::{Access, Effect, ExternalSpec};
use codaris_tools::files::checkpoint::Checkpoint;
use serde_json::Value;

/// The tools whose writes the checkpoint keeps (every other tool that may change files is
/// listed as not undone). `apply_patch`'s landing serves the compliance autofix and
/// remediation plans too.
const KEPT: [&str; 10] = [
    "edit",
    "write",
    "apply_patch",
    "mkdir",
    "rmdir",
    "touch",
    "rm",
    "mv",
    "run_compliance_autofix",
    "apply_remediation_plan",
];

/// Where a session's checkpoints are kept.
pub fn checkpoints_dir(state_dir: &Path, session_id: &str) -> PathBuf {
    state_dir.join("checkpoints").join(session_id)
}

/// Where one turn's checkpoint is kept (turns from 0).
pub(super) fn turn_store(state_dir: &Path, session_id: &str, turn: u32) -> PathBuf {
    checkpoints_dir(state_dir, session_id).join(turn.to_string())
}

/// What a call changes that no checkpoint keeps, as the person should read it (`make`, or a
/// tool's name); `None` for a call that changes no file or whose changes are kept. An MCP
/// tool counts unless its registration declared it read-only (`external`).
pub(super) fn not_undone(
    tool: &str,
    args: &Value,
    external: Option<&ExternalSpec>,
) -> Option<String> {
    if KEPT.contains(&tool) {
        return None;
    }
    let Some(spec) = codaris_policy::builtin(tool) else {
        return match external {
            Some(spec) if spec.read_only => None,
            _ => Some(format!("`{tool}`")),
        };
    };
    let writes_a_path = spec.paths.iter().any(|p| {
        p.access == Access::Mutate && args.get(p.name.as_ref()).is_some_and(|v| !v.is_null())
    });
    match spec.effect {
        Effect::Command => Some(
            args.get("command")
                .and_then(Value::as_str)
                .map_or_else(|| format!("`{tool}`"), |c| format!("`{c}`")),
        ),
        Effect::Opaque | Effect::Paths => Some(format!("`{tool}`")),
        Effect::ReadOnly if writes_a_path => Some(format!("`{tool}`")),
        Effect::ReadOnly | Effect::Config => None,
    }
}

/// Seals a finished turn's checkpoint (off the runtime: it reads every file the turn changed).
pub(super) async fn seal(session_id: &str, turn: u32, checkpoint: Checkpoint) {
    match tokio::task::spawn_blocking(move || checkpoint.seal()).await {
        Ok(Ok(Some(manifest))) => {
            tracing::info!(session = %session_id, turn, paths = manifest.entries.len(), commands = manifest.commands.len(), "kept the turn's checkpoint");
        }
        Ok(Ok(None)) => {}
        Ok(Err(err)) => {
            tracing::warn!(session = %session_id, turn, %err, "could not keep the turn's checkpoint; it cannot be undone");
        }
        Err(err) => {
            tracing::warn!(session = %session_id, turn, %err, "sealing the turn's checkpoint failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_and_writers_without_a_checkpoint_are_listed_as_not_undone() {
        let listed = |tool: &str, args: Value| not_undone(tool, &args, None);
        assert_eq!(
            listed("run_command", json!({"command": "make"})),
            Some("`make`".to_owned())
        );
        assert_eq!(
            listed("run_built_pipeline", json!({})),
            Some("`run_built_pipeline`".to_owned())
        );
        assert_eq!(
            listed("fetch_test_data", json!({})),
            Some("`fetch_test_data`".to_owned())
        );
        assert_eq!(listed("edit", json!({})), None);
        assert_eq!(listed("read_file", json!({"path": "x"})), None);
        assert_eq!(listed("http_request", json!({"url": "u"})), None);
        assert_eq!(
            listed("http_request", json!({"output_file": "x"})),
            Some("`http_request`".to_owned())
        );
        assert_eq!(
            listed("fs__write", json!({})),
            Some("`fs__write`".to_owned())
        );
        let read_only = ExternalSpec {
            read_only: true,
            ..ExternalSpec::default()
        };
        assert_eq!(
            not_undone("docs__search", &json!({}), Some(&read_only)),
            None
        );
    }
}
