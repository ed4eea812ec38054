//! The two always-on tools the turn loop answers itself.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;

pub const SEARCH_TOOLS: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::SearchTools,
    "Find a tool, skill or reference by what it should do, in plain words. Found tools are bound from your next step for this turn and the two after it; skills and references give a path to read.",
    search_tools,
);

fn search_tools() -> Value {
    json!({"type": "object", "properties": {
        "query": {"type": "string", "description": "what you need, in a few plain words"},
        "kind": {"type": "string", "enum": ["any", "tool", "core", "mcp", "skill", "reference"]}},
        "required": ["query"]})
}

pub const REQUEST_CAPABILITY: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::RequestCapability,
    "Ask the person for a capability a refusal named (e.g. mutate_outside_fence on a path). They answer on a card: once, for the session, or no. Ask only after a refusal, with a one-line reason.",
    request_capability,
);

fn request_capability() -> Value {
    json!({"type": "object", "properties": {
        "capability": {"type": "string"},
        "path": {"type": "string", "description": "the path, origin or tool the refusal named"},
        "reason": {"type": "string"}},
        "required": ["capability", "reason"]})
}

/// The tools the turn loop answers itself rather than the daemon's registry.
pub const LOOP_TOOLS: [CatalogueEntry; 2] = [SEARCH_TOOLS, REQUEST_CAPABILITY];
