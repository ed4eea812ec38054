//! nf-test's reports read back: the TAP and JUnit files of tests/fixtures/nftest (written as
//! nf-test's writers write them, see the README there), and hostile input.

use std::error::Error;
use std::path::{Path, PathBuf};

use codaris_nextflow::nftest::{
    self, MAX_REPORT_BYTES, NfTestError, Outcome, ReportFormat, TestResults,
};

type TestResult = Result<(), Box<dyn Error>>;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nftest")
        .join(name)
}

fn names(results: &TestResults) -> Vec<(&str, &Outcome)> {
    results
        .tests
        .iter()
        .map(|t| (t.name.as_str(), &t.outcome))
        .collect()
}

#[test]
fn tap_says_which_tests_failed_and_why() -> TestResult {
    let results = nftest::read_report(&fixture("mixed.tap"))?;
    assert_eq!(results.format, ReportFormat::Tap);
    assert_eq!(results.planned, Some(3));
    assert_eq!(
        (results.passed(), results.failed(), results.skipped()),
        (2, 1, 0)
    );
    let tests = names(&results);
    assert_eq!(
        tests[0].0,
        "Test Process FASTQC: sarscov2 single-end [fastq]"
    );
    assert_eq!(
        tests[1].0,
        "Test Process FASTQC: sarscov2 paired-end [fastq]"
    );
    // nf-test's YAML diagnostics: `failure` is the assertion, `output` the Nextflow output.
    let Outcome::Failed(failure) = tests[1].1 else {
        return Err("the second test should have failed".into());
    };
    assert_eq!(
        failure.message.as_deref(),
        Some(
            "Assertion failed: \n\nassert process.success\n       |       |\n       |       false\n       FASTQC"
        )
    );
    let report = failure.report.as_deref().unwrap_or_default();
    assert!(
        report.starts_with("Nextflow stdout:\n\nERROR ~ Error executing process > 'FASTQC (test)'"),
        "{report}"
    );
    assert!(
        report.contains("\nCommand error:\n  .command.sh: line 2: fastqc: command not found\n"),
        "{report}"
    );
    assert!(report.ends_with("Nextflow stderr:"), "{report}");
    assert!(!results.success());
    let text = results.render();
    assert!(
        text.starts_with(
            "nf-test FAILED: 3 tests, 2 passed, 1 failed, 0 skipped (from the TAP report)\n"
        ),
        "{text}"
    );
    // The failure is listed first, with its assertion.
    let first = text.lines().nth(1).unwrap_or_default();
    assert_eq!(
        first,
        "FAILED   Test Process FASTQC: sarscov2 paired-end [fastq]"
    );
    assert!(
        text.contains("  assertion:\n    Assertion failed: \n"),
        "{text}"
    );
    // The TAP and JUnit reports of the same run say the same about the failure.
    let junit = nftest::read_report(&fixture("mixed.xml"))?;
    let Outcome::Failed(from_junit) = &junit.tests[1].outcome else {
        return Err("JUnit: the second test should have failed".into());
    };
    assert_eq!(failure.message, from_junit.message);
    assert_eq!(failure.report, from_junit.report);
    Ok(())
}

#[test]
fn a_tap_snapshot_mismatch_and_a_tap_report_without_diagnostics() -> TestResult {
    let results = nftest::read_report(&fixture("snapshot.tap"))?;
    let Outcome::Failed(failure) = &results.tests[0].outcome else {
        return Err("the test should have failed".into());
    };
    let diff = failure.snapshot_diff.as_deref().unwrap_or_default();
    assert!(
        diff.starts_with("Found:\n[\n    {\n        \"0\": ["),
        "{diff}"
    );
    assert!(diff.contains("test_fastqc.html:md5,0d9c3e8b2f1a4c5d6e7f8a9b0c1d2e3f"));
    // The single-quoted `output` folds back to its newlines.
    assert_eq!(
        failure.report.as_deref(),
        Some("Nextflow stdout:\n\nNextflow stderr:")
    );
    // nf-test before 0.6.2 (and other producers) write no diagnostics.
    let bare = nftest::parse_tap("1..1\nnot ok 1 Test Process FASTQC: a\n")?;
    assert!(
        matches!(&bare.tests[0].outcome, Outcome::Failed(f) if f.message.is_none() && f.report.is_none())
    );
    assert!(bare.render().contains("(the report gives no reason)"));
    // A `...` deeper in than the block's own marker is content, not the end.
    let folded =
        nftest::parse_tap("1..1\nnot ok 1 t\n  ---\n  failure: 'a\n    ...\n    b'\n  ...\n")?;
    assert!(
        matches!(&folded.tests[0].outcome, Outcome::Failed(f) if f.message.as_deref() == Some("a ... b"))
    );
    Ok(())
}

#[test]
fn an_all_passing_tap_report_and_an_empty_plan_are_successes() -> TestResult {
    let passed = nftest::read_report(&fixture("passed.tap"))?;
    assert!(passed.success());
    assert_eq!(passed.passed(), 2);
    assert!(
        passed
            .render()
            .starts_with("nf-test passed: 2 tests, 2 passed")
    );
    let empty = nftest::read_report(&fixture("empty-plan.tap"))?;
    assert_eq!((empty.planned, empty.tests.len()), (Some(0), 0));
    assert!(empty.success());
    Ok(())
}

#[test]
fn junit_gives_the_assertion_and_the_nextflow_output_of_a_failed_test() -> TestResult {
    let results = nftest::read_report(&fixture("mixed.xml"))?;
    assert_eq!(results.format, ReportFormat::JUnit);
    assert_eq!((results.passed(), results.failed()), (2, 1));
    let failed = &results.tests[1];
    assert_eq!(failed.suite.as_deref(), Some("Test Process FASTQC"));
    assert_eq!(failed.name, "sarscov2 paired-end [fastq]");
    assert_eq!(failed.seconds, Some(21.567));
    let Outcome::Failed(failure) = &failed.outcome else {
        return Err("the second test should have failed".into());
    };
    // The newlines of Groovy's assertion diagram survive the attribute.
    assert_eq!(
        failure.message.as_deref(),
        Some(
            "Assertion failed: \n\nassert process.success\n       |       |\n       |       false\n       FASTQC"
        )
    );
    assert!(failure.snapshot_diff.is_none());
    let report = failure.report.as_deref().unwrap_or_default();
    assert!(
        report.starts_with("Nextflow stdout:\n\nERROR ~ Error executing process > 'FASTQC (test)'"),
        "{report}"
    );
    assert!(report.contains(".command.sh: line 2: fastqc: command not found"));
    assert_eq!(
        results.tests[2].suite.as_deref(),
        Some("Test Workflow PIPELINE_INITIALISATION")
    );

    let text = results.render();
    assert!(text.contains("FAILED   Test Process FASTQC > sarscov2 paired-end [fastq] (21.567s)\n  assertion:\n    Assertion failed: \n"), "{text}");
    assert!(text.contains("    assert process.success\n"), "{text}");
    assert!(text.contains("  output (last lines):\n"), "{text}");
    assert!(
        text.contains(
            "passed   Test Workflow PIPELINE_INITIALISATION > Should run without failures (8.113s)"
        ),
        "{text}"
    );
    Ok(())
}

#[test]
fn a_snapshot_mismatch_comes_with_its_found_and_expected_sides() -> TestResult {
    let results = nftest::read_report(&fixture("snapshot.xml"))?;
    let Outcome::Failed(failure) = &results.tests[0].outcome else {
        return Err("the test should have failed".into());
    };
    let diff = failure.snapshot_diff.as_deref().unwrap_or_default();
    assert!(
        diff.starts_with("Found:\n[\n    {\n        \"0\": ["),
        "{diff}"
    );
    assert!(diff.contains("\n\nExpected:\n"), "{diff}");
    assert!(diff.contains("test_fastqc.html:md5,0d9c3e8b2f1a4c5d6e7f8a9b0c1d2e3f"));
    assert!(
        failure
            .message
            .as_deref()
            .is_some_and(|m| m.starts_with("java.lang.RuntimeException: Different Snapshot:"))
    );
    let text = results.render();
    assert!(
        text.contains("  snapshot mismatch:\n    Found:\n"),
        "{text}"
    );
    Ok(())
}

#[test]
fn skips_are_read_from_producers_that_write_them() -> TestResult {
    let tap = nftest::parse_tap(
        "TAP version 13\n1..3\nok 1 - a # SKIP no docker\nnot ok 2 - b # TODO later\nok 3 c \\# not a directive\n",
    )?;
    assert_eq!(
        tap.tests[0].outcome,
        Outcome::Skipped {
            reason: Some("no docker".into())
        }
    );
    assert_eq!(tap.tests[1].outcome, Outcome::Passed);
    assert_eq!(tap.tests[2].name, "c # not a directive");
    let junit = nftest::parse_junit(
        r#"<testsuites><testsuite name="s"><testcase name="x"><skipped message="not on CI"/></testcase><testcase name="y" status="SKIPPED"/><testcase name="z"><error message="boom"/></testcase></testsuite></testsuites>"#,
    )?;
    assert_eq!(
        junit.tests[0].outcome,
        Outcome::Skipped {
            reason: Some("not on CI".into())
        }
    );
    assert_eq!(junit.tests[1].outcome, Outcome::Skipped { reason: None });
    assert!(
        matches!(&junit.tests[2].outcome, Outcome::Failed(f) if f.message.as_deref() == Some("boom"))
    );
    assert!(junit.render().contains("skipped  s > x: not on CI"));
    Ok(())
}

#[test]
fn tap_diagnostics_bail_outs_and_short_runs_are_reported() -> TestResult {
    let results = nftest::parse_tap(
        "1..4\nok 1 first\nnot ok 2 second\n  ---\n  message: 'Different Snapshot: Found: 1 Expected: 2'\n  severity: fail\n  ...\nBail out! Nextflow crashed\n",
    )?;
    let Outcome::Failed(failure) = &results.tests[1].outcome else {
        return Err("second should fail".into());
    };
    assert_eq!(
        failure.snapshot_diff.as_deref(),
        Some("Found: 1 Expected: 2")
    );
    assert_eq!(results.bailed_out.as_deref(), Some("Nextflow crashed"));
    assert!(!results.success());
    let text = results.render();
    assert!(
        text.contains("the plan announced 4 tests, the report has 2"),
        "{text}"
    );
    assert!(
        text.contains("the run bailed out: Nextflow crashed"),
        "{text}"
    );
    Ok(())
}

#[test]
fn what_is_not_a_report_is_a_clear_error() -> TestResult {
    assert!(matches!(nftest::parse_report(""), Err(NfTestError::Empty)));
    assert!(matches!(
        nftest::parse_report("  \n\u{feff}"),
        Err(NfTestError::Empty)
    ));
    assert!(matches!(
        nftest::parse_report("hello\nworld\n"),
        Err(NfTestError::NotTap { .. })
    ));
    assert!(matches!(
        nftest::parse_report("<html><body>502 Bad Gateway</body></html>"),
        Err(NfTestError::NotJUnit { .. })
    ));
    let truncated = nftest::parse_report(r#"<testsuites><testsuite name="s"><testcase name="x">"#);
    assert!(
        matches!(truncated, Err(NfTestError::Xml { .. })),
        "{truncated:?}"
    );
    let mismatched = nftest::parse_report("<testsuites><testsuite></testcase></testsuites>");
    assert!(
        matches!(mismatched, Err(NfTestError::Xml { .. })),
        "{mismatched:?}"
    );
    // `okay` and `nothing` are not test lines.
    assert!(matches!(
        nftest::parse_tap("okay\nnothing to see"),
        Err(NfTestError::NotTap { .. })
    ));
    // Every error is one line.
    for error in [
        nftest::parse_report("").err(),
        nftest::parse_report("<a/>").err(),
        nftest::parse_report("<testsuites>").err(),
    ]
    .into_iter()
    .flatten()
    {
        assert!(!error.to_string().contains('\n'), "{error}");
    }
    Ok(())
}

#[test]
fn hostile_names_and_entities_stay_on_their_line_and_expand_nothing() -> TestResult {
    let xml = concat!(
        r#"<?xml version="1.0"?><!DOCTYPE t [<!ENTITY boom "&#x41;&#x41;&#x41;">]>"#,
        r#"<testsuites><testsuite name="s&#10;FAILED   forged"><testcase name="a&#10;passed   b" status="FAILED">"#,
        r#"<failure message="x">&boom; &lt;tag&gt; &#65;</failure></testcase></testsuite></testsuites>"#
    );
    let results = nftest::parse_junit(xml)?;
    assert_eq!(results.tests[0].name, "a\npassed   b");
    let Outcome::Failed(failure) = &results.tests[0].outcome else {
        return Err("should fail".into());
    };
    // The document's own entity is not expanded; the five of XML and character references are.
    assert_eq!(failure.report.as_deref(), Some("&boom; <tag> A"));
    let text = results.render();
    assert!(
        text.contains("FAILED   s\\nFAILED   forged > a\\npassed   b"),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("passed")).count(),
        0,
        "{text}"
    );
    Ok(())
}

#[test]
fn long_messages_are_cut_in_the_answer_but_kept_in_the_result() -> TestResult {
    let message: String = (0..500).map(|i| format!("line {i}\n")).collect();
    let xml = format!(
        r#"<testsuites><testsuite name="s"><testcase name="t"><failure message="{message}">{}</failure></testcase></testsuite></testsuites>"#,
        "out\n".repeat(1000)
    );
    let results = nftest::parse_junit(&xml)?;
    let Outcome::Failed(failure) = &results.tests[0].outcome else {
        return Err("should fail".into());
    };
    assert_eq!(
        failure.message.as_deref().map(|m| m.lines().count()),
        Some(500)
    );
    let text = results.render();
    assert!(text.contains("    … 470 more lines"), "{text}");
    assert!(text.contains("    … 980 earlier lines"), "{text}");
    assert!(text.lines().count() < 80, "{}", text.lines().count());
    let wide = format!("1..1\nnot ok 1 {}\n", "x".repeat(10_000));
    let rendered = nftest::parse_tap(&wide)?.render();
    assert!(rendered.lines().all(|l| l.chars().count() < 500));
    Ok(())
}

#[test]
fn files_too_large_or_missing_are_refused_before_reading() -> TestResult {
    let dir = tempfile::tempdir()?;
    let missing = nftest::read_report(&dir.path().join("absent.xml"));
    assert!(matches!(missing, Err(NfTestError::Io { .. })));
    let big = dir.path().join("big.tap");
    let file = std::fs::File::create(&big)?;
    file.set_len(MAX_REPORT_BYTES + 1)?;
    assert!(matches!(
        nftest::read_report(&big),
        Err(NfTestError::TooLarge { .. })
    ));
    // A directory is not a report either.
    assert!(nftest::read_report(dir.path()).is_err());
    // Bytes that are not UTF-8 do not stop the reading.
    let latin = dir.path().join("latin.tap");
    std::fs::write(&latin, b"1..1\nok 1 caf\xe9\n")?;
    assert_eq!(nftest::read_report(&latin)?.tests[0].name, "caf\u{fffd}");
    Ok(())
}

#[test]
fn windows_line_ends_read_the_same() -> TestResult {
    let text = std::fs::read_to_string(fixture("mixed.tap"))?.replace('\n', "\r\n");
    let results = nftest::parse_report(&text)?;
    assert_eq!(
        results.tests[1].name,
        "Test Process FASTQC: sarscov2 paired-end [fastq]"
    );
    assert_eq!(results.failed(), 1);
    Ok(())
}
