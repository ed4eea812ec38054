//! `session_describe`: the session's own filing, its title and tags.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;
use crate::limits::{TAG_MAX_CHARS, TAGS_MAX, TITLE_MAX_CHARS};

pub const SESSION_DESCRIBE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::SessionDescribe,
    "Read this session's title and tags, or change them; with no arguments it only reports them. title: one line (the first prompt is the title until one is set). tags replaces every tag; add_tags and remove_tags edit them and cannot go with tags. A tag is lowercased: letters, digits, `-`, `_`, `.` and `/`.",
    session_describe,
);

fn session_describe() -> Value {
    let tags = json!({"type": "array", "items": {"type": "string", "maxLength": TAG_MAX_CHARS}, "maxItems": TAGS_MAX});
    json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": TITLE_MAX_CHARS},
            "tags": tags,
            "add_tags": tags,
            "remove_tags": tags
        }
    })
}
