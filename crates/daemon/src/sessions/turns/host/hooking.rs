//! The operator's PreToolUse hooks for a call of the turn: run once, before the call's first
//! decision, their answers put into the call's task (and their `updatedInput` into its
//! arguments), so every decision of the call — again after its card too — judges the same.

use codaris_agent::{CallRequest, ToolId};

use super::DaemonHost;
use crate::calls::hooks::{HookCall, pre_tool_use};

impl DaemonHost {
    /// `call` as the hooks left it, or `None` when no hook matches its tool (then nothing ran).
    pub(super) async fn hooked(&self, call: &CallRequest) -> Option<CallRequest> {
        let config = self.turns.config.get();
        if config.pre_tool_use.is_empty() {
            return None;
        }
        let (tool, mcp) = match &call.tool {
            ToolId::Mcp(tool) => (tool.prefixed(), true),
            other => (other.as_str(), false),
        };
        let cwd = call
            .cwd
            .as_ref()
            .map_or_else(|| call.task.cwd.clone(), |cwd| cwd.display().to_string());
        let hooked = pre_tool_use(
            &config.pre_tool_use,
            &config.env_passthrough,
            HookCall {
                session_id: self.session_id(),
                call_id: &call.id,
                tool,
                mcp,
                args: &call.args,
                task: &call.task,
                cwd: &cwd,
            },
        )
        .await?;
        let mut call = call.clone();
        if let Some(args) = hooked.args {
            call.args = args;
        }
        call.task.hook = Some(hooked.outcome);
        Some(call)
    }
}

impl DaemonHost {
    /// The call after the person answered the card a hook's `ask` raised: decided again with
    /// their answer as its input (`task.hook.at_card`), so the ledger records what they said
    /// and a replay re-decides it. The card asked for no capability, so it granted nothing:
    /// the next call the hook asks about is asked about again.
    pub(super) async fn answered_for_hook(
        &self,
        call: &CallRequest,
        asked: codaris_policy::Decision,
        answered: super::Asked,
    ) -> Result<codaris_agent::Decided<crate::calls::dispatch::Permit>, codaris_agent::HostError>
    {
        use codaris_agent::Decided;
        use codaris_ledger::CardAnswer;
        use codaris_policy::HookCard;

        let at_card = match answered {
            super::Asked::Answered(
                CardAnswer::AllowOnce | CardAnswer::AllowSession | CardAnswer::AllowPrograms,
            ) => HookCard::Approved,
            super::Asked::Answered(_) => HookCard::Refused,
            // Nobody answered: the call stays asked about, which refuses it.
            super::Asked::DeniedBefore | super::Asked::Unanswered => {
                return Ok(Decided::Refused(asked));
            }
        };
        let mut again = call.clone();
        if let Some(hook) = again.task.hook.as_mut() {
            hook.at_card = Some(at_card);
        }
        Ok(match self.decide_once(&again).await? {
            crate::calls::dispatch::Dispatched::Run(permit) => Decided::Run(permit),
            other => Decided::Refused(other.into_record().decision),
        })
    }
}
