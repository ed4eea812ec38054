//! One catalogue entry, and the whole catalogue.

use serde_json::Value;

use crate::id::BuiltinTool;
use crate::{
    config, files, help, loop_tools, memory, ncbi, nextflow, nextflow_launch, nextflow_runs,
    planner, plans, question, scheduler, session, shell, subagents, web,
};

/// A built-in tool as the model is shown it.
///
/// The schema is built on request, as each tool built it before the catalogue existed: a
/// `Value` is not `const`, and a round asks for a handful of schemas at most.
#[derive(Debug, Clone, Copy)]
pub struct CatalogueEntry {
    /// The tool it describes.
    pub id: BuiltinTool,
    /// The name the model calls, e.g. `read_file`: always `id.as_str()`.
    pub name: &'static str,
    /// The one-paragraph description the model reads.
    pub description: &'static str,
    schema: fn() -> Value,
}

impl CatalogueEntry {
    pub(crate) const fn new(
        id: BuiltinTool,
        description: &'static str,
        schema: fn() -> Value,
    ) -> Self {
        Self {
            id,
            name: id.as_str(),
            description,
            schema,
        }
    }

    /// The JSON schema of the arguments, as sent to the model.
    pub fn schema(&self) -> Value {
        (self.schema)()
    }
}

/// Every entry: the loop's two tools, then the tools the daemon runs in the order it registers
/// them (files, the planner, the session's filing, the built-in documentation and skills, commands, the web, the Nextflow and nf-core tools, the
/// NCBI tools).
pub static ALL: &[CatalogueEntry] = &[
    loop_tools::SEARCH_TOOLS,
    loop_tools::REQUEST_CAPABILITY,
    loop_tools::COMPACT_CONTEXT,
    files::READ_FILE,
    files::KEEP_RESULT,
    files::GLOB,
    files::GREP,
    files::PRINT_TREE,
    files::EDIT,
    files::WRITE,
    files::APPLY_PATCH,
    files::MKDIR,
    files::RMDIR,
    files::TOUCH,
    files::RM,
    files::MV,
    planner::PLANNER,
    plans::PLAN_WRITE,
    plans::PLAN_LIST,
    plans::PLAN_READ,
    plans::PLAN_EXIT,
    session::SESSION_DESCRIBE,
    session::SWITCH_MODEL,
    question::QUESTION,
    subagents::SPAWN_AGENT,
    scheduler::JOBS_LIST,
    scheduler::JOB_GET,
    scheduler::JOB_RUNS,
    scheduler::JOB_CREATE,
    scheduler::JOB_REPLACE,
    scheduler::JOB_PATCH,
    scheduler::JOB_PAUSE,
    scheduler::JOB_RESUME,
    scheduler::JOB_DELETE,
    scheduler::JOB_RUN,
    scheduler::JOB_CANCEL,
    help::CODARIS_DOCS_SEARCH,
    help::CODARIS_DOCS_READ,
    help::LOAD_SKILL,
    config::CONFIG_GET,
    config::CONFIG_CHANGES,
    config::CONFIG_SET,
    config::CONFIG_REVERT,
    config::CONFIG_COMMIT,
    config::CONFIG_ROLLBACK,
    memory::CODARIS_MEMORY_SEARCH,
    memory::CODARIS_MEMORY_LIST,
    memory::CODARIS_MEMORY_READ,
    memory::CODARIS_MEMORY_MKDIR,
    memory::CODARIS_MEMORY_SAVE,
    memory::CODARIS_MEMORY_DELETE,
    shell::RUN_COMMAND,
    shell::BACKGROUND_LIST,
    shell::BACKGROUND_OUTPUT,
    shell::BACKGROUND_WAIT,
    shell::BACKGROUND_STOP,
    shell::BACKGROUND_REAP,
    shell::PREVIEW_SERVER,
    shell::SHARE_FILE,
    shell::SSH_RUN_COMMAND,
    shell::WORKTREE_CREATE,
    web::WEBSEARCH,
    web::WEBFETCH,
    web::HTTP_REQUEST,
    web::WEB_RESEARCH,
    nextflow::CLONE_NFCORE_BASE,
    nextflow::LINT_PIPELINE,
    nextflow::VALIDATE_PIPELINE,
    nextflow::PREPARE_SAMPLESHEET_GATE,
    nextflow::LIST_COMPLIANCE_RULES,
    nextflow::RUN_COMPLIANCE_AUTOFIX,
    nextflow::APPLY_REMEDIATION_PLAN,
    nextflow::REVIEW_PIPELINE,
    nextflow_runs::CHECK_RUN_STATUS,
    nextflow_runs::ANALYZE_RUN_LOG,
    nextflow_runs::DEBUG_LAST_RUN,
    nextflow_launch::RUN_BUILT_PIPELINE,
    nextflow_launch::AUTOPILOT_PIPELINE,
    nextflow_launch::TEST_PIPELINE,
    nextflow_launch::CHECK_TEST_RESULT,
    nextflow_launch::FETCH_TEST_DATA,
    ncbi::SEARCH_PUBMED,
    ncbi::SEARCH_GEO_SRA,
];

/// The entry of `name`, if it is a built-in tool the model can be shown.
pub fn entry(name: &str) -> Option<&'static CatalogueEntry> {
    BuiltinTool::parse(name).and_then(BuiltinTool::entry)
}
