//! `codaris audit replay`: offline, with the policy linked into this binary.

use std::path::Path;

use codaris_ledger::{
    DecisionRecord, ExportLine, Ledger, ReplayReport, read_export, replay as replay_records,
};

use super::Outcome;
use crate::client::Target;
use crate::error::CliError;
use crate::output;

pub fn replay(
    target: &Target,
    from: Option<&Path>,
    explain: bool,
    show: usize,
    json: bool,
) -> Result<Outcome, CliError> {
    let (records, corrupt, source) = match from {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|source| CliError::Read {
                path: file.to_path_buf(),
                source,
            })?;
            let (lines, corrupt) = read_export(&text);
            let records: Vec<DecisionRecord> = lines
                .into_iter()
                .filter_map(|line| match line {
                    ExportLine::Decision(record) => Some(*record),
                    _ => None,
                })
                .collect();
            (records, corrupt, file.display().to_string())
        }
        None => {
            let path = target.layout.ledger();
            if !path.exists() {
                return Err(CliError::NoLedger { path });
            }
            let ledger = Ledger::open(&path)?;
            let (records, corrupt) = ledger.decisions(None)?;
            (records, corrupt, path.display().to_string())
        }
    };
    let report = replay_records(&records, &corrupt);
    if json {
        output::json(&serde_json::to_value(&report)?)?;
    } else {
        print_report(&report, &records, &source, explain, show)?;
    }
    Ok(if report.is_clean() {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

fn print_report(
    report: &ReplayReport,
    records: &[DecisionRecord],
    source: &str,
    explain: bool,
    show: usize,
) -> Result<(), CliError> {
    if explain {
        for record in records {
            output::line(&format!(
                "#{seq} {session} {tool}: {verdict} {code}: {sentence}",
                seq = record.seq,
                session = record.session_id,
                tool = record.request.tool,
                verdict = record.decision.verdict.as_str(),
                code = record.decision.code.as_str(),
                sentence = record.decision.sentence,
            ))?;
        }
    }
    output::line(&format!(
        "replayed {} decisions from {source} with policy version {}: {} matched, {} differ{}",
        report.decisions,
        report.policy_version,
        report.matched,
        report.differences.len(),
        if report.corrupt.is_empty() {
            String::new()
        } else {
            format!(", {} unreadable", report.corrupt.len())
        }
    ))?;
    for corrupt in &report.corrupt {
        output::line(&format!("unreadable: {corrupt}"))?;
    }
    for difference in report.differences.iter().take(show) {
        output::line(&format!(
            "\ndecision #{} ({} in session {}, recorded by policy version {}):\n  recorded: {}\n  replayed: {}",
            difference.seq,
            difference.tool,
            difference.session_id,
            difference.recorded_policy_version,
            serde_json::to_string(&difference.recorded)?,
            serde_json::to_string(&difference.replayed)?,
        ))?;
    }
    if report.differences.len() > show {
        output::line(&format!(
            "\n… and {} more (--show N prints more, --json prints all)",
            report.differences.len() - show
        ))?;
    }
    Ok(())
}
