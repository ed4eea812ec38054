//! Why a turn ended: the `reason` of the `turn_ended` event, a contract.

use serde::{Deserialize, Serialize};

/// Why a turn ended. Snake case on the wire; never renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The model answered without calling a tool.
    EndTurn,
    /// The loop guard counted too many repeats.
    LoopGuard,
    /// The round limit was reached.
    MaxRounds,
    /// The client cancelled the turn.
    Cancelled,
    /// The provider or the daemon failed.
    Error,
    /// The scripted provider had no round left for the turn.
    ScriptExhausted,
    /// The model's answer reached its output cap (`max_output_tokens`); its partial text is
    /// kept in the conversation.
    MaxTokens,
}

impl EndReason {
    /// Every reason, in the order the contract lists them.
    pub const ALL: [EndReason; 7] = [
        EndReason::EndTurn,
        EndReason::LoopGuard,
        EndReason::MaxRounds,
        EndReason::Cancelled,
        EndReason::Error,
        EndReason::ScriptExhausted,
        EndReason::MaxTokens,
    ];

    /// The snake-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::EndTurn => "end_turn",
            EndReason::LoopGuard => "loop_guard",
            EndReason::MaxRounds => "max_rounds",
            EndReason::Cancelled => "cancelled",
            EndReason::Error => "error",
            EndReason::ScriptExhausted => "script_exhausted",
            EndReason::MaxTokens => "max_tokens",
        }
    }
}

impl std::fmt::Display for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
