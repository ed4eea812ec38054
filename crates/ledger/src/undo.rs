//! An undo of a turn, as evidence: which turn, what the daemon found at each path the turn
//! changed beside what the turn had left there, and the decision. The decision is a pure
//! function of what was found ([`decide_undo`]), so the offline auditor decides it again from
//! the record and compares, and checks that no turn was undone twice.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::record::SCHEMA;

/// One path the turn changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoFile {
    pub path: String,
    /// What the turn left there (`absent`, `file:<mode>:<sha256>`, `dir`, `symlink:<target>`).
    pub left: String,
    /// The same of what was there when the undo was asked for.
    pub found: String,
}

/// Why an undo went ahead or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UndoCode {
    /// Every path was as the turn left it: the turn was put back.
    Undone,
    /// The turn was undone before.
    AlreadyUndone,
    /// The turn changed no file through its tools (it may have run commands).
    NothingToUndo,
    /// A path is no longer as the turn left it (the person changed it, or a later turn did).
    ChangedSince,
}

/// The decision on an undo: shaped like a dispatch decision (a code, a one-line sentence).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoDecision {
    pub code: UndoCode,
    /// Only [`UndoCode::Undone`] allows.
    pub allowed: bool,
    /// The path the decision names (the first one changed since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub sentence: String,
}

/// An undo asked for by a person (dry runs are not recorded: they change nothing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoRecord {
    pub schema: u32,
    /// `u…`, from the ledger's ids.
    pub id: String,
    pub session_id: String,
    /// The turn, from 0 (as the ledger's and `run --json`'s turns count).
    pub turn: u32,
    pub asked_at_ms: u64,
    pub files: Vec<UndoFile>,
    /// What the turn ran whose own changes an undo does not take back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// The turn's checkpoint said it was undone before.
    pub already_undone: bool,
    pub decision: UndoDecision,
}

impl UndoRecord {
    /// The record of an undo of `turn`, its decision made from what was found.
    pub fn decided(
        session_id: impl Into<String>,
        turn: u32,
        asked_at_ms: u64,
        files: Vec<UndoFile>,
        commands: Vec<String>,
        already_undone: bool,
    ) -> Self {
        let decision = decide_undo(turn, &files, already_undone);
        Self {
            schema: SCHEMA,
            id: String::new(),
            session_id: session_id.into(),
            turn,
            asked_at_ms,
            files,
            commands,
            already_undone,
            decision,
        }
    }
}

/// Whether a turn may be undone, from what was found: never twice, never over a path that is
/// not as the turn left it (that would lose the later change), and only when the turn changed
/// something. Sentences count turns from 1, as people do.
pub fn decide_undo(turn: u32, files: &[UndoFile], already_undone: bool) -> UndoDecision {
    let shown = u64::from(turn) + 1;
    let refused = |code, path: Option<&str>, sentence: String| UndoDecision {
        code,
        allowed: false,
        path: path.map(str::to_owned),
        sentence,
    };
    if already_undone {
        return refused(
            UndoCode::AlreadyUndone,
            None,
            format!("turn {shown} was already undone"),
        );
    }
    if files.is_empty() {
        return refused(
            UndoCode::NothingToUndo,
            None,
            format!("turn {shown} changed no file through its tools"),
        );
    }
    if let Some(changed) = files.iter().find(|f| f.left != f.found) {
        return refused(
            UndoCode::ChangedSince,
            Some(&changed.path),
            format!(
                "`{}` changed since turn {shown} left it, so nothing was undone; undo the later turn first or put the file back",
                changed.path
            ),
        );
    }
    UndoDecision {
        code: UndoCode::Undone,
        allowed: true,
        path: None,
        sentence: format!(
            "turn {shown} undone: {} path{} put back",
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        ),
    }
}

/// What the auditor found wrong with an undo record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UndoProblem {
    /// Deciding again from the record's findings gives another decision.
    DecisionDiffers,
    /// An earlier record already undid the same turn.
    UndoneTwice,
}

/// One undo record that does not verify.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UndoFinding {
    pub id: String,
    pub session_id: String,
    pub turn: u32,
    pub problem: UndoProblem,
    pub recorded: UndoCode,
    pub replayed: UndoCode,
}

/// Decides each undo again and checks that no turn was undone twice; `records` in ledger
/// order.
pub fn verify_undos(records: &[UndoRecord]) -> Vec<UndoFinding> {
    let mut findings = Vec::new();
    let mut undone: HashMap<(&str, u32), &str> = HashMap::new();
    for record in records {
        let replayed = decide_undo(record.turn, &record.files, record.already_undone);
        let finding = |problem| UndoFinding {
            id: record.id.clone(),
            session_id: record.session_id.clone(),
            turn: record.turn,
            problem,
            recorded: record.decision.code,
            replayed: replayed.code,
        };
        if replayed != record.decision {
            findings.push(finding(UndoProblem::DecisionDiffers));
        }
        if record.decision.allowed
            && undone
                .insert((record.session_id.as_str(), record.turn), &record.id)
                .is_some()
        {
            findings.push(finding(UndoProblem::UndoneTwice));
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(left: &str, found: &str) -> UndoFile {
        UndoFile {
            path: "/w/a.txt".into(),
            left: left.into(),
            found: found.into(),
        }
    }

    #[test]
    fn an_undo_is_refused_over_a_changed_file_and_twice() {
        let same = vec![file("file:644:aa", "file:644:aa")];
        assert_eq!(decide_undo(2, &same, false).code, UndoCode::Undone);
        let changed = decide_undo(2, &[file("file:644:aa", "file:644:bb")], false);
        assert_eq!(changed.code, UndoCode::ChangedSince);
        assert_eq!(changed.path.as_deref(), Some("/w/a.txt"));
        assert!(
            changed.sentence.contains("since turn 3"),
            "{}",
            changed.sentence
        );
        assert_eq!(decide_undo(2, &same, true).code, UndoCode::AlreadyUndone);
        assert_eq!(decide_undo(2, &[], false).code, UndoCode::NothingToUndo);
    }

    #[test]
    fn replay_flags_a_forged_decision_and_a_turn_undone_twice() {
        let mut first =
            UndoRecord::decided("s1", 0, 1, vec![file("absent", "absent")], vec![], false);
        first.id = "u1".into();
        let mut again = first.clone();
        again.id = "u2".into();
        let mut forged =
            UndoRecord::decided("s1", 1, 1, vec![file("dir", "absent")], vec![], false);
        forged.id = "u3".into();
        forged.decision = decide_undo(1, &[], false);
        forged.decision.code = UndoCode::Undone;
        let findings = verify_undos(&[first, again, forged]);
        let problems: Vec<_> = findings
            .iter()
            .map(|f| (f.id.as_str(), f.problem))
            .collect();
        assert_eq!(
            problems,
            vec![
                ("u2", UndoProblem::UndoneTwice),
                ("u3", UndoProblem::DecisionDiffers)
            ]
        );
    }
}
