//! `codaris-catalogue`: every built-in tool as the model is shown it — its name, its
//! description and the JSON schema of its arguments — as static data.
//!
//! One source for the text the model reads: the tools in `codaris-tools` return these from
//! `Tool::description` and `Tool::schema`, the daemon sends them, the loop's own tools
//! (`search_tools`, `request_capability`) are described here too, and `codaris tools surface`
//! measures them without building any tool. The argument bounds a schema shows
//! (`timeout_seconds` maxima, …) are constants here that the tools enforce.
//!
//! It also says what a called name means ([`ToolId`]): a built-in ([`BuiltinTool`], one
//! table in `id.rs` gives the enum, its names, its parse and its entries), an MCP server's
//! tool, or nothing. The name is parsed once where a call enters and carried typed after.
//!
//! Non-goals: what a tool may do (the permission class, path arguments and modes are
//! `codaris-policy`'s), how it runs (`codaris-tools`), which tools a turn sees (the agent's
//! surface). No I/O; `serde_json` only, for the schemas (and `serde`, for an id on the wire).

pub mod config;
mod entry;
mod files;
mod help;
mod id;
pub mod limits;
mod loop_tools;
pub mod memory;
mod ncbi;
mod nextflow;
mod nextflow_launch;
mod nextflow_runs;
mod planner;
mod plans;
pub mod question;
pub mod scheduler;
mod session;
mod shell;
pub mod subagents;
mod tool_id;
mod web;

pub use entry::ALL;
pub use entry::CatalogueEntry;
pub use entry::entry;
pub use files::APPLY_PATCH;
pub use files::EDIT;
pub use files::GLOB;
pub use files::GREP;
pub use files::KEEP_RESULT;
pub use files::MKDIR;
pub use files::MV;
pub use files::PRINT_TREE;
pub use files::READ_FILE;
pub use files::RM;
pub use files::RMDIR;
pub use files::TOUCH;
pub use files::WRITE;
pub use help::CODARIS_DOCS_READ;
pub use help::CODARIS_DOCS_SEARCH;
pub use help::LOAD_SKILL;
pub use id::BuiltinTool;
pub use loop_tools::COMPACT_CONTEXT;
pub use loop_tools::LOOP_TOOLS;
pub use loop_tools::REQUEST_CAPABILITY;
pub use loop_tools::SEARCH_TOOLS;
pub use memory::{
    CODARIS_MEMORY_DELETE, CODARIS_MEMORY_LIST, CODARIS_MEMORY_MKDIR, CODARIS_MEMORY_READ,
    CODARIS_MEMORY_SAVE, CODARIS_MEMORY_SEARCH,
};
pub use ncbi::SEARCH_GEO_SRA;
pub use ncbi::SEARCH_PUBMED;
pub use nextflow::APPLY_REMEDIATION_PLAN;
pub use nextflow::CLONE_NFCORE_BASE;
pub use nextflow::LINT_PIPELINE;
pub use nextflow::LIST_COMPLIANCE_RULES;
pub use nextflow::PREPARE_SAMPLESHEET_GATE;
pub use nextflow::REVIEW_PIPELINE;
pub use nextflow::RUN_COMPLIANCE_AUTOFIX;
pub use nextflow::VALIDATE_PIPELINE;
pub use nextflow_launch::AUTOPILOT_PIPELINE;
pub use nextflow_launch::CHECK_TEST_RESULT;
pub use nextflow_launch::FETCH_TEST_DATA;
pub use nextflow_launch::RUN_BUILT_PIPELINE;
pub use nextflow_launch::TEST_PIPELINE;
pub use nextflow_runs::ANALYZE_RUN_LOG;
pub use nextflow_runs::CHECK_RUN_STATUS;
pub use nextflow_runs::DEBUG_LAST_RUN;
pub use planner::PLANNER;
pub use plans::PLAN_EXIT;
pub use plans::PLAN_LIST;
pub use plans::PLAN_READ;
pub use plans::PLAN_WRITE;
pub use question::QUESTION;
pub use session::Reasoning;
pub use session::SESSION_DESCRIBE;
pub use session::SWITCH_MODEL;
pub use shell::BACKGROUND_LIST;
pub use shell::BACKGROUND_OUTPUT;
pub use shell::BACKGROUND_REAP;
pub use shell::BACKGROUND_STOP;
pub use shell::BACKGROUND_WAIT;
pub use shell::PREVIEW_SERVER;
pub use shell::RUN_COMMAND;
pub use shell::SHARE_FILE;
pub use shell::SSH_RUN_COMMAND;
pub use shell::WORKTREE_CREATE;
pub use subagents::SPAWN_AGENT;
#[cfg(feature = "count-parses")]
pub use tool_id::parse_count;
pub use tool_id::{
    FOREIGN_PREFIX, McpTool, SEPARATOR, SERVER_NAME_MAX, ServerNameError, ToolId, check_server_name,
};
pub use web::HTTP_REQUEST;
pub use web::WEB_RESEARCH;
pub use web::WEBFETCH;
pub use web::WEBSEARCH;
