//! Decision cases as data: one JSON object per line, `{"name", "request", "expect"}`.
//!
//! The crate's tests and `codaris policy eval` run the same file, so the checking lives here
//! rather than in either of them: parse a case, decide its request (or take a decision the CLI
//! printed), compare with what the case expects.

use serde::{Deserialize, Serialize};

use crate::capability::Capability;
use crate::code::Code;
use crate::decision::Decision;
use crate::request::Request;
use crate::verdict::Verdict;

/// One case of the corpus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// A short unique name saying what the case shows.
    pub name: String,
    /// The request, in the `codaris policy eval` format.
    pub request: Request,
    /// What the decision must say.
    pub expect: Expect,
}

/// The parts of a decision a case pins down. The sentence is left free to improve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The verdict.
    pub verdict: Verdict,
    /// The code.
    pub code: Code,
    /// The capability; absent means `null`.
    #[serde(default)]
    pub capability: Option<Capability>,
}

/// Why a case did not pass.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// The line is not a case.
    #[error("not a decision case: {source}")]
    Parse {
        /// The deserializer's account.
        #[source]
        source: serde_json::Error,
    },
    /// The decision differs from the expectation.
    #[error("case `{name}`: expected {expected}, got {actual}")]
    Mismatch {
        /// The case's name.
        name: String,
        /// What the case expects, as JSON.
        expected: String,
        /// What the decision said, as JSON (the whole decision, sentence included).
        actual: String,
    },
}

impl Case {
    /// Reads one line of the corpus.
    pub fn parse(line: &str) -> Result<Case, CaseError> {
        serde_json::from_str(line).map_err(|source| CaseError::Parse { source })
    }

    /// Decides the case's request in-process and compares.
    pub fn check(&self) -> Result<Decision, CaseError> {
        let decision = self.request.evaluate();
        self.check_decision(&decision)?;
        Ok(decision)
    }

    /// Compares a decision obtained elsewhere (e.g. printed by `codaris policy eval`).
    pub fn check_decision(&self, decision: &Decision) -> Result<(), CaseError> {
        if self.expect.matches(decision) {
            return Ok(());
        }
        Err(CaseError::Mismatch {
            name: self.name.clone(),
            expected: serde_json::to_string(&self.expect).unwrap_or_default(),
            actual: serde_json::to_string(decision).unwrap_or_default(),
        })
    }
}

impl Expect {
    /// True when the decision has this verdict, code and capability.
    pub fn matches(&self, decision: &Decision) -> bool {
        self.verdict == decision.verdict
            && self.code == decision.code
            && self.capability == decision.capability
    }
}

/// Checks one line of the corpus end to end: parse, decide, compare. Blank lines pass as
/// `Ok(None)` so a corpus may be spaced out.
pub fn check_case_line(line: &str) -> Result<Option<Decision>, CaseError> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    Case::parse(line)?.check().map(Some)
}

#[cfg(test)]
mod tests {
    use super::{CaseError, check_case_line};

    #[test]
    fn a_wrong_expectation_is_reported_with_both_sides() {
        let line = r#"{"name": "n", "request": {"tool": "read_file", "args": {"path": "a"},
            "task": {"cwd": "/w", "allowed_roots": ["/w"]}},
            "expect": {"verdict": "deny", "code": "bad_path"}}"#;
        let err = check_case_line(&line.replace('\n', " "));
        let Err(CaseError::Mismatch {
            expected, actual, ..
        }) = err
        else {
            unreachable!("expected a mismatch, got {err:?}");
        };
        assert!(expected.contains("bad_path"));
        assert!(actual.contains("allowed_by_default"));
    }

    #[test]
    fn blank_lines_pass_and_garbage_does_not() {
        assert!(matches!(check_case_line("  "), Ok(None)));
        assert!(matches!(check_case_line("{"), Err(CaseError::Parse { .. })));
    }
}
