//! The tools the turn loop answers itself: the two always-on ones and `compact_context`.

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

pub const COMPACT_CONTEXT: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CompactContext,
    "Fold the older conversation into a summary so the session keeps fitting the model's context window. Plans, the checklist, kept results and recent files are kept. `instructions`: what the summary must keep; `model`: a configured model to summarise with, only when the person named one.",
    compact_context,
);

fn compact_context() -> Value {
    json!({"type": "object", "properties": {
        "instructions": {"type": "string", "description": "what the summary must keep"},
        "model": {"type": "string", "description": "a configured model id or a unique part of one"}}})
}

/// The tools the turn loop answers itself rather than the daemon's registry: the always-on
/// two, then `compact_context` (which the loop runs because it rewrites the conversation).
pub const LOOP_TOOLS: [CatalogueEntry; 3] = [SEARCH_TOOLS, REQUEST_CAPABILITY, COMPACT_CONTEXT];
