//! Grants as the ledger records them and as `codaris policy eval` reads them.

use serde::{Deserialize, Serialize};

use crate::capability::CapabilityName;

/// How long a grant lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifetime {
    /// Allows the first call it covers; the daemon then consumes it (and serialises that
    /// consumption, so two racing calls cannot both use it).
    Once,
    /// Allows every call it covers for the rest of the session.
    Session,
    /// A recorded refusal: a call needing what it covers is refused without a new card.
    Deny,
}

impl Lifetime {
    /// The snake-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Lifetime::Once => "once",
            Lifetime::Session => "session",
            Lifetime::Deny => "deny",
        }
    }
}

/// One answer a person gave on a permission card.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    /// What the grant permits (or, for `deny`, refuses).
    pub capability: CapabilityName,
    /// The scope: an absolute path for file capabilities (covering everything beneath it), an
    /// origin for `send_http`, a tool name for `use_tool`, `null` for `change_config`.
    #[serde(default)]
    pub path: Option<String>,
    /// How long it lives.
    pub lifetime: Lifetime,
    /// The ledger's id for the grant, echoed in a decision that relied on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl Grant {
    /// A grant without an id.
    pub fn new(capability: CapabilityName, path: Option<&str>, lifetime: Lifetime) -> Grant {
        Grant {
            capability,
            path: path.map(str::to_owned),
            lifetime,
            id: None,
        }
    }

    /// The same grant carrying the ledger's id.
    pub fn with_id(mut self, id: impl Into<String>) -> Grant {
        self.id = Some(id.into());
        self
    }
}

/// A grant a decision relied on to allow the call. The daemon consumes the `once` ones.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsedGrant {
    /// Position of the grant in the list the decision was evaluated against.
    pub index: usize,
    /// The grant's ledger id, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Its lifetime, so a reader knows whether to consume it without looking it up.
    pub lifetime: Lifetime,
}

#[cfg(test)]
mod tests {
    use super::{Grant, Lifetime};
    use crate::capability::CapabilityName;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn grants_read_the_contract_shape() {
        let parsed: Result<Grant, _> = serde_json::from_value(json!(
            {"capability": "mutate_outside_fence", "path": "/tmp/out", "lifetime": "session"}
        ));
        let expected = Grant::new(
            CapabilityName::MutateOutsideFence,
            Some("/tmp/out"),
            Lifetime::Session,
        );
        assert_eq!(parsed.ok(), Some(expected));
    }

    #[test]
    fn misspelled_grant_fields_are_rejected() {
        let parsed: Result<Grant, _> = serde_json::from_value(json!(
            {"capability": "write", "paht": "/w", "lifetime": "once"}
        ));
        assert!(parsed.is_err());
    }
}
