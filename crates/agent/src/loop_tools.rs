//! The two always-on tools the turn loop answers itself, as the model is shown them.

use serde_json::json;

use crate::provider::{ToolSpec, ToolTier};

/// `search_tools` and `request_capability`, by name.
pub fn loop_tool_spec(name: &str) -> Option<ToolSpec> {
    let (description, schema) = match name {
        "search_tools" => (
            "Find a tool, skill or reference by what it should do, in plain words. Found tools are bound from your next step for this turn and the two after it; skills and references give a path to read.",
            json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "what you need, in a few plain words"},
                "kind": {"type": "string", "enum": ["any", "tool", "core", "mcp", "skill", "reference"]}},
                "required": ["query"]}),
        ),
        "request_capability" => (
            "Ask the person for a capability a refusal named (e.g. mutate_outside_fence on a path). They answer on a card: once, for the session, or no. Ask only after a refusal, with a one-line reason.",
            json!({"type": "object", "properties": {
                "capability": {"type": "string"},
                "path": {"type": "string", "description": "the path, origin or tool the refusal named"},
                "reason": {"type": "string"}},
                "required": ["capability", "reason"]}),
        ),
        _ => return None,
    };
    Some(ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: schema,
        tier: ToolTier::AlwaysOn,
    })
}
