//! Autofix, the remediation plan and `apply_plan`, on a seeded copy of the real template:
//! the edits are written as the daemon would, and a second audit shows what they fixed.

use codaris_nextflow::audit::{PlanError, RemediationPlan, apply_plan, audit, autofix};
use codaris_nextflow::rules::{RuleSet, SourceTree};
use pretty_assertions::assert_eq;

use crate::support::{TestResult, copy_tree, template, write, write_edits};

/// The template with three fixable defects and three that need a person.
fn seeded() -> Result<tempfile::TempDir, Box<dyn std::error::Error>> {
    let dir = copy_tree(&template())?;
    let root = dir.path();
    std::fs::remove_file(root.join("CHANGELOG.md"))?;
    let gitignore = std::fs::read_to_string(root.join(".gitignore"))?.replace("results/\n", "");
    write(root, ".gitignore", &gitignore)?;
    write(
        root,
        "modules/local/count/main.nf",
        "process COUNT {\n    container 'ubuntu:latest'\n    publishDir \"${params.outdir}/count\"\n\n    input:\n    path reads\n\n    output:\n    path 'n.txt'\n    path 'versions.yml', emit: versions\n\n    script:\n    \"\"\"\n    wc -l ${reads} > n.txt\n    echo 'COUNT: 1' > versions.yml\n    \"\"\"\n}\n",
    )?;
    let schema = std::fs::read_to_string(root.join("nextflow_schema.json"))?.replace(
        "\"outdir\": {",
        "\"min_reads\": {\n                    \"type\": \"integer\",\n                    \"default\": 10\n                },\n                \"outdir\": {",
    );
    write(root, "nextflow_schema.json", &schema)?;
    Ok(dir)
}

#[test]
fn autofix_fixes_the_fixable_findings_and_plans_the_rest() -> TestResult {
    let dir = seeded()?;
    let root = dir.path();
    let rules = RuleSet::builtin()?;
    let before = audit(&SourceTree::load(root)?, &rules, None)?;
    assert_eq!(
        before.render(),
        ".gitignore:0: [NF-GITIGNORE-RUN-DIRS] info: no line `results/`\n\
         CHANGELOG.md:0: [NF-CHANGELOG-PRESENT] warning: no `CHANGELOG.md`\n\
         modules/local/count/main.nf:1: [NF-PROCESS-RESOURCE-LABEL] warning: process `COUNT` has no resource label\n\
         modules/local/count/main.nf:2: [NF-CONTAINER-PINNED] error: process `COUNT`: container `ubuntu:latest` uses the `latest` tag\n\
         modules/local/count/main.nf:3: [NF-PUBLISHDIR-MODE] warning: process `COUNT`: `publishDir` sets no `mode` (the default symlinks into the work directory)\n\
         nextflow_schema.json:26: [NF-SCHEMA-PARAMS-DEFAULT] warning: parameter `min_reads` is documented but has no default in the config\n"
    );

    let fix = autofix(&SourceTree::load(root)?, &rules, None)?;
    let paths: Vec<&str> = fix.edits.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [".gitignore", "CHANGELOG.md", "modules/local/count/main.nf"]
    );
    let fixed: Vec<&str> = fix.fixed.iter().map(|f| f.rule.as_str()).collect();
    assert_eq!(
        fixed,
        [
            "NF-GITIGNORE-RUN-DIRS",
            "NF-CHANGELOG-PRESENT",
            "NF-PUBLISHDIR-MODE"
        ]
    );
    assert!(
        fix.diff.contains("--- /dev/null\n+++ b/CHANGELOG.md\n"),
        "{}",
        fix.diff
    );
    assert!(
        fix.diff.contains(
            "-    publishDir \"${params.outdir}/count\"\n+    publishDir \"${params.outdir}/count\", mode: params.publish_dir_mode\n"
        ),
        "{}",
        fix.diff
    );
    assert!(fix.diff.contains("+results/\n"), "{}", fix.diff);

    // Written as the daemon would (all or nothing), a second audit shows only the rest.
    write_edits(root, &fix.edits)?;
    let after = audit(&SourceTree::load(root)?, &rules, None)?;
    assert_eq!(after, fix.after);
    assert_eq!(
        after.render(),
        "modules/local/count/main.nf:1: [NF-PROCESS-RESOURCE-LABEL] warning: process `COUNT` has no resource label\n\
         modules/local/count/main.nf:2: [NF-CONTAINER-PINNED] error: process `COUNT`: container `ubuntu:latest` uses the `latest` tag\n\
         nextflow_schema.json:26: [NF-SCHEMA-PARAMS-DEFAULT] warning: parameter `min_reads` is documented but has no default in the config\n"
    );

    // The rest is in the plan: two concrete patches, and an instruction for the container.
    let plan = &fix.plan;
    assert_eq!(plan.items.len(), 3);
    assert_eq!(
        plan.render(),
        "1 modules/local/count/main.nf:1: [NF-PROCESS-RESOURCE-LABEL] warning: give process `COUNT` the nf-core label matching its needs (`process_single`, `process_low`, `process_medium`, `process_high`); the patch adds `process_single` (patch)\n\
         2 modules/local/count/main.nf:2: [NF-CONTAINER-PINNED] error: pin the container on line 2 of `modules/local/count/main.nf` to the exact version it should run (`tool:1.2.3--build`, or `@sha256:…`); nf-core modules' containers come from `nf-core modules update` \n\
         3 nextflow_schema.json:26: [NF-SCHEMA-PARAMS-DEFAULT] warning: give `min_reads` a default in the `params { }` block of `nextflow.config` (`null` if it has none) (patch)\n"
            .replace(" \n", "\n")
    );
    assert_eq!(
        plan.items[2].patch.as_deref(),
        Some(
            "--- a/nextflow.config\n+++ b/nextflow.config\n@@ -8,6 +8,7 @@\n \n // Global default params, used in configs\n params {\n+    min_reads = 10\n \n     // TODO nf-core: Specify your pipeline's command line flags\n     // Input options\n"
        )
    );

    // The plan survives JSON, and applying it (all items with a patch) clears those findings.
    let json = serde_json::to_string_pretty(plan)?;
    let plan: RemediationPlan = serde_json::from_str(&json)?;
    let applied = apply_plan(&SourceTree::load(root)?, &plan, None)?;
    assert_eq!(applied.applied, ["1", "3"]);
    assert_eq!(applied.left, ["2"]);
    write_edits(root, &applied.edits)?;
    let last = audit(&SourceTree::load(root)?, &rules, None)?;
    assert_eq!(
        last.render(),
        "modules/local/count/main.nf:3: [NF-CONTAINER-PINNED] error: process `COUNT`: container `ubuntu:latest` uses the `latest` tag\n"
    );
    Ok(())
}

#[test]
fn apply_plan_is_all_or_nothing_and_names_the_item_that_does_not_apply() -> TestResult {
    let dir = seeded()?;
    let root = dir.path();
    let rules = RuleSet::builtin()?;
    let fix = autofix(&SourceTree::load(root)?, &rules, None)?;
    write_edits(root, &fix.edits)?;
    // nextflow.config changes under the plan's feet: item 3 no longer applies.
    let config = std::fs::read_to_string(root.join("nextflow.config"))?
        .replace("params {\n\n", "params {\n    extra = 1\n\n");
    write(root, "nextflow.config", &config)?;
    let p = SourceTree::load(root)?;
    let err = apply_plan(&p, &fix.plan, None).err().map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some(
            "plan item `3` does not apply: hunk 1 of `nextflow.config` does not match the file; it changed since the plan was made"
        )
    );
    // Item 1 alone still applies; naming an item with no patch or no such item is an error.
    let one = apply_plan(&p, &fix.plan, Some(&["1".to_string()]))?;
    assert_eq!(one.applied, ["1"]);
    assert_eq!(one.edits.len(), 1);
    assert_eq!(one.edits[0].path, "modules/local/count/main.nf");
    assert!(
        one.diff.contains("+    label 'process_single'\n"),
        "{}",
        one.diff
    );
    assert!(matches!(
        apply_plan(&p, &fix.plan, Some(&["1".to_string(), "2".to_string()])),
        Err(PlanError::NoPatch { item, .. }) if item == "2"
    ));
    assert!(matches!(
        apply_plan(&p, &fix.plan, Some(&["9".to_string()])),
        Err(PlanError::UnknownItem { item }) if item == "9"
    ));
    Ok(())
}

#[test]
fn a_hostile_plan_cannot_reach_outside_the_pipeline() -> TestResult {
    let p = SourceTree::from_files([("main.nf", "workflow {}\n")]);
    for path in ["../outside.txt", "/etc/passwd", ".git/config", "a/../../b"] {
        let json = serde_json::json!({"items": [{
            "id": "1", "rule": "NF-X-Y", "severity": "error", "file": "main.nf", "line": 1,
            "message": "m", "why": "w", "instruction": "i",
            "patch": format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+owned\n"),
        }]});
        let plan: RemediationPlan = serde_json::from_value(json)?;
        let err = apply_plan(&p, &plan, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("plan item `1` does not apply: "),
            "{path}: {err}"
        );
    }
    Ok(())
}

#[test]
fn autofix_on_the_clean_template_changes_nothing() -> TestResult {
    let fix = autofix(&SourceTree::load(&template())?, &RuleSet::builtin()?, None)?;
    assert!(fix.edits.is_empty());
    assert_eq!(fix.diff, "");
    assert!(fix.plan.items.is_empty());
    Ok(())
}

#[test]
fn autofix_limited_to_named_rules_leaves_the_others() -> TestResult {
    let p = SourceTree::from_files([("main.nf", "Channel.of(1)\n"), ("CHANGELOG.md", "# c\n")]);
    let rules = RuleSet::builtin()?;
    let only = ["NF-CHANNEL-LOWERCASE".to_string()];
    let fix = autofix(&p, &rules, Some(&only))?;
    assert_eq!(
        fix.diff,
        "--- a/main.nf\n+++ b/main.nf\n@@ -1 +1 @@\n-Channel.of(1)\n+channel.of(1)\n"
    );
    assert_eq!(fix.after.render(), "");
    Ok(())
}

#[test]
fn publish_dir_mode_autofix_adds_the_pipelines_mode_and_leaves_invalid_modes_to_a_person()
-> TestResult {
    let dir = copy_tree(&crate::support::fixtures().join("rules/NF-PUBLISHDIR-MODE/fail"))?;
    let root = dir.path();
    let rules = RuleSet::builtin()?;
    let only = ["NF-PUBLISHDIR-MODE".to_string()];
    let fix = autofix(&SourceTree::load(root)?, &rules, Some(&only))?;
    assert!(
        fix.diff.contains("-        publishDir = [ path: { \"${params.outdir}/other\" } ]\n+        publishDir = [ mode: params.publish_dir_mode, path: { \"${params.outdir}/other\" } ]\n"),
        "{}",
        fix.diff
    );
    write_edits(root, &fix.edits)?;
    let after = audit(&SourceTree::load(root)?, &rules, Some(&only))?;
    assert_eq!(
        after.render(),
        "main.nf:25: [NF-PUBLISHDIR-MODE] warning: process `SECOND`: `publishDir` mode `cp` is not one of symlink, rellink, link, copy, copyNoFollow, move\n\
         nextflow.config:11: [NF-PUBLISHDIR-MODE] warning: `publishDir` mode `cp` is not one of symlink, rellink, link, copy, copyNoFollow, move\n"
    );
    assert_eq!(fix.plan.items.len(), 2);
    assert!(fix.plan.items.iter().all(|i| i.patch.is_none()));
    Ok(())
}
