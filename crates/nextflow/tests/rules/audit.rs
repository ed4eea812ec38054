//! The audit over the real nf-core template and seeded copies of it, and the rendered formats.

use codaris_nextflow::audit::{AuditError, audit};
use codaris_nextflow::rules::{Finding, RuleSet, Severity, SourceTree, render_rules};
use pretty_assertions::assert_eq;

use crate::support::{TestResult, copy_tree, template, write};

#[test]
fn the_nfcore_template_is_clean_under_every_builtin_rule() -> TestResult {
    let p = SourceTree::load(&template())?;
    let rules = RuleSet::builtin()?;
    let a = audit(&p, &rules, None)?;
    assert_eq!(a.render(), "");
    assert_eq!(a.rules.len(), rules.rules().len());
    assert_eq!(a.not_understood, Vec::<String>::new());
    assert_eq!(a.skipped, Vec::<String>::new());
    assert_eq!(
        a.summary(),
        format!(
            "0 findings (0 errors, 0 warnings, 0 info) from {} rules",
            rules.rules().len()
        )
    );
    Ok(())
}

#[test]
fn a_seeded_copy_of_the_template_gives_exactly_the_seeded_findings() -> TestResult {
    let dir = copy_tree(&template())?;
    let root = dir.path();
    std::fs::remove_file(root.join("CHANGELOG.md"))?;
    let main = std::fs::read_to_string(root.join("workflows/demo.nf"))?;
    write(root, "workflows/demo.nf", &format!("{main}<<<<<<< HEAD\n"))?;
    let fastqc = root.join("modules/nf-core/fastqc/main.nf");
    let text = std::fs::read_to_string(&fastqc)?
        .replace(
            "community.wave.seqera.io/library/fastqc:0.13.0--b342db7b694c9af4",
            "biocontainers/fastqc:latest",
        )
        .replace("    label 'process_low'\n", "");
    std::fs::write(&fastqc, text)?;
    let a = audit(&SourceTree::load(root)?, &RuleSet::builtin()?, None)?;
    let merge_line = main.lines().count() + 1;
    assert_eq!(
        a.render(),
        format!(
            "CHANGELOG.md:0: [NF-CHANGELOG-PRESENT] warning: no `CHANGELOG.md`\n\
             modules/nf-core/fastqc/main.nf:1: [NF-PROCESS-RESOURCE-LABEL] info: process `FASTQC` has no resource label; vendored nf-core module: fix it upstream in nf-core/modules, then `nf-core modules update`\n\
             modules/nf-core/fastqc/main.nf:5: [NF-CONTAINER-PINNED] info: process `FASTQC`: container `biocontainers/fastqc:latest` uses the `latest` tag; vendored nf-core module: fix it upstream in nf-core/modules, then `nf-core modules update`\n\
             workflows/demo.nf:{merge_line}: [NF-NO-MERGE-MARKERS] error: merge conflict marker\n"
        )
    );
    assert!(a.has_errors());
    Ok(())
}

#[test]
fn only_the_named_rules_run_and_an_unknown_one_is_an_error() -> TestResult {
    let p = SourceTree::from_files([("main.nf", "<<<<<<< HEAD\nChannel.of(1)\n")]);
    let rules = RuleSet::builtin()?;
    let a = audit(&p, &rules, Some(&["NF-CHANNEL-LOWERCASE".to_string()]))?;
    assert_eq!(
        a.render(),
        "main.nf:2: [NF-CHANNEL-LOWERCASE] info: `Channel.` factory; write `channel.`\n"
    );
    let err = audit(&p, &rules, Some(&["NF-NOPE".to_string()]));
    assert!(matches!(&err, Err(AuditError::UnknownRule { id }) if id == "NF-NOPE"));
    assert_eq!(
        err.err().map(|e| e.to_string()),
        Some("no compliance rule `NF-NOPE`; `list_compliance_rules` lists them".to_string())
    );
    Ok(())
}

#[test]
fn a_finding_renders_on_one_line_whatever_its_file_name_holds() {
    let f = Finding {
        file: "odd\nname.nf".to_string(),
        line: 3,
        rule: "NF-X-Y".to_string(),
        severity: Severity::Error,
        message: "two\nlines\u{7}".to_string(),
        why: String::new(),
        doc: None,
    };
    assert_eq!(
        f.render(),
        "odd\\nname.nf:3: [NF-X-Y] error: two\\nlines\\u{7}"
    );
}

#[test]
fn the_rule_list_has_one_line_per_rule_starting_with_its_id() -> TestResult {
    let rules = RuleSet::builtin()?;
    let text = render_rules(&rules);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 20, "{} rules", lines.len());
    assert_eq!(lines.len(), rules.rules().len());
    for (line, rule) in lines.iter().zip(rules.rules()) {
        assert!(line.starts_with(&format!("{} ", rule.id)), "{line}");
    }
    assert!(lines.contains(
        &"NF-CHANGELOG-PRESENT warning autofix The pipeline has a CHANGELOG: `CHANGELOG.md` exists, so users can see what changed between releases. (see https://nf-co.re/tools/docs/latest/pipeline_lint_tests/files_exist/)"
    ));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("NF-CONTAINER-PINNED error manual "))
    );
    Ok(())
}

#[test]
fn links_binary_files_and_odd_names_are_skipped_not_followed() -> TestResult {
    let dir = tempfile::tempdir()?;
    let root = dir.path();
    let outside = tempfile::tempdir()?;
    write(outside.path(), "secret.nf", "<<<<<<< HEAD\n")?;
    std::os::unix::fs::symlink(outside.path().join("secret.nf"), root.join("linked.nf"))?;
    std::os::unix::fs::symlink(outside.path(), root.join("linked_dir"))?;
    std::fs::write(root.join("blob.nf"), [0xff, 0xfe, b'\n', 0x00])?;
    write(root, "empty.nf", "")?;
    write(root, "work/ab/cdef/.command.sh", "<<<<<<< HEAD\n")?;
    let p = SourceTree::load(root)?;
    let a = audit(
        &p,
        &RuleSet::builtin()?,
        Some(&["NF-NO-MERGE-MARKERS".to_string()]),
    )?;
    assert_eq!(a.render(), "");
    assert_eq!(
        a.skipped,
        vec![
            "blob.nf: not UTF-8 text".to_string(),
            "linked.nf: symbolic link, not followed".to_string(),
            "linked_dir: symbolic link, not followed".to_string(),
        ]
    );
    Ok(())
}

#[test]
fn a_file_that_is_not_a_pipeline_directory_is_an_error() -> TestResult {
    let dir = tempfile::tempdir()?;
    write(dir.path(), "main.nf", "")?;
    let err = SourceTree::load(&dir.path().join("main.nf"))
        .err()
        .map(|e| e.to_string());
    assert!(err.is_some_and(|e| e.ends_with("is not a directory")));
    assert!(SourceTree::load(&dir.path().join("absent")).is_err());
    Ok(())
}

#[test]
fn huge_and_hostile_text_is_read_without_panicking() -> TestResult {
    let long_line = "x".repeat(1 << 20);
    let unterminated = "process A {\n    container \"${ 'a\n".repeat(500);
    let braces = "{".repeat(10_000);
    let p = SourceTree::from_files([
        ("main.nf", long_line.as_str()),
        ("modules/local/a/main.nf", unterminated.as_str()),
        ("nextflow.config", braces.as_str()),
        ("nextflow_schema.json", "[1, 2"),
    ]);
    let a = audit(&p, &RuleSet::builtin()?, None)?;
    assert!(a.findings.iter().any(|f| f.rule == "NF-SCHEMA-VALID"));
    Ok(())
}

#[test]
fn what_the_reader_did_not_understand_is_reported_not_guessed() -> TestResult {
    let p = SourceTree::from_files([("main.nf", "workflow {\n    A()\n}\nthis is not nextflow\n")]);
    let a = audit(&p, &RuleSet::builtin()?, None)?;
    assert_eq!(a.not_understood.len(), 1, "{:?}", a.not_understood);
    assert!(
        a.not_understood[0].starts_with("main.nf:4: not understood: "),
        "{:?}",
        a.not_understood
    );
    Ok(())
}

/// A container taken from a param or `task.ext` is set (and maybe pinned) elsewhere: the audit
/// cannot prove it unpinned, so it warns rather than calling it an error.
#[test]
fn a_computed_container_is_a_warning_not_an_error() -> TestResult {
    let p = SourceTree::from_files([(
        "modules/local/align.nf",
        "process ALIGN {\n    container params.align_container\n    script:\n    \"\"\"\n    bwa mem\n    \"\"\"\n}\n",
    )]);
    let rules = RuleSet::builtin()?;
    let a = audit(&p, &rules, Some(&["NF-CONTAINER-PINNED".to_string()]))?;
    assert_eq!(a.findings.len(), 1, "{}", a.render());
    assert_eq!(a.findings[0].severity, Severity::Warning, "{}", a.render());
    assert!(a.findings[0].message.contains("computed"), "{}", a.render());
    assert!(!a.has_errors());
    // An image it can read and that is not pinned stays an error.
    let p = SourceTree::from_files([(
        "modules/local/align.nf",
        "process ALIGN {\n    container 'biocontainers/bwa:latest'\n    script:\n    \"\"\"\n    bwa mem\n    \"\"\"\n}\n",
    )]);
    let a = audit(&p, &rules, Some(&["NF-CONTAINER-PINNED".to_string()]))?;
    assert_eq!(a.findings.len(), 1, "{}", a.render());
    assert_eq!(a.findings[0].severity, Severity::Error);
    Ok(())
}
