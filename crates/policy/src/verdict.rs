//! The three outcomes of a decision and how several rules' outcomes combine.

use serde::{Deserialize, Serialize};

/// How a call came out. The order is the order of severity, so rules combine with
/// [`Ord::max`]: one refusal outweighs any number of allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Run the call.
    Allow,
    /// Show the person a permission card and wait for the answer.
    Ask,
    /// Do not run the call; the sentence goes back to the model as the tool result.
    Deny,
}

impl Verdict {
    /// The snake-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Verdict;

    #[test]
    fn severity_orders_allow_below_ask_below_deny() {
        assert!(Verdict::Allow < Verdict::Ask);
        assert!(Verdict::Ask < Verdict::Deny);
        assert_eq!(Verdict::Allow.max(Verdict::Deny), Verdict::Deny);
        assert_eq!(Verdict::Ask.max(Verdict::Allow), Verdict::Ask);
    }

    #[test]
    fn wire_names_match_serde() {
        for v in [Verdict::Allow, Verdict::Ask, Verdict::Deny] {
            let json = serde_json::to_value(v).ok();
            assert_eq!(json, Some(serde_json::Value::from(v.as_str())));
        }
    }
}
