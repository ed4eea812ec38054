//! The slash table: the tools each command adds to its turn, and the other forced additions
//! (research turns, a pasted link). Read together with `docs/surface.md`, which prints the same
//! table.

use crate::slash::{Command, ReviewForm};

/// The three review tools; a `/review` that asks something gets all of them and the model picks.
pub const REVIEW_TOOLS: [&str; 3] = ["run_compliance_autofix", "review_pipeline", "lint_pipeline"];
/// The compliance audit: the autofix tool, pinned to `report_only` unless `/remediate` or
/// `/autofix` was typed.
pub const AUDIT_TOOLS: [&str; 1] = ["run_compliance_autofix"];
/// `/remediate` and `/autofix`.
pub const REMEDIATE_TOOLS: [&str; 2] = ["run_compliance_autofix", "apply_remediation_plan"];
/// `/searchData`.
pub const SEARCH_DATA_TOOLS: [&str; 2] = ["search_geo_sra", "search_pubmed"];
/// `/extend`: the tools that build a pipeline extension on an nf-core base and check it.
pub const EXTENSION_TOOLS: [&str; 4] = [
    "clone_nfcore_base",
    "validate_pipeline",
    "lint_pipeline",
    "test_pipeline",
];
/// `/run`: the full run set.
pub const RUN_TOOLS: [&str; 9] = [
    "autopilot_pipeline",
    "run_built_pipeline",
    "test_pipeline",
    "check_test_result",
    "prepare_samplesheet_gate",
    "debug_last_run",
    "check_run_status",
    "analyze_run_log",
    "fetch_test_data",
];
/// `/repair`.
pub const REPAIR_TOOLS: [&str; 2] = ["autopilot_pipeline", "analyze_run_log"];
/// Research turns (`/research`, or classified as research).
pub const RESEARCH_TOOLS: [&str; 3] = ["web_research", "search_geo_sra", "search_pubmed"];

/// The tool the report-only pin applies to.
pub const COMPLIANCE_TOOL: &str = "run_compliance_autofix";

/// The tools one command adds. `review` is the form of a `/review` (ignored for the others).
pub fn row(command: Command, review: ReviewForm) -> &'static [&'static str] {
    match (command, review) {
        // A bare `/review`: the reviewer and nothing else.
        (Command::Review, ReviewForm::Bare) => &["review_pipeline"],
        // `/review --compliance`, `/review --quick`: the audit, report-only.
        (Command::Review, ReviewForm::Audit) => &AUDIT_TOOLS,
        // A question, a path, `--security` or `--lint`: all three, the model picks.
        (Command::Review, ReviewForm::Full) => &REVIEW_TOOLS,
        // `/audit`: the audit, report-only; `review_pipeline` is withheld besides.
        (Command::Audit, _) => &AUDIT_TOOLS,
        // `/remediate`, `/autofix`: the autofix (not pinned) and the plan applier.
        (Command::Remediate | Command::Autofix, _) => &REMEDIATE_TOOLS,
        // `/fix`: the plan applier alone.
        (Command::Fix, _) => &["apply_remediation_plan"],
        // `/rules`: the rule list.
        (Command::Rules, _) => &["list_compliance_rules"],
        // `/searchData`: the archive and literature searches.
        (Command::SearchData, _) => &SEARCH_DATA_TOOLS,
        // `/extend`: the extension tools; the planner is withheld in the workspace.
        (Command::Extend, _) => &EXTENSION_TOOLS,
        // `/run`: the run set.
        (Command::Run, _) => &RUN_TOOLS,
        // `/repair`: run and read the log.
        (Command::Repair, _) => &REPAIR_TOOLS,
        // `/research`: the research tools.
        (Command::Research, _) => &RESEARCH_TOOLS,
    }
}

/// One forced addition, before the registry resolves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Forced {
    /// A tool by name.
    Tool(&'static str),
    /// The URL fetcher of the first MCP server whose keywords say `url`, for a pasted link.
    UrlFetcher,
}
