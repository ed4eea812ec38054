//! The Nextflow tools that read what a run left on disk: its status, its error, and its
//! failing task's work directory.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;

/// The description of a `path` argument naming where a run was launched.
const LAUNCH_DIR: &str = "Where the run was launched: the directory holding .nextflow.log, .nextflow/ and work/ \
     (usually the pipeline's); default: the working directory.";

pub const CHECK_RUN_STATUS: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CheckRunStatus,
    "The status of a Nextflow run from what it left on disk (.nextflow/history, the trace, the \
     work directories): running or finished, OK or failed, duration, tasks completed, failed, \
     cached and running, and the process running now. Correct for a run still in progress; a \
     run just launched that Nextflow has not recorded yet is reported as starting.",
    check_run_status,
);

fn check_run_status() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": LAUNCH_DIR},
            "run": {"type": "string", "description": "The run's name (e.g. tiny_euler) or session id; default: the last run."}
        },
        "additionalProperties": false
    })
}

pub const ANALYZE_RUN_LOG: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::AnalyzeRunLog,
    "Why a Nextflow run failed, from what it left or what the user has: a launch directory \
     (its .nextflow.log), a log or console file of any name (nextflow.log, log.txt, \
     console.txt), or pasted console/log text. Either console style (the ANSI table or \
     `-ansi-log false`, `ERROR ~` blocks, agent mode) and .nextflow.log lines are read wherever \
     they are. Gives the failing process and tag, exit status, the command, its stdout and \
     stderr, the work directory, or the other error forms (No such variable, config errors, \
     Unknown method, missing outputs), with a likely cause and a next step.",
    analyze_run_log,
);

fn analyze_run_log() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "A launch directory (the one holding .nextflow.log; default: the working directory), or a log or console file of any name."},
            "run": {"type": "string", "description": "With a launch directory: the run's name; default: the last run (.nextflow.log). Older runs are looked for in .nextflow.log.1 … .9."},
            "text": {"type": "string", "description": "Console output or log lines the user pasted, instead of `path`; at most the last 1 MiB is read (the answer says when the start was cut)."}
        },
        "additionalProperties": false
    })
}

pub const DEBUG_LAST_RUN: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::DebugLastRun,
    "Open the failing task of the last Nextflow run: its .command.sh, the tail of .command.err \
     and .command.out, .exitcode, the staged inputs (dangling links named), the container, \
     resources asked and used, and the pipeline file and settings of its process.",
    debug_last_run,
);

fn debug_last_run() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": LAUNCH_DIR}
        },
        "additionalProperties": false
    })
}
