//! The parsers on output recorded verbatim from nf-core 4.2.1 (offline, the fake nextflow on
//! PATH), so a drift of the real program shows up here and not only against the fake.

use std::path::Path;

use codaris_nextflow::nfcore::console;
use codaris_nextflow::nfcore::lint::parse_lint_json;
use codaris_nextflow::nfcore::schema::{Severity, Stage, parse_schema_output};
use pretty_assertions::assert_eq;

use super::support::{TestResult, fixtures};

fn fixture(name: &str) -> std::io::Result<String> {
    std::fs::read_to_string(fixtures().join("nfcore").join(name))
}

#[test]
fn the_template_report_has_no_failure_and_its_counts() -> TestResult {
    let report = parse_lint_json(&fixture("lint-template.json")?, None)?;
    assert_eq!(report.tools_version, "4.2.1");
    assert_eq!(
        (
            report.failed.len(),
            report.warned.len(),
            report.ignored.len(),
            report.passed
        ),
        (0, 32, 1, 172)
    );
    let ignored = &report.ignored[0];
    assert_eq!(ignored.test, "rocrate_readme_sync");
    assert_eq!(ignored.file.as_deref(), Some("ro-crate-metadata.json"));
    assert_eq!(
        ignored.doc,
        "https://nf-co.re/docs/nf-core-tools/api_reference/4.2.1/pipeline_lint_tests/rocrate_readme_sync"
    );
    let text = report.render();
    assert!(
        text.starts_with(
            "nf-core pipelines lint (4.2.1): 0 failed, 32 warned, 1 ignored, 172 passed"
        )
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("warned: ")).count(),
        32
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("failed: ")).count(),
        0
    );
    Ok(())
}

#[test]
fn the_seeded_defects_are_exactly_the_failures() -> TestResult {
    let report = parse_lint_json(
        &fixture("lint-defects.json")?,
        Some(Path::new("/tmp/nfcx/bad")),
    )?;
    let failed: Vec<(&str, Option<&str>)> = report
        .failed
        .iter()
        .map(|f| (f.test.as_str(), f.file.as_deref()))
        .collect();
    assert_eq!(
        failed,
        vec![
            ("files_exist", Some("CHANGELOG.md")),
            ("schema_params", None),
            // "Default value for param `multiqc_titel` invalid: … Check `nextflow.config`."
            ("schema_params", Some("nextflow.config")),
            ("merge_markers", Some("main.nf")),
        ]
    );
    let text = report.render();
    let merge = text
        .lines()
        .find(|l| l.starts_with("failed: merge_markers: "))
        .ok_or("no merge marker line")?;
    // The message's trailing newline does not break its line; the file is relative.
    assert!(merge.ends_with("<<<<<<< HEAD [file: main.nf] <https://nf-co.re/docs/nf-core-tools/api_reference/4.2.1/pipeline_lint_tests/merge_markers>"), "{merge}");
    Ok(())
}

#[test]
fn a_fatal_lint_is_read_as_its_error_line() -> TestResult {
    let stdout = fixture("lint-fatal.stdout")?;
    assert_eq!(
        console::failure_line(&stdout, ""),
        "ERROR not enough values to unpack (expected 2, got 1)"
    );
    Ok(())
}

#[test]
fn an_invalid_schema_names_the_parameter_whose_definition_is_wrong() -> TestResult {
    let out = parse_schema_output(&fixture("schema-lint-invalid.stdout")?, "", None);
    assert_eq!(out.findings.len(), 1);
    let finding = &out.findings[0];
    assert_eq!(
        (finding.stage, finding.severity),
        (Stage::Schema, Severity::Error)
    );
    assert_eq!(finding.parameter.as_deref(), Some("outdir"));
    assert!(
        finding
            .message
            .contains("'strang' is not valid under any of the given schemas"),
        "{}",
        finding.message
    );
    Ok(())
}

#[test]
fn an_invalid_parameter_is_found_by_its_value() -> TestResult {
    let params: serde_json::Value =
        serde_json::from_str(&fixture("schema-validate-invalid.params.json")?)?;
    let out = parse_schema_output(
        &fixture("schema-validate-invalid.stdout")?,
        "",
        Some(&params),
    );
    assert_eq!(out.params_found, Some(29));
    assert_eq!(out.findings.len(), 1);
    let finding = &out.findings[0];
    assert_eq!(finding.stage, Stage::Params);
    assert_eq!(finding.parameter.as_deref(), Some("email"));
    assert!(finding.message.starts_with("'not-an-email' does not match"));

    let valid = parse_schema_output(&fixture("schema-validate-valid.stdout")?, "", None);
    assert_eq!((valid.findings.len(), valid.params_found), (0, Some(29)));
    Ok(())
}

#[test]
fn a_config_nf_core_could_not_evaluate_is_said_so_with_why_not_a_schema_error() -> TestResult {
    // Recorded on a copy of nf-core/fetchngs 1.12.0: once with no `nextflow` on PATH, once with
    // the fake one, which cannot evaluate its `try { } catch (Exception e) { }` include.
    let missing = parse_schema_output(&fixture("schema-lint-no-nextflow.stdout")?, "", None);
    assert_eq!(missing.findings, Vec::new());
    assert_eq!(
        missing.config_error.as_deref(),
        Some("`nextflow` is not on PATH")
    );

    let fails = parse_schema_output(&fixture("schema-lint-config-fails.stdout")?, "", None);
    assert_eq!(fails.findings, Vec::new());
    let why = fails.config_error.unwrap_or_default();
    assert!(
        why.starts_with("`nextflow config` exited with 1: fake nextflow: cannot evaluate ")
            && why.ends_with("nextflow.config:66: unexpected '(' after 'catch'"),
        "{why}"
    );
    Ok(())
}
