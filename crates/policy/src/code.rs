//! The closed vocabulary of decision codes.
//!
//! Other tools (the CLI, IDE plugins, an auditor's scripts) match on these names, so a code is
//! never renamed; a new situation gets a new variant, and the exhaustive `match`es below make
//! the compiler point at every place that must learn about it.

use serde::{Deserialize, Serialize};

use crate::verdict::Verdict;

/// Why a call was allowed, held for approval, or refused. Snake case on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    /// The arguments are not a JSON object (a double-encoded object is a string).
    ArgsNotObject,
    /// The loop guard found the call repeating an earlier search of this turn.
    RepeatedSearch,
    /// No built-in tool has this name and the call carried no spec for it.
    UnknownTool,
    /// The tool exists but is not on this turn's surface.
    NotBound,
    /// The tool is held back for this task whatever the surface says.
    ToolWithheld,
    /// An MCP tool whose definition (or whose server's command, environment or URL) changed
    /// since its server was approved, or that appeared after: held back until approved again.
    DefinitionChanged,
    /// The tool runs only in a turn where the person typed one of its slash commands.
    SlashRequired,
    /// The operating mode's allowlist does not contain the tool.
    ModeForbids,
    /// A read-only activity refuses a call that would change something.
    ReadOnlyActivity,
    /// A path the call reads lies outside every allowed root.
    ReadOutsideFence,
    /// A path the call changes lies outside every allowed root.
    MutateOutsideFence,
    /// The call would change a protected path (`.git`, Codaris's own state).
    ProtectedPath,
    /// A path argument is missing, empty, not a string, holds a NUL byte, or cannot be made
    /// absolute.
    BadPath,
    /// The call would push an image to a registry the operator does not list.
    RegistryNotListed,
    /// A launch on Seqera Platform names a compute environment the operator does not list
    /// (or none, where the operator lists some).
    ComputeEnvNotListed,
    /// A launch on Seqera Platform passes a samplesheet that is a local file without a gate
    /// that holds, or a location no compute environment reads as a dataset.
    SamplesheetNotGated,
    /// The permission class and mode require the person's approval on a card.
    NeedsApproval,
    /// An operator's PreToolUse hook refused the call.
    BlockedByHook,
    /// An operator's PreToolUse hook asks the person about a call the policy would allow.
    AskedByHook,
    /// The person already refused this capability in this session.
    DeniedByUser,
    /// Nothing about the call needs approval.
    AllowedByDefault,
    /// The permission mode approves this class of call without a card.
    AllowedByMode,
    /// A grant in the ledger covers every capability the call needs.
    AllowedByGrant,
    /// An operator's PreToolUse hook answered the permission prompt the call would raise.
    AllowedByHook,
}

impl Code {
    /// Every code, in the order the documentation lists them.
    pub const ALL: [Code; 24] = [
        Code::ArgsNotObject,
        Code::RepeatedSearch,
        Code::UnknownTool,
        Code::NotBound,
        Code::ToolWithheld,
        Code::DefinitionChanged,
        Code::SlashRequired,
        Code::ModeForbids,
        Code::ReadOnlyActivity,
        Code::ReadOutsideFence,
        Code::MutateOutsideFence,
        Code::ProtectedPath,
        Code::BadPath,
        Code::RegistryNotListed,
        Code::ComputeEnvNotListed,
        Code::SamplesheetNotGated,
        Code::NeedsApproval,
        Code::BlockedByHook,
        Code::AskedByHook,
        Code::DeniedByUser,
        Code::AllowedByDefault,
        Code::AllowedByMode,
        Code::AllowedByGrant,
        Code::AllowedByHook,
    ];

    /// The verdict a decision with this code carries. A code never changes its verdict, which
    /// is what lets a reader of the ledger trust the code alone.
    pub fn verdict(self) -> Verdict {
        match self {
            Code::AllowedByDefault
            | Code::AllowedByMode
            | Code::AllowedByGrant
            | Code::AllowedByHook => Verdict::Allow,
            Code::NeedsApproval | Code::AskedByHook => Verdict::Ask,
            Code::ArgsNotObject
            | Code::RepeatedSearch
            | Code::UnknownTool
            | Code::NotBound
            | Code::ToolWithheld
            | Code::DefinitionChanged
            | Code::SlashRequired
            | Code::ModeForbids
            | Code::ReadOnlyActivity
            | Code::ReadOutsideFence
            | Code::MutateOutsideFence
            | Code::ProtectedPath
            | Code::BadPath
            | Code::RegistryNotListed
            | Code::ComputeEnvNotListed
            | Code::SamplesheetNotGated
            | Code::BlockedByHook
            | Code::DeniedByUser => Verdict::Deny,
        }
    }

    /// The snake-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::ArgsNotObject => "args_not_object",
            Code::RepeatedSearch => "repeated_search",
            Code::UnknownTool => "unknown_tool",
            Code::NotBound => "not_bound",
            Code::ToolWithheld => "tool_withheld",
            Code::DefinitionChanged => "definition_changed",
            Code::SlashRequired => "slash_required",
            Code::ModeForbids => "mode_forbids",
            Code::ReadOnlyActivity => "read_only_activity",
            Code::ReadOutsideFence => "read_outside_fence",
            Code::MutateOutsideFence => "mutate_outside_fence",
            Code::ProtectedPath => "protected_path",
            Code::BadPath => "bad_path",
            Code::RegistryNotListed => "registry_not_listed",
            Code::ComputeEnvNotListed => "compute_env_not_listed",
            Code::SamplesheetNotGated => "samplesheet_not_gated",
            Code::NeedsApproval => "needs_approval",
            Code::BlockedByHook => "blocked_by_hook",
            Code::AskedByHook => "asked_by_hook",
            Code::DeniedByUser => "denied_by_user",
            Code::AllowedByDefault => "allowed_by_default",
            Code::AllowedByMode => "allowed_by_mode",
            Code::AllowedByGrant => "allowed_by_grant",
            Code::AllowedByHook => "allowed_by_hook",
        }
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Code;
    use crate::verdict::Verdict;

    #[test]
    fn wire_names_match_serde_for_every_code() {
        for code in Code::ALL {
            let json = serde_json::to_value(code).ok();
            assert_eq!(
                json,
                Some(serde_json::Value::from(code.as_str())),
                "{code:?}"
            );
        }
    }

    #[test]
    fn only_allowed_codes_allow_and_only_approval_and_hook_prompts_ask() {
        for code in Code::ALL {
            let allows = code.as_str().starts_with("allowed_by_");
            assert_eq!(code.verdict() == Verdict::Allow, allows, "{code:?}");
            assert_eq!(
                code.verdict() == Verdict::Ask,
                matches!(code, Code::NeedsApproval | Code::AskedByHook),
                "{code:?}"
            );
        }
    }
}
