//! Invariants over arbitrary input: the audit never panics, and its rendering has exactly one
//! line per finding whatever the files hold.

use codaris_nextflow::audit::audit;
use codaris_nextflow::rules::{RuleSet, SourceTree};
use proptest::prelude::*;

fn nextflowish() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "process A {\n",
        "}\n",
        "container 'ubuntu'\n",
        "publishDir \"x\"\n",
        "label 'process_low'\n",
        "params.x = 1\n",
        "\"${",
        "'''",
        "\"\"\"",
        "//",
        "/*",
        "*/",
        "{",
        "[",
        "(",
        "withName: 'A' {\n",
        "errorStrategy = 'ignore'\n",
        "<<<<<<< HEAD\n",
        "output:\n",
        "path 'versions.yml'\n",
        "\n",
        "\\",
        "manifest {\n",
        "name = ''\n",
        "System.exit(1)\n",
        "é\u{2028}\r",
    ]);
    prop::collection::vec(pieces, 0..60).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_audit_never_panics_and_renders_one_line_per_finding(
        nf in nextflowish(),
        config in nextflowish(),
        schema in "[{}\\[\\]\":a-z ,0-9]{0,40}",
        name in "[a-z\n/ ]{1,12}",
    ) {
        let p = SourceTree::from_files([
            ("main.nf".to_string(), nf.clone()),
            (format!("modules/nf-core/{name}/main.nf"), nf),
            ("nextflow.config".to_string(), config),
            ("nextflow_schema.json".to_string(), schema),
        ]);
        let rules = RuleSet::builtin().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let a = audit(&p, &rules, None).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(a.render().lines().count(), a.findings.len());
        let fix = codaris_nextflow::audit::autofix(&p, &rules, None)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(fix.plan.render().lines().count(), fix.plan.items.len());
    }
}
