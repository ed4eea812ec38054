//! What a PreToolUse hook reads on its standard input: the call as Claude Code's PreToolUse
//! hooks receive it (`session_id`, `transcript_path`, `cwd`, `permission_mode`,
//! `hook_event_name`, `tool_name`, `tool_input`, `tool_use_id`), so a hook written for Claude
//! Code reads it unchanged, and what Codaris adds: its own spelling of the permission mode, the
//! operating mode and the activity.

use codaris_policy::{Activity, PermissionMode, Task};
use serde::Serialize;
use serde_json::Value;

/// The call as a hook reads it.
#[derive(Debug, Serialize)]
pub struct HookInput<'a> {
    pub session_id: &'a str,
    /// Claude Code's transcript file; Codaris keeps none a hook could read, so always `null`.
    pub transcript_path: Option<&'a str>,
    /// The session's working directory, which is also the hook's.
    pub cwd: &'a str,
    /// Claude Code's spelling: `default`, `acceptEdits`, `bypassPermissions`, or `plan` in a
    /// plan-mode turn.
    pub permission_mode: &'static str,
    pub hook_event_name: &'static str,
    /// The tool's name as Codaris decides it (`server__tool` for an MCP tool).
    pub tool_name: &'a str,
    /// The arguments exactly as the model sent them.
    pub tool_input: &'a Value,
    /// The call's id in its turn.
    pub tool_use_id: &'a str,
    /// Codaris's spelling of the permission mode: `ask`, `accept_edits`, `bypass`.
    pub codaris_permission_mode: &'static str,
    /// The operating mode whose tool list applies: `agent`, `plan`, `ask`.
    pub operating_mode: &'static str,
    /// What the session is doing: `agent`, `plan`, `ask`, `review`, `research`, `audit`.
    pub activity: &'static str,
}

impl<'a> HookInput<'a> {
    /// The input for a call of `tool_name` with `tool_input`, in `task`, working in `cwd`.
    pub fn new(
        session_id: &'a str,
        tool_use_id: &'a str,
        tool_name: &'a str,
        tool_input: &'a Value,
        task: &Task,
        cwd: &'a str,
    ) -> Self {
        HookInput {
            session_id,
            transcript_path: None,
            cwd,
            permission_mode: claude_code_mode(task.activity, task.permission_mode),
            hook_event_name: "PreToolUse",
            tool_name,
            tool_input,
            tool_use_id,
            codaris_permission_mode: task.permission_mode.as_str(),
            operating_mode: task.activity.operating_mode().as_str(),
            activity: task.activity.as_str(),
        }
    }
}

/// The permission mode as Claude Code names its own.
fn claude_code_mode(activity: Activity, mode: PermissionMode) -> &'static str {
    if activity == Activity::Plan {
        return "plan";
    }
    match mode {
        PermissionMode::Ask => "default",
        PermissionMode::AcceptEdits => "acceptEdits",
        PermissionMode::Bypass => "bypassPermissions",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_input_has_claude_code_s_fields_and_codaris_s_modes() {
        let mut task = Task::new("/w/proj");
        task.permission_mode = PermissionMode::AcceptEdits;
        let args = json!({"path": "a.rs", "content": "x"});
        let input = HookInput::new("s1", "call_1", "write", &args, &task, "/w/proj");
        assert_eq!(
            serde_json::to_value(&input).unwrap(),
            json!({
                "session_id": "s1",
                "transcript_path": null,
                "cwd": "/w/proj",
                "permission_mode": "acceptEdits",
                "hook_event_name": "PreToolUse",
                "tool_name": "write",
                "tool_input": {"path": "a.rs", "content": "x"},
                "tool_use_id": "call_1",
                "codaris_permission_mode": "accept_edits",
                "operating_mode": "agent",
                "activity": "agent",
            })
        );
        task.activity = Activity::Plan;
        task.permission_mode = PermissionMode::Bypass;
        let input = HookInput::new("s1", "c", "grep", &args, &task, "/w");
        assert_eq!(input.permission_mode, "plan");
        assert_eq!(input.codaris_permission_mode, "bypass");
        assert_eq!(input.operating_mode, "plan");
    }
}
