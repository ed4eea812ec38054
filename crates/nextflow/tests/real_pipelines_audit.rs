//! The compliance audit on five real expert pipelines (tests/fixtures/nextflow/real-pipelines):
//! each one's findings listed in full, so a false positive coming back fails, and autofix on
//! copies of sarek and rnaseq leaving their vendored nf-core components byte for byte as they were.
//!
//! Every finding below was read against the code it points at and judged real by nf-core's own
//! standards (its lint, its module lint, the strict syntax); vendored code is reported only as
//! upstream notes (`info`, "fix it upstream").

use std::collections::BTreeMap;
use std::error::Error;
use std::path::{Path, PathBuf};

use codaris_nextflow::audit::{Audit, FileEdit, apply_plan, audit, autofix};
use codaris_nextflow::rules::{RuleSet, Severity, SourceTree, is_vendored};
use pretty_assertions::assert_eq;
use sha2::{Digest, Sha256};

type TestResult = Result<(), Box<dyn Error>>;

fn pipeline(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/nextflow/real-pipelines")
        .join(name)
}

fn audit_of(name: &str) -> Result<Audit, Box<dyn Error>> {
    let tree = SourceTree::load(&pipeline(name))?;
    Ok(audit(&tree, &RuleSet::builtin()?, None)?)
}

fn check(name: &str, expected: &[&str]) -> TestResult {
    let found = audit_of(name)?;
    let lines: Vec<String> = found.findings.iter().map(|f| f.render()).collect();
    assert_eq!(lines, expected, "{name}");
    for f in &found.findings {
        assert!(!f.why.is_empty(), "{} says no why", f.render());
        assert!(
            f.doc.as_deref().is_some_and(|d| d.starts_with("https://")),
            "{} has no doc link",
            f.render()
        );
    }
    Ok(())
}

const VENDORED_MODULE: &str =
    "vendored nf-core module: fix it upstream in nf-core/modules, then `nf-core modules update`";

/// sarek 3.10.0 passes `nf-core pipelines lint`: no errors. Before: 191 findings (6 errors on
/// `%3A` tags, 127 "no nf-test" on vendored modules whose tests sarek's `.gitignore` drops, 3 on
/// container-only modules, 53 `publishDir` with `enabled: false`). Left: BWA_INDEX and
/// BWAMEM2_INDEX have no resource label upstream (nf-core's module lint warns on that too).
#[test]
fn sarek() -> TestResult {
    check(
        "sarek-3.10.0",
        &[
            &format!(
                "modules/nf-core/bwa/index/main.nf:1: [NF-PROCESS-RESOURCE-LABEL] info: process `BWA_INDEX` has no resource label; {VENDORED_MODULE}"
            ),
            &format!(
                "modules/nf-core/bwamem2/index/main.nf:1: [NF-PROCESS-RESOURCE-LABEL] info: process `BWAMEM2_INDEX` has no resource label; {VENDORED_MODULE}"
            ),
        ],
    )
}

/// rnaseq 3.24.0: before, 78 errors read `'singularity'` out of the container ternary as the
/// image (or a `%3A` tag as untagged). Left: three local processes and one vendored one
/// without a resource label, which run on the base config's defaults.
#[test]
fn rnaseq() -> TestResult {
    check(
        "rnaseq-3.24.0",
        &[
            "modules/local/gtf_filter/main.nf:1: [NF-PROCESS-RESOURCE-LABEL] warning: process `GTF_FILTER` has no resource label",
            "modules/local/multiqc_custom_biotype/main.nf:1: [NF-PROCESS-RESOURCE-LABEL] warning: process `MULTIQC_CUSTOM_BIOTYPE` has no resource label",
            "modules/local/preprocess_transcripts_fasta_gencode/main.nf:1: [NF-PROCESS-RESOURCE-LABEL] warning: process `PREPROCESS_TRANSCRIPTS_FASTA_GENCODE` has no resource label",
            "modules/nf-core/custom/catadditionalfasta/main.nf:1: [NF-PROCESS-RESOURCE-LABEL] info: process `CUSTOM_CATADDITIONALFASTA` has no resource label; vendored nf-core module: fix it upstream in nf-core/modules, then `nf-core modules update`",
        ],
    )
}

/// fetchngs 1.12.0: the `exec:` process needs no container, versions or label; nf-validation's
/// own parameters and one read behind `params.containsKey` need no schema entry; `.nf-test*`
/// ignores `.nf-test/`; vendored `shell:` blocks and `Channel.` are upstream's style.
#[test]
fn fetchngs() -> TestResult {
    check(
        "fetchngs-1.12.0",
        &[
            "modules/local/multiqc_mappings_config/main.nf:2: [NF-PROCESS-RESOURCE-LABEL] warning: process `MULTIQC_MAPPINGS_CONFIG` has no resource label",
            "modules/local/sra_ids_to_runinfo/main.nf:2: [NF-PROCESS-RESOURCE-LABEL] warning: process `SRA_IDS_TO_RUNINFO` has no resource label",
            "modules/local/sra_runinfo_to_ftp/main.nf:2: [NF-PROCESS-RESOURCE-LABEL] warning: process `SRA_RUNINFO_TO_FTP` has no resource label",
            "workflows/sra/main.nf:35: [NF-CHANNEL-LOWERCASE] info: `Channel.` factory; write `channel.`",
            "workflows/sra/main.nf:169: [NF-CHANNEL-LOWERCASE] info: `Channel.` factory; write `channel.`",
        ],
    )
}

/// demo 1.0.2: nf-schema's help parameters (renamed `help_full`, `show_hidden`) are documented
/// by the plugin; with no nf-tests at all, only NF-TESTS-PRESENT asks for them (not also their
/// config and their ignore line). Left: no nf-tests, and `Channel.` in its own code.
#[test]
fn demo() -> TestResult {
    check(
        "demo-1.0.2",
        &[
            "subworkflows/local/utils_nfcore_demo_pipeline/main.nf:38: [NF-CHANNEL-LOWERCASE] info: `Channel.` factory; write `channel.`",
            "tests/:0: [NF-TESTS-PRESENT] warning: no pipeline-level nf-test under `tests/`",
            "workflows/demo.nf:26: [NF-CHANNEL-LOWERCASE] info: `Channel.` factory; write `channel.`",
            "workflows/demo.nf:27: [NF-CHANNEL-LOWERCASE] info: `Channel.` factory; write `channel.`",
            "workflows/demo.nf:63: [NF-CHANNEL-LOWERCASE] info: `Channel.` factory; write `channel.`",
            "workflows/demo.nf:66: [NF-CHANNEL-LOWERCASE] info: `Channel.` factory; write `channel.`",
            "workflows/demo.nf:67: [NF-CHANNEL-LOWERCASE] info: `Channel.` factory; write `channel.`",
            "workflows/demo.nf:69: [NF-CHANNEL-LOWERCASE] info: `Channel.` factory; write `channel.`",
            "workflows/demo.nf:70: [NF-CHANNEL-LOWERCASE] info: `Channel.` factory; write `channel.`",
            "workflows/demo.nf:74: [NF-CHANNEL-LOWERCASE] info: `Channel.` factory; write `channel.`",
            "workflows/demo.nf:80: [NF-CHANNEL-LOWERCASE] info: `Channel.` factory; write `channel.`",
        ],
    )
}

/// nextflow-io/rnaseq-nf, not an nf-core pipeline: `work/*` and `results` ignore the run
/// directories. What is left is what the nf-core rules ask of it.
#[test]
fn rnaseq_nf() -> TestResult {
    check(
        "rnaseq-nf",
        &[
            "CHANGELOG.md:0: [NF-CHANGELOG-PRESENT] warning: no `CHANGELOG.md`",
            "modules/fastqc/main.nf:2: [NF-PROCESS-RESOURCE-LABEL] warning: process `FASTQC` has no resource label",
            "modules/fastqc/main.nf:2: [NF-VERSIONS-EMITTED] warning: process `FASTQC` emits no tool versions (`versions.yml` or topic `versions`)",
            "modules/index/main.nf:2: [NF-PROCESS-RESOURCE-LABEL] warning: process `INDEX` has no resource label",
            "modules/index/main.nf:2: [NF-VERSIONS-EMITTED] warning: process `INDEX` emits no tool versions (`versions.yml` or topic `versions`)",
            "modules/multiqc/main.nf:2: [NF-PROCESS-RESOURCE-LABEL] warning: process `MULTIQC` has no resource label",
            "modules/multiqc/main.nf:2: [NF-VERSIONS-EMITTED] warning: process `MULTIQC` emits no tool versions (`versions.yml` or topic `versions`)",
            "modules/quant/main.nf:2: [NF-PROCESS-RESOURCE-LABEL] warning: process `QUANT` has no resource label",
            "modules/quant/main.nf:2: [NF-VERSIONS-EMITTED] warning: process `QUANT` emits no tool versions (`versions.yml` or topic `versions`)",
            "nextflow.config:0: [NF-MANIFEST-COMPLETE] warning: `manifest.homePage` is not set",
            "nextflow.config:0: [NF-MANIFEST-COMPLETE] warning: `manifest.name` is not set",
            "nextflow.config:0: [NF-MANIFEST-COMPLETE] warning: `manifest.version` is not set",
            "nextflow.config:87: [NF-NO-ABSOLUTE-PATHS] warning: hard-coded absolute path; take it from a parameter",
            "tests/:0: [NF-TESTS-PRESENT] warning: no pipeline-level nf-test under `tests/`",
        ],
    )
}

#[test]
fn no_released_nfcore_pipeline_has_an_error() -> TestResult {
    for name in [
        "sarek-3.10.0",
        "rnaseq-3.24.0",
        "fetchngs-1.12.0",
        "demo-1.0.2",
    ] {
        let found = audit_of(name)?;
        let errors: Vec<String> = found
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| f.render())
            .collect();
        assert_eq!(errors, Vec::<String>::new(), "{name}");
    }
    Ok(())
}

/// A copy of `src` in a fresh temporary directory.
fn copy_tree(src: &Path) -> Result<tempfile::TempDir, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    copy_dir(src, dir.path())?;
    Ok(dir)
}

fn copy_dir(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let to = dst.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &to)?;
        } else {
            std::fs::copy(entry.path(), to)?;
        }
    }
    Ok(())
}

/// The sha256 of every file under `modules/nf-core` and `subworkflows/nf-core`.
fn vendored_digests(root: &Path) -> Result<BTreeMap<String, String>, Box<dyn Error>> {
    let mut out = BTreeMap::new();
    for top in ["modules/nf-core", "subworkflows/nf-core"] {
        let mut stack = vec![root.join(top)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir)? {
                let entry = entry?;
                if entry.file_type()?.is_dir() {
                    stack.push(entry.path());
                } else {
                    let rel = entry.path().strip_prefix(root)?.display().to_string();
                    let digest = Sha256::digest(std::fs::read(entry.path())?);
                    out.insert(rel, format!("{digest:x}"));
                }
            }
        }
    }
    Ok(out)
}

fn write_edits(root: &Path, edits: &[FileEdit]) -> TestResult {
    for e in edits {
        let path = root.join(&e.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, &e.new)?;
    }
    Ok(())
}

fn append(root: &Path, rel: &str, text: &str) -> TestResult {
    let path = root.join(rel);
    let old = std::fs::read_to_string(&path)?;
    std::fs::write(path, format!("{old}{text}"))?;
    Ok(())
}

/// Plants what autofix fixes (`Channel.`, a `publishDir` without `mode`) in vendored code and in
/// the pipeline's own, runs autofix and writes its edits: the pipeline's own files are fixed,
/// every vendored file is byte for byte as before, and neither the edits nor the plan name one.
fn autofix_leaves_vendored_code_alone(name: &str, vendored: &[&str], own: &str) -> TestResult {
    let dir = copy_tree(&pipeline(name))?;
    let root = dir.path();
    for rel in vendored {
        append(root, rel, "\ndef seeded_channel() { Channel.empty() }\n")?;
    }
    append(
        root,
        vendored[0],
        "\nprocess SEEDED {\n    publishDir \"results\"\n\n    script:\n    \"true\"\n}\n",
    )?;
    append(root, own, "\ndef seeded_channel() { Channel.empty() }\n")?;
    let before = vendored_digests(root)?;
    assert!(before.len() > 20, "{name}: {} vendored files", before.len());

    let tree = SourceTree::load(root)?;
    let fixed = autofix(&tree, &RuleSet::builtin()?, None)?;
    let edited: Vec<&str> = fixed.edits.iter().map(|e| e.path.as_str()).collect();
    assert!(
        edited.contains(&own),
        "{name}: the pipeline's own `{own}` was not fixed: {edited:?}"
    );
    for path in &edited {
        assert!(
            !is_vendored(&tree, path),
            "{name}: autofix edits vendored `{path}`"
        );
    }
    for item in &fixed.plan.items {
        assert!(
            !is_vendored(&tree, &item.file),
            "{name}: plan item on vendored `{}`",
            item.file
        );
    }
    write_edits(root, &fixed.edits)?;
    assert_eq!(
        vendored_digests(root)?,
        before,
        "{name}: vendored files changed"
    );
    assert!(std::fs::read_to_string(root.join(own))?.contains("channel.empty()"));

    // The vendored findings are upstream notes: info, saying where to fix them.
    let after = audit(&SourceTree::load(root)?, &RuleSet::builtin()?, None)?;
    let notes: Vec<String> = after
        .findings
        .iter()
        .filter(|f| is_vendored(&tree, &f.file))
        .map(|f| f.render())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("[NF-PUBLISHDIR-MODE] info:") && n.contains("fix it upstream")),
        "{name}: {notes:#?}"
    );
    Ok(())
}

#[test]
fn autofix_on_a_copy_of_sarek_leaves_its_vendored_components_byte_identical() -> TestResult {
    autofix_leaves_vendored_code_alone(
        "sarek-3.10.0",
        &[
            "modules/nf-core/fastqc/main.nf",
            "subworkflows/nf-core/utils_nfcore_pipeline/main.nf",
        ],
        "subworkflows/local/utils_nfcore_sarek_pipeline/main.nf",
    )
}

#[test]
fn autofix_on_a_copy_of_rnaseq_leaves_its_vendored_components_byte_identical() -> TestResult {
    autofix_leaves_vendored_code_alone(
        "rnaseq-3.24.0",
        &[
            "modules/nf-core/salmon/quant/main.nf",
            "subworkflows/nf-core/utils_nfcore_pipeline/main.nf",
        ],
        "workflows/rnaseq/main.nf",
    )
}

/// A plan is a file: a patch planted in it for vendored code is refused, and nothing applies.
#[test]
fn a_plan_patching_vendored_code_is_refused() -> TestResult {
    let tree = SourceTree::load(&pipeline("rnaseq-3.24.0"))?;
    let plan_json = serde_json::json!({
        "items": [{
            "id": "1",
            "rule": "NF-CHANNEL-LOWERCASE",
            "severity": "info",
            "file": "modules/nf-core/fastqc/main.nf",
            "line": 1,
            "message": "planted",
            "why": "planted",
            "instruction": "planted",
            "patch": "--- a/modules/nf-core/fastqc/main.nf\n+++ b/modules/nf-core/fastqc/main.nf\n@@ -1,1 +1,2 @@\n+// edited\n process FASTQC {\n"
        }]
    });
    let plan = serde_json::from_value(plan_json)?;
    let refused = apply_plan(&tree, &plan, None);
    assert_eq!(
        refused.err().map(|e| e.to_string()),
        Some("plan item `1` edits `modules/nf-core/fastqc/main.nf`, vendored nf-core code; change it in nf-core/modules and run `nf-core modules update` instead".to_string())
    );
    Ok(())
}
