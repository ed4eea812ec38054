//! The operator's approval of a scheduled project job (`codaris scheduler approve`): a job a
//! repository ships runs only while an approval names its file's digest, so a changed file is a
//! job nobody approved. Recorded like every other fact a run depends on, in the chain; the
//! daemon reads the latest approval of each file at start.

use serde::{Deserialize, Serialize};

/// One approval of one job file as it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobApprovalRecord {
    pub schema: u32,
    /// `j…`, from the ledger's ids.
    pub id: String,
    /// The job's session (the parent of its runs), empty before it has one.
    #[serde(default)]
    pub session_id: String,
    /// `project` (a user's own job needs no approval).
    pub scope: String,
    pub job_id: String,
    /// The job file, absolute.
    pub file: String,
    /// The hex SHA-256 the approval names (the file's bytes but its `paused:` line).
    pub digest: String,
    pub approved_at_ms: u64,
}

impl JobApprovalRecord {
    pub fn new(
        session_id: impl Into<String>,
        scope: impl Into<String>,
        job_id: impl Into<String>,
        file: impl Into<String>,
        digest: impl Into<String>,
        approved_at_ms: u64,
    ) -> JobApprovalRecord {
        JobApprovalRecord {
            schema: crate::record::SCHEMA,
            id: String::new(),
            session_id: session_id.into(),
            scope: scope.into(),
            job_id: job_id.into(),
            file: file.into(),
            digest: digest.into(),
            approved_at_ms,
        }
    }
}
