//! `list_compliance_rules`, `run_compliance_autofix` and `apply_remediation_plan`: the rules of
//! `codaris-nextflow` over a pipeline read from within the fence; fixes and plan items land
//! as one change through the fence (every file as expected before anything is written).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codaris_nextflow::audit::{self, FileEdit, RemediationPlan};
use codaris_nextflow::rules::{RuleSet, SourceTree, is_vendored, render_reasons, render_rules};
use serde_json::Value;

use super::args::{input_file, pipeline_dir, string_list};
use crate::context::ToolContext;
use crate::files::fence::open::{self, OpenError};
use crate::files::patch::{Replacement, land_replacements};
use crate::tool::{Tool, ToolError, ToolOutput};

/// A remediation plan is a few KiB of JSON; past this it is not one.
const MAX_PLAN_BYTES: u64 = 16 * 1024 * 1024;

/// Where `run_compliance_autofix` writes the remediation plan, inside the pipeline: beside
/// the code it is about, where `apply_remediation_plan` finds it in any later session.
pub const PLAN_FILE: &str = ".codaris/remediation-plan.json";

/// Where the operator's own rule files are read from, each call (so an edit applies at once).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Rules {
    pub dir: Option<PathBuf>,
}

impl Rules {
    pub(super) fn load(&self, tool: &'static str) -> Result<RuleSet, ToolError> {
        let set = match &self.dir {
            Some(dir) => RuleSet::load(dir),
            None => RuleSet::builtin(),
        };
        set.map_err(|error| ToolError::model(format!("{tool}: {error}")))
    }
}

pub(super) fn tools(rules: &Rules) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ListComplianceRules(rules.clone())),
        Arc::new(RunComplianceAutofix(rules.clone())),
        Arc::new(ApplyRemediationPlan(rules.clone())),
    ]
}

/// The pipeline's text files, without any the fence keeps secret (a root that holds
/// Codaris's state or configuration).
pub(super) fn read_tree(
    ctx: &ToolContext,
    tool: &'static str,
    dir: &Path,
) -> Result<SourceTree, ToolError> {
    let tree =
        SourceTree::load(dir).map_err(|error| ToolError::model(format!("{tool}: {error}")))?;
    if !ctx.fence.has_secrets() {
        return Ok(tree);
    }
    let kept: Vec<(String, String)> = tree
        .files()
        .filter(|(path, _)| !ctx.fence.is_secret(&dir.join(path)))
        .map(|(path, text)| (path.to_owned(), text.to_owned()))
        .collect();
    Ok(SourceTree::from_files(kept))
}

fn rule_ids(tool: &'static str, args: &Value) -> Result<Option<Vec<String>>, ToolError> {
    let ids = string_list(tool, args, "rules")?;
    Ok((!ids.is_empty()).then_some(ids))
}

/// `edits` (and the plan, when given) landed beneath `dir` as one change. An edit of vendored
/// nf-core code (`modules/nf-core`, `subworkflows/nf-core`) refuses the whole change: the
/// audit never proposes one, so one here came from a plan file edited by hand or by a model,
/// and nf-core's component lint would reject it and `nf-core modules update` revert it.
fn land(
    ctx: &ToolContext,
    tool: &'static str,
    dir: &Path,
    tree: &SourceTree,
    edits: &[FileEdit],
    plan: Option<&RemediationPlan>,
) -> Result<(), ToolError> {
    if let Some(edit) = edits.iter().find(|e| is_vendored(tree, &e.path)) {
        return Err(ToolError::model(format!(
            "{tool}: `{}` is vendored nf-core code; change it in nf-core/modules, then run `nf-core modules update`; nothing was changed",
            edit.path
        )));
    }
    let mut replacements: Vec<Replacement> = edits
        .iter()
        .map(|edit| Replacement {
            path: PathBuf::from(&edit.path),
            expected: edit.old.clone(),
            new: edit.new.clone(),
        })
        .collect();
    if let Some(plan) = plan {
        let path = dir.join(PLAN_FILE);
        let expected = match open::read(&ctx.fence, &path, MAX_PLAN_BYTES) {
            Ok(bytes) => Some(bytes),
            Err(OpenError::NotFound { .. }) => None,
            Err(refused) => return Err(ToolError::model(format!("{tool}: {refused}"))),
        };
        let mut json = serde_json::to_vec_pretty(plan).map_err(|error| ToolError::Fatal {
            tool,
            source: std::io::Error::other(error),
        })?;
        json.push(b'\n');
        replacements.push(Replacement {
            path: PathBuf::from(PLAN_FILE),
            expected,
            new: json,
        });
    }
    land_replacements(ctx, tool, dir, &replacements)
}

#[derive(Debug)]
struct ListComplianceRules(Rules);

#[async_trait::async_trait]
impl Tool for ListComplianceRules {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::LIST_COMPLIANCE_RULES
    }

    async fn call(&self, _ctx: &ToolContext, _args: &Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(render_rules(&self.0.load(self.name())?)))
    }
}

#[derive(Debug)]
struct RunComplianceAutofix(Rules);

#[async_trait::async_trait]
impl Tool for RunComplianceAutofix {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::RUN_COMPLIANCE_AUTOFIX
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let Some(report_only) = args.get("report_only").and_then(Value::as_bool) else {
            return Err(ToolError::model(format!(
                "{tool}: `report_only` is required: true for the audit, false to fix"
            )));
        };
        let dir = pipeline_dir(ctx, tool, args)?;
        let rules = self.0.load(tool)?;
        let only = rule_ids(tool, args)?;
        let tree = read_tree(ctx, tool, &dir)?;
        let fail = |error: audit::AuditError| ToolError::model(format!("{tool}: {error}"));
        if report_only {
            let found = audit::audit(&tree, &rules, only.as_deref()).map_err(fail)?;
            return Ok(ToolOutput::text(audit_text(&found)));
        }
        let fixed = audit::autofix(&tree, &rules, only.as_deref()).map_err(fail)?;
        land(ctx, tool, &dir, &tree, &fixed.edits, Some(&fixed.plan))?;
        let mut text = format!(
            "fixed {} findings in {} files; {} items in the remediation plan `{PLAN_FILE}` (apply with /fix)\n",
            fixed.fixed.len(),
            fixed.edits.len(),
            fixed.plan.items.len(),
        );
        if !fixed.diff.is_empty() {
            text.push_str(&fixed.diff);
            if !fixed.diff.ends_with('\n') {
                text.push('\n');
            }
        }
        text.push_str("left:\n");
        text.push_str(&audit_text(&fixed.after));
        text.push_str("plan:\n");
        text.push_str(&fixed.plan.render());
        Ok(ToolOutput::text(text))
    }
}

/// The audit as the model reads it: the summary, then one finding a line, then what the
/// rules could not see into.
pub(super) fn audit_text(found: &audit::Audit) -> String {
    let mut text = format!("{}\n", found.summary());
    text.push_str(&found.render());
    let reasons = render_reasons(&found.findings);
    if !reasons.is_empty() {
        text.push_str("why:\n");
        text.push_str(&reasons);
    }
    for line in found.not_understood.iter().chain(&found.skipped) {
        text.push_str(&format!("note: {line}\n"));
    }
    text
}

#[derive(Debug)]
struct ApplyRemediationPlan(Rules);

#[async_trait::async_trait]
impl Tool for ApplyRemediationPlan {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::APPLY_REMEDIATION_PLAN
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let dir = pipeline_dir(ctx, tool, args)?;
        let plan_path = match input_file(ctx, tool, args, "plan")? {
            Some(path) => path,
            None => dir.join(PLAN_FILE),
        };
        let text = open::read_text(&ctx.fence, &plan_path, MAX_PLAN_BYTES).map_err(|error| {
            ToolError::model(match error {
                OpenError::NotFound { .. } => format!(
                    "{tool}: no remediation plan at `{}`; run run_compliance_autofix with report_only false first",
                    plan_path.display()
                ),
                refused => format!("{tool}: {refused}"),
            })
        })?;
        let plan: RemediationPlan = serde_json::from_str(&text).map_err(|error| {
            ToolError::model(format!(
                "{tool}: `{}` is not a remediation plan: {error}",
                plan_path.display()
            ))
        })?;
        let items = item_ids(tool, args)?;
        let tree = read_tree(ctx, tool, &dir)?;
        let applied = audit::apply_plan(&tree, &plan, items.as_deref())
            .map_err(|error| ToolError::model(format!("{tool}: {error}; nothing was changed")))?;
        land(ctx, tool, &dir, &tree, &applied.edits, None)?;
        let rules = self.0.load(tool)?;
        let after = audit::audit(&read_tree(ctx, tool, &dir)?, &rules, None)
            .map_err(|error| ToolError::model(format!("{tool}: {error}")))?;
        let mut out = format!(
            "applied {} items ({}) in {} files\n",
            applied.applied.len(),
            applied.applied.join(", "),
            applied.edits.len()
        );
        if !applied.left.is_empty() {
            out.push_str(&format!(
                "not applied (an instruction, no patch): {}\n",
                applied.left.join(", ")
            ));
        }
        out.push_str(&applied.diff);
        if !applied.diff.is_empty() && !applied.diff.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("left:\n");
        out.push_str(&audit_text(&after));
        Ok(ToolOutput::text(out))
    }
}

/// The plan items named by `items`: numbers or their text.
fn item_ids(tool: &'static str, args: &Value) -> Result<Option<Vec<String>>, ToolError> {
    let wrong = || ToolError::model(format!("{tool}: `items` must be a list of item numbers"));
    match args.get("items") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) if items.is_empty() => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::Number(n) => n.as_u64().map(|n| n.to_string()).ok_or_else(wrong),
                Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
                _ => Err(wrong()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(wrong()),
    }
}
