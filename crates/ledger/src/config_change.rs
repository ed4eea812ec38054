//! A change of the configuration file made through Codaris (`config_commit`, `config_rollback`,
//! `codaris config commit|rollback`), or made by hand and put in force by `codaris config
//! reload`, as evidence: who made it, the file, digests of its text
//! before and after, the staged commands and the diff (both with every secret redacted). The
//! decisions taken under the new configuration record what they saw themselves (their standing
//! grants, their task's roots), so replay needs nothing from this record; it says when and by
//! whom the operator's inputs changed.

use serde::{Deserialize, Serialize};

use crate::record::SCHEMA;

/// What the change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigAction {
    /// Staged commands written to the file.
    Commit,
    /// The file written back as the last commit's snapshot had it.
    Rollback,
    /// The file as a person edited it by hand, put in force as it was (`codaris config
    /// reload`): nothing written; `before` is the text that was in force.
    Reload,
}

impl ConfigAction {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigAction::Commit => "commit",
            ConfigAction::Rollback => "rollback",
            ConfigAction::Reload => "reload",
        }
    }
}

/// The digest of a file that did not exist.
pub const ABSENT: &str = "absent";

/// One change of the configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigChangeRecord {
    pub schema: u32,
    /// `c…`, from the ledger's ids.
    pub id: String,
    /// The session whose call made it (`config_commit`); empty for a person's `codaris config`.
    pub session_id: String,
    pub action: ConfigAction,
    pub changed_at_ms: u64,
    /// The file written.
    pub file: String,
    /// SHA-256 (hex) of the file's text before and after; [`ABSENT`] for no file.
    pub before: String,
    pub after: String,
    /// The staged commands applied, secrets redacted (empty for a rollback and a reload).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// The unified diff, secrets redacted.
    pub diff: String,
    /// The keys changed that take effect only at the daemon's next start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub at_next_start: Vec<String>,
}

impl ConfigChangeRecord {
    /// A record to append (its id is the ledger's to give).
    pub fn new(
        session_id: impl Into<String>,
        action: ConfigAction,
        changed_at_ms: u64,
        file: impl Into<String>,
        before: impl Into<String>,
        after: impl Into<String>,
        diff: impl Into<String>,
    ) -> Self {
        Self {
            schema: SCHEMA,
            id: String::new(),
            session_id: session_id.into(),
            action,
            changed_at_ms,
            file: file.into(),
            before: before.into(),
            after: after.into(),
            commands: Vec::new(),
            diff: diff.into(),
            at_next_start: Vec::new(),
        }
    }
}

/// SHA-256 (hex) of a file's text, or [`ABSENT`].
pub fn text_digest(text: Option<&str>) -> String {
    use sha2::Digest;
    match text {
        Some(text) => sha2::Sha256::digest(text.as_bytes())
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect(),
        None => ABSENT.to_owned(),
    }
}
