//! The built-in tools by name: one table that yields [`BuiltinTool`], its name, its parse and
//! its catalogue entry, so a name and the tool it means can never disagree.
//!
//! The table lists every built-in the policy knows, in the policy's order (the always-on nine
//! first, then the catalogue's sections, then the domain tools): `codaris-policy` indexes its
//! specs by [`BuiltinTool::index`] and checks at compile time that its table follows this one.
//! A tool of the tool surface that Codaris does not implement yet has a name and a spec but no
//! catalogue entry (`None`): the model is never shown it.

use crate::entry::CatalogueEntry;
use crate::{config, memory, question, scheduler, session, shell, subagents, web};
use crate::{
    files, help, loop_tools, ncbi, nextflow, nextflow_launch, nextflow_runs, planner, plans,
};

macro_rules! builtin_tools {
    ($($variant:ident = $name:literal => $entry:expr,)*) => {
        /// A built-in tool: the loop's own two, the tools the daemon runs, and the tools of the
        /// tool surface that are specified but not built yet.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum BuiltinTool {
            $(
                #[doc = concat!("`", $name, "`")]
                $variant,
            )*
        }

        impl BuiltinTool {
            /// Every built-in, in the table's order.
            pub const ALL: [BuiltinTool; [$($name),*].len()] = [$(BuiltinTool::$variant),*];

            /// The name the model calls it by, as the wire and the ledger spell it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(BuiltinTool::$variant => $name,)*
                }
            }

            /// The built-in called exactly `name`.
            pub fn parse(name: &str) -> Option<BuiltinTool> {
                match name {
                    $($name => Some(BuiltinTool::$variant),)*
                    _ => None,
                }
            }

            /// What the model is shown of it; `None` for a tool not implemented yet.
            pub fn entry(self) -> Option<&'static CatalogueEntry> {
                match self {
                    $(BuiltinTool::$variant => $entry,)*
                }
            }
        }
    };
}

builtin_tools! {
    SearchTools = "search_tools" => Some(&loop_tools::SEARCH_TOOLS),
    RequestCapability = "request_capability" => Some(&loop_tools::REQUEST_CAPABILITY),
    ReadFile = "read_file" => Some(&files::READ_FILE),
    Glob = "glob" => Some(&files::GLOB),
    Grep = "grep" => Some(&files::GREP),
    Edit = "edit" => Some(&files::EDIT),
    Write = "write" => Some(&files::WRITE),
    RunCommand = "run_command" => Some(&shell::RUN_COMMAND),
    Planner = "planner" => Some(&planner::PLANNER),
    KeepResult = "keep_result" => Some(&files::KEEP_RESULT),
    PrintTree = "print_tree" => Some(&files::PRINT_TREE),
    ApplyPatch = "apply_patch" => Some(&files::APPLY_PATCH),
    Mkdir = "mkdir" => Some(&files::MKDIR),
    Rmdir = "rmdir" => Some(&files::RMDIR),
    Touch = "touch" => Some(&files::TOUCH),
    Rm = "rm" => Some(&files::RM),
    Mv = "mv" => Some(&files::MV),
    ShareFile = "share_file" => Some(&shell::SHARE_FILE),
    WorktreeCreate = "worktree_create" => Some(&shell::WORKTREE_CREATE),
    BackgroundList = "background_list" => Some(&shell::BACKGROUND_LIST),
    BackgroundOutput = "background_output" => Some(&shell::BACKGROUND_OUTPUT),
    BackgroundWait = "background_wait" => Some(&shell::BACKGROUND_WAIT),
    BackgroundStop = "background_stop" => Some(&shell::BACKGROUND_STOP),
    BackgroundReap = "background_reap" => Some(&shell::BACKGROUND_REAP),
    PreviewServer = "preview_server" => Some(&shell::PREVIEW_SERVER),
    SshRunCommand = "ssh_run_command" => Some(&shell::SSH_RUN_COMMAND),
    Websearch = "websearch" => Some(&web::WEBSEARCH),
    Webfetch = "webfetch" => Some(&web::WEBFETCH),
    HttpRequest = "http_request" => Some(&web::HTTP_REQUEST),
    Question = "question" => Some(&question::QUESTION),
    LoadSkill = "load_skill" => Some(&help::LOAD_SKILL),
    CodarisDocsSearch = "codaris_docs_search" => Some(&help::CODARIS_DOCS_SEARCH),
    CodarisDocsRead = "codaris_docs_read" => Some(&help::CODARIS_DOCS_READ),
    SpawnAgent = "spawn_agent" => Some(&subagents::SPAWN_AGENT),
    SwitchModel = "switch_model" => Some(&session::SWITCH_MODEL),
    PlanWrite = "plan_write" => Some(&plans::PLAN_WRITE),
    PlanList = "plan_list" => Some(&plans::PLAN_LIST),
    PlanRead = "plan_read" => Some(&plans::PLAN_READ),
    PlanExit = "plan_exit" => Some(&plans::PLAN_EXIT),
    CompactContext = "compact_context" => Some(&loop_tools::COMPACT_CONTEXT),
    SessionDescribe = "session_describe" => Some(&session::SESSION_DESCRIBE),
    ConfigGet = "config_get" => Some(&config::CONFIG_GET),
    ConfigChanges = "config_changes" => Some(&config::CONFIG_CHANGES),
    ConfigSet = "config_set" => Some(&config::CONFIG_SET),
    ConfigRevert = "config_revert" => Some(&config::CONFIG_REVERT),
    ConfigCommit = "config_commit" => Some(&config::CONFIG_COMMIT),
    ConfigRollback = "config_rollback" => Some(&config::CONFIG_ROLLBACK),
    CodarisSchedulerJobsList = "codaris_scheduler_jobs_list" => Some(&scheduler::JOBS_LIST),
    CodarisSchedulerJobGet = "codaris_scheduler_job_get" => Some(&scheduler::JOB_GET),
    CodarisSchedulerJobRuns = "codaris_scheduler_job_runs" => Some(&scheduler::JOB_RUNS),
    CodarisSchedulerJobCreate = "codaris_scheduler_job_create" => Some(&scheduler::JOB_CREATE),
    CodarisSchedulerJobReplace = "codaris_scheduler_job_replace" => Some(&scheduler::JOB_REPLACE),
    CodarisSchedulerJobPatch = "codaris_scheduler_job_patch" => Some(&scheduler::JOB_PATCH),
    CodarisSchedulerJobPause = "codaris_scheduler_job_pause" => Some(&scheduler::JOB_PAUSE),
    CodarisSchedulerJobResume = "codaris_scheduler_job_resume" => Some(&scheduler::JOB_RESUME),
    CodarisSchedulerJobDelete = "codaris_scheduler_job_delete" => Some(&scheduler::JOB_DELETE),
    CodarisSchedulerJobRun = "codaris_scheduler_job_run" => Some(&scheduler::JOB_RUN),
    CodarisSchedulerJobCancel = "codaris_scheduler_job_cancel" => Some(&scheduler::JOB_CANCEL),
    CodarisMemorySearch = "codaris_memory_search" => Some(&memory::CODARIS_MEMORY_SEARCH),
    CodarisMemoryList = "codaris_memory_list" => Some(&memory::CODARIS_MEMORY_LIST),
    CodarisMemoryRead = "codaris_memory_read" => Some(&memory::CODARIS_MEMORY_READ),
    CodarisMemoryMkdir = "codaris_memory_mkdir" => Some(&memory::CODARIS_MEMORY_MKDIR),
    CodarisMemorySave = "codaris_memory_save" => Some(&memory::CODARIS_MEMORY_SAVE),
    CodarisMemoryDelete = "codaris_memory_delete" => Some(&memory::CODARIS_MEMORY_DELETE),
    ReviewPipeline = "review_pipeline" => Some(&nextflow::REVIEW_PIPELINE),
    LintPipeline = "lint_pipeline" => Some(&nextflow::LINT_PIPELINE),
    RunComplianceAutofix = "run_compliance_autofix" => Some(&nextflow::RUN_COMPLIANCE_AUTOFIX),
    ApplyRemediationPlan = "apply_remediation_plan" => Some(&nextflow::APPLY_REMEDIATION_PLAN),
    ListComplianceRules = "list_compliance_rules" => Some(&nextflow::LIST_COMPLIANCE_RULES),
    WebResearch = "web_research" => Some(&web::WEB_RESEARCH),
    SearchGeoSra = "search_geo_sra" => Some(&ncbi::SEARCH_GEO_SRA),
    SearchPubmed = "search_pubmed" => Some(&ncbi::SEARCH_PUBMED),
    AutopilotPipeline = "autopilot_pipeline" => Some(&nextflow_launch::AUTOPILOT_PIPELINE),
    RunBuiltPipeline = "run_built_pipeline" => Some(&nextflow_launch::RUN_BUILT_PIPELINE),
    TestPipeline = "test_pipeline" => Some(&nextflow_launch::TEST_PIPELINE),
    CheckTestResult = "check_test_result" => Some(&nextflow_launch::CHECK_TEST_RESULT),
    PrepareSamplesheetGate = "prepare_samplesheet_gate" => Some(&nextflow::PREPARE_SAMPLESHEET_GATE),
    DebugLastRun = "debug_last_run" => Some(&nextflow_runs::DEBUG_LAST_RUN),
    AnalyzeRunLog = "analyze_run_log" => Some(&nextflow_runs::ANALYZE_RUN_LOG),
    CheckRunStatus = "check_run_status" => Some(&nextflow_runs::CHECK_RUN_STATUS),
    FetchTestData = "fetch_test_data" => Some(&nextflow_launch::FETCH_TEST_DATA),
    ValidatePipeline = "validate_pipeline" => Some(&nextflow::VALIDATE_PIPELINE),
    CloneNfcoreBase = "clone_nfcore_base" => Some(&nextflow::CLONE_NFCORE_BASE),
}

impl BuiltinTool {
    /// Its place in [`BuiltinTool::ALL`]: what a table indexed by the tool is indexed with.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// True for the tools the turn loop answers itself rather than the daemon.
    pub const fn is_loop_tool(self) -> bool {
        matches!(
            self,
            BuiltinTool::SearchTools | BuiltinTool::RequestCapability
        )
    }
}

impl std::fmt::Display for BuiltinTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_its_tool() {
        for tool in BuiltinTool::ALL {
            assert_eq!(BuiltinTool::parse(tool.as_str()), Some(tool));
            assert_eq!(BuiltinTool::ALL[tool.index()], tool);
        }
        assert_eq!(BuiltinTool::parse("read"), None);
        assert_eq!(BuiltinTool::parse("READ_FILE"), None);
        assert_eq!(BuiltinTool::parse("fs__read_file"), None);
    }

    #[test]
    fn an_entry_is_the_entry_of_its_own_tool() {
        for tool in BuiltinTool::ALL {
            if let Some(entry) = tool.entry() {
                assert_eq!(entry.id, tool);
                assert_eq!(entry.name, tool.as_str());
            }
        }
        // Every tool of the surface is built: each has its entry.
        assert!(BuiltinTool::ALL.iter().all(|tool| tool.entry().is_some()));
    }
}
