//! Open permission cards of one session, waiting for the person's answer.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use codaris_ledger::{CardAnswer, Ledger};
use tokio::sync::oneshot;

use crate::sessions::now_ms;

#[derive(Debug, Default)]
pub struct Cards {
    open: Mutex<HashMap<String, oneshot::Sender<CardAnswer>>>,
}

impl Cards {
    /// Opens a card; the receiver gets the first answer.
    pub fn open(&self, id: &str) -> oneshot::Receiver<CardAnswer> {
        let (sender, receiver) = oneshot::channel();
        self.lock().insert(id.to_owned(), sender);
        receiver
    }

    /// Delivers an answer; `false` when the card is not open (answered, lapsed, unknown).
    pub fn answer(&self, id: &str, answer: CardAnswer) -> bool {
        match self.lock().remove(id) {
            Some(sender) => sender.send(answer).is_ok(),
            None => false,
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<CardAnswer>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_answer_wins_and_a_lapsed_card_takes_none() {
        let cards = Cards::default();
        let receiver = cards.open("c1");
        assert!(cards.answer("c1", CardAnswer::AllowOnce));
        assert!(
            !cards.answer("c1", CardAnswer::Deny),
            "a second answer changes nothing"
        );
        assert_eq!(receiver.await.ok(), Some(CardAnswer::AllowOnce));

        let _lapsed = cards.open("c2");
        cards.forget("c2");
        assert!(!cards.answer("c2", CardAnswer::AllowSession));
        assert!(!cards.answer("unknown", CardAnswer::AllowSession));
    }
}
