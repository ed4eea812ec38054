//! Self-configuration: the six tools that read the configuration file and stage, commit and
//! roll back edits of it. Staging changes nothing in force; a commit is judged by the person
//! on its card, with the diff and what the change would have done to past decisions.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;

/// The most commands one `config_set` stages.
pub const COMMANDS_MAX: usize = 50;
/// The longest command, in bytes.
pub const COMMAND_MAX_BYTES: usize = 4096;

pub const CONFIG_GET: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::ConfigGet,
    "Read Codaris's configuration file (TOML) at a dotted path: `tools.command_allowlist`, `mcp.servers.docs`, `hooks.pre_tool_use[0]`; `.` (the default) is the whole file. Keys, tokens and credentials are always shown as <redacted>.",
    config_get,
);

fn config_get() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "a dotted path; `.` for the whole file"}
        }
    })
}

pub const CONFIG_CHANGES: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::ConfigChanges,
    "List the staged configuration commands a config_commit would apply, with the diff of the file they make.",
    no_arguments,
);

pub const CONFIG_SET: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::ConfigSet,
    "Stage edits of the configuration file, checked as they are staged; nothing is in force until config_commit. Each command: `set PATH=VALUE`, `add_list PATH=VALUE` (append to a list, or a `{ ... }` table to `hooks.pre_tool_use`), `del_list PATH=VALUE`, `delete PATH`. Text needs no quotes (`set provider.model=gpt-4o`); other values are TOML (`true`, `5`, `[\"a\", \"b\"]`).",
    config_set,
);

fn config_set() -> Value {
    json!({
        "type": "object",
        "properties": {
            "commands": {
                "type": "array",
                "items": {"type": "string", "maxLength": COMMAND_MAX_BYTES},
                "minItems": 1,
                "maxItems": COMMANDS_MAX
            }
        },
        "required": ["commands"]
    })
}

pub const CONFIG_REVERT: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::ConfigRevert,
    "Discard staged configuration commands: all of them, or only those at or under `path`.",
    config_revert,
);

fn config_revert() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "a dotted path; all staged commands when absent"}
        }
    })
}

pub const CONFIG_COMMIT: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::ConfigCommit,
    "Apply the staged configuration commands: the whole file is validated as the daemon reads it at start, the previous file is kept as a snapshot, the new one is written and the running daemon reloads it (allowed roots, allowlists, output limits, profiles, registries, MCP servers, hooks). The person agrees on a card showing the diff and which past decisions the change would have turned.",
    no_arguments,
);

pub const CONFIG_ROLLBACK: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::ConfigRollback,
    "Put back the configuration file the last config_commit replaced, and reload it. The person agrees on a card showing the diff.",
    no_arguments,
);

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}
