//! Every built-in rule on its true-positive tree (`fixtures/rules/ID/fail`, which must give
//! exactly `expected.txt`) and its true-negative tree (`pass`, which must give nothing).

use codaris_nextflow::audit::audit;
use codaris_nextflow::rules::{RuleSet, SourceTree};
use pretty_assertions::assert_eq;

use crate::support::{TestResult, fixtures};

fn check_rule(id: &str) -> TestResult {
    let dir = fixtures().join("rules").join(id);
    let rules = RuleSet::builtin()?;
    let only = [id.to_string()];
    let fail = audit(&SourceTree::load(&dir.join("fail"))?, &rules, Some(&only))?;
    // CODARIS_BLESS=1 rewrites the expected findings; review the diff before committing it.
    if std::env::var_os("CODARIS_BLESS").is_some() {
        std::fs::write(dir.join("expected.txt"), fail.render())?;
    }
    let expected = std::fs::read_to_string(dir.join("expected.txt"))?;
    assert_eq!(fail.render(), expected, "{id} on its true-positive tree");
    assert!(
        !fail.findings.is_empty(),
        "{id} found nothing on its true-positive tree"
    );
    let pass = audit(&SourceTree::load(&dir.join("pass"))?, &rules, Some(&only))?;
    assert_eq!(pass.render(), "", "{id} on its true-negative tree");
    Ok(())
}

macro_rules! rule_fixture {
    ($($name:ident => $id:literal,)*) => {
        $(
            #[test]
            fn $name() -> TestResult {
                check_rule($id)
            }
        )*

        /// Every built-in rule has a fixture pair and a test above.
        #[test]
        fn every_builtin_rule_has_fixtures_and_a_test() -> TestResult {
            let tested = [$($id),*];
            let rules = RuleSet::builtin()?;
            for rule in rules.rules() {
                assert!(tested.contains(&rule.id.as_str()), "no fixture test for {}", rule.id);
            }
            assert_eq!(tested.len(), rules.rules().len());
            Ok(())
        }
    };
}

rule_fixture! {
    container_pinned => "NF-CONTAINER-PINNED",
    conda_pinned => "NF-CONDA-PINNED",
    process_software => "NF-PROCESS-SOFTWARE",
    plugin_pinned => "NF-PLUGIN-PINNED",
    process_resource_label => "NF-PROCESS-RESOURCE-LABEL",
    versions_emitted => "NF-VERSIONS-EMITTED",
    publish_dir_mode => "NF-PUBLISHDIR-MODE",
    error_strategy => "NF-ERRORSTRATEGY",
    no_shell_block => "NF-NO-SHELL-BLOCK",
    no_absolute_paths => "NF-NO-ABSOLUTE-PATHS",
    no_credentials => "NF-NO-CREDENTIALS",
    no_password_literal => "NF-NO-PASSWORD-LITERAL",
    no_merge_markers => "NF-NO-MERGE-MARKERS",
    no_system_exit => "NF-NO-SYSTEM-EXIT",
    no_dsl1 => "NF-NO-DSL1",
    channel_lowercase => "NF-CHANNEL-LOWERCASE",
    params_documented => "NF-PARAMS-DOCUMENTED",
    schema_params_default => "NF-SCHEMA-PARAMS-DEFAULT",
    schema_valid => "NF-SCHEMA-VALID",
    manifest_complete => "NF-MANIFEST-COMPLETE",
    schema_present => "NF-SCHEMA-PRESENT",
    tests_present => "NF-TESTS-PRESENT",
    nftest_config => "NF-NFTEST-CONFIG",
    module_structure => "NF-MODULE-STRUCTURE",
    changelog_present => "NF-CHANGELOG-PRESENT",
    readme_present => "NF-README-PRESENT",
    license_present => "NF-LICENSE-PRESENT",
    gitignore_run_dirs => "NF-GITIGNORE-RUN-DIRS",
}
