//! JUnit XML as nf-test writes it: `<testsuites>` → `<testsuite name …>` →
//! `<testcase name time status>` with a `<failure message>` (text: the error report) for a
//! test that did not pass. Read as a stream (no tree, no entity expansion beyond XML's five and
//! character references), so a large or hostile file costs only its own size.
//!
//! Two deviations from a strict XML reader, both to keep what nf-test meant: a `message`
//! attribute keeps its newlines (the JDK writer leaves them raw, and XML's attribute
//! normalisation would flatten Groovy's assertion diagram into one line), and an unknown entity
//! reference stays as written instead of failing the whole report.

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::{Failure, NfTestError, Outcome, ReportFormat, TestCase, TestResults, split_snapshot};

#[derive(Default)]
struct OpenCase {
    name: String,
    suite: Option<String>,
    seconds: Option<f64>,
    status: Option<String>,
    failure: Option<Failure>,
    skipped: Option<Option<String>>,
}

/// Where the text being read goes.
#[derive(PartialEq)]
enum Capture {
    None,
    Failure,
    Skipped,
}

pub(super) fn parse(text: &str) -> Result<TestResults, NfTestError> {
    let mut reader = Reader::from_str(text);
    let mut results = TestResults {
        format: ReportFormat::JUnit,
        tests: Vec::new(),
        planned: None,
        bailed_out: None,
    };
    // Element names from the root down, and the enclosing suites' names.
    let mut path: Vec<String> = Vec::new();
    let mut suites: Vec<Option<String>> = Vec::new();
    let mut case: Option<OpenCase> = None;
    let mut capture = Capture::None;
    let mut buffer = String::new();
    let mut saw_root = false;

    loop {
        let event = reader.read_event().map_err(|e| NfTestError::Xml {
            position: reader.error_position(),
            message: e.to_string(),
        })?;
        match event {
            // `<x/>` opens and closes at once; `<x>` opens until its end tag.
            Event::Start(ref start) | Event::Empty(ref start) => {
                let name = local_name(start);
                open(
                    &name,
                    start,
                    &path,
                    &mut saw_root,
                    &mut suites,
                    &mut case,
                    &mut capture,
                )?;
                buffer.clear();
                if matches!(event, Event::Empty(_)) {
                    close(
                        &name,
                        &mut suites,
                        &mut case,
                        &mut capture,
                        &mut buffer,
                        &mut results,
                    );
                } else {
                    path.push(name);
                }
            }
            Event::End(end) => {
                let name = String::from_utf8_lossy(end.local_name().as_ref()).into_owned();
                path.pop();
                close(
                    &name,
                    &mut suites,
                    &mut case,
                    &mut capture,
                    &mut buffer,
                    &mut results,
                );
            }
            Event::Text(t) if capture != Capture::None => {
                buffer.push_str(&String::from_utf8_lossy(&t));
            }
            Event::CData(t) if capture != Capture::None => {
                buffer.push_str(&String::from_utf8_lossy(&t));
            }
            Event::GeneralRef(r) if capture != Capture::None => {
                let name = String::from_utf8_lossy(&r).into_owned();
                match r.resolve_char_ref() {
                    Ok(Some(c)) => buffer.push(c),
                    _ => match quick_xml::escape::resolve_predefined_entity(&name) {
                        Some(s) => buffer.push_str(s),
                        None => {
                            buffer.push('&');
                            buffer.push_str(&name);
                            buffer.push(';');
                        }
                    },
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if let Some(open) = path.last() {
        return Err(NfTestError::Xml {
            position: reader.buffer_position(),
            message: format!("the file ends inside <{open}>"),
        });
    }
    if !saw_root {
        return Err(NfTestError::NotJUnit {
            reason: "no <testsuites> or <testsuite> element".to_string(),
        });
    }
    Ok(results)
}

fn local_name(start: &BytesStart<'_>) -> String {
    String::from_utf8_lossy(start.local_name().as_ref()).into_owned()
}

fn attribute(start: &BytesStart<'_>, key: &str) -> Option<String> {
    start.attributes().flatten().find_map(|attr| {
        (attr.key.local_name().as_ref() == key.as_bytes()).then(|| {
            attr.unescape_value()
                .map(|v| v.into_owned())
                .unwrap_or_else(|_| String::from_utf8_lossy(&attr.value).into_owned())
                .replace("\r\n", "\n")
        })
    })
}

fn open(
    name: &str,
    start: &BytesStart<'_>,
    path: &[String],
    saw_root: &mut bool,
    suites: &mut Vec<Option<String>>,
    case: &mut Option<OpenCase>,
    capture: &mut Capture,
) -> Result<(), NfTestError> {
    if path.is_empty() {
        if name != "testsuites" && name != "testsuite" {
            return Err(NfTestError::NotJUnit {
                reason: format!("the root element is <{name}>, not <testsuites>"),
            });
        }
        *saw_root = true;
    }
    match name {
        "testsuite" => suites.push(attribute(start, "name")),
        "testcase" if case.is_none() => {
            *case = Some(OpenCase {
                name: attribute(start, "name").unwrap_or_default(),
                // The enclosing suite's name; nf-test ≥ 0.9 also writes it as `classname`.
                suite: suites
                    .iter()
                    .rev()
                    .flatten()
                    .next()
                    .cloned()
                    .or_else(|| attribute(start, "classname")),
                seconds: attribute(start, "time").and_then(|t| t.trim().parse().ok()),
                status: attribute(start, "status"),
                ..OpenCase::default()
            });
        }
        "failure" | "error" => {
            if let Some(case) = case.as_mut() {
                let (message, snapshot_diff) =
                    split_snapshot(&attribute(start, "message").unwrap_or_default());
                case.failure = Some(Failure {
                    message,
                    snapshot_diff,
                    report: None,
                });
                *capture = Capture::Failure;
            }
        }
        "skipped" => {
            if let Some(case) = case.as_mut() {
                case.skipped = Some(attribute(start, "message"));
                *capture = Capture::Skipped;
            }
        }
        _ => {}
    }
    Ok(())
}

fn close(
    name: &str,
    suites: &mut Vec<Option<String>>,
    case: &mut Option<OpenCase>,
    capture: &mut Capture,
    buffer: &mut String,
    results: &mut TestResults,
) {
    match name {
        "testsuite" => {
            suites.pop();
        }
        "failure" | "error" if *capture == Capture::Failure => {
            if let Some(failure) = case.as_mut().and_then(|c| c.failure.as_mut()) {
                let text = buffer.replace("\r\n", "\n");
                if !text.trim().is_empty() {
                    failure.report = Some(text.trim_end().to_string());
                    // A writer that leaves the message empty may put the diff in the text.
                    if failure.snapshot_diff.is_none() && text.contains("Different Snapshot:") {
                        failure.snapshot_diff = split_snapshot(&text).1;
                    }
                }
            }
            *capture = Capture::None;
            buffer.clear();
        }
        "skipped" if *capture == Capture::Skipped => {
            if let Some(case) = case.as_mut() {
                let text = buffer.trim();
                if matches!(case.skipped, Some(None)) && !text.is_empty() {
                    case.skipped = Some(Some(text.to_string()));
                }
            }
            *capture = Capture::None;
            buffer.clear();
        }
        "testcase" => {
            if let Some(open) = case.take() {
                results.tests.push(finish(open));
            }
        }
        _ => {}
    }
}

fn finish(open: OpenCase) -> TestCase {
    let status = open.status.as_deref().map(str::to_ascii_uppercase);
    let outcome = if let Some(failure) = open.failure {
        Outcome::Failed(failure)
    } else if let Some(reason) = open.skipped {
        Outcome::Skipped { reason }
    } else {
        match status.as_deref() {
            Some("SKIPPED" | "DISABLED") => Outcome::Skipped { reason: None },
            Some("FAILED" | "ABORTED" | "ERROR") => Outcome::Failed(Failure::default()),
            _ => Outcome::Passed,
        }
    };
    TestCase {
        suite: open.suite,
        name: open.name,
        outcome,
        seconds: open.seconds,
    }
}
