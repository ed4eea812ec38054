//! Open permission cards of one session, waiting for the person's answer.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use codaris_ledger::{CardAnswer, Ledger};
use tokio::sync::oneshot;

use crate::sessions::now_ms;

#[derive(Debug, Default)]
pub struct Cards {
    open: Mutex<HashMap<String, OpenCard>>,
}

#[derive(Debug)]
struct OpenCard {
    sender: oneshot::Sender<CardAnswer>,
    /// Whether the card lists programs, so `AllowPrograms` can answer it.
    offers_programs: bool,
}

/// What became of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Delivered,
    /// The card is not open: answered already, lapsed, or unknown.
    NotOpen,
    /// `AllowPrograms` for a card that lists no programs; the card stays open.
    NoPrograms,
}

impl Cards {
    /// Opens a card; the receiver gets the first answer.
    pub fn open(&self, id: &str, offers_programs: bool) -> oneshot::Receiver<CardAnswer> {
        let (sender, receiver) = oneshot::channel();
        let card = OpenCard {
            sender,
            offers_programs,
        };
        self.lock().insert(id.to_owned(), card);
        receiver
    }

    /// Delivers an answer to an open card.
    pub fn answer(&self, id: &str, answer: CardAnswer) -> Delivery {
        let mut open = self.lock();
        if answer == CardAnswer::AllowPrograms
            && open.get(id).is_some_and(|card| !card.offers_programs)
        {
            return Delivery::NoPrograms;
        }
        match open.remove(id).map(|card| card.sender.send(answer)) {
            Some(Ok(())) => Delivery::Delivered,
            _ => Delivery::NotOpen,
        }
    }

    /// Forgets a card that lapsed.
    pub fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Closes every open card with `why`, recorded in the ledger; nothing is granted.
    pub fn close(&self, ledger: &Ledger, why: CardAnswer) {
        let open: Vec<String> = self.lock().drain().map(|(id, _)| id).collect();
        for id in open {
            if let Err(err) = ledger.answer_card(&id, why, None, now_ms()) {
                tracing::warn!(card = %id, %err, "could not record a lapsed card");
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, OpenCard>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_answer_wins_and_a_lapsed_card_takes_none() {
        let cards = Cards::default();
        let receiver = cards.open("c1", false);
        assert_eq!(
            cards.answer("c1", CardAnswer::AllowOnce),
            Delivery::Delivered
        );
        assert_eq!(
            cards.answer("c1", CardAnswer::Deny),
            Delivery::NotOpen,
            "a second answer changes nothing"
        );
        assert_eq!(receiver.await.ok(), Some(CardAnswer::AllowOnce));

        let _lapsed = cards.open("c2", false);
        cards.forget("c2");
        assert_eq!(
            cards.answer("c2", CardAnswer::AllowSession),
            Delivery::NotOpen
        );
        assert_eq!(
            cards.answer("unknown", CardAnswer::AllowSession),
            Delivery::NotOpen
        );
    }

    #[tokio::test]
    async fn only_a_card_listing_programs_takes_a_program_wide_answer() {
        let cards = Cards::default();
        let plain = cards.open("c1", false);
        assert_eq!(
            cards.answer("c1", CardAnswer::AllowPrograms),
            Delivery::NoPrograms
        );
        assert_eq!(
            cards.answer("c1", CardAnswer::Deny),
            Delivery::Delivered,
            "still open"
        );
        assert_eq!(plain.await.ok(), Some(CardAnswer::Deny));

        let command = cards.open("c2", true);
        assert_eq!(
            cards.answer("c2", CardAnswer::AllowPrograms),
            Delivery::Delivered
        );
        assert_eq!(command.await.ok(), Some(CardAnswer::AllowPrograms));
    }
}
