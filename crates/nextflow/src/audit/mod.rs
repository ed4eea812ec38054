//! The compliance audit, the autofix and the remediation plan over a [`SourceTree`].
//!
//! Everything here is pure: it reads a [`SourceTree`] already in memory and answers with values.
//! A fix is a set of whole-file [`FileEdit`]s (the bytes expected now, the bytes to write) that
//! the caller applies all or nothing, through its fence; a [`RemediationPlan`] is serialisable
//! (JSON) so it can be written next to the pipeline, reviewed, and handed back to
//! [`apply_plan`].
//!
//! ```text
//! audit(p, rules, only)      -> Audit { findings }            (`/audit`, report_only)
//! autofix(p, rules, only)    -> Autofix { edits, diff, fixed, plan }   (`/autofix`, `/remediate`)
//! apply_plan(p, plan, items) -> PlanApplication { edits, diff, applied, left }   (`/fix`)
//! ```

mod patch;
mod plan;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::rules::checks::{Facts, fix_rule, run_rule};
use crate::rules::vendored::as_upstream_notes;
use crate::rules::{Finding, Rule, RuleSet, Severity, SourceTree, is_vendored, render_findings};

pub use patch::PatchError;
pub use plan::{
    PlanApplication, PlanError, PlanItem, RemediationPlan, apply_plan, remediation_plan,
};

/// An audit that cannot run.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("no compliance rule `{id}`; `list_compliance_rules` lists them")]
    UnknownRule { id: String },
}

/// What the rules found, sorted by file, line and rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Audit {
    pub findings: Vec<Finding>,
    /// The ids of the rules that ran.
    pub rules: Vec<String>,
    /// Files not read (symbolic links, binary or oversized files), `path: why`.
    pub skipped: Vec<String>,
    /// What the Nextflow reader did not understand, `FILE:LINE: not understood: WHAT`: the
    /// process-level rules could not see inside these, so a clean audit is not a proof there.
    pub not_understood: Vec<String>,
}

impl Audit {
    /// One finding per line, `FILE:LINE: [RULE-ID] SEVERITY: message`.
    pub fn render(&self) -> String {
        render_findings(&self.findings)
    }

    /// `N findings (E errors, W warnings, I info) from R rules`.
    pub fn summary(&self) -> String {
        let count = |s| self.findings.iter().filter(|f| f.severity == s).count();
        format!(
            "{} findings ({} errors, {} warnings, {} info) from {} rules",
            self.findings.len(),
            count(Severity::Error),
            count(Severity::Warning),
            count(Severity::Info),
            self.rules.len()
        )
    }

    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }
}

/// The rules `only` names (all of them when `None`), in rule-set order.
fn selected<'r>(rules: &'r RuleSet, only: Option<&[String]>) -> Result<Vec<&'r Rule>, AuditError> {
    match only {
        None => Ok(rules.rules().iter().collect()),
        Some(ids) => {
            for id in ids {
                if rules.get(id).is_none() {
                    return Err(AuditError::UnknownRule { id: id.clone() });
                }
            }
            Ok(rules
                .rules()
                .iter()
                .filter(|r| ids.contains(&r.id))
                .collect())
        }
    }
}

/// Runs the rules (`only` the named ones, when given) over the pipeline.
pub fn audit(
    p: &SourceTree,
    rules: &RuleSet,
    only: Option<&[String]>,
) -> Result<Audit, AuditError> {
    let chosen = selected(rules, only)?;
    Ok(run(p, &chosen))
}

fn run(p: &SourceTree, rules: &[&Rule]) -> Audit {
    let facts = Facts::new(p);
    let mut findings = Vec::new();
    for rule in rules {
        run_rule(rule, &facts, &mut findings);
    }
    let mut findings = as_upstream_notes(p, findings);
    findings.sort();
    findings.dedup();
    Audit {
        findings,
        rules: rules.iter().map(|r| r.id.clone()).collect(),
        skipped: p.skipped().to_vec(),
        not_understood: facts.not_understood(),
    }
}

/// One whole-file change: `old` is what the file must hold now (`None`: it must not exist),
/// `new` what to write. The caller checks `old` before writing, so a file changed since the
/// audit is never overwritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdit {
    /// Relative to the pipeline, `/`-separated.
    pub path: String,
    pub old: Option<Vec<u8>>,
    pub new: Vec<u8>,
}

/// The result of [`autofix`].
#[derive(Debug, Clone)]
pub struct Autofix {
    /// The fixes, one edit per file, to apply all or nothing.
    pub edits: Vec<FileEdit>,
    /// The edits as one unified diff (`a/PATH`, `b/PATH` headers).
    pub diff: String,
    /// The findings the edits remove.
    pub fixed: Vec<Finding>,
    /// The audit of the pipeline as it will be once the edits are written.
    pub after: Audit,
    /// What to do about `after`'s findings, computed against the fixed files.
    pub plan: RemediationPlan,
}

/// Fixes every fixable finding (of the rules `only` names, when given) and plans the rest.
/// The fixes are checked by auditing the fixed pipeline in memory: `fixed` is exactly what that
/// second audit no longer finds.
pub fn autofix(
    p: &SourceTree,
    rules: &RuleSet,
    only: Option<&[String]>,
) -> Result<Autofix, AuditError> {
    let chosen = selected(rules, only)?;
    let before = run(p, &chosen);
    let mut fixed_p = p.clone();
    // Rules fix in turn, each seeing the previous rules' fixes, so two fixes to one file compose.
    for rule in chosen.iter().filter(|r| r.fixable) {
        for (path, new) in fix_rule(rule, &fixed_p) {
            // Vendored nf-core code is never edited: nf-core's component lint rejects the
            // change and the next `nf-core modules update` reverts it.
            if !is_vendored(p, &path) {
                fixed_p.set_file(&path, new);
            }
        }
    }
    let edits = edits_between(p, &fixed_p);
    let after = run(&fixed_p, &chosen);
    let fixed = gone(&before.findings, &after.findings);
    let plan = remediation_plan(&fixed_p, rules, &after.findings);
    Ok(Autofix {
        diff: unified_diff(&edits),
        edits,
        fixed,
        after,
        plan,
    })
}

/// The files whose text differs between two states of a pipeline.
fn edits_between(before: &SourceTree, after: &SourceTree) -> Vec<FileEdit> {
    after
        .files()
        .filter(|(path, text)| before.file(path) != Some(*text))
        .map(|(path, text)| FileEdit {
            path: path.to_string(),
            old: before.file(path).map(|t| t.as_bytes().to_vec()),
            new: text.as_bytes().to_vec(),
        })
        .collect()
}

/// The findings of `before` that `after` no longer has. Lines may move when a fix adds lines,
/// so a finding is matched by rule, file and message, counted, not by line.
fn gone(before: &[Finding], after: &[Finding]) -> Vec<Finding> {
    let mut left: BTreeMap<(&str, &str, &str), usize> = BTreeMap::new();
    for f in after {
        *left.entry((&f.rule, &f.file, &f.message)).or_default() += 1;
    }
    let mut out = Vec::new();
    for f in before {
        match left.get_mut(&(f.rule.as_str(), f.file.as_str(), f.message.as_str())) {
            Some(n) if *n > 0 => *n -= 1,
            _ => out.push(f.clone()),
        }
    }
    out
}

/// The edits as one unified diff, files in the order given.
pub fn unified_diff(edits: &[FileEdit]) -> String {
    let mut out = String::new();
    for e in edits {
        let old = e
            .old
            .as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        let new = String::from_utf8_lossy(&e.new);
        out.push_str(&file_diff(&e.path, e.old.is_some(), &old, &new));
    }
    out
}

pub(crate) fn file_diff(path: &str, existed: bool, old: &str, new: &str) -> String {
    let from = if existed {
        format!("a/{path}")
    } else {
        "/dev/null".to_string()
    };
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&from, &format!("b/{path}"))
        .to_string()
}
