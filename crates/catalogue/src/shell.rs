//! The command tools: `run_command`, its background tasks, the preview server, sharing a file,
//! SSH and worktrees.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;
use crate::limits::{COMMAND_MAX_TIMEOUT_SECONDS, WAIT_MAX_SECONDS};

pub const RUN_COMMAND: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::RunCommand,
    "Run a /bin/sh command; returns its exit code, stdout and stderr (the last 32 KiB of each). `cwd` must be inside the allowed roots. A command still running after `timeout_seconds` (default 120) moves to the background: you get its task id and the output so far. `background: true` returns a task id at once. You are told when a background task ends unless `notify_on_finish` is false. stdin is closed; TMPDIR is private; under Landlock it reads only the allowed roots, system directories and configured toolchains, and writes only the allowed roots; everything it starts is killed when the session ends.",
    run_command,
);

fn run_command() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The shell command line."},
            "cwd": {"type": "string", "description": "Directory to run in, relative to the working directory; inside the allowed roots."},
            "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": COMMAND_MAX_TIMEOUT_SECONDS, "description": "Seconds to wait before handing the command to the background (default 120)."},
            "background": {"type": "boolean", "description": "Start as a background task and return its id at once."},
            "notify_on_finish": {"type": "boolean", "description": "Be told when a background or handed-over task finishes (default true)."},
            "expected_seconds": {"type": "integer", "minimum": 0, "description": "Your estimate of the running time, shown by background_list."},
            "permission_rationale": {"type": "string", "description": "Why the command is needed, shown to the user when asked to approve it."}
        },
        "required": ["command"],
        "additionalProperties": false
    })
}

fn task_id() -> Value {
    json!({"type": "string", "description": "The task id run_command returned, e.g. `bg-1`."})
}

/// A schema without arguments.
fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

pub const BACKGROUND_LIST: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::BackgroundList,
    "List this session's background tasks: id, status, elapsed time, your estimate and the command.",
    no_arguments,
);

pub const BACKGROUND_OUTPUT: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::BackgroundOutput,
    "Return a background task's status and captured stdout and stderr (the most recent 32 KiB of each, or only the last `tail_lines` lines).",
    background_output,
);

fn background_output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "task_id": task_id(),
            "tail_lines": {"type": "integer", "minimum": 1, "description": "Only the last lines of each stream."}
        },
        "required": ["task_id"],
        "additionalProperties": false
    })
}

pub const BACKGROUND_WAIT: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::BackgroundWait,
    "Wait for a background task to finish, at most `timeout_seconds` (default 30, maximum 600), then return its status and the end of its output. The task keeps running if the wait times out.",
    background_wait,
);

fn background_wait() -> Value {
    json!({
        "type": "object",
        "properties": {
            "task_id": task_id(),
            "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": WAIT_MAX_SECONDS}
        },
        "required": ["task_id"],
        "additionalProperties": false
    })
}

pub const BACKGROUND_STOP: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::BackgroundStop,
    "Stop a background task and every process it started (its whole process group): SIGTERM, then SIGKILL after a grace period.",
    background_stop,
);

fn background_stop() -> Value {
    json!({
        "type": "object",
        "properties": {"task_id": task_id()},
        "required": ["task_id"],
        "additionalProperties": false
    })
}

pub const BACKGROUND_REAP: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::BackgroundReap,
    "Kill processes this session started that outlived the command which started them (e.g. a server a script left running) and name them.",
    no_arguments,
);

pub const PREVIEW_SERVER: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::PreviewServer,
    "Serve a directory of the project (`path`, default the working directory) as a static website on a free 127.0.0.1 port and return the address for the user to open. It runs as a background task (see background_list) until background_stop, or for `timeout_seconds` when given; index.html is served for a directory. Only GET and HEAD, only files beneath the directory.",
    preview_server,
);

fn preview_server() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Directory to serve, inside the allowed roots."},
            "timeout_seconds": {"type": "integer", "minimum": 1, "description": "Stop serving after this many seconds (default: until stopped)."},
            "notify_on_finish": {"type": "boolean", "description": "Be told when the server stops (default false)."}
        },
        "additionalProperties": false
    })
}

pub const SHARE_FILE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::ShareFile,
    "Copy one regular file (not a symlink) from the project into this session as an immutable artifact the user can download. The copy is named by its SHA-256, at most 25 MiB per file and 100 MiB per session, and its content is not shown to you.",
    share_file,
);

fn share_file() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to share, inside the allowed roots."}
        },
        "required": ["path"],
        "additionalProperties": false
    })
}

pub const SSH_RUN_COMMAND: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::SshRunCommand,
    "Run a command on a remote host over SSH (the system ssh client: agent socket, then key files, ~/.ssh/config honoured; never prompts for a password) and return its exit code, stdout and stderr (the last 32 KiB of each). The command is killed after `timeout_seconds` (default 120).",
    ssh_run_command,
);

fn ssh_run_command() -> Value {
    json!({
        "type": "object",
        "properties": {
            "host": {"type": "string", "description": "`host` or `user@host`, or a Host alias of ~/.ssh/config."},
            "command": {"type": "string", "description": "The command line, run by the remote user's shell."},
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": COMMAND_MAX_TIMEOUT_SECONDS},
            "permission_rationale": {"type": "string", "description": "Why the command is needed, shown to the user when asked to approve it."}
        },
        "required": ["host", "command"],
        "additionalProperties": false
    })
}

pub const WORKTREE_CREATE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::WorktreeCreate,
    "Fetch origin and create a git worktree for `branch` in `.worktrees/` of the current repository, branching from origin's default branch (an existing local branch is checked out instead; creation needs a reachable origin). If the branch already has a worktree it is reused. The session then works in that worktree.",
    worktree_create,
);

fn worktree_create() -> Value {
    json!({
        "type": "object",
        "properties": {
            "branch": {"type": "string", "description": "The feature branch, e.g. `fix/parser`."}
        },
        "required": ["branch"],
        "additionalProperties": false
    })
}
