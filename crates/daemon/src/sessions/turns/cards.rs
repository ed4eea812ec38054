//! Open permission cards of one session, waiting for the person's answer.
//!
//! Each card carries a fresh answer secret that only the client holding the turn's stream is
//! sent: a process the model started can read the open card from the ledger but cannot answer
//! it. An answer travels with a reply channel, so `AnswerCard` replies only once the turn has
//! made the answer (and its grant) durable.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use codaris_ledger::{CardAnswer, Ledger};
use tokio::sync::oneshot;

use crate::error::NotRecorded;
use crate::sessions::ids::{CardId, GrantId};
use crate::sessions::store::now_ms;

/// Random bytes in a card's answer secret (256 bits; the secret is their hex).
const SECRET_BYTES: usize = 32;

#[derive(Debug, Default)]
pub struct Cards {
    open: Mutex<HashMap<CardId, OpenCard>>,
}

#[derive(Debug)]
struct OpenCard {
    sender: oneshot::Sender<Answer>,
    /// Whether the card lists programs, so `AllowPrograms` can answer it.
    offers_programs: bool,
    secret: CardSecret,
}

/// A card's answer secret. Its `Debug` shows nothing, so no log line can carry it.
pub struct CardSecret(String);

impl std::fmt::Debug for CardSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CardSecret(..)")
    }
}

impl CardSecret {
    /// A fresh secret from the kernel's random source.
    pub(super) fn fresh() -> std::io::Result<CardSecret> {
        crate::secret::random_hex(SECRET_BYTES).map(CardSecret)
    }

    /// The same secret again, kept beside the open card or question while the original goes
    /// out on its event.
    pub(super) fn duplicate(&self) -> CardSecret {
        CardSecret(self.0.clone())
    }

    /// The secret as sent on the card event; the one place it leaves this module.
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// Compares in time independent of where the two differ, so the secret cannot be
    /// guessed digit by digit.
    pub(super) fn matches(&self, given: &str) -> bool {
        crate::secret::constant_time_eq(self.0.as_bytes(), given.as_bytes())
    }
}

/// What the turn did with an answer: the ids of the grants it recorded (none for an answer
/// that grants nothing), once they and the card's answer are durable.
pub type Recorded = Result<Vec<GrantId>, NotRecorded>;

/// The person's answer to a card, and where the turn reports what became of it.
#[derive(Debug)]
pub struct Answer {
    pub answer: CardAnswer,
    /// Who answered, as the client said (`acp:zed`); `None`: the turn's own client.
    pub by: Option<String>,
    pub reply: oneshot::Sender<Recorded>,
}

/// A card just opened: the secret its event carries, and where its answer arrives.
#[derive(Debug)]
pub struct Opened {
    pub secret: CardSecret,
    pub answer: oneshot::Receiver<Answer>,
}

/// What became of an answer.
#[derive(Debug)]
pub enum Delivery {
    /// The turn has it; the receiver says once it is durable (or dropped: the turn went away).
    Delivered(oneshot::Receiver<Recorded>),
    /// The card is not open: answered already, lapsed, or unknown.
    NotOpen,
    /// The answer did not carry the card's secret; the card stays open.
    WrongSecret,
    /// `AllowPrograms` for a card that lists no programs; the card stays open.
    NoPrograms,
}

impl Cards {
    /// Opens a card with a fresh secret; the receiver gets the first answer carrying it.
    pub fn open(&self, id: &CardId, offers_programs: bool) -> std::io::Result<Opened> {
        let secret = CardSecret::fresh()?;
        let (sender, receiver) = oneshot::channel();
        let card = OpenCard {
            sender,
            offers_programs,
            secret: CardSecret(secret.0.clone()),
        };
        self.lock().insert(id.clone(), card);
        Ok(Opened {
            secret,
            answer: receiver,
        })
    }

    /// Delivers an answer to an open card, if `secret` is the card's. `id` is as the client
    /// sent it: no card of this session may have it.
    pub fn answer(&self, id: &str, secret: &str, answer: CardAnswer) -> Delivery {
        self.answer_by(id, secret, answer, None)
    }

    /// [`Cards::answer`], saying who answered (recorded with the answer).
    pub fn answer_by(
        &self,
        id: &str,
        secret: &str,
        answer: CardAnswer,
        by: Option<String>,
    ) -> Delivery {
        let mut open = self.lock();
        let Some(card) = open.get(id) else {
            return Delivery::NotOpen;
        };
        // The secret first: without it nothing about the card is told.
        if !card.secret.matches(secret) {
            return Delivery::WrongSecret;
        }
        if answer == CardAnswer::AllowPrograms && !card.offers_programs {
            return Delivery::NoPrograms;
        }
        let Some(card) = open.remove(id) else {
            return Delivery::NotOpen;
        };
        let (reply, recorded) = oneshot::channel();
        match card.sender.send(Answer { answer, by, reply }) {
            Ok(()) => Delivery::Delivered(recorded),
            // The turn stopped waiting (it lapsed or ended) a moment ago.
            Err(_) => Delivery::NotOpen,
        }
    }

    /// Forgets a card that lapsed.
    pub fn forget(&self, id: &CardId) {
        self.lock().remove(id);
    }

    /// Closes every open card with `why`, recorded in the ledger; nothing is granted.
    pub fn close(&self, ledger: &Ledger, why: CardAnswer) {
        let open: Vec<CardId> = self.lock().drain().map(|(id, _)| id).collect();
        for id in open {
            if let Err(err) = ledger.answer_card(id.as_str(), why, Vec::new(), now_ms()) {
                tracing::warn!(card = %id, %err, "could not record a lapsed card");
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CardId, OpenCard>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// Answers `card` as a turn would: records nothing and replies with `grants`.
    async fn take(opened: Opened, grants: &[&str]) -> Option<CardAnswer> {
        let answer = opened.answer.await.ok()?;
        let _ = answer
            .reply
            .send(Ok(grants.iter().map(|g| GrantId::new(g)).collect()));
        Some(answer.answer)
    }

    fn delivered(delivery: Delivery) -> Option<oneshot::Receiver<Recorded>> {
        match delivery {
            Delivery::Delivered(receiver) => Some(receiver),
            _ => None,
        }
    }

    #[tokio::test]
    async fn the_first_answer_wins_and_a_lapsed_card_takes_none() -> TestResult {
        let cards = Cards::default();
        let opened = cards.open(&CardId::new("c1"), false)?;
        let secret = opened.secret.reveal().to_owned();
        let reply = delivered(cards.answer("c1", &secret, CardAnswer::AllowOnce))
            .ok_or("the answer was not delivered")?;
        assert!(
            matches!(
                cards.answer("c1", &secret, CardAnswer::Deny),
                Delivery::NotOpen
            ),
            "a second answer changes nothing"
        );
        assert_eq!(take(opened, &["g1"]).await, Some(CardAnswer::AllowOnce));
        assert_eq!(reply.await?.ok(), Some(vec![GrantId::new("g1")]));

        let lapsed = cards.open(&CardId::new("c2"), false)?;
        cards.forget(&CardId::new("c2"));
        let lapsed_secret = lapsed.secret.reveal();
        assert!(matches!(
            cards.answer("c2", lapsed_secret, CardAnswer::AllowSession),
            Delivery::NotOpen
        ));
        assert!(matches!(
            cards.answer("unknown", "", CardAnswer::AllowSession),
            Delivery::NotOpen
        ));
        Ok(())
    }

    #[tokio::test]
    async fn only_the_cards_own_secret_answers_it_and_a_wrong_one_leaves_it_open() -> TestResult {
        let cards = Cards::default();
        let opened = cards.open(&CardId::new("c1"), false)?;
        let other = cards.open(&CardId::new("c2"), false)?;
        let secret = opened.secret.reveal().to_owned();
        assert_eq!(secret.len(), 2 * SECRET_BYTES);
        assert!(secret.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(
            secret,
            other.secret.reveal(),
            "each card has its own secret"
        );
        let mut flipped = secret.clone().into_bytes();
        flipped[0] = if flipped[0] == b'0' { b'1' } else { b'0' };
        let flipped = String::from_utf8(flipped)?;
        for wrong in [
            "",
            other.secret.reveal(),
            &flipped,
            &secret[..secret.len() - 1],
            &format!("{secret}0"),
        ] {
            assert!(
                matches!(
                    cards.answer("c1", wrong, CardAnswer::AllowSession),
                    Delivery::WrongSecret
                ),
                "{wrong:?}"
            );
        }
        assert!(
            delivered(cards.answer("c1", &secret, CardAnswer::Deny)).is_some(),
            "still open for the right secret"
        );
        assert_eq!(take(opened, &[]).await, Some(CardAnswer::Deny));
        assert!(!format!("{:?}", other.secret).contains(other.secret.reveal()));
        Ok(())
    }

    #[tokio::test]
    async fn only_a_card_listing_programs_takes_a_program_wide_answer() -> TestResult {
        let cards = Cards::default();
        let plain = cards.open(&CardId::new("c1"), false)?;
        let secret = plain.secret.reveal().to_owned();
        assert!(matches!(
            cards.answer("c1", &secret, CardAnswer::AllowPrograms),
            Delivery::NoPrograms
        ));
        assert!(
            delivered(cards.answer("c1", &secret, CardAnswer::Deny)).is_some(),
            "still open"
        );
        assert_eq!(take(plain, &[]).await, Some(CardAnswer::Deny));

        let command = cards.open(&CardId::new("c2"), true)?;
        let secret = command.secret.reveal().to_owned();
        assert!(delivered(cards.answer("c2", &secret, CardAnswer::AllowPrograms)).is_some());
        assert_eq!(take(command, &[]).await, Some(CardAnswer::AllowPrograms));
        Ok(())
    }

    #[tokio::test]
    async fn a_turn_that_goes_away_leaves_the_answer_unrecorded() -> TestResult {
        let cards = Cards::default();
        let opened = cards.open(&CardId::new("c1"), false)?;
        let secret = opened.secret.reveal().to_owned();
        let reply = delivered(cards.answer("c1", &secret, CardAnswer::AllowSession))
            .ok_or("not delivered")?;
        // The turn takes the answer and is dropped before it records anything.
        drop(opened.answer.await?);
        assert!(reply.await.is_err(), "no reply means not accepted");
        Ok(())
    }
}
