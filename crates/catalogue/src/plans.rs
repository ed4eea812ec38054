//! The design plans: documents in the session's workspace at `plans/<slug>.plan.md`, and
//! `plan_exit`, which asks the person to leave plan mode.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;
use crate::limits::PLAN_SLUG_MAX;

pub const PLAN_WRITE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::PlanWrite,
    "Write or replace a plan document of this session (`plans/<slug>.plan.md` in its workspace; Markdown, first line a `# heading`, at most 256 KiB). The plan is re-read after the context is compacted. slug: lowercase letters, digits and `-`, starting with a letter or digit.",
    plan_write,
);

pub const PLAN_LIST: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::PlanList,
    "List this session's plan documents, sorted by slug: each slug with its first heading and size.",
    no_args,
);

pub const PLAN_READ: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::PlanRead,
    "Read one plan document of this session by its slug.",
    plan_read,
);

pub const PLAN_EXIT: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::PlanExit,
    "Ask the user to leave plan mode: a card shows them the plans; if they agree, the session is in agent mode (every tool) from its next turn. Call it once the plan is written and ready to carry out.",
    no_args,
);

fn slug() -> Value {
    json!({
        "type": "string",
        "pattern": "^[a-z0-9][a-z0-9-]*$",
        "maxLength": PLAN_SLUG_MAX
    })
}

fn plan_write() -> Value {
    json!({
        "type": "object",
        "properties": {
            "slug": slug(),
            "content": {"type": "string"}
        },
        "required": ["slug", "content"]
    })
}

fn plan_read() -> Value {
    json!({
        "type": "object",
        "properties": {"slug": slug()},
        "required": ["slug"]
    })
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}
