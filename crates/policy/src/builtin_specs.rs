//! The built-in tools as data, so the daemon and an offline auditor agree on them.
//!
//! Classes and modes follow the tools catalogue (`read` is `read_file` here, `coddy_` is
//! `codaris_`, the seven todo tools are one `planner`); the domain tools of the tool-surface
//! spec are Codaris's own choices, argued in `docs/decision-codes.md`. Arguments that look like
//! paths but are not file-system paths (`config_get`'s dotted key, memory notes' `scope:rel`)
//! are deliberately not listed as path arguments.

use codaris_catalogue::BuiltinTool;
use codaris_catalogue::BuiltinTool as B;

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

const fn t(id: B, c: C, e: Effect, p: &'static [PathArg], m: Modes) -> ToolSpec {
    ToolSpec::builtin(id, c, e, p, m)
}

use Effect::{Command, Config, Opaque, Paths, ReadOnly};
use Modes as M;

// Every built-in tool: the always-on nine first, then the catalogue's sections, then the
// domain tools of the tool surface.
static TABLE: [ToolSpec; BuiltinTool::ALL.len()] = [
    // The always-on surface. `planner` only edits the session's checklist, hence read-only.
    t(B::SearchTools, C::None, ReadOnly, NO_PATHS, M::ALL),
    t(B::RequestCapability, C::None, ReadOnly, NO_PATHS, M::ALL),
    t(B::ReadFile, C::None, ReadOnly, READ_REQUIRED, M::ALL),
    t(B::Glob, C::None, ReadOnly, READ_CWD, M::ALL),
    t(B::Grep, C::None, ReadOnly, READ_CWD, M::ALL),
    t(B::Edit, C::Write, Paths, MUTATE_REQUIRED, M::AGENT),
    t(B::Write, C::Write, Paths, MUTATE_REQUIRED, M::AGENT),
    t(
        B::RunCommand,
        C::Command,
        Command,
        COMMAND_CWD,
        M::AGENT_PLAN,
    ),
    t(B::Planner, C::None, ReadOnly, NO_PATHS, M::AGENT).withheld(Withholding::ExtensionWorkspace),
    // Files.
    t(B::KeepResult, C::None, ReadOnly, READ_OPTIONAL, M::ALL),
    t(B::PrintTree, C::None, ReadOnly, READ_CWD, M::ALL),
    t(B::ApplyPatch, C::Write, Paths, MUTATE_CWD, M::AGENT),
    t(B::Mkdir, C::Write, Paths, MUTATE_REQUIRED, M::AGENT),
    t(B::Rmdir, C::Write, Paths, MUTATE_REQUIRED, M::AGENT),
    t(B::Touch, C::Write, Paths, MUTATE_REQUIRED, M::AGENT),
    t(B::Rm, C::Write, Paths, MUTATE_REQUIRED, M::AGENT),
    t(B::Mv, C::Write, Paths, MOVE, M::AGENT),
    // Shell and background tasks. Stopping the session's own tasks is bookkeeping; reaping
    // strays kills processes the session does not own, hence opaque.
    t(B::ShareFile, C::Always, ReadOnly, READ_REQUIRED, M::AGENT),
    t(B::WorktreeCreate, C::Always, Opaque, NO_PATHS, M::AGENT),
    t(
        B::BackgroundList,
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT_PLAN,
    ),
    t(
        B::BackgroundOutput,
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT_PLAN,
    ),
    t(
        B::BackgroundWait,
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT_PLAN,
    ),
    t(
        B::BackgroundStop,
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT_PLAN,
    ),
    t(B::BackgroundReap, C::Always, Opaque, NO_PATHS, M::AGENT),
    t(B::PreviewServer, C::None, ReadOnly, READ_CWD, M::AGENT),
    t(B::SshRunCommand, C::Always, Opaque, NO_PATHS, M::AGENT),
    // Web. `http_request` changes something only through `output_file`.
    t(B::Websearch, C::None, ReadOnly, NO_PATHS, M::ALL),
    t(B::Webfetch, C::None, ReadOnly, NO_PATHS, M::ALL),
    t(B::HttpRequest, C::Http, ReadOnly, HTTP, M::AGENT),
    // Interaction, skills and subagents.
    t(B::Question, C::None, ReadOnly, NO_PATHS, M::ALL).withheld(Withholding::Subagent),
    t(B::LoadSkill, C::None, ReadOnly, NO_PATHS, M::ALL),
    t(B::CodarisDocsSearch, C::None, ReadOnly, NO_PATHS, M::ALL),
    t(B::CodarisDocsRead, C::None, ReadOnly, NO_PATHS, M::ALL),
    t(B::SpawnAgent, C::None, ReadOnly, NO_PATHS, M::AGENT_PLAN).withheld(Withholding::DepthLimit),
    t(B::SwitchModel, C::None, ReadOnly, NO_PATHS, M::ALL).withheld(Withholding::Subagent),
    // Design plans live in the session bundle, not the workspace.
    t(B::PlanWrite, C::None, ReadOnly, NO_PATHS, M::AGENT_PLAN),
    t(B::PlanList, C::None, ReadOnly, NO_PATHS, M::AGENT_PLAN),
    t(B::PlanRead, C::None, ReadOnly, NO_PATHS, M::AGENT_PLAN),
    // Callable where it does something, plan mode, and in agent mode where it answers that
    // there is nothing to leave; its card is what lets it run (`leave_plan`).
    t(B::PlanExit, C::LeavePlan, ReadOnly, NO_PATHS, M::AGENT_PLAN).withheld(Withholding::Subagent),
    // Context and the session's own filing.
    t(
        B::CompactContext,
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT_PLAN,
    ),
    t(
        B::SessionDescribe,
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT_PLAN,
    ),
    // Self-configuration. Staging is a change to the configuration too, so a read-only
    // activity needs `change_config` for it, though only a commit prompts.
    t(B::ConfigGet, C::None, ReadOnly, NO_PATHS, M::AGENT_PLAN).withheld(Withholding::Subagent),
    t(B::ConfigChanges, C::None, ReadOnly, NO_PATHS, M::AGENT_PLAN).withheld(Withholding::Subagent),
    t(B::ConfigSet, C::None, Config, NO_PATHS, M::AGENT).withheld(Withholding::Subagent),
    t(B::ConfigRevert, C::None, Config, NO_PATHS, M::AGENT).withheld(Withholding::Subagent),
    t(B::ConfigCommit, C::Config, Config, NO_PATHS, M::AGENT).withheld(Withholding::Subagent),
    t(B::ConfigRollback, C::Config, Config, NO_PATHS, M::AGENT).withheld(Withholding::Subagent),
    // Scheduler: a job's `cwd` is where a later run will act.
    t(
        B::CodarisSchedulerJobsList,
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        B::CodarisSchedulerJobGet,
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        B::CodarisSchedulerJobRuns,
        C::None,
        ReadOnly,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        B::CodarisSchedulerJobCreate,
        C::Always,
        Opaque,
        JOB_CWD,
        M::AGENT,
    ),
    t(
        B::CodarisSchedulerJobReplace,
        C::Always,
        Opaque,
        JOB_CWD,
        M::AGENT,
    ),
    t(
        B::CodarisSchedulerJobPatch,
        C::Always,
        Opaque,
        JOB_CWD,
        M::AGENT,
    ),
    t(
        B::CodarisSchedulerJobPause,
        C::Always,
        Opaque,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        B::CodarisSchedulerJobResume,
        C::Always,
        Opaque,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        B::CodarisSchedulerJobDelete,
        C::Always,
        Opaque,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        B::CodarisSchedulerJobRun,
        C::Always,
        Opaque,
        NO_PATHS,
        M::AGENT,
    ),
    t(
        B::CodarisSchedulerJobCancel,
        C::Always,
        Opaque,
        NO_PATHS,
        M::AGENT,
    ),
    // The memory subagent's tools: never the main model's.
    memory(B::CodarisMemorySearch, ReadOnly),
    memory(B::CodarisMemoryList, ReadOnly),
    memory(B::CodarisMemoryRead, ReadOnly),
    memory(B::CodarisMemoryMkdir, Opaque),
    memory(B::CodarisMemorySave, Opaque),
    memory(B::CodarisMemoryDelete, Opaque),
    // Domain tools of the tool surface. Reviews and reports read; running a pipeline needs a
    // `run_pipeline` grant for it in every permission mode (the `pipeline` class).
    t(B::ReviewPipeline, C::None, ReadOnly, READ_CWD, M::ALL).withheld(Withholding::AuditTurn),
    t(B::LintPipeline, C::None, ReadOnly, READ_CWD, M::AGENT_PLAN),
    // Offered in every mode because its report-only form is the compliance audit; the fixing
    // form is stopped by the slash gate and, in plan and ask, by the read-only rule.
    t(B::RunComplianceAutofix, C::Write, Paths, MUTATE_CWD, M::ALL)
        .gated(&["/remediate", "/autofix"])
        .with_report_only("report_only"),
    t(
        B::ApplyRemediationPlan,
        C::Write,
        Paths,
        REMEDIATE,
        M::AGENT,
    )
    .gated(&["/remediate", "/autofix", "/fix"]),
    t(B::ListComplianceRules, C::None, ReadOnly, NO_PATHS, M::ALL),
    t(B::WebResearch, C::None, ReadOnly, NO_PATHS, M::ALL),
    t(B::SearchGeoSra, C::None, ReadOnly, NO_PATHS, M::ALL),
    t(B::SearchPubmed, C::None, ReadOnly, NO_PATHS, M::ALL),
    t(
        B::AutopilotPipeline,
        C::Pipeline,
        Opaque,
        PIPELINE_ATTEMPT,
        M::AGENT,
    ),
    t(
        B::RunBuiltPipeline,
        C::Pipeline,
        Opaque,
        PIPELINE_RUN,
        M::AGENT,
    ),
    t(
        B::TestPipeline,
        C::Pipeline,
        Opaque,
        PIPELINE_ATTEMPT,
        M::AGENT,
    ),
    t(B::CheckTestResult, C::None, ReadOnly, READ_CWD, M::ALL),
    t(
        B::PrepareSamplesheetGate,
        C::None,
        ReadOnly,
        SAMPLESHEET,
        M::AGENT_PLAN,
    ),
    t(B::DebugLastRun, C::None, ReadOnly, READ_CWD, M::AGENT_PLAN),
    t(B::AnalyzeRunLog, C::None, ReadOnly, READ_CWD, M::ALL),
    t(B::CheckRunStatus, C::None, ReadOnly, READ_CWD, M::ALL),
    t(B::FetchTestData, C::Write, Paths, TEST_DATA, M::AGENT),
    t(
        B::ValidatePipeline,
        C::None,
        ReadOnly,
        VALIDATE,
        M::AGENT_PLAN,
    ),
    t(B::CloneNfcoreBase, C::Write, Paths, CLONE, M::AGENT),
];

const fn memory(id: B, effect: Effect) -> ToolSpec {
    ToolSpec::builtin(id, C::None, effect, NO_PATHS, M::NONE).withheld(Withholding::MemoryChild)
}

/// Every built-in tool's spec, in [`BuiltinTool`]'s order: `BUILTIN[tool.index()]` is `tool`'s.
pub static BUILTIN: &[ToolSpec] = &TABLE;

// The table follows the catalogue's, row by row, or the crate does not build: a spec can only
// be the one of the tool it is found by.
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(
            matches!(TABLE[i].builtin, Some(id) if id.index() == i),
            "the policy's table is not in `BuiltinTool` order"
        );
        i += 1;
    }
};

/// The spec of a built-in tool: an index, not a search.
pub fn spec(tool: BuiltinTool) -> &'static ToolSpec {
    &TABLE[tool.index()]
}

/// The built-in spec of `name`, if the crate knows it (for callers that hold a name, not an id).
pub fn builtin(name: &str) -> Option<&'static ToolSpec> {
    BuiltinTool::parse(name).map(spec)
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
