//! TAP 13 as nf-test writes it (tap4j's `Tap13Representer`): an optional `TAP version 13`, the
//! plan `1..N`, and `ok N DESCRIPTION` / `not ok N DESCRIPTION [# SKIP|TODO reason]` lines.
//! Since nf-test 0.6.2 a failed test is followed by YAML diagnostics (`  ---` … `  ...`, a
//! SnakeYAML dump) with `failure` (the exception's text) and `output` (the test's Nextflow
//! output); `message`, TAP's usual key, is read too. Lines TAP does not define are ignored, as
//! the TAP specification asks.

use serde_json::Value;

use super::{Failure, NfTestError, Outcome, ReportFormat, TestCase, TestResults, split_snapshot};

/// An open diagnostics block: the indentation of its `---` line and its lines so far.
struct Block<'a> {
    indent: &'a str,
    lines: Vec<&'a str>,
}

pub(super) fn parse(text: &str) -> Result<TestResults, NfTestError> {
    let mut results = TestResults {
        format: ReportFormat::Tap,
        tests: Vec::new(),
        planned: None,
        bailed_out: None,
    };
    let mut saw_tap = false;
    let mut diagnostics: Option<Block> = None;
    for raw in text.lines() {
        let line = raw.trim_end_matches('\r');
        if let Some(block) = diagnostics.as_mut() {
            // The end marker sits at the block's own indentation; a `...` deeper in is content.
            if line
                .strip_prefix(block.indent)
                .is_some_and(|rest| rest.trim_end() == "...")
            {
                attach_diagnostics(&mut results, block);
                diagnostics = None;
            } else {
                block.lines.push(line);
            }
            continue;
        }
        let trimmed = line.trim_start();
        if trimmed.trim_end() == "---" && !results.tests.is_empty() && line.starts_with(' ') {
            diagnostics = Some(Block {
                indent: &line[..line.len() - trimmed.len()],
                lines: Vec::new(),
            });
            continue;
        }
        if trimmed.starts_with("TAP version ") {
            saw_tap = true;
        } else if let Some(plan) = parse_plan(trimmed) {
            results.planned = Some(plan);
            saw_tap = true;
        } else if let Some(rest) = trimmed.strip_prefix("Bail out!") {
            results.bailed_out = Some(rest.trim().to_string());
            saw_tap = true;
        } else if let Some(test) = parse_test(trimmed) {
            results.tests.push(test);
            saw_tap = true;
        }
    }
    if let Some(block) = diagnostics.as_ref() {
        attach_diagnostics(&mut results, block);
    }
    if !saw_tap {
        return Err(NfTestError::NotTap {
            reason: "no plan (`1..N`) and no `ok`/`not ok` line".to_string(),
        });
    }
    Ok(results)
}

/// `1..N`, with an optional `# skip reason` or comment after it.
fn parse_plan(line: &str) -> Option<usize> {
    let rest = line.strip_prefix("1..")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let after = &rest[digits.len()..];
    if digits.is_empty() || !(after.is_empty() || after.starts_with(' ')) {
        return None;
    }
    digits.parse().ok()
}

fn parse_test(line: &str) -> Option<TestCase> {
    let (ok, rest) = if let Some(rest) = line.strip_prefix("not ok") {
        (false, rest)
    } else if let Some(rest) = line.strip_prefix("ok") {
        (true, rest)
    } else {
        return None;
    };
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None; // `okay`, `nothing`: not a test line
    }
    let rest = rest.trim_start();
    // The test number is optional in TAP (tap4j always writes it); the order is the report's.
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    let rest = rest[digits..].trim_start();
    // Other producers write `ok 1 - name`; tap4j writes `ok 1 name`.
    let rest = rest.strip_prefix("- ").unwrap_or(rest);
    let (description, directive) = split_directive(rest);
    let outcome = match directive {
        Some(Directive::Skip(reason)) => Outcome::Skipped { reason },
        // A TODO test is expected to fail: TAP counts it as passing either way.
        Some(Directive::Todo) => Outcome::Passed,
        None if ok => Outcome::Passed,
        None => Outcome::Failed(Failure::default()),
    };
    Some(TestCase {
        suite: None,
        name: description.trim().to_string(),
        outcome,
        seconds: None,
    })
}

enum Directive {
    Skip(Option<String>),
    Todo,
}

/// The description and the `# SKIP …` / `# TODO …` directive (`\#` is an escaped hash).
fn split_directive(text: &str) -> (String, Option<Directive>) {
    let bytes = text.as_bytes();
    let mut at = None;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'#' && (i == 0 || bytes[i - 1] != b'\\') {
            at = Some(i);
        }
    }
    let Some(at) = at else {
        return (text.replace("\\#", "#"), None);
    };
    let comment = text[at + 1..].trim_start();
    let upper = comment.to_ascii_uppercase();
    let directive = if upper.starts_with("SKIP") {
        let reason = comment[4..].trim();
        Some(Directive::Skip(
            (!reason.is_empty()).then(|| reason.to_string()),
        ))
    } else if upper.starts_with("TODO") {
        Some(Directive::Todo)
    } else {
        None
    };
    match directive {
        Some(directive) => (text[..at].replace("\\#", "#"), Some(directive)),
        None => (text.replace("\\#", "#"), None),
    }
}

/// YAML diagnostics after a failed test: `failure` (or `message`) is its message, `output` its
/// report. Diagnostics that are not a YAML mapping are kept whole as the message.
fn attach_diagnostics(results: &mut TestResults, block: &Block<'_>) {
    let Some(last) = results.tests.last_mut() else {
        return;
    };
    let Outcome::Failed(failure) = &mut last.outcome else {
        return;
    };
    let yaml: Vec<&str> = block
        .lines
        .iter()
        .map(|l| {
            l.strip_prefix(block.indent)
                .unwrap_or_else(|| l.trim_start())
        })
        .collect();
    let yaml = yaml.join("\n");
    let parsed: Option<Value> = serde_saphyr::from_str(&yaml).ok();
    let text = |key: &str| -> Option<String> {
        match parsed.as_ref()?.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    };
    let message = match parsed {
        Some(Value::Object(_)) => text("failure").or_else(|| text("message")),
        _ => Some(yaml.trim().to_string()),
    };
    let (message, diff) = split_snapshot(message.as_deref().unwrap_or_default());
    failure.message = message;
    failure.snapshot_diff = diff;
    failure.report = text("output")
        .map(|o| o.trim_end().to_string())
        .filter(|o| !o.is_empty());
}
