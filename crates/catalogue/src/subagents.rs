//! `spawn_agent`: the model hands a self-contained task to a subagent, a child session of the
//! same daemon with its own turn and conversation. The bounds are constants here that the tool
//! enforces.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;
use crate::session::Reasoning;

/// The longest task a child is given, in bytes: a brief, not a corpus (it can read files).
pub const PROMPT_MAX_BYTES: usize = 32 * 1024;
/// The longest `description` (a few words shown while the child works).
pub const DESCRIPTION_MAX_CHARS: usize = 120;
/// The longest a child may run, in seconds (a day); the default is the hour below.
pub const TIMEOUT_MAX_SECONDS: u64 = 24 * 60 * 60;
/// How long a child runs when the call names no `timeout_seconds`.
pub const TIMEOUT_DEFAULT_SECONDS: u64 = 60 * 60;

pub const SPAWN_AGENT: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::SpawnAgent,
    "Delegate a self-contained task to a subagent: a child session with its own turn and conversation that has your tools (less question, plan_exit and configuration), decided by the same policy, grants and permission mode. agent: a definition's name (default general). prompt: the whole task; the child sees nothing else of this conversation. description: a few words shown while it works. By default you wait for its report; background: true returns at once and its report wakes you when it ends (notify_on_finish: false: no wake, the report waits for your next turn). resume: a finished child's session id, to continue it with a new prompt. model and reasoning: as switch_model names them. timeout_seconds: how long it may run (default 3600).",
    spawn_agent,
);

fn spawn_agent() -> Value {
    json!({
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "an agent definition's name; default general"},
            "prompt": {"type": "string", "maxLength": PROMPT_MAX_BYTES},
            "description": {"type": "string", "maxLength": DESCRIPTION_MAX_CHARS},
            "model": {"type": "string", "description": "a configured model id or a unique part of one"},
            "reasoning": {"type": "string", "enum": Reasoning::NAMES},
            "background": {"type": "boolean"},
            "expected_seconds": {"type": "integer", "minimum": 1},
            "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": TIMEOUT_MAX_SECONDS},
            "notify_on_finish": {"type": "boolean"},
            "resume": {"type": "string", "description": "a finished child's session id"}
        },
        "required": ["prompt", "description"]
    })
}
