//! `codaris policy eval`: the policy's JSON contract on standard input and output, offline.
//!
//! Input is one request (a JSON document, which may span lines) or JSON lines of requests.
//! Output is one JSON line per request, in order: the decision, or `{"error": …, "line": N}` for
//! a request that cannot be read, so a reader can pair answers with requests by position.

use std::io::Read;

use codaris_policy::Request;
use serde_json::json;

use super::Outcome;
use crate::error::CliError;
use crate::output;

pub fn eval() -> Result<Outcome, CliError> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|source| CliError::Read {
            path: "standard input".into(),
            source,
        })?;
    let requests = split_requests(&input);
    if requests.is_empty() {
        return Err(CliError::NoInput {
            what: "policy requests (one JSON object, or JSON lines)",
        });
    }
    let mut failed = 0;
    for (line, text) in requests {
        match Request::from_json(text) {
            Ok(request) => output::json(&serde_json::to_value(request.evaluate())?)?,
            Err(err) => {
                failed += 1;
                let message = err.to_string();
                eprintln_line(&format!("codaris: line {line}: {message}"));
                output::json(&json!({"error": message, "line": line}))?;
            }
        }
    }
    Ok(if failed == 0 {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

/// The requests of the input with the line each starts on: the whole text when it is one JSON
/// value, else each non-blank line.
fn split_requests(input: &str) -> Vec<(usize, &str)> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Vec::new();
    }
    let first_line = input
        .lines()
        .position(|l| !l.trim().is_empty())
        .unwrap_or(0)
        + 1;
    if serde_json::from_str::<serde::de::IgnoredAny>(trimmed).is_ok() {
        return vec![(first_line, trimmed)];
    }
    input
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| (index + 1, line))
        .collect()
}

fn eprintln_line(text: &str) {
    crate::output::error_line(text);
}

#[cfg(test)]
mod tests {
    use super::split_requests;

    #[test]
    fn one_document_or_json_lines() {
        assert_eq!(
            split_requests("\n{\n \"tool\": \"x\"\n}\n"),
            vec![(2, "{\n \"tool\": \"x\"\n}")]
        );
        assert_eq!(
            split_requests("{\"a\": 1}\n\n{\"b\": 2}\nnot json\n"),
            vec![(1, "{\"a\": 1}"), (3, "{\"b\": 2}"), (4, "not json")]
        );
        assert!(split_requests("  \n").is_empty());
    }
}
