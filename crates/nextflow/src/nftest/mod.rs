//! nf-test's results: the reports `nf-test test --tap FILE` and `--junitxml FILE` write, read
//! into one [`TestResults`] per file, and rendered as the answer of `check_test_result`.
//!
//! What the two reports carry is set by nf-test's writers (askimed/nf-test,
//! `core/reports/TapTestReportWriter.java` and `XmlReportWriter.java`):
//!
//! - TAP 13 through tap4j: a plan `1..N` and one `ok N SUITE: TEST` / `not ok N SUITE: TEST`
//!   line per test, no header; since nf-test 0.6.2 a failed test carries YAML diagnostics
//!   `failure` (the exception's text) and `output` (the Nextflow output);
//! - JUnit XML through the JDK's `XMLStreamWriter`: `<testsuites>`, a `<testsuite>` per file
//!   with `name`, `time`, `tests`, `skipped`, `failures`, `timestamp` (`yyyy MM dd HH:mm:ss`),
//!   a `<testcase classname name time status>` per test and, for a test that did not pass,
//!   `<failure message="THROWABLE">ERROR REPORT</failure>`: the message is the exception's
//!   `toString()` (Groovy's `Assertion failed:` diagram, or `java.lang.RuntimeException:
//!   Different Snapshot: …` with the snapshot diff) and the text is the test's Nextflow stdout
//!   and stderr.
//!
//! nf-test leaves skipped tests out of both reports (its writers' `executionSkipped` is empty);
//! the readers still understand the TAP `# SKIP` directive and JUnit's `<skipped/>` and
//! `status="SKIPPED"`, which other producers and later nf-test versions write.

mod junit;
mod render;
mod tap;

use std::io::Read;
use std::path::{Path, PathBuf};

/// Reports larger than this are refused: nf-test's are kilobytes, a larger file is not one.
pub const MAX_REPORT_BYTES: u64 = 64 * 1024 * 1024;

/// Which report the results were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// `nf-test test --tap FILE`.
    Tap,
    /// `nf-test test --junitxml FILE`.
    JUnit,
}

impl ReportFormat {
    fn label(self) -> &'static str {
        match self {
            ReportFormat::Tap => "TAP",
            ReportFormat::JUnit => "JUnit XML",
        }
    }
}

/// What became of one test.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Passed,
    Failed(Failure),
    Skipped {
        /// The reason, when the report gives one.
        reason: Option<String>,
    },
}

/// Why a test failed, as far as the report says (a TAP report before nf-test 0.6.2, or from
/// another producer, may say nothing beyond "not ok").
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Failure {
    /// The failure's message: nf-test writes the exception's `toString()`, e.g. Groovy's
    /// power-assert diagram (`Assertion failed: …`) or `java.lang.RuntimeException: …`.
    pub message: Option<String>,
    /// The snapshot comparison when the failure is a snapshot mismatch: the text after
    /// `Different Snapshot:` (a `Found:`/`Expected:` pair, or `diff -y` output).
    pub snapshot_diff: Option<String>,
    /// The test's Nextflow stdout and stderr: the JUnit failure element's text, TAP's `output`.
    pub report: Option<String>,
}

/// One test of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct TestCase {
    /// The test suite (JUnit's `<testsuite name>`); TAP joins it into `name` (`SUITE: TEST`).
    pub suite: Option<String>,
    pub name: String,
    pub outcome: Outcome,
    /// Seconds the test took, when the report says.
    pub seconds: Option<f64>,
}

/// The tests of one report, in the report's order.
#[derive(Debug, Clone, PartialEq)]
pub struct TestResults {
    pub format: ReportFormat,
    pub tests: Vec<TestCase>,
    /// TAP's plan (`1..N`): how many tests the run announced.
    pub planned: Option<usize>,
    /// TAP's `Bail out!` reason: the run stopped early.
    pub bailed_out: Option<String>,
}

impl TestResults {
    pub fn passed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Passed))
    }

    pub fn failed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Failed(_)))
    }

    pub fn skipped(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Skipped { .. }))
    }

    /// True when nothing failed, the run did not bail out, and every planned test reported.
    pub fn success(&self) -> bool {
        self.failed() == 0
            && self.bailed_out.is_none()
            && self
                .planned
                .is_none_or(|planned| planned <= self.tests.len())
    }

    /// The answer text of `check_test_result`: a summary line, then one line per test
    /// (failures first, with their message and snapshot diff, bounded in length).
    pub fn render(&self) -> String {
        render::render(self)
    }

    fn count(&self, pick: impl Fn(&Outcome) -> bool) -> usize {
        self.tests.iter().filter(|t| pick(&t.outcome)).count()
    }
}

/// A report that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum NfTestError {
    #[error("cannot read nf-test report {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("nf-test report {path} is {size} bytes, over the {limit}-byte limit")]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("nf-test report is empty")]
    Empty,
    #[error("not an nf-test TAP report: {reason}")]
    NotTap { reason: String },
    #[error("not an nf-test JUnit report: {reason}")]
    NotJUnit { reason: String },
    #[error("malformed JUnit XML at byte {position}: {message}")]
    Xml { position: u64, message: String },
}

/// Reads nf-test's TAP output (`--tap FILE`).
pub fn parse_tap(text: &str) -> Result<TestResults, NfTestError> {
    tap::parse(text)
}

/// Reads nf-test's JUnit XML (`--junitxml FILE`).
pub fn parse_junit(text: &str) -> Result<TestResults, NfTestError> {
    junit::parse(text)
}

/// Reads a report file (a symlink refused), TAP or JUnit by its content (XML starts with `<`), refusing files over
/// [`MAX_REPORT_BYTES`] and text that is not UTF-8 (replaced, not refused: names stay readable).
pub fn read_report(path: &Path) -> Result<TestResults, NfTestError> {
    let io = |source| NfTestError::Io {
        path: path.to_path_buf(),
        source,
    };
    // A symlink in the report's place is not followed (nf-test runs the pipeline's code, which
    // can leave one there pointing at a secret).
    let file = crate::files::open_nofollow(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if size > MAX_REPORT_BYTES {
        return Err(NfTestError::TooLarge {
            path: path.to_path_buf(),
            size,
            limit: MAX_REPORT_BYTES,
        });
    }
    let mut bytes = Vec::new();
    // The limit again while reading: the file may grow between stat and read.
    file.take(MAX_REPORT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_REPORT_BYTES {
        return Err(NfTestError::TooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            limit: MAX_REPORT_BYTES,
        });
    }
    let text = String::from_utf8_lossy(&bytes);
    parse_report(&text)
}

/// Reads report text, TAP or JUnit by its content.
pub fn parse_report(text: &str) -> Result<TestResults, NfTestError> {
    let body = text.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    if body.is_empty() {
        return Err(NfTestError::Empty);
    }
    if body.starts_with('<') {
        parse_junit(body)
    } else {
        parse_tap(body)
    }
}

/// Splits a failure message into the assertion part and the snapshot diff, when the message is
/// nf-test's `Different Snapshot:` error.
fn split_snapshot(message: &str) -> (Option<String>, Option<String>) {
    let message = message.trim_end();
    if message.is_empty() {
        return (None, None);
    }
    match message.find("Different Snapshot:") {
        Some(at) => {
            let diff = message[at + "Different Snapshot:".len()..]
                .trim_start_matches([' ', '\t'])
                .trim_start_matches(['\r', '\n'])
                .to_string();
            (
                Some(message.to_string()),
                (!diff.trim().is_empty()).then_some(diff),
            )
        }
        None => (Some(message.to_string()), None),
    }
}
