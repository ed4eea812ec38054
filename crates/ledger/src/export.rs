//! The export format: JSON lines, one record each, read back by `codaris audit replay --from`.

use serde::{Deserialize, Serialize};

use crate::error::{Corrupt, LedgerError};
use crate::record::{CardRecord, DecisionRecord, GrantRecord};
use crate::store::{Ledger, decode_value};

/// One line of an export. `type` says which record it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExportLine {
    /// First line: what wrote the file.
    Header {
        format: String,
        schema: u32,
        policy_version: String,
    },
    Grant(GrantRecord),
    Card(CardRecord),
    Decision(Box<DecisionRecord>),
}

pub const FORMAT: &str = "codaris-ledger-export";

impl Ledger {
    /// Every record (of one session when given): the header, grants, cards, then decisions.
    pub fn export(
        &self,
        session_id: Option<&str>,
    ) -> Result<(Vec<ExportLine>, Vec<Corrupt>), LedgerError> {
        let mut lines = vec![ExportLine::Header {
            format: FORMAT.to_owned(),
            schema: crate::record::SCHEMA,
            policy_version: codaris_policy::POLICY_VERSION.to_owned(),
        }];
        let (grants, mut corrupt) = self.grants(session_id)?;
        lines.extend(grants.into_iter().map(ExportLine::Grant));
        let (cards, bad_cards) = self.cards(session_id)?;
        corrupt.extend(bad_cards);
        lines.extend(cards.into_iter().map(ExportLine::Card));
        let (decisions, bad_decisions) = self.decisions(session_id)?;
        corrupt.extend(bad_decisions);
        lines.extend(
            decisions
                .into_iter()
                .map(|d| ExportLine::Decision(Box::new(d))),
        );
        Ok((lines, corrupt))
    }
}

/// Reads an export; a line that does not decode is returned as corrupt, never dropped silently.
pub fn read_export(text: &str) -> (Vec<ExportLine>, Vec<Corrupt>) {
    let mut lines = Vec::new();
    let mut corrupt = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let place = format!("export line {}", number + 1);
        let value: Result<serde_json::Value, _> = serde_json::from_str(line);
        let parsed = match value {
            Ok(value) if value.get("type").and_then(|t| t.as_str()) == Some("header") => {
                serde_json::from_value(value).map_err(|e| Corrupt {
                    place: place.clone(),
                    key: String::new(),
                    reason: e.to_string(),
                })
            }
            Ok(_) => decode_value::<ExportLine>(&place, "", line.as_bytes()),
            Err(e) => Err(Corrupt {
                place: place.clone(),
                key: String::new(),
                reason: e.to_string(),
            }),
        };
        match parsed {
            Ok(record) => lines.push(record),
            Err(bad) => corrupt.push(bad),
        }
    }
    (lines, corrupt)
}
