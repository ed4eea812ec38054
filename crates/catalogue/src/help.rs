//! The model's own help: `load_skill` (a catalogued skill's full instructions) and Codaris's
//! built-in documentation, `codaris_docs_search` and `codaris_docs_read`.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;
use crate::limits::{DOCS_SEARCH_LIMIT_MAX, SKILL_NAME_MAX_CHARS};

pub const LOAD_SKILL: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::LoadSkill,
    "Load the full instructions of a catalogued skill by name (a `[skill]` hit of search_tools), with the files beside it listed to read with read_file.",
    load_skill,
);

pub const CODARIS_DOCS_SEARCH: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisDocsSearch,
    "Search Codaris's own documentation (its manual, built in) by section: how to configure Codaris, add an MCP server, skills, providers and models, permissions, sessions, the CLI. Each hit names a section to read with codaris_docs_read.",
    codaris_docs_search,
);

pub const CODARIS_DOCS_READ: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisDocsRead,
    "Read a page or a section (`page#section`, as codaris_docs_search names it) of Codaris's built-in documentation; with no page, its contents. Long pages come in parts: offset is the line to start at.",
    codaris_docs_read,
);

fn load_skill() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": SKILL_NAME_MAX_CHARS}
        },
        "required": ["name"]
    })
}

fn codaris_docs_search() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "maximum": DOCS_SEARCH_LIMIT_MAX}
        },
        "required": ["query"]
    })
}

fn codaris_docs_read() -> Value {
    json!({
        "type": "object",
        "properties": {
            "page": {"type": "string"},
            "offset": {"type": "integer", "minimum": 1}
        }
    })
}
