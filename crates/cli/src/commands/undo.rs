//! `codaris undo`: puts back the files one turn changed through its tools, through the daemon
//! (which owns the files' writes and the ledger), on a live or an ended session.
//!
//! Turns are counted from 1 here, as chat shows them; `--json` keeps the daemon's count from 0
//! in `turn` (as `run --json` does) beside `turn_for_people`. `--json` prints one object:
//! `session_id`, `turn`, `turn_for_people`, `dry_run`, `files` (`path`, `action`, `diff`),
//! `commands`, `record_id`, `sentence`, and `refused: true` when the undo was refused (exit 1):
//! a contract, extended by adding fields only.

use std::path::Path;

use codaris_proto::v1;
use serde_json::json;

use super::Outcome;
use super::card_view::{colour_wanted, paint_diff_line};
use crate::cli::UndoArgs;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output::{self, turn_for_people, turn_from_people};

type Sessions = v1::sessions_client::SessionsClient<tonic::transport::Channel>;

pub async fn undo(
    target: &Target,
    autostart: bool,
    json_out: bool,
    args: UndoArgs,
) -> Result<Outcome, CliError> {
    let turn = match args.turn {
        Some(n) => Some(turn_from_people(n).ok_or_else(|| CliError::InvalidFlag {
            flag: "--turn",
            reason: "turns count from 1".to_owned(),
        })?),
        None => None,
    };
    let channel = client::open(target, autostart).await?;
    let mut sessions = v1::sessions_client::SessionsClient::new(channel);
    let session_id = match args.session {
        Some(id) => id,
        None => session_here(&mut sessions).await?,
    };
    undo_in(&mut sessions, &session_id, turn, args.dry_run, json_out).await
}

/// Asks the daemon to undo (or, with `dry_run`, to show) `turn` of `session_id` and prints the
/// answer; a refusal is printed as its sentence and ends in [`Outcome::Failed`]. Chat's
/// `/undo` calls this too.
pub async fn undo_in(
    sessions: &mut Sessions,
    session_id: &str,
    turn: Option<u32>,
    dry_run: bool,
    json_out: bool,
) -> Result<Outcome, CliError> {
    let answer = sessions
        .undo_turn(v1::UndoTurnRequest {
            session_id: session_id.to_owned(),
            turn,
            dry_run,
        })
        .await;
    let done = match answer {
        Ok(done) => done.into_inner(),
        Err(status) if status.code() == tonic::Code::FailedPrecondition => {
            if json_out {
                output::json(&json!({
                    "session_id": session_id,
                    "dry_run": dry_run,
                    "refused": true,
                    "sentence": status.message(),
                }))?;
            } else {
                output::error_line(&format!("codaris: undo refused: {}", status.message()));
            }
            return Ok(Outcome::Failed);
        }
        Err(status) if status.code() == tonic::Code::NotFound => {
            return Err(CliError::NoSession {
                id: session_id.to_owned(),
            });
        }
        Err(status) => return Err(status.into()),
    };
    if json_out {
        output::json(&to_json(&done))?;
    } else {
        for line in text(&done, colour_wanted()) {
            output::styled(&line)?;
        }
    }
    Ok(Outcome::Success)
}

fn to_json(done: &v1::UndoTurnResponse) -> serde_json::Value {
    json!({
        "session_id": done.session_id,
        "turn": done.turn,
        "turn_for_people": turn_for_people(done.turn),
        "dry_run": done.dry_run,
        "files": done.files.iter().map(|f| json!({
            "path": f.path,
            "action": f.action,
            "diff": f.diff,
        })).collect::<Vec<_>>(),
        "commands": done.commands,
        "record_id": done.record_id,
        "sentence": done.sentence,
    })
}

/// The answer as lines for a person: what was (or would be) put back, each dry run's diff in
/// colour on a terminal, and what the turn ran that is not undone. Values are shown safely.
pub fn text(done: &v1::UndoTurnResponse, colour: bool) -> Vec<String> {
    let shown = |s: &str| output::shown(s).into_owned();
    let turn = turn_for_people(done.turn);
    let mut lines = Vec::new();
    if done.dry_run {
        lines.push(format!(
            "undo of turn {turn} of session {} would put back {} path{} (dry run: nothing changed)",
            shown(&done.session_id),
            done.files.len(),
            if done.files.len() == 1 { "" } else { "s" }
        ));
    } else {
        lines.push(format!(
            "{} (session {}, ledger record {})",
            shown(&done.sentence),
            shown(&done.session_id),
            shown(&done.record_id)
        ));
    }
    for file in &done.files {
        lines.push(format!(
            "  {} {}",
            verb(&file.action, done.dry_run),
            shown(&file.path)
        ));
        for line in file.diff.lines() {
            let line = shown(line);
            lines.push(if colour { paint_diff_line(&line) } else { line });
        }
    }
    for command in &done.commands {
        lines.push(format!(
            "turn {turn} also ran {}; what it changed is not undone",
            shown(command)
        ));
    }
    lines
}

fn verb(action: &str, dry_run: bool) -> &str {
    match (action, dry_run) {
        ("restored", false) => "restored",
        ("restored", true) => "would restore",
        ("recreated", false) => "recreated",
        ("recreated", true) => "would recreate",
        ("removed", false) => "removed",
        ("removed", true) => "would remove",
        ("kept", _) => "kept (it holds other files)",
        (other, _) => other,
    }
}

/// The most recently used session (ended ones too) whose directory is the current one.
async fn session_here(sessions: &mut Sessions) -> Result<String, CliError> {
    let cwd = std::env::current_dir().map_err(|e| CliError::InvalidFlag {
        flag: "--session",
        reason: format!("none given and the current directory cannot be read: {e}"),
    })?;
    let here = cwd.canonicalize().unwrap_or(cwd);
    let listed = super::sessions::fetch(sessions, true).await?;
    listed
        .into_iter()
        .find(|s| Path::new(&s.cwd).canonicalize().is_ok_and(|c| c == here))
        .map(|s| s.id)
        .ok_or_else(|| CliError::InvalidFlag {
            flag: "--session",
            reason: format!(
                "none given and no session ran in `{}`; pass one (`codaris sessions --all` lists them)",
                here.display()
            ),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_reads_turns_from_one_and_what_was_not_undone() {
        let done = v1::UndoTurnResponse {
            session_id: "s000001".into(),
            turn: 2,
            dry_run: false,
            files: vec![v1::UndoFile {
                path: "/w/a.txt".into(),
                action: "recreated".into(),
                diff: String::new(),
            }],
            commands: vec!["`make`".into()],
            record_id: "u000000000007".into(),
            sentence: "turn 3 undone: 1 path put back".into(),
        };
        assert_eq!(
            text(&done, false),
            vec![
                "turn 3 undone: 1 path put back (session s000001, ledger record u000000000007)",
                "  recreated /w/a.txt",
                "turn 3 also ran `make`; what it changed is not undone",
            ]
        );
        assert_eq!(turn_from_people(0), None);
        assert_eq!(turn_from_people(turn_for_people(4)), Some(4));
    }
}
