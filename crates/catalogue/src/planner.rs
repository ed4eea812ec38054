//! `planner`: the session's checklist, the catalogue's seven todo tools as one.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;

pub const PLANNER: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::Planner,
    "The session's checklist. action: read; replace (markdown, `- [ ] item` lines); add (content, status, after_index); update (index, content, status); remove (index); move (from_index, to_index); archive (mark all done, start afresh). Indexes are zero-based; status is pending, in_progress or completed.",
    planner,
);

fn planner() -> Value {
    json!({
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["read", "replace", "add", "update", "remove", "move", "archive"]},
            "markdown": {"type": "string"},
            "content": {"type": "string"},
            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
            "index": {"type": "integer", "minimum": 0},
            "after_index": {"type": "integer", "minimum": 0},
            "from_index": {"type": "integer", "minimum": 0},
            "to_index": {"type": "integer", "minimum": 0}
        },
        "required": ["action"]
    })
}
