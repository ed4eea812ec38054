//! Asking the person during a turn: permission cards (shown, answered, recorded as grants before
//! the answer is accepted), capability requests, a call refused at its card, and `question`.

use codaris_agent::{
    CallRequest, CapabilityAnswer, CapabilityRequest, Decided, HostError, ToolRun,
};
use codaris_ledger::{CardAnswer, CardRecord};
use codaris_policy::{Capability, CapabilityName, Cover, Decision, Grant, Lifetime};
use codaris_proto::v1;

use super::super::card_text::{self, CardText};
use crate::calls::dispatch::{Pending, Permit};
use crate::error::NotRecorded;
use crate::server::convert::capability_wire;
use crate::sessions::ids::{CallId, CardId, GrantId};
use crate::sessions::store::now_ms;

use super::{Asked, DaemonHost};

/// Who a card is shown to (see [`DaemonHost::person`]).
struct Person {
    /// The session whose open cards hold it and whose answer grants.
    session: std::sync::Arc<super::super::session::Session>,
    /// That session's running turn's log, for a subagent's card; `None`: this turn's own.
    log: Option<std::sync::Arc<super::super::log::TurnLog>>,
    /// For a subagent's card: its session id and `agent: description`.
    child: Option<(String, String)>,
}

impl DaemonHost {
    /// The person refused this call alone at its card (Ctrl-C): the policy decides the call
    /// again with that answer as its input (`refused_at_card`), and the decision is recorded
    /// like any other, so the model reads only what the ledger holds and a replay decides it
    /// the same. No deny grant stands behind it: the next call that needs the same asks again.
    pub(super) async fn refused_at_card(
        &self,
        call: &CallRequest,
        asked: Decision,
    ) -> Result<Decided<Permit>, HostError> {
        // Every `ask` names its capability; one that did not stays the recorded refusal.
        let Some(capability) = asked.capability else {
            return Ok(Decided::Refused(asked));
        };
        let mut refused = call.clone();
        refused.task.refused_at_card = Some(capability);
        Ok(Decided::Refused(
            self.decide_once(&refused).await?.into_record().decision,
        ))
    }

    /// Sends a `question` event and waits, at most the card timeout, for the person's
    /// answers; what the model reads is the answers, that nobody answered in time, or (the
    /// turn or session went away, no secret could be made) that nobody could answer.
    pub(super) async fn ask_questions(
        &self,
        asked: &codaris_tools::Questions,
        call: &CallId,
    ) -> ToolRun {
        let opened = match self.session.questions.open(asked) {
            Ok(opened) => opened,
            Err(err) => {
                tracing::error!(%err, "no random source for a question's answer secret; nothing was asked");
                return ToolRun::ok(codaris_tools::Questions::nobody());
            }
        };
        self.send(v1::turn_event::Event::Question(v1::Question {
            id: opened.id.clone(),
            tool_call_id: call.to_string(),
            questions: asked.items.iter().map(question_wire).collect(),
            answer_secret: opened.secret.reveal().to_owned(),
        }));
        match tokio::time::timeout(self.turns.card_timeout, opened.answers).await {
            Ok(Ok(replies)) => ToolRun::ok(asked.answered(&replies)),
            Ok(Err(_)) => ToolRun::ok(codaris_tools::Questions::nobody()),
            Err(_) => {
                self.session.questions.forget(&opened.id);
                ToolRun::ok(codaris_tools::Questions::timed_out(
                    self.turns.card_timeout.as_secs(),
                ))
            }
        }
    }

    /// Shows a card and waits for its answer; a yes or a no is recorded as a grant, durably,
    /// before this returns, and only then is the answer's sender told it was accepted.
    /// `programs` are what a program-wide answer grants (empty: the card offers none).
    /// A capability a recorded deny of the session covers is refused at once, with no card.
    pub(super) async fn ask(
        &self,
        capability: Option<Capability>,
        programs: Vec<String>,
        text: CardText,
        tool_call_id: &CallId,
    ) -> Asked {
        if let Some(capability) = &capability
            && let Cover::Denied { .. } = self.cover(capability).await
        {
            return Asked::DeniedBefore;
        }
        if let Some(job) = self.job_run() {
            return self
                .answer_by_job_rule(capability, programs, text, &job)
                .await;
        }
        let Some(person) = self.person() else {
            // A background subagent whose family's person follows no turn: nobody could see
            // the card, so nothing is granted rather than a wait until the timeout.
            tracing::info!(session = %self.session_id(), "a subagent's card has no turn of its person's session to be shown on; nothing was granted");
            return Asked::Unanswered;
        };
        let ledger = self.turns.ledger.clone();
        let Ok(number) = ledger.next_id() else {
            return Asked::Unanswered;
        };
        let id = CardId::mint(number);
        let mut card = CardRecord::asked(
            id.to_string(),
            person.session.id().as_str().to_owned(),
            capability.clone(),
            text.recorded,
            programs.clone(),
            now_ms(),
        );
        card.raised_in = person.child.as_ref().map(|(child, _)| child.clone());
        let cards = &person.session.cards;
        let opened = match cards.open(&id, !programs.is_empty()) {
            Ok(opened) => opened,
            Err(err) => {
                tracing::error!(%err, "no random source for a card's answer secret; nothing was asked");
                return Asked::Unanswered;
            }
        };
        let stored = {
            let ledger = ledger.clone();
            tokio::task::spawn_blocking(move || ledger.append_card(&card)).await
        };
        if !matches!(stored, Ok(Ok(()))) {
            cards.forget(&id);
            return Asked::Unanswered;
        }
        let (raised_in, raised_in_agent) = person.child.clone().unwrap_or_default();
        let event = v1::turn_event::Event::Card(v1::Card {
            id: id.to_string(),
            capability: capability.as_ref().map(capability_wire),
            sentence: text.shown,
            tool_call_id: tool_call_id.to_string(),
            programs: programs.clone(),
            answer_secret: opened.secret.reveal().to_owned(),
            preview: text.preview,
            raised_in,
            raised_in_agent,
        });
        match &person.log {
            Some(log) => log.push(event),
            None => self.send(event),
        }
        let (answer, by, reply) =
            match tokio::time::timeout(self.turns.card_timeout, opened.answer).await {
                Ok(Ok(given)) => (given.answer, given.by, Some(given.reply)),
                Ok(Err(_)) => (CardAnswer::SessionEnded, None, None),
                Err(_) => {
                    cards.forget(&id);
                    (CardAnswer::TimedOut, None, None)
                }
            };
        let grants: Vec<Grant> = match (answer, capability) {
            (CardAnswer::AllowOnce, Some(c)) => {
                vec![Grant::new(c.name, c.path.as_deref(), Lifetime::Once)]
            }
            (CardAnswer::AllowSession, Some(c)) => {
                vec![Grant::new(c.name, c.path.as_deref(), Lifetime::Session)]
            }
            (CardAnswer::Deny, Some(c)) => {
                vec![Grant::new(c.name, c.path.as_deref(), Lifetime::Deny)]
            }
            (CardAnswer::AllowPrograms, _) => programs
                .iter()
                .map(|p| Grant::new(CapabilityName::RunProgram, Some(p), Lifetime::Session))
                .collect(),
            // This call only: the answer is recorded, nothing is granted, the next asks again.
            (CardAnswer::DenyOnce, _) => Vec::new(),
            _ => Vec::new(),
        };
        // The reply is sent from the blocking task itself, so a turn cancelled meanwhile
        // still tells the answer's sender what became of it.
        let recorded = tokio::task::spawn_blocking(move || {
            // One commit: the answer and its grants are durable together or not at all.
            let record = || {
                let recorded =
                    ledger.answer_card_by(id.as_str(), answer, grants, now_ms(), by.as_deref())?;
                let ids = recorded
                    .unwrap_or_default()
                    .into_iter()
                    .map(|g| GrantId::from(g.id))
                    .collect::<Vec<_>>();
                Ok::<_, codaris_ledger::LedgerError>(ids)
            };
            let outcome = record();
            if let Err(err) = &outcome {
                tracing::error!(%err, "recording a card's answer failed; nothing was granted");
            }
            let ok = outcome.is_ok();
            if let Some(reply) = reply {
                // An answer's sender that stopped waiting needs no reply.
                let _ = reply.send(outcome.map_err(NotRecorded::Ledger));
            }
            ok
        })
        .await;
        match recorded {
            Ok(true) if !matches!(answer, CardAnswer::TimedOut | CardAnswer::SessionEnded) => {
                Asked::Answered(answer)
            }
            Ok(_) => Asked::Unanswered,
            Err(err) => {
                tracing::error!(%err, "recording a card's answer failed; nothing was granted");
                Asked::Unanswered
            }
        }
    }

    /// The job this session is a run of (`user:nightly`), when it is one.
    fn job_run(&self) -> Option<String> {
        self.session.lineage()?;
        self.turns
            .sessions
            .get(self.session_id())
            .ok()
            .and_then(|record| record.child)
            .and_then(|child| child.job)
    }

    /// A scheduled job's run raised a card: nobody watches it, so the job's rule answers at
    /// once (deny, this call only) and the card and its answer are recorded under the run's
    /// session, as a person's would be, so the ledger shows what the run was refused.
    async fn answer_by_job_rule(
        &self,
        capability: Option<Capability>,
        programs: Vec<String>,
        text: CardText,
        job: &str,
    ) -> Asked {
        let ledger = self.turns.ledger.clone();
        let session = self.session_id().to_owned();
        let by = format!("scheduler: job {job}'s rule (deny)");
        let recorded = tokio::task::spawn_blocking(move || {
            let id = CardId::mint(ledger.next_id()?);
            let card = CardRecord::asked(
                id.to_string(),
                session,
                capability,
                text.recorded,
                programs,
                now_ms(),
            );
            ledger.append_card(&card)?;
            ledger.answer_card_by(
                id.as_str(),
                CardAnswer::DenyOnce,
                Vec::new(),
                now_ms(),
                Some(&by),
            )?;
            Ok::<_, codaris_ledger::LedgerError>(())
        })
        .await;
        match recorded {
            Ok(Ok(())) => {
                tracing::info!(session = %self.session_id(), %job, "a scheduled run's card was denied by its job's rule");
                Asked::Answered(CardAnswer::DenyOnce)
            }
            Ok(Err(err)) => {
                tracing::error!(%err, "recording a scheduled run's card failed; nothing was granted");
                Asked::Unanswered
            }
            Err(err) => {
                tracing::error!(%err, "recording a scheduled run's card failed; nothing was granted");
                Asked::Unanswered
            }
        }
    }

    /// Who is asked on a card: the session's own person, or for a subagent the person's
    /// session its family descends from, on that session's running turn (`None`: it runs
    /// none, so nobody could see the card).
    fn person(&self) -> Option<Person> {
        let Some(lineage) = self.session.lineage() else {
            return Some(Person {
                session: self.session.clone(),
                log: None,
                child: None,
            });
        };
        let root = self.turns.family.get()?.live(&lineage.root)?;
        let log = root.turn_log().filter(|log| !log.finished())?;
        let label = self
            .turns
            .sessions
            .get(self.session_id())
            .ok()
            .and_then(|record| record.child)
            .map(|child| format!("{}: {}", child.agent, child.description))
            .unwrap_or_default();
        Some(Person {
            session: root,
            log: Some(log),
            child: Some((self.session_id().to_owned(), label)),
        })
    }

    /// The session whose grants are in force for this session's calls: its own, or for a
    /// subagent the person's session its family descends from.
    fn grants_session(&self) -> String {
        self.session
            .lineage()
            .map_or_else(|| self.session_id().to_owned(), |l| l.root.clone())
    }

    /// What the session's recorded grants say about `capability` now.
    pub(super) async fn cover(&self, capability: &Capability) -> Cover {
        let ledger = self.turns.ledger.clone();
        let session = self.grants_session();
        let capability = capability.clone();
        let looked = tokio::task::spawn_blocking(move || {
            ledger
                .grant_view(&session)
                .map(|view| view.grant_set().covering(&capability))
        })
        .await;
        match looked {
            Ok(Ok(cover)) => cover,
            Ok(Err(err)) => {
                tracing::error!(%err, "reading the session's grants failed");
                Cover::None
            }
            Err(err) => {
                tracing::error!(%err, "reading the session's grants failed");
                Cover::None
            }
        }
    }

    /// A card for `request`, then what the grants in force say: an older refusal outweighs a
    /// yes, and a grant can cover nothing.
    pub(super) async fn ask_capability(&self, request: &CapabilityRequest) -> CapabilityAnswer {
        let capability = &request.capability;
        let sentence = request.sentence();
        let text = CardText {
            recorded: sentence.clone(),
            shown: sentence,
            preview: None,
        };
        let answer = match self
            .ask(
                Some(capability.clone()),
                Vec::new(),
                text,
                &CallId::new(&request.call_id),
            )
            .await
        {
            Asked::DeniedBefore => return CapabilityAnswer::Refused,
            Asked::Unanswered => return CapabilityAnswer::Unanswered,
            Asked::Answered(CardAnswer::DenyOnce) => return CapabilityAnswer::RefusedOnce,
            Asked::Answered(answer) => answer,
        };
        match (self.cover(capability).await, answer) {
            (Cover::Denied { .. }, _) => CapabilityAnswer::Refused,
            (Cover::Allowed { .. }, CardAnswer::AllowOnce) => CapabilityAnswer::GrantedOnce,
            (Cover::Allowed { .. }, _) => CapabilityAnswer::GrantedSession,
            (Cover::None, _) => CapabilityAnswer::NotCovered,
        }
    }
}

impl DaemonHost {
    /// The card for a call the policy asks about: the policy's sentence for the ledger, and
    /// for the person what the call would do, with its preview worked out in the fence the
    /// call would run in once the card's capability is granted. The error the call would fail
    /// with, for a tool that checks its arguments before a card.
    pub(super) async fn card_text(
        &self,
        call: &CallRequest,
        pending: &Pending,
    ) -> Result<CardText, ToolRun> {
        let decision = &pending.record.decision;
        let mut prepared = pending.prepared.clone();
        // A grant on a path outside the roots opens it for the call; the preview reads there too.
        let opened: Vec<String> = decision
            .capability
            .as_ref()
            .filter(|c| {
                matches!(
                    c.name,
                    CapabilityName::ReadOutsideFence | CapabilityName::MutateOutsideFence
                )
            })
            .and_then(|c| c.path.clone())
            .into_iter()
            .collect();
        let builtins = self.turns.builtins.clone();
        let (session, tool, args) = (
            self.session_id().to_owned(),
            call.tool.clone(),
            call.args.clone(),
        );
        let cwd = pending.record.request.task.cwd.clone();
        let preview = tokio::task::spawn_blocking(move || {
            let opened = prepared.open(&opened);
            builtins.preview(&session, &tool, &args, &prepared, &opened)
        })
        .await
        .unwrap_or_else(|err| {
            tracing::warn!(%err, "working out a card's preview failed; the card shows none");
            None
        })
        .transpose()?;
        // A launch on Platform shows the request it will send, body and digest.
        let preview = preview.or_else(|| {
            crate::mcp::launch::is_launch(&call.tool)
                .then(|| {
                    let url = self.turns.config.get().seqera.platform_url.clone();
                    codaris_seqera::launch::launch_preview(&url, &call.args)
                })
                .flatten()
                .map(|(text, action)| codaris_tools::preview::CallPreview {
                    kind: codaris_tools::preview::PreviewKind::Http,
                    text,
                    path: None,
                    action,
                })
        });
        Ok(CardText {
            recorded: decision.sentence.clone(),
            shown: card_text::person_sentence(
                call.tool.as_str(),
                decision.capability.as_ref(),
                decision.code,
                preview.as_ref(),
                &cwd,
            ),
            preview: preview.as_ref().map(card_text::preview_wire),
        })
    }
}

/// One question as the `question` event carries it.
fn question_wire(item: &codaris_tools::QuestionItem) -> v1::QuestionItem {
    v1::QuestionItem {
        header: item.header.clone(),
        question: item.question.clone(),
        options: item
            .options
            .iter()
            .map(|o| v1::QuestionOption {
                label: o.label.clone(),
                description: o.description.clone(),
            })
            .collect(),
        multiple: item.multiple,
        custom: item.custom,
    }
}
