//! Replay: decide every recorded request again with this build's policy and compare.

use codaris_policy::Decision;
use serde::Serialize;

use crate::error::Corrupt;
use crate::record::DecisionRecord;

/// A decision this build makes differently from the recorded one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    pub seq: u64,
    pub session_id: String,
    pub tool: String,
    pub recorded_policy_version: String,
    pub recorded: Decision,
    pub replayed: Decision,
}

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    pub policy_version: String,
    pub decisions: usize,
    pub matched: usize,
    pub differences: Vec<Difference>,
    /// Records that could not be read; a replay with any is not clean.
    pub corrupt: Vec<String>,
}

impl ReplayReport {
    pub fn is_clean(&self) -> bool {
        self.differences.is_empty() && self.corrupt.is_empty()
    }
}

/// Re-evaluates each record's complete input and compares whole decisions.
pub fn replay(records: &[DecisionRecord], corrupt: &[Corrupt]) -> ReplayReport {
    let mut differences = Vec::new();
    for record in records {
        let replayed = record.request.evaluate();
        if replayed != record.decision {
            differences.push(Difference {
                seq: record.seq,
                session_id: record.session_id.clone(),
                tool: record.request.tool.clone(),
                recorded_policy_version: record.policy_version.clone(),
                recorded: record.decision.clone(),
                replayed,
            });
        }
    }
    ReplayReport {
        policy_version: codaris_policy::POLICY_VERSION.to_owned(),
        decisions: records.len(),
        matched: records.len() - differences.len(),
        differences,
        corrupt: corrupt.iter().map(ToString::to_string).collect(),
    }
}
