//! The decision value `evaluate` returns, shaped like cedar's `Response`.

use serde::{Deserialize, Serialize};

use crate::capability::Capability;
use crate::code::Code;
use crate::grant::{Lifetime, UsedGrant};
use crate::verdict::Verdict;

/// The rules of the policy, in evaluation order. A decision lists those that matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// The loop guard found the call repeating an earlier search of the turn.
    LoopGuard,
    /// An operator's PreToolUse hook answered about the call (`task.hook`).
    Hook,
    /// The tool has a built-in spec or the call carried one.
    KnownTool,
    /// The tool is not withheld for this task.
    Withheld,
    /// A slash-gated tool had one of its commands typed.
    SlashGate,
    /// The operating mode's allowlist contains the tool.
    ModeAllowlist,
    /// The tool is on this turn's surface.
    Binding,
    /// The arguments are a JSON object.
    ArgsShape,
    /// Every path argument is usable.
    PathShape,
    /// No changed path is protected.
    ProtectedPath,
    /// A read-only activity holds back a changing call.
    ReadOnlyActivity,
    /// Every path lies inside an allowed root.
    Fence,
    /// The person refused a capability the call needs.
    UserRefusal,
    /// The permission class under the permission mode.
    PermissionClass,
    /// A grant covered a capability the call needs.
    Grant,
}

impl Rule {
    /// Every rule, in evaluation order.
    pub const ALL: [Rule; 15] = [
        Rule::LoopGuard,
        Rule::Hook,
        Rule::KnownTool,
        Rule::Withheld,
        Rule::SlashGate,
        Rule::ModeAllowlist,
        Rule::Binding,
        Rule::ArgsShape,
        Rule::PathShape,
        Rule::ProtectedPath,
        Rule::ReadOnlyActivity,
        Rule::Fence,
        Rule::UserRefusal,
        Rule::PermissionClass,
        Rule::Grant,
    ];

    /// The snake-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::LoopGuard => "loop_guard",
            Rule::Hook => "hook",
            Rule::KnownTool => "known_tool",
            Rule::Withheld => "withheld",
            Rule::SlashGate => "slash_gate",
            Rule::Binding => "binding",
            Rule::ModeAllowlist => "mode_allowlist",
            Rule::ArgsShape => "args_shape",
            Rule::PathShape => "path_shape",
            Rule::ProtectedPath => "protected_path",
            Rule::ReadOnlyActivity => "read_only_activity",
            Rule::Fence => "fence",
            Rule::UserRefusal => "user_refusal",
            Rule::PermissionClass => "permission_class",
            Rule::Grant => "grant",
        }
    }
}

/// The rules that matched during one evaluation: a bitset, so noting one costs nothing and the
/// decision lists each once, in rule order, without sorting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RuleSet(u16);

impl RuleSet {
    pub(crate) fn insert(&mut self, rule: Rule) {
        self.0 |= 1 << (rule as u16);
    }

    pub(crate) fn to_vec(self) -> Vec<Rule> {
        Rule::ALL
            .into_iter()
            .filter(|r| self.0 & (1 << (*r as u16)) != 0)
            .collect()
    }
}

/// What the policy decided about one call, and why.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Decision {
    /// Allow, ask, or deny.
    pub verdict: Verdict,
    /// Why, from the closed vocabulary.
    pub code: Code,
    /// One line a person and a model can act on: lower-case start, no final period, values
    /// from the call in backticks.
    pub sentence: String,
    /// The capability a grant would need (or, when a grant allowed the call, the one it
    /// covered); `null` when no grant is involved.
    pub capability: Option<Capability>,
    /// The rules that matched, each once, in rule order.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// The grants the call is allowed by; empty unless the verdict is `allow`.
    #[serde(default)]
    pub used_grants: Vec<UsedGrant>,
}

impl Decision {
    /// The `once` grants this decision spends: the daemon consumes them before running the
    /// call, and must re-evaluate if one was already spent by a racing call.
    pub fn consumes(&self) -> impl Iterator<Item = &UsedGrant> {
        self.used_grants
            .iter()
            .filter(|g| g.lifetime == Lifetime::Once)
    }
}

#[cfg(test)]
mod tests {
    use super::Rule;

    #[test]
    fn rule_names_match_serde() {
        let all = Rule::ALL;
        for rule in all {
            let json = serde_json::to_value(rule).ok();
            assert_eq!(json, Some(serde_json::Value::from(rule.as_str())));
        }
        // Listed in declaration order, which is the order a decision reports them in.
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        assert!(all.iter().enumerate().all(|(i, r)| *r as usize == i));
    }
}
