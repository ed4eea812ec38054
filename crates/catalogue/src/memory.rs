//! The memory subagent's six tools: notes as Markdown files under two scopes, `user` (the
//! person's, in the configuration directory) and `project` (the session's directory's
//! `.codaris/memory`), each addressed `scope:relative/path.md`. Only a memory subagent is ever
//! given them (the policy withholds them from every other task).

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;

/// The longest note, in bytes: a note is a few paragraphs a later session reads, not a file.
pub const MEMORY_NOTE_MAX_BYTES: usize = 64 * 1024;
/// The longest note address (`scope:relative/path.md`), in bytes.
pub const MEMORY_PATH_MAX_BYTES: usize = 512;
/// The most hits `codaris_memory_search` returns.
pub const MEMORY_SEARCH_LIMIT: usize = 8;

pub const CODARIS_MEMORY_SEARCH: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisMemorySearch,
    "Rank the memory notes against a query, best first: each hit names the note (`scope:relative/path.md`, to read with codaris_memory_read) and its title. scope: `user`, `project` or `all` (default).",
    codaris_memory_search,
);

pub const CODARIS_MEMORY_LIST: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisMemoryList,
    "List the folders and notes one level under a memory path (`user:`, `project:`, `project:cluster`); with no path, both scopes' roots.",
    codaris_memory_list,
);

pub const CODARIS_MEMORY_READ: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisMemoryRead,
    "Read one memory note by its path (`project:cluster/slurm.md`).",
    codaris_memory_read,
);

pub const CODARIS_MEMORY_MKDIR: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisMemoryMkdir,
    "Create a folder (and the folders above it) under a memory scope (`project:cluster`).",
    codaris_memory_mkdir,
);

pub const CODARIS_MEMORY_SAVE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisMemorySave,
    "Write a memory note, or overwrite the one at that path: a title and a Markdown body, under scope `user` (the person's, every project) or `project` (this project's) at relative_path (`cluster/slurm.md`, `.md` added when missing). Keep notes short and factual: what a later session should know.",
    codaris_memory_save,
);

pub const CODARIS_MEMORY_DELETE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisMemoryDelete,
    "Delete a memory note, or a folder with everything under it; never a scope's root.",
    codaris_memory_delete,
);

fn path_schema(description: &str) -> Value {
    json!({"type": "string", "maxLength": MEMORY_PATH_MAX_BYTES, "description": description})
}

fn codaris_memory_search() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "scope": {"type": "string", "enum": ["user", "project", "all"]}
        },
        "required": ["query"]
    })
}

fn codaris_memory_list() -> Value {
    json!({
        "type": "object",
        "properties": {"path": path_schema("`user:`, `project:` or a folder under one")}
    })
}

fn codaris_memory_read() -> Value {
    json!({
        "type": "object",
        "properties": {"path": path_schema("`scope:relative/path.md`")},
        "required": ["path"]
    })
}

fn codaris_memory_mkdir() -> Value {
    json!({
        "type": "object",
        "properties": {"path": path_schema("`scope:relative/folder`")},
        "required": ["path"]
    })
}

fn codaris_memory_save() -> Value {
    json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 200},
            "body": {"type": "string", "maxLength": MEMORY_NOTE_MAX_BYTES},
            "scope": {"type": "string", "enum": ["user", "project"]},
            "relative_path": {"type": "string", "maxLength": MEMORY_PATH_MAX_BYTES}
        },
        "required": ["title", "body", "scope", "relative_path"]
    })
}

fn codaris_memory_delete() -> Value {
    json!({
        "type": "object",
        "properties": {"path": path_schema("`scope:relative/path.md` or a folder")},
        "required": ["path"]
    })
}
