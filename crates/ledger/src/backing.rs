//! What backs each grant: every grant record must stand on a card a person answered with that
//! grant, and every grant a decision relied on must be such a record or an entry of a
//! configured allowlist. Anything else is reported (see [`GrantFinding`]).

use std::collections::HashMap;

use codaris_policy::{CapabilityName, Grant, Lifetime};
use serde::Serialize;

use crate::chain::{Link, RecordKind};
use crate::record::{
    Backing, COMMAND_ALLOWLIST, CardAnswer, CardRecord, DecisionRecord, GrantRecord, HTTP_ALLOWLIST,
};

/// Why a grant is not backed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantProblem {
    /// A decision relied on a grant without an id.
    NoId,
    /// A decision relied on a grant whose record is not in the ledger.
    NoRecord,
    /// A decision relied on a grant that is not what its record holds (capability, path,
    /// lifetime or session), or a record's grant carries another id.
    DiffersFromRecord,
    /// A grant record that names nothing backing it (written before grants named their
    /// backing, or forged).
    NoBacking,
    /// The card the grant names is not in the ledger.
    CardMissing,
    /// The card belongs to another session.
    CardOtherSession,
    /// The card was never answered.
    CardUnanswered,
    /// The card's answer does not give this grant (another capability, path or lifetime, or
    /// an answer that grants nothing).
    AnswerMismatch,
    /// The card names another grant as what its answer granted.
    CardNamesOtherGrant,
    /// The grant entered the chain before its card was asked, or after it was answered.
    OutOfOrder,
    /// A stored grant record that claims an allowlist: allowlist grants are never stored,
    /// they travel in each decision's request.
    AllowlistRecord,
    /// A standing grant whose id names no allowlist Codaris has, or whose capability, target or
    /// lifetime its entry does not give.
    AllowlistMismatch,
}

/// A grant nothing backs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantFinding {
    pub problem: GrantProblem,
    /// The grant's id (empty when it had none).
    pub grant_id: String,
    pub session_id: String,
    /// The decision that relied on it, for a finding about a decision's grant.
    pub decision_seq: Option<u64>,
    /// One sentence.
    pub detail: String,
}

impl std::fmt::Display for GrantFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "grant `{}` (session `{}`)",
            self.grant_id, self.session_id
        )?;
        if let Some(seq) = self.decision_seq {
            write!(f, " relied on by decision #{seq}")?;
        }
        write!(f, ": {}", self.detail)
    }
}

/// Checks every grant record's backing, and every grant a decision relied on.
pub fn check(
    grants: &[GrantRecord],
    cards: &[CardRecord],
    decisions: &[DecisionRecord],
    links: &[Link],
) -> Vec<GrantFinding> {
    let places = links.iter().map(|l| (l.kind, l.key.as_str(), l.seq));
    let check = BackingCheck::new(grants, cards, places);
    let mut findings = check.records();
    for decision in decisions {
        check.decision(
            decision,
            |index| decision.request.grants.get(index),
            &mut findings,
        );
    }
    findings
}

/// [`check`] in parts: the grant records first, then each decision as it comes (a ledger's
/// whole audit reads them in batches, and checks them in parallel).
pub(crate) struct BackingCheck<'a> {
    grants: &'a [GrantRecord],
    by_id: HashMap<&'a str, &'a GrantRecord>,
    cards: HashMap<&'a str, &'a CardRecord>,
    order: ChainOrder<'a>,
}

impl<'a> BackingCheck<'a> {
    /// `links`: each link's record kind, key and number, in any order.
    pub(crate) fn new(
        grants: &'a [GrantRecord],
        cards: &'a [CardRecord],
        links: impl IntoIterator<Item = (RecordKind, &'a str, u64)>,
    ) -> BackingCheck<'a> {
        let by_id = grants.iter().map(|g| (g.id.as_str(), g)).collect();
        let cards = cards.iter().map(|c| (c.id.as_str(), c)).collect();
        let mut first: HashMap<(RecordKind, &str), u64> = HashMap::new();
        let mut last: HashMap<(RecordKind, &str), u64> = HashMap::new();
        // Only grants' and cards' places are asked for: a decision's links are most of the
        // chain, and left out.
        for (kind, key, seq) in links {
            if kind == RecordKind::Decision {
                continue;
            }
            let seen = first.entry((kind, key)).or_insert(seq);
            *seen = (*seen).min(seq);
            let seen = last.entry((kind, key)).or_insert(seq);
            *seen = (*seen).max(seq);
        }
        BackingCheck {
            grants,
            by_id,
            cards,
            order: ChainOrder { first, last },
        }
    }

    /// What backs each grant record.
    pub(crate) fn records(&self) -> Vec<GrantFinding> {
        let mut findings = Vec::new();
        for record in self.grants {
            if let Err((problem, detail)) =
                record_backed(record, &self.cards, &self.by_id, &self.order)
            {
                findings.push(GrantFinding {
                    problem,
                    grant_id: record.id.clone(),
                    session_id: record.session_id.clone(),
                    decision_seq: None,
                    detail,
                });
            }
        }
        findings
    }

    /// What backs each grant `decision` relied on; `grant_at` gives the grants of its request
    /// as `evaluate` saw them, by index.
    pub(crate) fn decision<'g>(
        &self,
        decision: &DecisionRecord,
        grant_at: impl Fn(usize) -> Option<&'g Grant>,
        findings: &mut Vec<GrantFinding>,
    ) {
        for used in &decision.decision.used_grants {
            let grant = grant_at(used.index);
            let id = used
                .id
                .clone()
                .or_else(|| grant.and_then(|g| g.id.clone()))
                .unwrap_or_default();
            if let Err((problem, detail)) =
                relied_on_backed(&id, grant, decision.grants_session(), &self.by_id)
            {
                findings.push(GrantFinding {
                    problem,
                    grant_id: id,
                    session_id: decision.session_id.clone(),
                    decision_seq: Some(decision.seq),
                    detail,
                });
            }
        }
    }
}

/// Whether a grant record stands on the card it names: the card is in the ledger, belongs to
/// the same session, was answered, the answer gives exactly this grant, and (but for a
/// program-wide answer, which names its first grant) names this grant. A grant that does not
/// stand grants nothing: one whose card's answer never became durable (a disk that filled
/// between the two writes), or one written into the ledger behind the daemon's back.
pub fn stands(record: &GrantRecord, card: Option<&CardRecord>) -> bool {
    // The first grant a program-wide answer names is taken on trust here: `audit` checks it.
    card_backs(record, card, |_| true).is_ok()
}

/// The first and last chain position of each record.
struct ChainOrder<'a> {
    first: HashMap<(RecordKind, &'a str), u64>,
    last: HashMap<(RecordKind, &'a str), u64>,
}

type Problem = (GrantProblem, String);

fn record_backed(
    record: &GrantRecord,
    cards: &HashMap<&str, &CardRecord>,
    grants: &HashMap<&str, &GrantRecord>,
    order: &ChainOrder<'_>,
) -> Result<(), Problem> {
    if record.grant.id.as_deref() != Some(record.id.as_str()) {
        return Err((
            GrantProblem::DiffersFromRecord,
            format!(
                "the record's grant carries the id `{}`",
                record.grant.id.as_deref().unwrap_or("")
            ),
        ));
    }
    let card = match &record.backing {
        Some(Backing::Card { card_id }) => cards.get(card_id.as_str()).copied(),
        _ => None,
    };
    let card_id = card_backs(record, card, |named| {
        grants
            .get(named)
            .is_some_and(|g| g.backing == record.backing)
    })?;
    // The daemon records the card, then the grant, then the card's answer.
    let grant_at = order.first.get(&(RecordKind::Grant, record.id.as_str()));
    let asked_at = order.first.get(&(RecordKind::Card, card_id));
    let answered_at = order.last.get(&(RecordKind::Card, card_id));
    if let (Some(grant_at), Some(asked_at), Some(answered_at)) = (grant_at, asked_at, answered_at)
        && !(asked_at < grant_at && grant_at < answered_at)
    {
        return Err((
            GrantProblem::OutOfOrder,
            format!(
                "it entered the chain at link {grant_at}, outside its card `{card_id}`'s question (link {asked_at}) and answer (link {answered_at})"
            ),
        ));
    }
    Ok(())
}

/// What a grant record's card must say for the record to stand on it: the record names a
/// card (not nothing, not an allowlist), `card` is that card, of the same session, answered,
/// its answer gives exactly this grant, and it names this grant (a program-wide answer names
/// its first grant, which `first_on_card` must accept). The card's id, when it does.
fn card_backs<'r>(
    record: &'r GrantRecord,
    card: Option<&CardRecord>,
    first_on_card: impl Fn(&str) -> bool,
) -> Result<&'r str, Problem> {
    let card_id = match &record.backing {
        None => {
            let legacy = record
                .card_id
                .as_ref()
                .map(|c| format!(" (it names card `{c}` the old way)"))
                .unwrap_or_default();
            return Err((
                GrantProblem::NoBacking,
                format!("the record names nothing that backs it{legacy}; it is not trusted"),
            ));
        }
        Some(backing @ Backing::Allowlist { .. }) => {
            return Err((
                GrantProblem::AllowlistRecord,
                format!("a stored grant claims {backing}, but allowlist grants are never stored"),
            ));
        }
        Some(Backing::Card { card_id }) => card_id,
    };
    let Some(card) = card.filter(|c| c.id == *card_id) else {
        return Err((
            GrantProblem::CardMissing,
            format!("it names card `{card_id}`, which is not in the ledger"),
        ));
    };
    if card.session_id != record.session_id {
        return Err((
            GrantProblem::CardOtherSession,
            format!(
                "its card `{card_id}` belongs to session `{}`",
                card.session_id
            ),
        ));
    }
    let Some(answer) = card.answer else {
        return Err((
            GrantProblem::CardUnanswered,
            format!("its card `{card_id}` was never answered"),
        ));
    };
    answer_gives(answer, card, &record.grant)?;
    let named = card.grant_id.as_deref();
    let names_this = match answer {
        // A program-wide answer grants one grant per program; the card names the first, and
        // that one must stand on this card too.
        CardAnswer::AllowPrograms => named.is_some_and(&first_on_card),
        _ => named == Some(record.id.as_str()),
    };
    if !names_this {
        return Err((
            GrantProblem::CardNamesOtherGrant,
            format!(
                "its card `{card_id}` names `{}` as what it granted",
                named.unwrap_or("nothing")
            ),
        ));
    }
    Ok(card_id)
}

/// Whether the card's answer gives exactly this grant.
fn answer_gives(answer: CardAnswer, card: &CardRecord, grant: &Grant) -> Result<(), Problem> {
    let lifetime = match answer {
        CardAnswer::AllowOnce => Lifetime::Once,
        CardAnswer::AllowSession => Lifetime::Session,
        CardAnswer::Deny => Lifetime::Deny,
        CardAnswer::AllowPrograms => {
            let offered = grant
                .path
                .as_ref()
                .is_some_and(|program| card.programs.contains(program));
            if grant.capability == CapabilityName::RunProgram
                && grant.lifetime == Lifetime::Session
                && offered
            {
                return Ok(());
            }
            return Err((
                GrantProblem::AnswerMismatch,
                format!(
                    "its card `{}` was answered `allow_programs`, which grants `run_program` for the session on the programs it offered ({}) only",
                    card.id,
                    if card.programs.is_empty() {
                        "none".to_owned()
                    } else {
                        card.programs.join(", ")
                    }
                ),
            ));
        }
        CardAnswer::DenyOnce | CardAnswer::TimedOut | CardAnswer::SessionEnded => {
            return Err((
                GrantProblem::AnswerMismatch,
                format!(
                    "its card `{}` ended `{}`, which grants nothing",
                    card.id,
                    answer_name(answer)
                ),
            ));
        }
    };
    let asked = card.capability.as_ref();
    let matches = asked.is_some_and(|c| c.name == grant.capability && c.path == grant.path)
        && grant.lifetime == lifetime;
    if matches {
        return Ok(());
    }
    Err((
        GrantProblem::AnswerMismatch,
        format!(
            "its card `{}` asked for {} and was answered `{}`; the grant is `{}` on `{}` ({:?})",
            card.id,
            asked.map_or_else(
                || "nothing".to_owned(),
                |c| format!("`{}` on `{}`", c.name, c.path.as_deref().unwrap_or(""))
            ),
            answer_name(answer),
            grant.capability,
            grant.path.as_deref().unwrap_or(""),
            grant.lifetime,
        ),
    ))
}

fn answer_name(answer: CardAnswer) -> String {
    serde_json::to_value(answer)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Whether a grant a decision relied on is a ledger grant as recorded, or a standing grant.
fn relied_on_backed(
    id: &str,
    grant: Option<&Grant>,
    session_id: &str,
    grants: &HashMap<&str, &GrantRecord>,
) -> Result<(), Problem> {
    let Some(grant) = grant else {
        return Err((
            GrantProblem::DiffersFromRecord,
            "the decision names a grant its request does not hold".to_owned(),
        ));
    };
    if id.is_empty() {
        return Err((
            GrantProblem::NoId,
            "the grant has no id, so nothing in the ledger backs it".to_owned(),
        ));
    }
    if let Some(Backing::Allowlist { key, entry }) = Backing::of_standing_id(id) {
        return standing_backed(&key, &entry, grant);
    }
    let Some(record) = grants.get(id) else {
        return Err((
            GrantProblem::NoRecord,
            "no grant record has this id".to_owned(),
        ));
    };
    let same = record.grant.capability == grant.capability
        && record.grant.path == grant.path
        && record.grant.lifetime == grant.lifetime
        && record.session_id == session_id;
    if same {
        return Ok(());
    }
    Err((
        GrantProblem::DiffersFromRecord,
        format!(
            "the decision saw `{}` on `{}` ({:?}); the record holds `{}` on `{}` ({:?}) in session `{}`",
            grant.capability,
            grant.path.as_deref().unwrap_or(""),
            grant.lifetime,
            record.grant.capability,
            record.grant.path.as_deref().unwrap_or(""),
            record.grant.lifetime,
            record.session_id,
        ),
    ))
}

/// A standing grant must be what its allowlist entry gives: `send_http` on the entry's origin,
/// or `run_program` on the entry, for the session. An id of the older shape names no entry.
fn standing_backed(key: &str, entry: &str, grant: &Grant) -> Result<(), Problem> {
    let (capability, target) = match key {
        HTTP_ALLOWLIST => (CapabilityName::SendHttp, codaris_policy::http_origin(entry)),
        COMMAND_ALLOWLIST => (CapabilityName::RunProgram, entry.to_owned()),
        _ => {
            return Err((
                GrantProblem::AllowlistMismatch,
                format!("it claims `{key}`, which is no allowlist Codaris has"),
            ));
        }
    };
    let target_matches = entry.is_empty() || grant.path.as_deref() == Some(target.as_str());
    if grant.capability == capability && grant.lifetime == Lifetime::Session && target_matches {
        return Ok(());
    }
    Err((
        GrantProblem::AllowlistMismatch,
        format!(
            "`{key}` entry `{entry}` gives `{capability}` on `{target}` for the session, not `{}` on `{}` ({:?})",
            grant.capability,
            grant.path.as_deref().unwrap_or(""),
            grant.lifetime,
        ),
    ))
}
