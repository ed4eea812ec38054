//! `codaris audit replay` and `codaris audit verify`: offline, with the policy linked into this
//! binary. A ledger directory is also checked against the chain's head the daemon published
//! in the configuration directory (docs/ledger.md, "The published head").

use std::path::Path;

use codaris_ledger::{
    ChainHead, ChainKey, DecisionRecord, Evidence, Ledger, LedgerOptions, ReplayReport, audit,
    read_export,
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
    let mut head = Head::NotChecked;
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
            let mut report = if explain {
                ledger.audit_each(&mut print)?
            } else {
                ledger.audit()?
            };
            head = check_head(&ledger, &mut report)?;
            (report, path.display().to_string())
        }
    };
    printed?;
    if json {
        let mut value = serde_json::to_value(&report)?;
        if let (Some(fields), Head::Published { head, .. }) = (value.as_object_mut(), &head) {
            fields.insert("chain_head".to_owned(), serde_json::to_value(head)?);
        }
        output::json(&value)?;
    } else {
        print_report(&report, &source, show)?;
        print_head(&head)?;
    }
    Ok(if report.is_clean() {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

/// What an audit of a ledger directory knew of the chain's published head.
enum Head {
    /// An export (`--from`): its chain is checked as it is.
    NotChecked,
    /// No head in the configuration directory: a ledger from before heads, or one whose
    /// daemon used another configuration directory.
    None { dir: std::path::PathBuf },
    Published {
        head: ChainHead,
        /// Whether the key was there to check the head's HMAC.
        keyed: bool,
    },
}

/// Adds what the published head finds (a cut tail, a rewritten chain, a forged head) to the
/// report's chain findings.
fn check_head(ledger: &Ledger, report: &mut ReplayReport) -> Result<Head, CliError> {
    let lookup = |name: &str| std::env::var_os(name);
    let Some(dir) = codaris_paths::resolve_config_file(&lookup)
        .ok()
        .and_then(|(file, _)| file.parent().map(std::path::Path::to_path_buf))
    else {
        return Ok(Head::NotChecked);
    };
    let Some(head) = ChainHead::load(&dir)? else {
        return Ok(Head::None { dir });
    };
    let key = ChainKey::load(&dir)?;
    report
        .chain_findings
        .extend(ledger.check_head(&head, key.as_ref())?);
    Ok(Head::Published {
        head,
        keyed: key.is_some(),
    })
}

fn print_head(head: &Head) -> Result<(), CliError> {
    match head {
        Head::NotChecked => Ok(()),
        Head::None { dir } => output::line(&format!(
            "no chain head published in {}: records cut off the chain's end cannot be seen",
            dir.display()
        )),
        Head::Published { head, keyed } => output::line(&format!(
            "the chain's published head is link {}{}",
            head.seq,
            if *keyed {
                ""
            } else {
                " (its key is missing, so the head itself is not verified)"
            }
        )),
    }
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
    // Changes of the configuration are chained like every record; their count says when the
    // operator's inputs changed within what was replayed.
    if report.config_changes > 0 {
        output::line(&format!(
            "the configuration file was changed {} time{} through codaris (`config_change` records)",
            report.config_changes,
            if report.config_changes == 1 { "" } else { "s" }
        ))?;
    }
    // Undos are decisions of their own: each decided again from what it found.
    if report.undos > 0 || !report.undo_findings.is_empty() {
        output::line(&format!(
            "replayed {} undos: {} matched, {} findings",
            report.undos,
            report.undos.saturating_sub(
                report
                    .undo_findings
                    .iter()
                    .filter(|f| f.problem == codaris_ledger::UndoProblem::DecisionDiffers)
                    .count()
            ),
            report.undo_findings.len()
        ))?;
    }
    for finding in &report.undo_findings {
        output::line(&plain(&format!(
            "undo: record `{}` (turn {} of session `{}`): {}",
            finding.id,
            crate::output::turn_for_people(finding.turn),
            finding.session_id,
            match finding.problem {
                codaris_ledger::UndoProblem::DecisionDiffers => format!(
                    "recorded {:?}, replayed {:?}",
                    finding.recorded, finding.replayed
                ),
                codaris_ledger::UndoProblem::UndoneTwice =>
                    "the turn was already undone by an earlier record".to_owned(),
            }
        )))?;
    }
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
