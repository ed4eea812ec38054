//! Vendored nf-core components: `modules/nf-core/**` and `subworkflows/nf-core/**` are copies of
//! nf-core/modules, installed and updated by `nf-core modules|subworkflows install|update`.
//!
//! A pipeline does not own that code: nf-core's component lint compares it with upstream and
//! fails on any difference that is not a recorded patch, and the next update overwrites it. So
//! the audit reports at most an upstream note about it (severity `info`, saying where to fix
//! it), autofix never edits it, and the remediation plan never lists it. The one exception is
//! nf-core/modules itself (`.nf-core.yml` says `repository_type: modules`), where those
//! directories are the source.

use super::finding::Finding;
use super::pipeline::SourceTree;
use super::rule::Severity;

const MODULES: &str = "modules/nf-core/";
const SUBWORKFLOWS: &str = "subworkflows/nf-core/";

/// Whether `path` (relative, `/`-separated) is in a vendored nf-core component of this tree.
pub fn is_vendored(p: &SourceTree, path: &str) -> bool {
    is_vendored_path(path) && !is_modules_repository(p)
}

/// Whether `path` is under `modules/nf-core/` or `subworkflows/nf-core/`, whatever the tree.
pub(crate) fn is_vendored_path(path: &str) -> bool {
    path.starts_with(MODULES) || path.starts_with(SUBWORKFLOWS)
}

/// nf-core/modules (and module repositories made like it) declare themselves in `.nf-core.yml`.
pub(crate) fn is_modules_repository(p: &SourceTree) -> bool {
    [".nf-core.yml", ".nf-core.yaml"]
        .iter()
        .filter_map(|f| p.file(f))
        .flat_map(str::lines)
        .any(|l| {
            l.split_once(':').is_some_and(|(k, v)| {
                k.trim() == "repository_type" && v.trim().trim_matches(['"', '\'']) == "modules"
            })
        })
}

/// The findings as a pipeline's owner should see them: in vendored files, a finding of a rule
/// whose own severity is `info` (style) is dropped, being upstream's business alone; any other
/// becomes an `info` note saying to fix it upstream.
pub(crate) fn as_upstream_notes(p: &SourceTree, findings: Vec<Finding>) -> Vec<Finding> {
    if is_modules_repository(p) {
        return findings;
    }
    findings
        .into_iter()
        .filter_map(|mut f| {
            if !is_vendored_path(&f.file) {
                return Some(f);
            }
            if f.severity == Severity::Info {
                return None;
            }
            f.severity = Severity::Info;
            f.message = format!("{}; {}", f.message, upstream_advice(&f.file));
            Some(f)
        })
        .collect()
}

/// Where a vendored file's problem is fixed.
pub(crate) fn upstream_advice(path: &str) -> &'static str {
    if path.starts_with(SUBWORKFLOWS) {
        "vendored nf-core subworkflow: fix it upstream in nf-core/modules, then `nf-core subworkflows update`"
    } else {
        "vendored nf-core module: fix it upstream in nf-core/modules, then `nf-core modules update`"
    }
}
