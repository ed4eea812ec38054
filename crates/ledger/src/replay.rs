//! Replay: decide every recorded request again with this build's policy and compare; and audit
//! the evidence around the decisions: what backs each grant, and the chain.

use std::collections::{HashMap, HashSet};

use codaris_policy::{Decision, Grant, GrantSet};
use serde::Serialize;

use crate::backing::{self, GrantFinding};
use crate::chain::{self, ChainFinding, Link, RecordKind, Stored};
use crate::error::{Corrupt, LedgerError};
use crate::export::ExportLine;
use crate::grant_sets;
use crate::record::{CardRecord, DecisionRecord, GrantRecord, GrantSetRecord};
use crate::store::Ledger;

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

impl Difference {
    /// How `replayed`, this build's decision of the record's request, differs from the recorded
    /// one; `None` when they are the same.
    pub(crate) fn of(record: &DecisionRecord, replayed: Decision) -> Option<Difference> {
        (replayed != record.decision).then(|| Difference {
            seq: record.seq,
            session_id: record.session_id.clone(),
            tool: record.request.tool.to_string(),
            recorded_policy_version: record.policy_version.clone(),
            recorded: record.decision.clone(),
            replayed,
        })
    }
}

/// What a replay found. The JSON of `codaris audit replay --json`: fields are only ever added.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    pub policy_version: String,
    pub decisions: usize,
    pub matched: usize,
    pub differences: Vec<Difference>,
    /// Records that could not be read; a replay with any is not clean.
    pub corrupt: Vec<String>,
    /// Grant records checked for what backs them.
    pub grants: usize,
    /// Grants that nothing backs: records without a card answered with them, and grants
    /// decisions relied on without such a record or an allowlist entry.
    pub unbacked_grants: Vec<GrantFinding>,
    /// Undo records decided again.
    pub undos: usize,
    /// Undos whose decision does not replay, and turns undone twice.
    pub undo_findings: Vec<crate::undo::UndoFinding>,
    /// Changes of the configuration file recorded (linked in the chain like every record).
    pub config_changes: usize,
    /// Links of the chain walked.
    pub chain_links: usize,
    /// Records inserted, altered or removed, as the chain shows them.
    pub chain_findings: Vec<ChainFinding>,
}

impl ReplayReport {
    pub fn is_clean(&self) -> bool {
        self.differences.is_empty()
            && self.corrupt.is_empty()
            && self.unbacked_grants.is_empty()
            && self.chain_findings.is_empty()
            && self.undo_findings.is_empty()
    }
}

/// Re-evaluates each record's complete input and compares whole decisions. Decisions only:
/// [`audit`] also checks the grants and the chain.
pub fn replay(records: &[DecisionRecord], corrupt: &[Corrupt]) -> ReplayReport {
    let mut differences = Vec::new();
    // A session's decisions mostly see the same grants one after another: the policy's grant
    // trie is built once per change of them instead of once per decision (they are compared
    // whole, so a decision is never judged against grants other than its own).
    let mut built: HashMap<&str, (&[Grant], GrantSet)> = HashMap::new();
    for record in records {
        let grants = record.request.grants.as_slice();
        let set = match built.get(record.session_id.as_str()) {
            Some((seen, set)) if *seen == grants => set,
            _ => {
                let set = record.request.grant_set();
                &built
                    .entry(record.session_id.as_str())
                    .insert_entry((grants, set))
                    .into_mut()
                    .1
            }
        };
        differences.extend(Difference::of(record, record.request.evaluate_with(set)));
    }
    ReplayReport {
        policy_version: codaris_policy::POLICY_VERSION.to_owned(),
        decisions: records.len(),
        matched: records.len() - differences.len(),
        differences,
        corrupt: corrupt.iter().map(ToString::to_string).collect(),
        grants: 0,
        unbacked_grants: Vec::new(),
        undos: 0,
        config_changes: 0,
        undo_findings: Vec::new(),
        chain_links: 0,
        chain_findings: Vec::new(),
    }
}

/// Everything a replay reads, from a ledger or from an export.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// The one session an export was limited to.
    pub session_id: Option<String>,
    pub grants: Vec<GrantRecord>,
    pub cards: Vec<CardRecord>,
    /// The grant sets the decisions name.
    pub grant_sets: Vec<GrantSetRecord>,
    /// Undos of turns, oldest first.
    pub undos: Vec<crate::undo::UndoRecord>,
    /// Changes of the configuration file, oldest first.
    pub config_changes: Vec<crate::config_change::ConfigChangeRecord>,
    /// The operator's approvals of scheduled project jobs, oldest first.
    pub job_approvals: Vec<crate::job_approval::JobApprovalRecord>,
    /// Each with the grants its set names filled in: the request `evaluate` saw.
    pub decisions: Vec<DecisionRecord>,
    pub links: Vec<Link>,
    pub corrupt: Vec<Corrupt>,
    /// Each decision as stored (before its grants were filled in, and including those that
    /// could not be): its `seq`, session and digest, in export order and with any duplicate
    /// kept, since the chain names that version of each.
    stored_decisions: Vec<(u64, String, String)>,
}

impl Evidence {
    /// The records of an export (as [`crate::read_export`] or [`Ledger::export`] give them).
    pub fn from_export(lines: Vec<ExportLine>, corrupt: Vec<Corrupt>) -> Evidence {
        let mut evidence = Evidence {
            corrupt,
            ..Evidence::default()
        };
        for line in lines {
            match line {
                ExportLine::Header { session_id, .. } => evidence.session_id = session_id,
                ExportLine::Grant(record) => evidence.grants.push(record),
                ExportLine::Card(record) => evidence.cards.push(record),
                ExportLine::GrantSet(record) => evidence.grant_sets.push(record),
                ExportLine::Undo(record) => evidence.undos.push(record),
                ExportLine::ConfigChange(record) => evidence.config_changes.push(record),
                ExportLine::JobApproval(record) => evidence.job_approvals.push(record),
                ExportLine::Decision(record) => evidence.decisions.push(*record),
                ExportLine::Link(link) => evidence.links.push(link),
                ExportLine::Unreadable {
                    place, key, reason, ..
                } => evidence.corrupt.push(Corrupt { place, key, reason }),
            }
        }
        evidence.stored_decisions = stored_digests(&evidence.decisions);
        let unfilled = grant_sets::fill_all(
            &mut evidence.decisions,
            &evidence.grant_sets,
            &evidence.grants,
        );
        evidence.corrupt.extend(unfilled);
        evidence
    }
}

impl Ledger {
    /// The whole ledger, as replay reads it.
    pub fn evidence(&self) -> Result<Evidence, LedgerError> {
        let (lines, corrupt) = self.export(None)?;
        Ok(Evidence::from_export(lines, corrupt))
    }
}

/// Replays every decision, checks what backs every grant, and walks the chain.
pub fn audit(evidence: &Evidence) -> ReplayReport {
    let mut report = replay(&evidence.decisions, &evidence.corrupt);
    report.grants = evidence.grants.len();
    report.unbacked_grants = backing::check(
        &evidence.grants,
        &evidence.cards,
        &evidence.decisions,
        &evidence.links,
    );
    report.undos = evidence.undos.len();
    report.config_changes = evidence.config_changes.len();
    report.undo_findings = crate::undo::verify_undos(&evidence.undos);
    report.chain_links = evidence.links.len();
    report.chain_findings = chain::verify(
        &evidence.links,
        &stored(evidence),
        evidence.session_id.as_deref(),
    );
    report
}

/// Each record with its digest, as the chain names it.
fn stored(evidence: &Evidence) -> Vec<Stored> {
    let mut records = Vec::new();
    for grant in &evidence.grants {
        records.push(Stored {
            kind: RecordKind::Grant,
            key: grant.id.clone(),
            session_id: grant.session_id.clone(),
            digest: digest(grant),
        });
    }
    for card in &evidence.cards {
        records.push(Stored {
            kind: RecordKind::Card,
            key: card.id.clone(),
            session_id: card.session_id.clone(),
            digest: digest(card),
        });
    }
    for set in &evidence.grant_sets {
        records.push(Stored {
            kind: RecordKind::GrantSet,
            key: set.key.clone(),
            session_id: set.session_id.clone(),
            digest: digest(set),
        });
    }
    for undo in &evidence.undos {
        records.push(Stored {
            kind: RecordKind::Undo,
            key: undo.id.clone(),
            session_id: undo.session_id.clone(),
            digest: digest(undo),
        });
    }
    for approval in &evidence.job_approvals {
        records.push(Stored {
            kind: RecordKind::JobApproval,
            key: approval.id.clone(),
            session_id: approval.session_id.clone(),
            digest: digest(approval),
        });
    }
    for change in &evidence.config_changes {
        records.push(Stored {
            kind: RecordKind::ConfigChange,
            key: change.id.clone(),
            session_id: change.session_id.clone(),
            digest: digest(change),
        });
    }
    for (seq, session_id, digest) in &evidence.stored_decisions {
        records.push(Stored {
            kind: RecordKind::Decision,
            key: seq.to_string(),
            session_id: session_id.clone(),
            digest: digest.clone(),
        });
    }
    // Decisions added to the evidence by hand carry no stored digest: taken as they are.
    let digested: HashSet<u64> = evidence.stored_decisions.iter().map(|d| d.0).collect();
    for decision in &evidence.decisions {
        if !digested.contains(&decision.seq) {
            records.push(Stored {
                kind: RecordKind::Decision,
                key: decision.seq.to_string(),
                session_id: decision.session_id.clone(),
                digest: digest(decision),
            });
        }
    }
    records
}

/// Each decision's `seq`, session and digest as the chain names it, in order. Digesting (the record in canonical
/// JSON) is most of what reading an export costs, and each is independent of the others: the
/// decisions are split across the machine's cores.
fn stored_digests(decisions: &[DecisionRecord]) -> Vec<(u64, String, String)> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let chunk = decisions.len().div_ceil(cores).max(1024);
    let digest_all = |part: &[DecisionRecord]| -> Vec<(u64, String, String)> {
        part.iter()
            .map(|d| (d.seq, d.session_id.clone(), digest(d)))
            .collect()
    };
    std::thread::scope(|scope| {
        let parts: Vec<_> = decisions
            .chunks(chunk)
            .map(|part| scope.spawn(move || digest_all(part)))
            .collect();
        parts
            .into_iter()
            // A digesting thread cannot panic on a record (encoding failures give an empty
            // digest); should one, its part is digested again here rather than lost.
            .zip(decisions.chunks(chunk))
            .flat_map(|(part, records)| part.join().unwrap_or_else(|_| digest_all(records)))
            .collect()
    })
}

/// A record that cannot be encoded gets no digest, so it shows as altered.
fn digest(record: &impl Serialize) -> String {
    chain::digest(record).unwrap_or_default()
}
