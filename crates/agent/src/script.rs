//! The scripted provider's file format (a contract: tests and outside tools write these files)
//! and a pure cursor over it.
//!
//! ```json
//! {"turns": [{"rounds": [{"text": "...", "tool_calls": [{"name": "...", "args": {}}],
//!                         "usage": {"input_tokens": 1, "cache_read_tokens": 0,
//!                                   "cache_write_tokens": 0, "output_tokens": 1}}]}]}
//! ```
//!
//! Each model call in turn `k` (0-based) answers with the next round of `turns[k]`; a round
//! without tool calls ends the turn; a turn whose rounds have run out ends with the reason
//! `script_exhausted`. Unknown fields are errors, so a typo is caught rather than ignored.
//! A script may also carry `"children": [{"turns": [...]}, ...]`: the N-th subagent the
//! session spawns plays the N-th, which may carry `children` of its own; and
//! `"memory": [{"turns": [...]}, ...]`: the memory subagent of the session's turn `k` (with
//! `[memory] enabled`) plays `memory[k]`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{AgentError, ScriptPlace};
use crate::usage::Usage;

/// A whole script: one entry per turn of the session, and the scripts its subagents play.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The turns, in order.
    pub turns: Vec<ScriptTurn>,
    /// The scripts of the session's children: the N-th child `spawn_agent` starts in the
    /// session plays the N-th (and its own children play its `children`). Absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Script>,
    /// The scripts of the session's memory subagents: the one its turn `k` starts plays the
    /// `k`-th. Absent: none (a memory subagent then has nothing to say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<Script>,
}

impl Script {
    /// The script the child at `path` plays (`[1, 0]`: the first child of the second child),
    /// or `None` when the script has no entry there.
    pub fn child(&self, path: &[usize]) -> Option<&Script> {
        path.iter()
            .try_fold(self, |script, &index| script.children.get(index))
    }
}

/// The model's answers in one turn, one per model call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    /// The rounds, in order.
    pub rounds: Vec<ScriptRound>,
}

/// One model answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptRound {
    /// The text the model writes; empty when absent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The tool calls it makes; none (absent or empty) ends the turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptToolCall>,
    /// The usage this answer reports, for the usage line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    /// The tool's name, not empty.
    pub name: String,
    /// The arguments, sent as written (any JSON value, so a script can test the refusal of
    /// arguments that are not an object); `{}` when absent.
    #[serde(default = "empty_object")]
    pub args: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    turns: Vec<Value>,
    #[serde(default)]
    children: Vec<Value>,
    #[serde(default)]
    memory: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTurn {
    rounds: Vec<Value>,
}

/// Reads a script file's text. Errors name the place: `turns[1].rounds[0]: unknown field …`.
pub fn parse_script(text: &str) -> Result<Script, AgentError> {
    let value: Value = serde_json::from_str(text).map_err(|e| AgentError::ScriptSyntax {
        line: e.line(),
        column: e.column(),
        detail: without_position(&e),
    })?;
    script_of(value)
}

/// One script (the file's, or a child's) from its JSON value.
fn script_of(value: Value) -> Result<Script, AgentError> {
    let raw: RawScript = shape(value, ScriptPlace::File)?;
    let mut children = Vec::with_capacity(raw.children.len());
    for (index, child) in raw.children.into_iter().enumerate() {
        children.push(script_of(child).map_err(|inner| AgentError::ScriptChild {
            index,
            detail: inner.to_string(),
        })?);
    }
    let mut memory = Vec::with_capacity(raw.memory.len());
    for (index, script) in raw.memory.into_iter().enumerate() {
        memory.push(script_of(script).map_err(|inner| AgentError::ScriptMemory {
            index,
            detail: inner.to_string(),
        })?);
    }
    let mut turns = Vec::with_capacity(raw.turns.len());
    for (turn, value) in raw.turns.into_iter().enumerate() {
        let raw_turn: RawTurn = shape(value, ScriptPlace::Turn { turn })?;
        let mut rounds = Vec::with_capacity(raw_turn.rounds.len());
        for (round, value) in raw_turn.rounds.into_iter().enumerate() {
            let parsed: ScriptRound = shape(value, ScriptPlace::Round { turn, round })?;
            if let Some(call) = parsed
                .tool_calls
                .iter()
                .position(|c| c.name.trim().is_empty())
            {
                return Err(AgentError::ScriptEmptyToolName { turn, round, call });
            }
            rounds.push(parsed);
        }
        turns.push(ScriptTurn { rounds });
    }
    Ok(Script {
        turns,
        children,
        memory,
    })
}

fn shape<T: serde::de::DeserializeOwned>(
    value: Value,
    place: ScriptPlace,
) -> Result<T, AgentError> {
    let found = match &value {
        Value::Object(_) => None,
        Value::Null => Some("null"),
        Value::Bool(_) => Some("a boolean"),
        Value::Number(_) => Some("a number"),
        Value::String(_) => Some("a string"),
        Value::Array(_) => Some("a list"),
    };
    if let Some(found) = found {
        return Err(AgentError::ScriptShape {
            place,
            detail: format!("expected an object, found {found}"),
        });
    }
    serde_json::from_value(value).map_err(|e| AgentError::ScriptShape {
        place,
        detail: without_position(&e),
    })
}

/// serde_json's message without the ` at line L column C` it appends (the error carries those
/// as fields, and a value has no lines).
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// What the scripted model answers to one call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScriptStep<'a> {
    /// The next round of the turn.
    Round {
        /// The round.
        round: &'a ScriptRound,
        /// Its 0-based index in the turn.
        index: usize,
        /// True when it has no tool calls, which ends the turn.
        ends_turn: bool,
    },
    /// The turn has no round left: end it with `script_exhausted`.
    Exhausted,
}

/// Where the scripted model is in each turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScriptCursor {
    script: Script,
    next: Vec<usize>,
}

impl ScriptCursor {
    /// A cursor at the start of every turn.
    pub fn new(script: Script) -> ScriptCursor {
        let next = vec![0; script.turns.len()];
        ScriptCursor { script, next }
    }

    /// The script being played.
    pub fn script(&self) -> &Script {
        &self.script
    }

    /// Answers a model call in turn `turn` (0-based): the turn's next round, or `Exhausted`
    /// when it has none left (or the script has no such turn).
    pub fn next_round(&mut self, turn: usize) -> ScriptStep<'_> {
        let (Some(rounds), Some(next)) = (self.script.turns.get(turn), self.next.get_mut(turn))
        else {
            return ScriptStep::Exhausted;
        };
        let index = *next;
        match rounds.rounds.get(index) {
            Some(round) => {
                *next += 1;
                ScriptStep::Round {
                    round,
                    index,
                    ends_turn: round.tool_calls.is_empty(),
                }
            }
            None => ScriptStep::Exhausted,
        }
    }
}
