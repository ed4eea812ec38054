//! The slash table: the tools each command adds to its turn, and the other forced additions
//! (research turns, a pasted link). Read together with `docs/surface.md`, which prints the same
//! table.

use codaris_catalogue::BuiltinTool;
use codaris_catalogue::BuiltinTool as B;

use crate::slash::{Command, ReviewForm};

/// The three review tools; a `/review` that asks something gets all of them and the model picks.
pub const REVIEW_TOOLS: [BuiltinTool; 3] =
    [B::RunComplianceAutofix, B::ReviewPipeline, B::LintPipeline];
/// The compliance audit: the autofix tool, pinned to `report_only` unless `/remediate` or
/// `/autofix` was typed.
pub const AUDIT_TOOLS: [BuiltinTool; 1] = [B::RunComplianceAutofix];
/// `/remediate` and `/autofix`.
pub const REMEDIATE_TOOLS: [BuiltinTool; 2] = [B::RunComplianceAutofix, B::ApplyRemediationPlan];
/// `/searchData`.
pub const SEARCH_DATA_TOOLS: [BuiltinTool; 2] = [B::SearchGeoSra, B::SearchPubmed];
/// `/extend`: the tools that build a pipeline extension on an nf-core base and check it.
pub const EXTENSION_TOOLS: [BuiltinTool; 4] = [
    B::CloneNfcoreBase,
    B::ValidatePipeline,
    B::LintPipeline,
    B::TestPipeline,
];
/// `/run`: the full run set.
pub const RUN_TOOLS: [BuiltinTool; 9] = [
    B::AutopilotPipeline,
    B::RunBuiltPipeline,
    B::TestPipeline,
    B::CheckTestResult,
    B::PrepareSamplesheetGate,
    B::DebugLastRun,
    B::CheckRunStatus,
    B::AnalyzeRunLog,
    B::FetchTestData,
];
/// `/repair`.
pub const REPAIR_TOOLS: [BuiltinTool; 2] = [B::AutopilotPipeline, B::AnalyzeRunLog];
/// Research turns (`/research`, or classified as research).
pub const RESEARCH_TOOLS: [BuiltinTool; 3] = [B::WebResearch, B::SearchGeoSra, B::SearchPubmed];

/// The tool the report-only pin applies to.
pub const COMPLIANCE_TOOL: BuiltinTool = B::RunComplianceAutofix;

/// The tools one command adds. `review` is the form of a `/review` (ignored for the others).
pub fn row(command: Command, review: ReviewForm) -> &'static [BuiltinTool] {
    match (command, review) {
        // A bare `/review`: the reviewer and nothing else.
        (Command::Review, ReviewForm::Bare) => &[B::ReviewPipeline],
        // `/review --compliance`, `/review --quick`: the audit, report-only.
        (Command::Review, ReviewForm::Audit) => &AUDIT_TOOLS,
        // A question, a path, `--security` or `--lint`: all three, the model picks.
        (Command::Review, ReviewForm::Full) => &REVIEW_TOOLS,
        // `/audit`: the audit, report-only; `review_pipeline` is withheld besides.
        (Command::Audit, _) => &AUDIT_TOOLS,
        // `/remediate`, `/autofix`: the autofix (not pinned) and the plan applier.
        (Command::Remediate | Command::Autofix, _) => &REMEDIATE_TOOLS,
        // `/fix`: the plan applier alone.
        (Command::Fix, _) => &[B::ApplyRemediationPlan],
        // `/rules`: the rule list.
        (Command::Rules, _) => &[B::ListComplianceRules],
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
    /// A built-in tool.
    Tool(BuiltinTool),
    /// The URL fetcher of the first MCP server whose keywords say `url`, for a pasted link.
    UrlFetcher,
}
