//! Rule files: the built-in set, an operator's directory, and one-line errors for bad files.

use codaris_nextflow::audit::audit;
use codaris_nextflow::rules::{RuleError, RuleSet, SourceTree};
use pretty_assertions::assert_eq;

use crate::support::{TestResult, write};

const OPERATOR_RULE: &str = r#"
[[rule]]
id = "ACME-NO-SCRATCH"
title = "No paths on /scratch"
severity = "error"
description = "Our clusters wipe /scratch nightly."
[rule.check]
kind = "forbidden_pattern"
files = ["**/*.nf", "**/*.config"]
pattern = '/scratch/'
message = "a path on /scratch"

[[rule]]
id = "ACME-MANIFEST-DOI"
title = "Releases have a DOI"
severity = "info"
description = "Every release is cited by its Zenodo DOI."
check = { kind = "required_config_key", keys = ["manifest.doi"] }

[[rule]]
id = "ACME-EDITORCONFIG"
title = "An .editorconfig"
severity = "info"
description = "Editors share one style."
fixable = true
check = { kind = "required_file", any_of = [".editorconfig"], message = "no `.editorconfig`", create_with = "root = true\n" }
"#;

#[test]
fn the_builtin_set_has_at_least_twenty_rules_with_unique_ids() -> TestResult {
    let rules = RuleSet::builtin()?;
    assert!(rules.rules().len() >= 20);
    let mut ids: Vec<&str> = rules.rules().iter().map(|r| r.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), rules.rules().len());
    assert!(
        rules
            .rules()
            .iter()
            .all(|r| r.source == "built-in" && r.id.starts_with("NF-"))
    );
    let fixable: Vec<&str> = rules
        .rules()
        .iter()
        .filter(|r| r.fixable)
        .map(|r| r.id.as_str())
        .collect();
    // Every finding says why with a link: each built-in rule has a doc link.
    for r in rules.rules() {
        assert!(
            r.doc
                .as_deref()
                .is_some_and(|d| d.starts_with("https://nf-co.re/")
                    || d.starts_with("https://www.nextflow.io/")),
            "{} has no doc link",
            r.id
        );
    }
    assert_eq!(
        fixable,
        [
            "NF-PUBLISHDIR-MODE",
            "NF-CHANNEL-LOWERCASE",
            "NF-CHANGELOG-PRESENT",
            "NF-GITIGNORE-RUN-DIRS"
        ]
    );
    Ok(())
}

#[test]
fn an_operators_rules_directory_adds_rules_that_run() -> TestResult {
    let conf = tempfile::tempdir()?;
    write(conf.path(), "acme.toml", OPERATOR_RULE)?;
    write(conf.path(), "notes.txt", "not a rules file")?;
    let rules = RuleSet::load(conf.path())?;
    let acme = rules.get("ACME-NO-SCRATCH").map(|r| r.source.clone());
    assert_eq!(
        acme,
        Some(conf.path().join("acme.toml").display().to_string())
    );
    let p = SourceTree::from_files([
        ("main.nf", "params.db = '/scratch/db'\n"),
        ("nextflow.config", "manifest {\n    doi = ''\n}\n"),
    ]);
    let only: Vec<String> = ["ACME-NO-SCRATCH", "ACME-MANIFEST-DOI", "ACME-EDITORCONFIG"]
        .map(String::from)
        .to_vec();
    let a = audit(&p, &rules, Some(&only))?;
    assert_eq!(
        a.render(),
        ".editorconfig:0: [ACME-EDITORCONFIG] info: no `.editorconfig`\n\
         main.nf:1: [ACME-NO-SCRATCH] error: a path on /scratch\n\
         nextflow.config:2: [ACME-MANIFEST-DOI] info: `manifest.doi` is empty\n"
    );
    Ok(())
}

#[test]
fn a_missing_rules_directory_adds_nothing() -> TestResult {
    let rules = RuleSet::load(std::path::Path::new("/nonexistent/codaris/rules"))?;
    assert_eq!(rules.rules().len(), RuleSet::builtin()?.rules().len());
    Ok(())
}

fn error_of(text: &str) -> String {
    match RuleSet::builtin().and_then(|r| r.with_file("acme.toml", text)) {
        Ok(_) => "no error".to_string(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_bad_rules_file_is_one_line_naming_the_file_and_the_key() {
    let rule = |body: &str| {
        format!(
            "[[rule]]\nid = \"ACME-X\"\ntitle = \"t\"\nseverity = \"error\"\ndescription = \"d\"\n{body}\n"
        )
    };
    let cases = [
        (
            rule("check = { kind = \"builtin\", name = \"nope\" }"),
            "rules file `acme.toml`: key `rule[0].check.name`: no built-in check `nope` (known: container_pinned, process_resource_label, process_software, publish_dir_mode, params_documented, schema_params_declared, manifest_complete, versions_emitted, module_structure, error_strategy, schema_valid, conda_pinned)",
        ),
        (
            rule(
                "check = { kind = \"forbidden_pattern\", files = [\"*.nf\"], pattern = \"(\", message = \"m\" }",
            ),
            "rules file `acme.toml`: key `rule[0].check.pattern`: invalid regular expression: error: unclosed group",
        ),
        (
            rule(
                "check = { kind = \"forbidden_pattern\", files = [\"../*.nf\"], pattern = \"x\", message = \"m\" }",
            ),
            "rules file `acme.toml`: key `rule[0].check.files[0]`: `../*.nf` is not inside the pipeline (globs are relative to it, without `..` or `.git`)",
        ),
        (
            rule(
                "check = { kind = \"required_lines\", file = \"../../.bashrc\", lines = [\"x\"] }",
            ),
            "rules file `acme.toml`: key `rule[0].check.file`: `../../.bashrc` is not a path inside the pipeline",
        ),
        (
            rule(
                "check = { kind = \"required_file\", any_of = [\".git/hooks/post-checkout\"], message = \"m\", create_with = \"x\" }",
            ),
            "rules file `acme.toml`: key `rule[0].check.any_of[0]`: `.git/hooks/post-checkout` is not inside the pipeline (globs are relative to it, without `..` or `.git`)",
        ),
        (
            rule("fixable = true\ncheck = { kind = \"builtin\", name = \"container_pinned\" }"),
            "rules file `acme.toml`: key `rule[0].fixable`: the check cannot fix its findings (a data check needs `replacement`, `create_with` or `kind = \"required_lines\"`)",
        ),
        (
            rule("colour = \"red\"\ncheck = { kind = \"builtin\", name = \"container_pinned\" }"),
            "rules file `acme.toml`: key `rule[0].colour`: unknown key",
        ),
        (
            rule("check = { kind = \"required_file\", any_of = [] , message = \"m\"}"),
            "rules file `acme.toml`: key `rule[0].check.any_of`: must list at least one entry",
        ),
        (
            rule("check = { kind = \"magic\" }"),
            "rules file `acme.toml`: key `rule[0].check.kind`: expected one of `builtin`, `forbidden_pattern`, `required_file`, `required_config_key`, `required_lines`, found `magic`",
        ),
        (
            "[[rule]]\nid = \"acme-lower\"\n".to_string(),
            "rules file `acme.toml`: key `rule[0].id`: `acme-lower` is not a rule id (upper-case words joined by `-`, e.g. `ACME-NO-SCRATCH`)",
        ),
        (
            "[[rule]]\nid = \"ACME-X\"\ntitle = \"t\"\nseverity = \"fatal\"\n".to_string(),
            "rules file `acme.toml`: key `rule[0].severity`: expected one of `error`, `warning`, `info`, found `fatal`",
        ),
        (
            "[[rule]]\nid = \"ACME-X\"\ntitle = 3\n".to_string(),
            "rules file `acme.toml`: key `rule[0].title`: expected a string, found integer",
        ),
        (
            "[[rule]]\nid = \"ACME-X\"\ntitle = \"t\"\nseverity = \"info\"\ndescription = \"d\"\n"
                .to_string(),
            "rules file `acme.toml`: key `rule[0].check`: missing",
        ),
        (
            rule(
                "doc = \"javascript:alert(1)\"\ncheck = { kind = \"builtin\", name = \"container_pinned\" }",
            ),
            "rules file `acme.toml`: key `rule[0].doc`: `javascript:alert(1)` is not an http(s) link",
        ),
        (
            rule(
                "[rule.check]\nkind = \"required_lines\"\nfile = \".gitignore\"\nlines = [\"work/\"]\nwhen = { \"results/\" = [\"nf-test.config\"] }",
            ),
            "rules file `acme.toml`: key `rule[0].check.when.results/`: is not one of `lines`",
        ),
        (
            rule(
                "[rule.check]\nkind = \"required_file\"\nany_of = [\"x\"]\nmessage = \"m\"\nwhen_any = []",
            ),
            "rules file `acme.toml`: key `rule[0].check.when_any`: must list at least one glob",
        ),
        (
            "rule = 3\n".to_string(),
            "rules file `acme.toml`: key `rule`: expected an array of tables ([[rule]]), found integer",
        ),
        (
            "[[rule]\nid = 1\n".to_string(),
            "rules file `acme.toml`: line 1: unclosed array table, expected `]`",
        ),
        (
            rule("check = { kind = \"builtin\", name = \"container_pinned\" }")
                .replace("ACME-X", "NF-CONTAINER-PINNED"),
            "rules file `acme.toml`: rule `NF-CONTAINER-PINNED` is already defined in `built-in`",
        ),
    ];
    for (text, want) in cases {
        let got = error_of(&text);
        assert_eq!(got, want);
        assert!(!got.contains('\n'), "{got}");
    }
}

#[test]
fn a_rules_file_that_is_not_text_is_refused() -> TestResult {
    let conf = tempfile::tempdir()?;
    std::fs::write(conf.path().join("bad.toml"), [0xff, 0x00])?;
    let err = RuleSet::load(conf.path());
    assert!(matches!(&err, Err(RuleError::Syntax { message, .. }) if message == "not UTF-8 text"));
    Ok(())
}
