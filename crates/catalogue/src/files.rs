//! The file tools: reading, searching, editing and changing the tree beneath an allowed root.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;

pub const READ_FILE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::ReadFile,
    "Read a file; lines come numbered (`N<tab>text`). `offset` (1-based first line) and `limit` (line count) page a long file. UTF-16 and legacy code pages are converted to UTF-8. A PNG, JPEG, GIF (first frame) or WebP file read whole is returned as a picture. Other binaries are refused. A directory is listed (`recursive`, `show_hidden`).",
    read_file,
);

fn read_file() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file or directory"},
            "offset": {"type": "integer", "minimum": 1},
            "limit": {"type": "integer", "minimum": 1},
            "recursive": {"type": "boolean"},
            "show_hidden": {"type": "boolean"},
            "keep": {"type": "boolean", "description": "keep this result when old results are evicted"}
        },
        "required": ["path"]
    })
}

pub const KEEP_RESULT: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::KeepResult,
    "Keep an earlier result in context when old results are evicted: a read_file page (`path`, with the `offset`/`limit` you read) or a grep result (its `pattern`, and `path` if you gave one).",
    keep_result,
);

fn keep_result() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "offset": {"type": "integer", "minimum": 1},
            "limit": {"type": "integer", "minimum": 1},
            "pattern": {"type": "string", "description": "the grep pattern of the result to keep"}
        }
    })
}

pub const GLOB: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::Glob,
    "Find files by glob pattern (`**/*.rs`, `src/*.{c,h}`; a pattern without `/` matches names at any depth) under `path` (default the working directory). Newest first, at most 100. Skips hidden and .gitignored files.",
    glob,
);

fn glob() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pattern": {"type": "string"},
            "path": {"type": "string", "description": "directory to search; default the working directory"}
        },
        "required": ["pattern"]
    })
}

pub const GREP: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::Grep,
    "Search file contents with a regular expression (Rust regex syntax) under `path` (a directory or file; default the working directory). `glob` filters files (`*.py`). Case-sensitive unless `case_sensitive` is false. Prints `path:line:text`, at most `max_results` (default 100). Respects .gitignore; skips hidden and binary files.",
    grep,
);

fn grep() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pattern": {"type": "string"},
            "path": {"type": "string"},
            "glob": {"type": "string"},
            "case_sensitive": {"type": "boolean"},
            "max_results": {"type": "integer", "minimum": 1},
            "keep": {"type": "boolean", "description": "keep this result when old results are evicted"}
        },
        "required": ["pattern"]
    })
}

pub const PRINT_TREE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::PrintTree,
    "Print a directory tree like `tree` (hidden entries skipped). `depth` levels, default 3.",
    print_tree,
);

fn print_tree() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "directory; default the working directory"},
            "depth": {"type": "integer", "minimum": 1}
        }
    })
}

pub const EDIT: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::Edit,
    "Replace exact text in a file: `oldString` must match once, whitespace included (without read_file's line numbers), unless `replaceAll`. Line endings are kept (CRLF stays CRLF).",
    edit,
);

fn edit() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "oldString": {"type": "string"},
            "newString": {"type": "string"},
            "replaceAll": {"type": "boolean"}
        },
        "required": ["path", "oldString", "newString"]
    })
}

pub const WRITE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::Write,
    "Create or overwrite a file with `content`; missing parent directories are created. Prefer `edit` to change part of an existing file.",
    write,
);

fn write() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "content": {"type": "string"}
        },
        "required": ["path", "content"]
    })
}

pub const APPLY_PATCH: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::ApplyPatch,
    "Apply a unified diff or a Codex V4A patch (`*** Begin Patch` … `*** End Patch` with Add/Update/Delete File, Move to, `@@` anchors). File names are relative to `path` (default the working directory). All or nothing: if any hunk does not apply, no file changes.",
    apply_patch,
);

fn apply_patch() -> Value {
    json!({
        "type": "object",
        "properties": {
            "patch": {"type": "string"},
            "path": {"type": "string", "description": "directory the patch's file names are relative to"}
        },
        "required": ["patch"]
    })
}

/// `{"path"}` required, with one optional boolean `flag`: the shape of the small tree tools.
fn path_schema(flag: Option<&str>) -> Value {
    let mut properties = json!({"path": {"type": "string"}});
    if let (Some(flag), Some(map)) = (flag, properties.as_object_mut()) {
        map.insert(flag.to_owned(), json!({"type": "boolean"}));
    }
    json!({"type": "object", "properties": properties, "required": ["path"]})
}

pub const MKDIR: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::Mkdir,
    "Create a directory; `parents` creates missing parents and accepts an existing directory (mkdir -p).",
    || path_schema(Some("parents")),
);

pub const RMDIR: CatalogueEntry =
    CatalogueEntry::new(BuiltinTool::Rmdir, "Remove an empty directory.", || {
        path_schema(None)
    });

pub const TOUCH: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::Touch,
    "Create an empty file, or set an existing one's modification time to now. `create_parents` creates missing parent directories.",
    || path_schema(Some("create_parents")),
);

pub const RM: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::Rm,
    "Remove a file or symlink; a directory needs `recursive` (removes everything under it).",
    || path_schema(Some("recursive")),
);

pub const MV: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::Mv,
    "Move or rename `src` to `dst`; missing parents of `dst` are created, an existing file at `dst` is replaced, and a `dst` directory receives `src` inside it.",
    mv,
);

fn mv() -> Value {
    json!({
        "type": "object",
        "properties": {"src": {"type": "string"}, "dst": {"type": "string"}},
        "required": ["src", "dst"]
    })
}
