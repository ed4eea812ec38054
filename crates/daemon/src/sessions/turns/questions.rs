//! Open `question` calls of one session, waiting for the person's answers.
//!
//! The same discipline as permission cards ([`super::cards`]): each question event carries a
//! fresh answer secret ([`CardSecret`]) that only the client holding the turn's stream is sent,
//! compared in constant time; the first answer carrying it wins, and a wrong one leaves the
//! question open. An answer that does not fit the questions is refused and leaves it open too.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use codaris_tools::{BadReply, Questions, Reply};
use tokio::sync::oneshot;

use super::cards::CardSecret;

#[derive(Debug, Default)]
pub struct OpenQuestions {
    open: Mutex<HashMap<String, OpenQuestion>>,
    /// Numbers the session's question events (`q1`, `q2`, …).
    minted: AtomicU64,
}

#[derive(Debug)]
struct OpenQuestion {
    sender: oneshot::Sender<Vec<Reply>>,
    secret: CardSecret,
    asked: Questions,
}

/// A question event just opened: its id, the secret its event carries, and where the
/// answers (checked against the questions) arrive.
#[derive(Debug)]
pub struct Asked {
    pub id: String,
    pub secret: CardSecret,
    pub answers: oneshot::Receiver<Vec<Reply>>,
}

/// What became of an answer.
#[derive(Debug)]
pub enum Delivery {
    /// The turn has it.
    Delivered,
    /// Not open: answered already, timed out, its turn gone, or unknown.
    NotOpen,
    /// The answer did not carry the event's secret; the question stays open.
    WrongSecret,
    /// The answer does not fit the questions; the question stays open.
    Unfit(BadReply),
}

impl OpenQuestions {
    /// Opens `asked` with a fresh secret.
    pub fn open(&self, asked: &Questions) -> std::io::Result<Asked> {
        let secret = CardSecret::fresh()?;
        let id = format!("q{}", self.minted.fetch_add(1, Ordering::Relaxed) + 1);
        let (sender, answers) = oneshot::channel();
        self.lock().insert(
            id.clone(),
            OpenQuestion {
                sender,
                secret: secret.duplicate(),
                asked: asked.clone(),
            },
        );
        Ok(Asked {
            id,
            secret,
            answers,
        })
    }

    /// Delivers `given` (each answer's chosen labels and words of its own, as the client sent
    /// them) to the open question `id` if `secret` is its own and they fit.
    pub fn answer(&self, id: &str, secret: &str, given: Vec<(Vec<String>, String)>) -> Delivery {
        let mut open = self.lock();
        let Some(question) = open.get(id) else {
            return Delivery::NotOpen;
        };
        // The secret first: without it nothing about the question is told.
        if !question.secret.matches(secret) {
            return Delivery::WrongSecret;
        }
        let replies = given
            .into_iter()
            .enumerate()
            .map(|(i, (labels, custom))| Reply::of(i + 1, labels, custom))
            .collect::<Result<Vec<_>, _>>()
            .and_then(|replies| question.asked.accept(replies));
        let replies = match replies {
            Ok(replies) => replies,
            Err(bad) => return Delivery::Unfit(bad),
        };
        let Some(question) = open.remove(id) else {
            return Delivery::NotOpen;
        };
        match question.sender.send(replies) {
            Ok(()) => Delivery::Delivered,
            // The turn stopped waiting (timed out or ended) a moment ago.
            Err(_) => Delivery::NotOpen,
        }
    }

    /// Forgets a question that timed out.
    pub fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, OpenQuestion>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn asked() -> Result<Questions, codaris_tools::ToolError> {
        Questions::read(
            &json!({"questions": [{"question": "Which?", "options": [{"label": "a"}, {"label": "b"}]}]}),
        )
    }

    #[tokio::test]
    async fn only_its_secret_answers_once_and_an_unfit_answer_leaves_it_open() -> TestResult {
        let open = OpenQuestions::default();
        let question = open.open(&asked()?)?;
        let other = open.open(&asked()?)?;
        assert_ne!(question.id, other.id);
        let secret = question.secret.reveal().to_owned();
        let chose = |l: &str| vec![(vec![l.to_owned()], String::new())];
        assert!(matches!(
            open.answer(&question.id, other.secret.reveal(), chose("a")),
            Delivery::WrongSecret
        ));
        assert!(matches!(
            open.answer(&question.id, &secret, chose("c")),
            Delivery::Unfit(BadReply::UnknownLabel { .. })
        ));
        assert!(matches!(
            open.answer(&question.id, &secret, chose("b")),
            Delivery::Delivered
        ));
        assert!(matches!(
            open.answer(&question.id, &secret, chose("a")),
            Delivery::NotOpen
        ));
        assert_eq!(
            question.answers.await?,
            vec![Reply::Chosen(vec!["b".to_owned()])]
        );
        open.forget(&other.id);
        assert!(matches!(
            open.answer(&other.id, other.secret.reveal(), chose("a")),
            Delivery::NotOpen
        ));
        Ok(())
    }
}
