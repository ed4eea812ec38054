//! Permission cards: asked, answered (with the grants the answer gives, in one commit) and
//! listed.

use std::sync::PoisonError;

use codaris_policy::Grant;

use super::{Ledger, Pending, SCHEMA, decode};
use crate::chain::RecordKind;
use crate::error::{Corrupt, LedgerError};
use crate::record::{Backing, CardAnswer, CardRecord, GrantRecord};

impl Ledger {
    /// Records a card as asked, durably.
    pub fn append_card(&self, card: &CardRecord) -> Result<(), LedgerError> {
        self.commit(Pending::new(
            RecordKind::Card,
            card.id.as_bytes(),
            card.id.clone(),
            card,
        )?)
    }

    /// Records how a card was answered together with the grants the answer gave (none for a
    /// refusal the policy needs no grant for, a lapse, a session's end), in one commit: both
    /// become durable or neither does, so a disk that fills between them can leave no grant
    /// whose card was never answered. The first answer wins: `None` when the card is unknown or
    /// already answered. Each grant is backed by the card, which names the first.
    pub fn answer_card(
        &self,
        card_id: &str,
        answer: CardAnswer,
        grants: Vec<Grant>,
        at_ms: u64,
    ) -> Result<Option<Vec<GrantRecord>>, LedgerError> {
        self.answer_card_by(card_id, answer, grants, at_ms, None)
    }

    /// [`Ledger::answer_card`], recording who answered (`acp:zed`) with the answer.
    pub fn answer_card_by(
        &self,
        card_id: &str,
        answer: CardAnswer,
        grants: Vec<Grant>,
        at_ms: u64,
        answered_by: Option<&str>,
    ) -> Result<Option<Vec<GrantRecord>>, LedgerError> {
        let order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(current) = self.cards.get(card_id.as_bytes())? else {
            return Ok(None);
        };
        let card: CardRecord = decode("cards", card_id, &current)?;
        if card.answer.is_some() {
            return Ok(None);
        }
        let mut records = Vec::with_capacity(grants.len());
        let mut pendings = Vec::with_capacity(grants.len() + 1);
        for grant in grants {
            let id = format!("g{:012}", self.next_id()?);
            let record = GrantRecord {
                schema: SCHEMA,
                id: id.clone(),
                session_id: card.session_id.clone(),
                grant: grant.with_id(&id),
                granted_at_ms: at_ms,
                card_id: Some(card_id.to_owned()),
                backing: Some(Backing::Card {
                    card_id: card_id.to_owned(),
                }),
                consumed_at_ms: None,
                revoked_at_ms: None,
            };
            pendings.push(Pending::new(
                RecordKind::Grant,
                id.as_bytes(),
                id.clone(),
                &record,
            )?);
            records.push(record);
        }
        let answered = CardRecord {
            answer: Some(answer),
            answered_at_ms: Some(at_ms),
            grant_id: records.first().map(|r| r.id.clone()),
            answered_by: answered_by.map(str::to_owned),
            ..card
        };
        let mut update = Pending::new(
            RecordKind::Card,
            card_id.as_bytes(),
            card_id.to_owned(),
            &answered,
        )?;
        let swapped = self.cards.compare_and_swap(
            card_id.as_bytes(),
            Some(&current),
            Some(update.value.as_slice()),
        )?;
        if swapped.is_err() {
            return Ok(None);
        }
        update.replaced = Some(current);
        // The answer after its grants: the chain reads question, grants, answer.
        pendings.push(update);
        let ticket = self.commit.submit(pendings);
        drop(order);
        self.wait(ticket)?;
        for record in &records {
            self.cache_added(record, crate::backing::stands(record, Some(&answered)));
        }
        self.cache_card_answered(&answered);
        Ok(Some(records))
    }

    /// Cards oldest first (of one session when given).
    pub fn cards(
        &self,
        session_id: Option<&str>,
    ) -> Result<(Vec<CardRecord>, Vec<Corrupt>), LedgerError> {
        self.scan_session(&self.cards, "cards", session_id)
    }
}
