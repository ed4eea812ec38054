//! The export format: JSON lines, one record each, read back by `codaris audit replay --from`.

use serde::{Deserialize, Serialize};

use crate::chain::Link;
use crate::error::{Corrupt, LedgerError};
use crate::record::{CardRecord, DecisionRecord, GrantRecord, GrantSetRecord};
use crate::store::{Ledger, decode_value};

/// One line of an export. `type` says which record it holds. Kinds are only ever added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExportLine {
    /// First line: what wrote the file.
    Header {
        format: String,
        schema: u32,
        policy_version: String,
        /// The one session the export was limited to: the chain's links of other sessions are
        /// there without their records.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
    },
    Grant(GrantRecord),
    Card(CardRecord),
    /// A decision as stored: the grants its `grant_set` names are in that set's line.
    Decision(Box<DecisionRecord>),
    /// The grants decisions saw, by id (schema 2).
    GrantSet(GrantSetRecord),
    /// An undo of a turn, with its decision.
    Undo(crate::undo::UndoRecord),
    /// A change of the configuration file.
    ConfigChange(crate::config_change::ConfigChangeRecord),
    /// The operator's approval of a scheduled project job.
    JobApproval(crate::job_approval::JobApprovalRecord),
    /// One link of the chain (every link, whatever session the export is limited to).
    Link(Link),
    /// A stored record that does not decode, carried so that an export never silently lacks
    /// it: replay reports it.
    Unreadable {
        place: String,
        #[serde(default)]
        key: String,
        reason: String,
        /// Its bytes, as text (invalid UTF-8 replaced).
        #[serde(default)]
        text: String,
    },
}

pub const FORMAT: &str = "codaris-ledger-export";

impl crate::record::Versioned for ExportLine {
    fn schema(&self) -> Option<u32> {
        match self {
            ExportLine::Grant(record) => Some(record.schema),
            ExportLine::Card(record) => Some(record.schema),
            ExportLine::Decision(record) => Some(record.schema),
            ExportLine::GrantSet(record) => Some(record.schema),
            ExportLine::Undo(record) => Some(record.schema),
            ExportLine::ConfigChange(record) => Some(record.schema),
            ExportLine::JobApproval(record) => Some(record.schema),
            ExportLine::Header { .. } | ExportLine::Link(_) | ExportLine::Unreadable { .. } => None,
        }
    }
}

impl Ledger {
    /// Every record (of one session when given): the header, grants, cards, grant sets,
    /// decisions as stored, the chain's links, then the records that do not decode as
    /// `unreadable` lines.
    ///
    /// Unreadable records travel inside the export, so it can always be written and replay
    /// reports them; the second value is kept for callers of the earlier shape and is empty.
    pub fn export(
        &self,
        session_id: Option<&str>,
    ) -> Result<(Vec<ExportLine>, Vec<Corrupt>), LedgerError> {
        let mut lines = vec![ExportLine::Header {
            format: FORMAT.to_owned(),
            schema: crate::record::SCHEMA,
            policy_version: codaris_policy::POLICY_VERSION.to_owned(),
            session_id: session_id.map(str::to_owned),
        }];
        let (grants, mut corrupt) = self.grants(session_id)?;
        lines.extend(grants.into_iter().map(ExportLine::Grant));
        let (cards, bad_cards) = self.cards(session_id)?;
        corrupt.extend(bad_cards);
        lines.extend(cards.into_iter().map(ExportLine::Card));
        let (sets, bad_sets) = self.grant_sets(session_id)?;
        corrupt.extend(bad_sets);
        lines.extend(sets.into_iter().map(ExportLine::GrantSet));
        let (undos, bad_undos) = self.undos(session_id)?;
        corrupt.extend(bad_undos);
        lines.extend(undos.into_iter().map(ExportLine::Undo));
        let (changes, bad_changes) = self.config_changes(session_id)?;
        corrupt.extend(bad_changes);
        lines.extend(changes.into_iter().map(ExportLine::ConfigChange));
        let (approvals, bad_approvals) = self.job_approvals(session_id)?;
        corrupt.extend(bad_approvals);
        lines.extend(approvals.into_iter().map(ExportLine::JobApproval));
        let (decisions, bad_decisions) = self.stored_decisions(session_id)?;
        corrupt.extend(bad_decisions);
        lines.extend(
            decisions
                .into_iter()
                .map(|d| ExportLine::Decision(Box::new(d))),
        );
        let (links, bad_links) = self.links()?;
        corrupt.extend(bad_links);
        lines.extend(links.into_iter().map(ExportLine::Link));
        // Journal lines that did not decode are listed by both `grants` and `decisions`.
        let raw = self.unreadable_bytes()?;
        let mut seen = std::collections::HashSet::new();
        for bad in corrupt {
            if !seen.insert((bad.place.clone(), bad.key.clone())) {
                continue;
            }
            let text = raw
                .iter()
                .find(|(place, _)| *place == bad.place)
                .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
                .unwrap_or_default();
            lines.push(ExportLine::Unreadable {
                place: bad.place,
                key: bad.key,
                reason: bad.reason,
                text,
            });
        }
        Ok((lines, Vec::new()))
    }
}

/// The `type` member of an export line.
#[derive(Deserialize)]
struct LineType<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
}

/// Reads an export; a line that does not decode is returned as corrupt, never dropped silently,
/// and so is an `unreadable` line the export carried.
pub fn read_export(text: &str) -> (Vec<ExportLine>, Vec<Corrupt>) {
    let mut lines = Vec::new();
    let mut corrupt = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let place = format!("export line {}", number + 1);
        let bad = |reason: String| Corrupt {
            place: place.clone(),
            key: String::new(),
            reason,
        };
        // The line's `type` first (the rest skipped unread), then the line straight into its
        // type, with no `serde_json::Value` in between.
        let kind: Result<LineType, _> = serde_json::from_str(line);
        let parsed = match kind.as_ref().map(|k| k.kind.as_deref()) {
            // These carry no record, so no `schema` of their own.
            Ok(Some("header" | "link" | "unreadable")) => {
                serde_json::from_str(line).map_err(|e| bad(e.to_string()))
            }
            Ok(_) => decode_value::<ExportLine>(&place, "", line.as_bytes()),
            Err(e) => Err(bad(e.to_string())),
        };
        match parsed {
            Ok(ExportLine::Unreadable {
                place: was,
                key,
                reason,
                ..
            }) => corrupt.push(Corrupt {
                place: was,
                key,
                reason: format!("{reason} ({place})"),
            }),
            Ok(record) => lines.push(record),
            Err(bad) => corrupt.push(bad),
        }
    }
    (lines, corrupt)
}
