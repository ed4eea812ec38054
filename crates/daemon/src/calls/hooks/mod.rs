//! PreToolUse hooks: the operator's programs (`[[hooks.pre_tool_use]]`) that see every call
//! before the permission gate, in every permission mode, MCP tools included.
//!
//! Each hook whose `matcher` matches the tool's name gets the call as JSON on its standard
//! input ([`input`]) and answers as Claude Code's hooks do ([`answer`]). The matching hooks run
//! at once, side by side, each in its own process group ([`process`]); their answers are
//! combined by the policy (`deny > ask > allow > none`, the first in configuration order among
//! equals). Nothing here decides: the answers, the arguments a hook's `updatedInput` replaced
//! and the replacement go into the call's task (`task.hook`) and arguments, the policy judges
//! them with everything else, and the ledger records them with the decision, so `codaris audit
//! replay` re-decides a hooked call without running a hook.
//!
//! Two hooks that rewrite the arguments differently cannot both be obeyed: the second (in
//! configuration order) counts as `deny`, saying so.

pub mod answer;
pub mod input;
pub mod process;

use std::path::Path;
use std::sync::Arc;

use codaris_policy::{HookAnswer, HookDecision, HookOutcome, Task};
use serde_json::Value;

use crate::config::hooks::PreToolUseHook;
use answer::{Answer, HookFailure};
use input::HookInput;

/// One call as the hooks see it.
#[derive(Debug, Clone, Copy)]
pub struct HookCall<'a> {
    pub session_id: &'a str,
    pub call_id: &'a str,
    /// The name the call is decided under (`server__tool` for an MCP tool).
    pub tool: &'a str,
    /// True for an MCP tool, which a matcher also sees as `mcp__server__tool`.
    pub mcp: bool,
    /// The arguments as the model sent them.
    pub args: &'a Value,
    pub task: &'a Task,
    /// The session's working directory: the hooks run there.
    pub cwd: &'a str,
}

/// What the matching hooks said: their answers for the policy, and the arguments the call
/// runs with when a hook replaced them.
#[derive(Debug, Clone, PartialEq)]
pub struct Hooked {
    pub outcome: HookOutcome,
    /// The replacement arguments (`updatedInput`); `None`: the model's stand.
    pub args: Option<Value>,
}

/// Runs the hooks of `hooks` that match `call`, with the environment commands get
/// (`passthrough` the configured names), and gathers their answers. `None` when no hook
/// matches: then nothing was started, and the call is decided as if no hook were configured.
pub async fn pre_tool_use(
    hooks: &[PreToolUseHook],
    passthrough: &[String],
    call: HookCall<'_>,
) -> Option<Hooked> {
    let matching: Vec<&PreToolUseHook> = hooks
        .iter()
        .filter(|hook| hook.matches(call.tool, call.mcp))
        .collect();
    if matching.is_empty() {
        return None;
    }
    let input = HookInput::new(
        call.session_id,
        call.call_id,
        call.tool,
        call.args,
        call.task,
        call.cwd,
    );
    let answers = match serde_json::to_vec(&input) {
        Ok(input) => run_all(&matching, call, passthrough, input).await,
        Err(err) => matching
            .iter()
            .map(|hook| {
                HookFailure::Garbage {
                    program: hook.command.first().cloned().unwrap_or_default(),
                    why: format!("the call could not be written as JSON for it: {err}"),
                }
                .answer()
            })
            .collect(),
    };
    let hooked = combine(&matching, answers, call.args);
    // Names and verdicts only, never the arguments or a reason: this event may be exported.
    tracing::info!(
        tool.name = %call.tool,
        hooks = hooked.outcome.answers.len(),
        hook.decision = hooked.outcome.decision().as_str(),
        hook.rewrote = hooked.args.is_some(),
        "pre_tool_use hooks answered"
    );
    Some(hooked)
}

/// Runs every hook of `matching` on `input` at once; the answers in the hooks' order.
async fn run_all(
    matching: &[&PreToolUseHook],
    call: HookCall<'_>,
    passthrough: &[String],
    input: Vec<u8>,
) -> Vec<Answer> {
    let env = process::environment(passthrough, call.cwd);
    let cwd = Path::new(call.cwd);
    if let [hook] = matching {
        // The usual case: one hook, run here, no task spawned for it.
        return vec![process::run(hook, call.tool, &input, cwd, &env).await];
    }
    let (input, env) = (Arc::new(input), Arc::new(env));
    let mut set = tokio::task::JoinSet::new();
    for (index, hook) in matching.iter().enumerate() {
        let (hook, input, env) = ((*hook).clone(), input.clone(), env.clone());
        let (tool, cwd) = (call.tool.to_owned(), cwd.to_path_buf());
        set.spawn(async move { (index, process::run(&hook, &tool, &input, &cwd, &env).await) });
    }
    let mut answers: Vec<Option<Answer>> = vec![None; matching.len()];
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((index, answer)) => {
                if let Some(slot) = answers.get_mut(index) {
                    *slot = Some(answer);
                }
            }
            Err(err) => tracing::error!(%err, "a pre_tool_use hook's task failed"),
        }
    }
    answers
        .into_iter()
        .zip(matching)
        .map(|(answer, hook)| {
            answer.unwrap_or_else(|| {
                HookFailure::Garbage {
                    program: hook.command.first().cloned().unwrap_or_default(),
                    why: "its run was lost".to_owned(),
                }
                .answer()
            })
        })
        .collect()
}

/// The hooks' answers as the policy reads them, and the arguments they leave the call with.
fn combine(matching: &[&PreToolUseHook], answers: Vec<Answer>, args: &Value) -> Hooked {
    let mut replacement: Option<(usize, serde_json::Map<String, Value>)> = None;
    let mut recorded = Vec::with_capacity(answers.len());
    for (index, (hook, answer)) in matching.iter().zip(answers).enumerate() {
        let Answer {
            mut decision,
            mut reason,
            updated_input,
        } = answer;
        let mut updated = false;
        if let Some(new) = updated_input.filter(|_| decision != HookDecision::Deny) {
            match &replacement {
                None => {
                    replacement = Some((index, new));
                    updated = true;
                }
                Some((_, first)) if *first == new => updated = true,
                Some((first, _)) => {
                    decision = HookDecision::Deny;
                    reason = format!(
                        "hook `{}` rewrote the arguments differently from hook `{}`",
                        program(hook),
                        matching.get(*first).map_or("", |h| program(h))
                    );
                }
            }
        }
        recorded.push(HookAnswer {
            matcher: hook.matcher.clone(),
            command: hook.command.clone(),
            decision,
            reason,
            updated_input: updated,
        });
    }
    let mut outcome = HookOutcome {
        answers: recorded,
        original_args: None,
        at_card: None,
    };
    // A refused call runs on nothing: its arguments stay the model's.
    let args_now = match replacement {
        Some((_, new)) if outcome.decision() != HookDecision::Deny => {
            outcome.original_args = Some(args.clone());
            Some(Value::Object(new))
        }
        _ => {
            for answer in &mut outcome.answers {
                answer.updated_input = false;
            }
            None
        }
    };
    Hooked {
        outcome,
        args: args_now,
    }
}

fn program(hook: &PreToolUseHook) -> &str {
    hook.command.first().map_or("", String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn hook(program: &str) -> PreToolUseHook {
        PreToolUseHook {
            matcher: "write".to_owned(),
            pattern: codaris_config::hook_matcher("write").unwrap(),
            command: vec![program.to_owned()],
            timeout: Duration::from_secs(1),
        }
    }

    fn answer(decision: HookDecision, updated: Option<Value>) -> Answer {
        Answer {
            decision,
            reason: String::new(),
            updated_input: updated.and_then(|v| v.as_object().cloned()),
        }
    }

    #[test]
    fn one_rewrite_replaces_the_arguments_and_keeps_the_model_s() {
        let (a, b) = (hook("/a"), hook("/b"));
        let args = json!({"path": "x"});
        let new = json!({"path": "y"});
        let hooked = combine(
            &[&a, &b],
            vec![
                answer(HookDecision::Allow, Some(new.clone())),
                answer(HookDecision::None, Some(new.clone())),
            ],
            &args,
        );
        assert_eq!(hooked.args, Some(new));
        assert_eq!(hooked.outcome.original_args, Some(args));
        assert!(hooked.outcome.answers.iter().all(|a| a.updated_input));
        assert_eq!(hooked.outcome.decision(), HookDecision::Allow);
    }

    #[test]
    fn two_different_rewrites_deny_and_a_denied_call_keeps_its_arguments() {
        let (a, b) = (hook("/a"), hook("/b"));
        let args = json!({"path": "x"});
        let hooked = combine(
            &[&a, &b],
            vec![
                answer(HookDecision::Allow, Some(json!({"path": "y"}))),
                answer(HookDecision::Allow, Some(json!({"path": "z"}))),
            ],
            &args,
        );
        assert_eq!(hooked.outcome.decision(), HookDecision::Deny);
        let deciding = hooked.outcome.deciding().unwrap();
        assert_eq!(
            deciding.reason,
            "hook `/b` rewrote the arguments differently from hook `/a`"
        );
        assert_eq!(hooked.args, None);
        assert_eq!(hooked.outcome.original_args, None);
        assert!(hooked.outcome.answers.iter().all(|a| !a.updated_input));
    }
}
