//! The crate's one error type. Only reading a scripted-provider file can fail in the pure core:
//! slash parsing, classification, the surface and the loop guard are total.

use std::fmt;

/// Where in a script file a problem is: the whole file, one turn, or one round of a turn, as
/// the JSON path a person would look for (`turns[1].rounds[0]`). Indexes are 0-based, like the
/// arrays they index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptPlace {
    /// The top-level object.
    File,
    /// `turns[turn]`.
    Turn {
        /// 0-based index into `turns`.
        turn: usize,
    },
    /// `turns[turn].rounds[round]`.
    Round {
        /// 0-based index into `turns`.
        turn: usize,
        /// 0-based index into that turn's `rounds`.
        round: usize,
    },
}

impl fmt::Display for ScriptPlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScriptPlace::File => f.write_str("the file"),
            ScriptPlace::Turn { turn } => write!(f, "turns[{turn}]"),
            ScriptPlace::Round { turn, round } => write!(f, "turns[{turn}].rounds[{round}]"),
        }
    }
}

/// Why a scripted-provider file could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// The file is not JSON at all.
    #[error("script: not valid JSON at line {line}, column {column}: {detail}")]
    ScriptSyntax {
        /// 1-based line of the first error.
        line: usize,
        /// 1-based column of the first error.
        column: usize,
        /// What the JSON reader found.
        detail: String,
    },
    /// A part of the file does not have the shape of the format.
    #[error("script: {place}: {detail}")]
    ScriptShape {
        /// Which part.
        place: ScriptPlace,
        /// What serde found wrong (a missing or unknown field, a wrong type).
        detail: String,
    },
    /// A tool call in a round has an empty name.
    #[error("script: turns[{turn}].rounds[{round}].tool_calls[{call}]: the name is empty")]
    ScriptEmptyToolName {
        /// 0-based index into `turns`.
        turn: usize,
        /// 0-based index into the turn's `rounds`.
        round: usize,
        /// 0-based index into the round's `tool_calls`.
        call: usize,
    },
}
