//! What the operator's PreToolUse hooks answered about a call, as the policy reads it.
//!
//! The daemon runs the hooks (`[[hooks.pre_tool_use]]`) before it decides a call and hands
//! their answers over in [`crate::Task::hook`]; the policy combines them (the most restrictive
//! wins: `deny > ask > allow > none`) and applies the result to its own decision. The hooks'
//! answers are an input like any other, recorded with the decision, so a replay re-decides a
//! hooked call without running a hook.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One hook's answer, ordered from the least to the most restrictive.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    /// No opinion (exit 0 and nothing, or no `permissionDecision`): the policy decides alone.
    #[default]
    None,
    /// Skip the prompt the call would otherwise raise; never lifts a refusal.
    Allow,
    /// Ask the person on a card even when the permission mode would not.
    Ask,
    /// Refuse the call; it is not run.
    Deny,
}

impl HookDecision {
    /// The snake-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            HookDecision::None => "none",
            HookDecision::Allow => "allow",
            HookDecision::Ask => "ask",
            HookDecision::Deny => "deny",
        }
    }
}

/// What one matching hook answered, and which hook it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookAnswer {
    /// The hook's `matcher` as configured.
    pub matcher: String,
    /// The hook's `command` (its argv) as configured.
    pub command: Vec<String>,
    pub decision: HookDecision,
    /// The hook's `permissionDecisionReason` (or `reason`, or its standard error on exit 2),
    /// or, for a hook that failed, why it counts as `deny`. Empty when it gave none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// True when this hook's `updatedInput` replaced the arguments.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub updated_input: bool,
}

/// What the person answered on the card a hook's `ask` raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookCard {
    /// The person let the call go ahead.
    Approved,
    /// The person refused it.
    Refused,
}

/// Every matching hook's answer to one call, in configuration order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookOutcome {
    pub answers: Vec<HookAnswer>,
    /// The arguments as the model sent them, when a hook's `updatedInput` replaced them (the
    /// request's `args` are then the replacement, which is what the policy judges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_args: Option<Value>,
    /// The person's answer on the card a hook's `ask` raised, when the daemon decides the call
    /// again after it. Absent until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_card: Option<HookCard>,
}

impl HookOutcome {
    /// The answer that decides: the most restrictive, the first in configuration order among
    /// equals; `None` when no hook answered or none had an opinion.
    pub fn deciding(&self) -> Option<&HookAnswer> {
        let most = self.answers.iter().map(|a| a.decision).max()?;
        if most == HookDecision::None {
            return None;
        }
        self.answers.iter().find(|a| a.decision == most)
    }

    /// The combined decision: the most restrictive answer.
    pub fn decision(&self) -> HookDecision {
        self.deciding().map_or(HookDecision::None, |a| a.decision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(decision: HookDecision, reason: &str) -> HookAnswer {
        HookAnswer {
            matcher: ".*".to_owned(),
            command: vec![format!("/hooks/{reason}")],
            decision,
            reason: reason.to_owned(),
            updated_input: false,
        }
    }

    #[test]
    fn the_most_restrictive_answer_decides_and_the_first_among_equals() {
        let outcome = HookOutcome {
            answers: vec![
                answer(HookDecision::Allow, "a"),
                answer(HookDecision::Ask, "b"),
                answer(HookDecision::None, "c"),
                answer(HookDecision::Ask, "d"),
            ],
            ..HookOutcome::default()
        };
        assert_eq!(outcome.decision(), HookDecision::Ask);
        assert_eq!(outcome.deciding().map(|a| a.reason.as_str()), Some("b"));
        let quiet = HookOutcome {
            answers: vec![answer(HookDecision::None, "x")],
            ..HookOutcome::default()
        };
        assert_eq!(quiet.deciding(), None);
        assert_eq!(HookOutcome::default().decision(), HookDecision::None);
    }
}
