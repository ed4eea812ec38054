//! The built-in tools as data, so the daemon and an offline auditor agree on them.
//!
//! Classes and modes follow the tools catalogue (`read` is `read_file` here, `coddy_` is
//! `codaris_`, the seven todo tools are one `planner`); the domain tools of the tool-surface
//! spec are Codaris's own choices, argued in `docs/decision-codes.md`. Arguments that look like
//! paths but are not file-system paths (`config_get`'s dotted key, memory notes' `scope:rel`)
//! are deliberately not listed as path arguments.

use crate::spec::{
    Access::{Mutate, Read},
    Effect, Modes, PathArg,
    PathDefault::{Cwd, Optional, Required},
    PermissionClass as C, ToolSpec, Withholding,
};

/// The always-on surface, in the order the model is sent it (the prompt cache depends on it).
pub const ALWAYS_ON: [&str; 9] = [
    "search_tools",
    "request_capability",
    "read_file",
    "glob",
    "grep",
    "edit",
    "write",
    "run_command",
    "planner",
];

const NO_PATHS: &[PathArg] = &[];
const READ_REQUIRED: &[PathArg] = &[PathArg::new("path", Read, Required)];
const READ_OPTIONAL: &[PathArg] = &[PathArg::new("path", Read, Optional)];
const READ_CWD: &[PathArg] = &[PathArg::new("path", Read, Cwd)];
const MUTATE_REQUIRED: &[PathArg] = &[PathArg::new("path", Mutate, Required)];
const MUTATE_CWD: &[PathArg] = &[PathArg::new("path", Mutate, Cwd)];
const MOVE: &[PathArg] = &[
    PathArg::new("src", Mutate, Required),
    PathArg::new("dst", Mutate, Required),
];
// A command may change anything beneath the directory it runs in, so its `cwd` is a mutation.
const COMMAND_CWD: &[PathArg] = &[PathArg::new("cwd", Mutate, Cwd)];
const HTTP: &[PathArg] = &[
    PathArg::new("body_file", Read, Optional),
    PathArg::new("output_file", Mutate, Optional),
];
const JOB_CWD: &[PathArg] = &[PathArg::new("cwd", Mutate, Optional)];
// The pipeline's directory is the one `run_pipeline` is asked for. The samplesheet and the
// other files `params` names are held to the fence by the tool, which reads inside them.
const PIPELINE_RUN: &[PathArg] = &[
    PathArg::new("path", Mutate, Cwd),
    PathArg::new("params_file", Read, Optional),
    PathArg::new("outdir", Mutate, Optional),
    PathArg::new("launch_dir", Mutate, Optional),
];
// An autopilot attempt, and a test run, run the pipeline in its own directory with its
// defaults (a test's reports go to the pipeline's `.codaris/tests`).
const PIPELINE_ATTEMPT: &[PathArg] = &[PathArg::new("path", Mutate, Cwd)];
// The gate reads the sheet and the schema; what it records goes to the ledger, not a file.
const SAMPLESHEET: &[PathArg] = &[
    PathArg::new("path", Read, Cwd),
    PathArg::new("samplesheet", Read, Required),
    PathArg::new("schema", Read, Optional),
];
const VALIDATE: &[PathArg] = &[
    PathArg::new("path", Read, Cwd),
    PathArg::new("params_file", Read, Optional),
];
// The plan is read; the pipeline it patches is changed.
const REMEDIATE: &[PathArg] = &[
    PathArg::new("path", Mutate, Cwd),
    PathArg::new("plan", Read, Optional),
];
// The data lands in the pipeline's test directory and its test configuration is rewritten.
const TEST_DATA: &[PathArg] = &[PathArg::new("path", Mutate, Cwd)];
// The new pipeline's directory is made inside `outdir`.
const CLONE: &[PathArg] = &[PathArg::new("outdir", Mutate, Cwd)];

const fn t(name: &'static str, c: C, e: Effect, p: &'static [PathArg], m: Modes) -> ToolSpec {
    ToolSpec::builtin(name, c, e, p, m)
}

use Effect::{Command, Config, Opaque, Paths, ReadOnly};
use Modes as M;

/// Every built-in tool: the always-on nine first, then the catalogue's sections, then the
/// domain tools of the tool surface.
pub static BUILTIN: &[ToolSpec] = &[
    // The always-on surface. `planner` only edits the session's checklist, hence read-only.
    t("search_tools", C::None, ReadOnly, NO_PATHS, M::ALL),
    t("request_capability", C::None, ReadOnly, NO_PATHS, M::ALL),
    t("read_file", C::None, ReadOnly, READ_REQUIRED, M::ALL),
    t("glob", C::None, ReadOnly, READ_CWD, M::ALL),
    t("grep", C::None, ReadOnly, READ_CWD, M::ALL),
    t("edit", C::Write, Paths, MUTATE_REQUIRED, M::AGENT),
    t("write", C::Write, Paths, MUTATE_REQUIRED, M::AGENT),
    t(
        "run_command",
        C::Command,
        Command,
        COMMAND_CWD,
        M::AGENT_PLAN,
    ),
    t("planner", C::None, ReadOnly, NO_PATHS, M::AGENT).withheld(Withholding::ExtensionWorkspace),
    // Files.
    t("keep_result", C::None, ReadOnly, READ_OPTIONAL, M::ALL),
    t("print_tree", C::None, ReadOnly, READ_CWD, M::ALL),
    t("apply_patch", C::Write, Paths, MUTATE_CWD, M::AGENT),
    t("mkdir", C::Write, Paths, MUTATE_REQUIRED, M::AGENT),
    t("rmdir", C::Write, Paths, MUTATE_REQUIRED, M::AGENT),
    t("touch", C::Write, Paths, MUTATE_REQUIRED, M::AGENT),
    t("rm", C::Write, Paths, MUTATE_REQUIRED, M::AGENT),
    t("mv", C::Write, Paths, MOVE, M::AGENT),
    // Shell and background tasks. Stopping the session's own tasks is bookkeeping; reaping
    // strays kills processes the session does not own, hence opaque.
    t("share_file", C::Always, ReadOnly, READ_REQUIRED, M::AGENT),
    t("worktree_create", C::Always, Opaque, NO_PATHS, M::AGENT),
    t(
        "background_list",
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT_PLAN,
    ),
    t(
        "background_output",
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT_PLAN,
    ),
    t(
        "background_wait",
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT_PLAN,
    ),
    t(
        "background_stop",
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT_PLAN,
    ),
    t("background_reap", C::Always, Opaque, NO_PATHS, M::AGENT),
    t("preview_server", C::None, ReadOnly, READ_CWD, M::AGENT),
    t("ssh_run_command", C::Always, Opaque, NO_PATHS, M::AGENT),
    // Web. `http_request` changes something only through `output_file`.
    t("websearch", C::None, ReadOnly, NO_PATHS, M::ALL),
    t("webfetch", C::None, ReadOnly, NO_PATHS, M::ALL),
    t("http_request", C::Http, ReadOnly, HTTP, M::AGENT),
    // Interaction, skills and subagents.
    t("question", C::None, ReadOnly, NO_PATHS, M::ALL),
    t("load_skill", C::None, ReadOnly, NO_PATHS, M::ALL),
    t("codaris_docs_search", C::None, ReadOnly, NO_PATHS, M::ALL),
    t("codaris_docs_read", C::None, ReadOnly, NO_PATHS, M::ALL),
    t("spawn_agent", C::None, ReadOnly, NO_PATHS, M::AGENT_PLAN),
    t("switch_model", C::None, ReadOnly, NO_PATHS, M::ALL),
    // Design plans live in the session bundle, not the workspace.
    t("plan_write", C::None, ReadOnly, NO_PATHS, M::AGENT_PLAN),
    t("plan_list", C::None, ReadOnly, NO_PATHS, M::AGENT_PLAN),
    t("plan_read", C::None, ReadOnly, NO_PATHS, M::AGENT_PLAN),
    t("plan_exit", C::None, ReadOnly, NO_PATHS, M::AGENT),
    // Context and the session's own filing.
    t(
        "compact_context",
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT_PLAN,
    ),
    t(
        "session_describe",
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT_PLAN,
    ),
    // Self-configuration. Staging is a change to the configuration too, so a read-only
    // activity needs `change_config` for it, though only a commit prompts.
    t("config_get", C::None, ReadOnly, NO_PATHS, M::AGENT_PLAN),
    t("config_changes", C::None, ReadOnly, NO_PATHS, M::AGENT_PLAN),
    t("config_set", C::None, Config, NO_PATHS, M::AGENT),
    t("config_revert", C::None, Config, NO_PATHS, M::AGENT),
    t("config_commit", C::Config, Config, NO_PATHS, M::AGENT),
    t("config_rollback", C::Config, Config, NO_PATHS, M::AGENT),
    // Scheduler: a job's `cwd` is where a later run will act.
    t(
        "codaris_scheduler_jobs_list",
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        "codaris_scheduler_job_get",
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        "codaris_scheduler_job_runs",
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        "codaris_scheduler_job_create",
        C::Always,
        Opaque,
        JOB_CWD,
        M::AGENT,
    ),
    t(
        "codaris_scheduler_job_replace",
        C::Always,
        Opaque,
        JOB_CWD,
        M::AGENT,
    ),
    t(
        "codaris_scheduler_job_patch",
        C::Always,
        Opaque,
        JOB_CWD,
        M::AGENT,
    ),
    t(
        "codaris_scheduler_job_pause",
        C::Always,
        Opaque,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        "codaris_scheduler_job_resume",
        C::Always,
        Opaque,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        "codaris_scheduler_job_delete",
        C::Always,
        Opaque,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        "codaris_scheduler_job_run",
        C::Always,
        Opaque,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        "codaris_scheduler_job_cancel",
        C::Always,
        Opaque,
        NO_PATHS,
        M::AGENT,
    ),
    // The memory subagent's tools: never the main model's.
    memory("codaris_memory_search", ReadOnly),
    memory("codaris_memory_list", ReadOnly),
    memory("codaris_memory_read", ReadOnly),
    memory("codaris_memory_mkdir", Opaque),
    memory("codaris_memory_save", Opaque),
    memory("codaris_memory_delete", Opaque),
    // Domain tools of the tool surface. Reviews and reports read; running a pipeline needs a
    // `run_pipeline` grant for it in every permission mode (the `pipeline` class).
    t("review_pipeline", C::None, ReadOnly, READ_CWD, M::ALL).withheld(Withholding::AuditTurn),
    t("lint_pipeline", C::None, ReadOnly, READ_CWD, M::AGENT_PLAN),
    // Offered in every mode because its report-only form is the compliance audit; the fixing
    // form is stopped by the slash gate and, in plan and ask, by the read-only rule.
    t(
        "run_compliance_autofix",
        C::Write,
        Paths,
        MUTATE_CWD,
        M::ALL,
    )
    .gated(&["/remediate", "/autofix"])
    .with_report_only("report_only"),
    t(
        "apply_remediation_plan",
        C::Write,
        Paths,
        REMEDIATE,
        M::AGENT,
    )
    .gated(&["/remediate", "/autofix", "/fix"]),
    t("list_compliance_rules", C::None, ReadOnly, NO_PATHS, M::ALL),
    t("web_research", C::None, ReadOnly, NO_PATHS, M::ALL),
    t("search_geo_sra", C::None, ReadOnly, NO_PATHS, M::ALL),
    t("search_pubmed", C::None, ReadOnly, NO_PATHS, M::ALL),
    t(
        "autopilot_pipeline",
        C::Pipeline,
        Opaque,
        PIPELINE_ATTEMPT,
        M::AGENT,
    ),
    t(
        "run_built_pipeline",
        C::Pipeline,
        Opaque,
        PIPELINE_RUN,
        M::AGENT,
    ),
    t(
        "test_pipeline",
        C::Pipeline,
        Opaque,
        PIPELINE_ATTEMPT,
        M::AGENT,
    ),
    t("check_test_result", C::None, ReadOnly, READ_CWD, M::ALL),
    t(
        "prepare_samplesheet_gate",
        C::None,
        ReadOnly,
        SAMPLESHEET,
        M::AGENT_PLAN,
    ),
    t("debug_last_run", C::None, ReadOnly, READ_CWD, M::AGENT_PLAN),
    t("analyze_run_log", C::None, ReadOnly, READ_CWD, M::ALL),
    t("check_run_status", C::None, ReadOnly, READ_CWD, M::ALL),
    t("fetch_test_data", C::Write, Paths, TEST_DATA, M::AGENT),
    t(
        "validate_pipeline",
        C::None,
        ReadOnly,
        VALIDATE,
        M::AGENT_PLAN,
    ),
    t("clone_nfcore_base", C::Write, Paths, CLONE, M::AGENT),
];

const fn memory(name: &'static str, effect: Effect) -> ToolSpec {
    ToolSpec::builtin(name, C::None, effect, NO_PATHS, M::NONE).withheld(Withholding::MemoryChild)
}

/// The built-in spec of `name`, if the crate knows it.
pub fn builtin(name: &str) -> Option<&'static ToolSpec> {
    BUILTIN.iter().find(|spec| spec.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::PermissionClass;
    use crate::task::OperatingMode;
    use std::collections::BTreeSet;

    #[test]
    fn the_always_on_nine_lead_the_catalogue_in_order() {
        let first: Vec<&str> = BUILTIN.iter().take(9).map(|s| &*s.name).collect();
        assert_eq!(first, ALWAYS_ON);
    }

    #[test]
    fn names_are_unique_and_renamed() {
        let names: BTreeSet<&str> = BUILTIN.iter().map(|s| &*s.name).collect();
        assert_eq!(names.len(), BUILTIN.len());
        assert!(
            names
                .iter()
                .all(|n| !n.starts_with("coddy_") && !n.contains("todo"))
        );
        assert!(!names.contains("read"));
        assert!(
            names.iter().all(|n| !n.contains("__")),
            "built-ins never look like MCP"
        );
    }

    #[test]
    fn only_the_two_remediation_tools_are_slash_gated() {
        let gated: Vec<&str> = BUILTIN
            .iter()
            .filter(|s| !s.slash.is_empty())
            .map(|s| &*s.name)
            .collect();
        assert_eq!(gated, ["run_compliance_autofix", "apply_remediation_plan"]);
    }

    #[test]
    fn every_main_tool_is_offered_in_agent_mode_and_ask_mode_offers_nothing_mutating() {
        for spec in BUILTIN
            .iter()
            .filter(|s| s.withheld_when != Some(Withholding::MemoryChild))
        {
            assert!(spec.modes.allows(OperatingMode::Agent), "{}", spec.name);
            let ask_ok = !spec.can_mutate() || spec.report_only.is_some();
            assert!(
                !spec.modes.allows(OperatingMode::Ask) || ask_ok,
                "{}",
                spec.name
            );
        }
    }

    #[test]
    fn classes_that_prompt_for_paths_have_a_path_to_name() {
        for spec in BUILTIN.iter().filter(|s| s.class == PermissionClass::Write) {
            let mutates = spec.paths.iter().any(|p| p.access == Mutate);
            assert!(
                mutates,
                "{} is write-class without a mutated path",
                spec.name
            );
        }
    }

    #[test]
    fn lookup_finds_built_ins_only() {
        assert_eq!(builtin("read_file").map(|s| &*s.name), Some("read_file"));
        assert!(builtin("read").is_none());
        assert!(builtin("demo__echo").is_none());
    }
}
