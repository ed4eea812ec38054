//! The scheduler's eleven tools: jobs as Markdown files (`docs/scheduler.md`), each run a
//! background agent task under the job's session. Every per-job tool takes `scope` (`user`,
//! the default, or `project`: the session's `<cwd>/.codaris/scheduler`, whose jobs run only once
//! the operator approved them; no tool approves one) and `job_id` (the file's basename).

use serde_json::{Map, Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;

/// The most runs `codaris_scheduler_job_runs` lists.
pub const RUNS_LIMIT_MAX: u64 = 100;

pub const JOBS_LIST: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisSchedulerJobsList,
    "List the scheduled jobs: the user's and this project's, each with its scope, schedule, next run, whether it is paused and (a project job) whether the operator approved it. include_body: also each job's prompt.",
    jobs_list,
);
pub const JOB_GET: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisSchedulerJobGet,
    "Load one scheduled job: its fields, its prompt, its last and next run.",
    job_key,
);
pub const JOB_RUNS: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisSchedulerJobRuns,
    "List a job's runs, newest first: the run session holding its transcript, what triggered it (schedule, missed, manual), its status and timing.",
    job_runs,
);
pub const JOB_CREATE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisSchedulerJobCreate,
    "Create a scheduled job file. schedule: a cron expression (`0 3 * * *`, `@daily`) or `every 30m`/`every 2h`/`every 1d`; timezone: an IANA zone the cron schedule is read in (default the daemon's). body: the prompt each run is given. mode (agent, plan, ask) and permission_mode (ask, accept_edits, bypass) bound what a run may do; a card a run raises is denied. A project job runs only once the operator approved it with `codaris scheduler approve`.",
    job_full,
);
pub const JOB_REPLACE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisSchedulerJobReplace,
    "Replace every field of a scheduled job (fields left out take their defaults). A replaced project job needs approving again.",
    job_full,
);
pub const JOB_PATCH: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisSchedulerJobPatch,
    "Change only the given fields of a scheduled job; new_job_id renames it (its run history follows). A changed project job needs approving again.",
    job_patch,
);
pub const JOB_PAUSE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisSchedulerJobPause,
    "Pause a scheduled job: it no longer runs on its schedule (job_run still starts one).",
    job_key,
);
pub const JOB_RESUME: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisSchedulerJobResume,
    "Resume a paused scheduled job: its next run is computed from now.",
    job_key,
);
pub const JOB_DELETE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisSchedulerJobDelete,
    "Delete a scheduled job, its state and its run history; refused while a run is in flight (job_cancel it first).",
    job_key,
);
pub const JOB_RUN: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisSchedulerJobRun,
    "Start one run of a job now, as a background agent task under the job's session; answers with the run session. Refused while a run of the job is in flight.",
    job_key,
);
pub const JOB_CANCEL: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CodarisSchedulerJobCancel,
    "Stop the run of a job that is in flight.",
    job_key,
);

fn key_properties() -> Map<String, Value> {
    let mut props = Map::new();
    props.insert(
        "scope".to_owned(),
        json!({"type": "string", "enum": ["user", "project"], "description": "default user"}),
    );
    props.insert(
        "job_id".to_owned(),
        json!({"type": "string", "description": "the job file's basename: a-z, 0-9, `-`, `_`"}),
    );
    props
}

fn field_properties(props: &mut Map<String, Value>) {
    for (name, schema) in [
        ("description", json!({"type": "string"})),
        (
            "schedule",
            json!({"type": "string", "description": "cron expression or `every <n><s|m|h|d>`"}),
        ),
        ("timezone", json!({"type": "string"})),
        ("paused", json!({"type": "boolean"})),
        (
            "cwd",
            json!({"type": "string", "description": "absolute; default the project (or home) directory"}),
        ),
        ("model", json!({"type": "string"})),
        (
            "mode",
            json!({"type": "string", "enum": ["agent", "plan", "ask"]}),
        ),
        ("agent", json!({"type": "string"})),
        (
            "permission_mode",
            json!({"type": "string", "enum": ["ask", "accept_edits", "bypass"]}),
        ),
        (
            "body",
            json!({"type": "string", "description": "the prompt each run is given"}),
        ),
    ] {
        props.insert(name.to_owned(), schema);
    }
}

fn object(props: Map<String, Value>, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required})
}

fn jobs_list() -> Value {
    let mut props = Map::new();
    props.insert("include_body".to_owned(), json!({"type": "boolean"}));
    object(props, &[])
}

fn job_key() -> Value {
    object(key_properties(), &["job_id"])
}

fn job_runs() -> Value {
    let mut props = key_properties();
    props.insert(
        "limit".to_owned(),
        json!({"type": "integer", "minimum": 1, "maximum": RUNS_LIMIT_MAX}),
    );
    object(props, &["job_id"])
}

fn job_full() -> Value {
    let mut props = key_properties();
    field_properties(&mut props);
    object(props, &["job_id", "description", "schedule", "body"])
}

fn job_patch() -> Value {
    let mut props = key_properties();
    props.insert("new_job_id".to_owned(), json!({"type": "string"}));
    field_properties(&mut props);
    object(props, &["job_id"])
}
