//! The remediation plan: what to do about each finding autofix did not fix, and applying it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::patch::{PatchError, apply_file_patch, parse_patch};
use super::{FileEdit, file_diff, unified_diff};
use crate::rules::checks::propose;
use crate::rules::finding::one_line;
use crate::rules::{Finding, RuleSet, Severity, SourceTree, is_vendored};

/// One thing to do: the finding it answers, why it matters, and either a concrete patch
/// (a unified diff against the files as they were when the plan was made) or, always, a
/// precise instruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanItem {
    /// `1`, `2`, … in the plan's order; what `apply_plan`'s `items` names.
    pub id: String,
    pub rule: String,
    pub severity: Severity,
    pub file: String,
    pub line: usize,
    /// The finding's message.
    pub message: String,
    /// What the rule is for.
    pub why: String,
    /// Where the rule's practice is documented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    pub instruction: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

/// A serialisable (JSON) plan.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RemediationPlan {
    pub items: Vec<PlanItem>,
}

impl RemediationPlan {
    /// One item per line, `ID FILE:LINE: [RULE-ID] SEVERITY: instruction`, then `(patch)` when
    /// the item has one.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for item in &self.items {
            out.push_str(&format!(
                "{} {}:{}: [{}] {}: {}{}\n",
                item.id,
                one_line(&item.file),
                item.line,
                item.rule,
                item.severity,
                one_line(&item.instruction),
                if item.patch.is_some() { " (patch)" } else { "" }
            ));
        }
        out
    }
}

/// The plan for `findings` (of a pipeline in the state `p`), one item per finding, in order.
pub fn remediation_plan(p: &SourceTree, rules: &RuleSet, findings: &[Finding]) -> RemediationPlan {
    let mut items = Vec::with_capacity(findings.len());
    // Upstream notes about vendored nf-core code are not the pipeline's to act on.
    let own = findings.iter().filter(|f| !is_vendored(p, &f.file));
    for (i, f) in own.enumerate() {
        let Some(rule) = rules.get(&f.rule) else {
            continue;
        };
        let proposal = propose(rule, f, p);
        let patch = proposal.change.and_then(|(path, new)| {
            let old = p.file(&path);
            (old != Some(new.as_str()))
                .then(|| file_diff(&path, old.is_some(), old.unwrap_or(""), &new))
        });
        items.push(PlanItem {
            id: (i + 1).to_string(),
            rule: f.rule.clone(),
            severity: f.severity,
            file: f.file.clone(),
            line: f.line,
            message: f.message.clone(),
            why: rule.description.clone(),
            doc: rule.doc.clone(),
            instruction: proposal.instruction,
            patch,
        });
    }
    RemediationPlan { items }
}

/// A plan that cannot be applied; nothing is applied.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("the plan has no item `{item}`")]
    UnknownItem { item: String },
    #[error("plan item `{item}` has no patch; do it by hand: {instruction}")]
    NoPatch { item: String, instruction: String },
    #[error(
        "plan item `{item}` edits `{path}`, vendored nf-core code; change it in nf-core/modules and run `nf-core modules update` instead"
    )]
    Vendored { item: String, path: String },
    #[error("plan item `{item}` does not apply: {source}")]
    DoesNotApply {
        item: String,
        #[source]
        source: PatchError,
    },
}

/// What [`apply_plan`] computed.
#[derive(Debug, Clone)]
pub struct PlanApplication {
    /// One edit per changed file, to apply all or nothing.
    pub edits: Vec<FileEdit>,
    pub diff: String,
    /// The items applied, in order.
    pub applied: Vec<String>,
    /// Items not applied because they have only an instruction (when all items were asked for).
    pub left: Vec<String>,
}

/// The edits of the plan's items (`items` names them; all items with a patch when `None`),
/// computed against the pipeline as it is now. All or nothing: if one item's patch no longer
/// applies, or an item named has no patch, the error names it and there are no edits.
pub fn apply_plan(
    p: &SourceTree,
    plan: &RemediationPlan,
    items: Option<&[String]>,
) -> Result<PlanApplication, PlanError> {
    let chosen: Vec<&PlanItem> = match items {
        None => plan.items.iter().filter(|i| i.patch.is_some()).collect(),
        Some(ids) => {
            let mut out = Vec::new();
            for id in ids {
                let item = plan
                    .items
                    .iter()
                    .find(|i| i.id == *id)
                    .ok_or_else(|| PlanError::UnknownItem { item: id.clone() })?;
                if item.patch.is_none() {
                    return Err(PlanError::NoPatch {
                        item: id.clone(),
                        instruction: item.instruction.clone(),
                    });
                }
                if !out.iter().any(|i: &&PlanItem| i.id == item.id) {
                    out.push(item);
                }
            }
            out
        }
    };
    let mut work: BTreeMap<String, Option<String>> = BTreeMap::new();
    for item in &chosen {
        let text = item.patch.as_deref().unwrap_or("");
        let fail = |source| PlanError::DoesNotApply {
            item: item.id.clone(),
            source,
        };
        for fp in parse_patch(text).map_err(fail)? {
            // A plan is a file anyone can edit: its patches are checked, not trusted.
            if is_vendored(p, &fp.path) {
                return Err(PlanError::Vendored {
                    item: item.id.clone(),
                    path: fp.path.clone(),
                });
            }
            let current = work
                .get(&fp.path)
                .cloned()
                .unwrap_or_else(|| p.file(&fp.path).map(str::to_string));
            let new = apply_file_patch(&fp, current.as_deref()).map_err(fail)?;
            work.insert(fp.path.clone(), Some(new));
        }
    }
    let edits: Vec<FileEdit> = work
        .into_iter()
        .filter_map(|(path, new)| {
            let new = new?;
            let old = p.file(&path);
            (old != Some(new.as_str())).then(|| FileEdit {
                old: old.map(|t| t.as_bytes().to_vec()),
                new: new.into_bytes(),
                path,
            })
        })
        .collect();
    let left = match items {
        None => plan
            .items
            .iter()
            .filter(|i| i.patch.is_none())
            .map(|i| i.id.clone())
            .collect(),
        Some(_) => Vec::new(),
    };
    Ok(PlanApplication {
        diff: unified_diff(&edits),
        edits,
        applied: chosen.iter().map(|i| i.id.clone()).collect(),
        left,
    })
}
