//! `codaris audit replay --config CANDIDATE` and `codaris audit shadow`: offline, the recorded
//! decisions judged under another configuration's operator inputs. The candidate is read
//! through `codarisd check-config --operator-inputs`, the daemon's own resolver, so a file the
//! daemon would refuse to start with is refused here line by line and nothing is replayed.

use std::path::{Path, PathBuf};

use codaris_ledger::{
    Candidate, Corrupt, DecisionRecord, Evidence, Ledger, LedgerOptions, OperatorInputs,
    VerdictChanges, read_export, replay_under, shadow_changes,
};
use serde_json::json;

use super::Outcome;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

/// As `audit replay`'s: every page is read once, in key order.
const AUDIT_CACHE_BYTES: u64 = 8 * 1024 * 1024;

pub fn replay(
    target: &Target,
    from: Option<&Path>,
    candidate: &Path,
    json: bool,
) -> Result<Outcome, CliError> {
    let candidate = absolute(candidate)?;
    let inputs = match judge(&candidate)? {
        Ok(inputs) => inputs,
        Err(problems) => {
            if json {
                output::json(&json!({
                    "ok": false,
                    "config": candidate,
                    "problems": problems,
                }))?;
            } else {
                for problem in &problems {
                    output::error_line(&output::one_line(problem));
                }
                output::error_line(&format!(
                    "candidate `{}` refused: nothing replayed",
                    candidate.display()
                ));
            }
            return Ok(Outcome::Failed);
        }
    };
    let (records, corrupt, source) = read(target, from)?;
    let changes = replay_under(&records, &corrupt, &Candidate::new(inputs));
    let header = format!(
        "replayed the decisions of {source} under `{}`:",
        candidate.display()
    );
    report(&changes, json, &header, |value| {
        value.insert("ok".to_owned(), json!(true));
        value.insert("config".to_owned(), json!(candidate));
        value.insert("source".to_owned(), json!(source));
    })?;
    Ok(outcome(&changes))
}

pub fn shadow(target: &Target, from: Option<&Path>, json: bool) -> Result<Outcome, CliError> {
    let (records, corrupt, source) = read(target, from)?;
    let changes = shadow_changes(&records, &corrupt);
    let mut configs: Vec<&str> = records
        .iter()
        .filter_map(|r| r.shadow.as_ref().map(|s| s.config.as_str()))
        .collect();
    configs.sort_unstable();
    configs.dedup();
    let under = match configs.as_slice() {
        [] => String::new(),
        names => format!(
            " under {}",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let header = format!("what the shadow configuration decided differently in {source}{under}:");
    report(&changes, json, &header, |value| {
        value.insert("source".to_owned(), json!(source));
        value.insert("configs".to_owned(), json!(configs));
    })?;
    Ok(outcome(&changes))
}

/// Unreadable records mean the answer is not whole.
fn outcome(changes: &VerdictChanges) -> Outcome {
    if changes.corrupt.is_empty() {
        Outcome::Success
    } else {
        Outcome::Failed
    }
}

/// `header`, the groups and the count line, or the JSON with what `extra` adds.
fn report(
    changes: &VerdictChanges,
    json: bool,
    header: &str,
    extra: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>),
) -> Result<(), CliError> {
    if json {
        let mut value = serde_json::to_value(changes)?;
        if let Some(fields) = value.as_object_mut() {
            extra(fields);
        }
        return output::json(&value);
    }
    output::line(&output::one_line(header))?;
    for corrupt in &changes.corrupt {
        output::line(&output::one_line(&format!("unreadable: {corrupt}")))?;
    }
    // A group names a tool, a program, a host or a path a ledger holds: one harmless line each.
    for line in changes.summary() {
        output::line(&output::one_line(&line))?;
    }
    Ok(())
}

/// The candidate's operator inputs as the daemon's resolver reads them, or every problem.
fn judge(candidate: &Path) -> Result<Result<OperatorInputs, Vec<String>>, CliError> {
    let program = client::daemon_binary()?;
    let ran = std::process::Command::new(&program)
        .args(["check-config", "--operator-inputs"])
        .arg(candidate)
        .output()
        .map_err(|source| CliError::Spawn {
            binary: program.clone(),
            source,
        })?;
    if !ran.status.success() {
        let problems: Vec<String> = String::from_utf8_lossy(&ran.stderr)
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect();
        return Ok(Err(if problems.is_empty() {
            vec![format!("codarisd check-config failed ({})", ran.status)]
        } else {
            problems
        }));
    }
    let inputs = serde_json::from_slice(&ran.stdout).map_err(CliError::Json)?;
    Ok(Ok(inputs))
}

/// The recorded decisions (grants filled in) from an export or a stopped daemon's ledger.
fn read(
    target: &Target,
    from: Option<&Path>,
) -> Result<(Vec<DecisionRecord>, Vec<Corrupt>, String), CliError> {
    match from {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|source| CliError::Read {
                path: file.to_path_buf(),
                source,
            })?;
            let (lines, corrupt) = read_export(&text);
            let evidence = Evidence::from_export(lines, corrupt);
            Ok((
                evidence.decisions,
                evidence.corrupt,
                file.display().to_string(),
            ))
        }
        None => {
            let path = target.layout.ledger();
            if !path.exists() {
                return Err(CliError::NoLedger { path });
            }
            let ledger = Ledger::open_with(
                &path,
                LedgerOptions {
                    cache_bytes: AUDIT_CACHE_BYTES,
                },
            )?;
            let (records, corrupt) = ledger.decisions(None)?;
            Ok((records, corrupt, path.display().to_string()))
        }
    }
}

fn absolute(path: &Path) -> Result<PathBuf, CliError> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .map_err(|source| CliError::Read {
            path: path.to_path_buf(),
            source,
        })
}
