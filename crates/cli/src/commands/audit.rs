//! `codaris audit replay`: offline, with the policy linked into this binary.

use std::path::Path;

use codaris_ledger::{
    DecisionRecord, Evidence, Ledger, LedgerOptions, ReplayReport, audit, read_export,
};

use super::Outcome;
use crate::client::Target;
use crate::error::CliError;
use crate::output;

/// sled's page cache for an audit: it reads every page once, in key order, so a cache only
/// holds pages that are never read again. The ledger's default (64 MiB) grew the audit of
/// 100,000 decisions to a peak of 298–314 MB; with this, 226–260 MB, and no slower.
const AUDIT_CACHE_BYTES: u64 = 8 * 1024 * 1024;

pub fn replay(
    target: &Target,
    from: Option<&Path>,
    explain: bool,
    show: usize,
    json: bool,
) -> Result<Outcome, CliError> {
    // Each decision replayed, one line each, as the audit reaches it.
    let explain = explain && !json;
    let mut printed = Ok(());
    let mut print = |record: &DecisionRecord| {
        if explain && printed.is_ok() {
            printed = explain_line(record);
        }
    };
    let (report, source) = match from {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|source| CliError::Read {
                path: file.to_path_buf(),
                source,
            })?;
            let (lines, corrupt) = read_export(&text);
            let evidence = Evidence::from_export(lines, corrupt);
            evidence.decisions.iter().for_each(&mut print);
            (audit(&evidence), file.display().to_string())
        }
        None => {
            let path = target.layout.ledger();
            if !path.exists() {
                return Err(CliError::NoLedger { path });
            }
            // A live ledger is audited a batch of decisions at a time, never held whole.
            let ledger = Ledger::open_with(
                &path,
                LedgerOptions {
                    cache_bytes: AUDIT_CACHE_BYTES,
                },
            )?;
            let report = if explain {
                ledger.audit_each(&mut print)?
            } else {
                ledger.audit()?
            };
            (report, path.display().to_string())
        }
    };
    printed?;
    if json {
        output::json(&serde_json::to_value(&report)?)?;
    } else {
        print_report(&report, &source, show)?;
    }
    Ok(if report.is_clean() {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

fn explain_line(record: &DecisionRecord) -> Result<(), CliError> {
    output::line(&format!(
        "#{seq} {session} {tool}: {verdict} {code}: {sentence}",
        seq = record.seq,
        session = record.session_id,
        tool = record.request.tool,
        verdict = record.decision.verdict.as_str(),
        code = record.decision.code.as_str(),
        sentence = record.decision.sentence,
    ))
}

fn print_report(report: &ReplayReport, source: &str, show: usize) -> Result<(), CliError> {
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
    output::line(&format!(
        "checked {} grants and {} chain links: {} grants unbacked, {} chain findings",
        report.grants,
        report.chain_links,
        report.unbacked_grants.len(),
        report.chain_findings.len()
    ))?;
    for corrupt in &report.corrupt {
        output::line(&plain(&format!("unreadable: {corrupt}")))?;
    }
    // One line each, so a script can count and grep them.
    for finding in &report.unbacked_grants {
        output::line(&plain(&format!("unbacked: {finding}")))?;
    }
    for finding in &report.chain_findings {
        output::line(&plain(&format!("chain: {finding}")))?;
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

/// A finding quotes what a ledger holds, which a forger chose: control characters (terminal
/// escapes, newlines) are shown as `\u{..}`, so each finding stays one harmless line.
fn plain(text: &str) -> String {
    output::one_line(text).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn findings_never_carry_control_characters() {
        assert_eq!(
            super::plain("grant `g\u{1b}[31m\nx`"),
            "grant `g\\u{1b}[31m\\u{a}x`"
        );
    }
}
