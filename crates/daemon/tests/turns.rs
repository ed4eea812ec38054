//! Turns over the API in-process: cards answered from the right session only, and cancellation.

use codaris_proto::v1;
use pretty_assertions::assert_eq;
use tonic::Code;

use crate::support::InProcess;

const ASKS: &str = r#"{"turns": [{"rounds": [
    {"tool_calls": [{"name": "request_capability",
                     "args": {"capability": "mutate_outside_fence", "path": "/tmp/out", "reason": "save the report"}}]},
    {"text": "done"}
]}]}"#;

async fn session_with_script(
    daemon: &InProcess,
    sessions: &mut v1::sessions_client::SessionsClient<tonic::transport::Channel>,
) -> String {
    let script = daemon.temp.path().join("script.json");
    std::fs::write(&script, ASKS).unwrap();
    sessions
        .create_session(v1::CreateSessionRequest {
            script: script.display().to_string(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id
}

/// Reads events until a card arrives; returns its id.
async fn next_card(stream: &mut tonic::Streaming<v1::TurnEvent>) -> String {
    while let Some(event) = stream.message().await.unwrap() {
        if let Some(v1::turn_event::Event::Card(card)) = event.event {
            return card.id;
        }
    }
    String::new()
}

#[tokio::test]
async fn a_card_is_answered_only_from_its_own_session_and_only_once() {
    let daemon = InProcess::start().await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = session_with_script(&daemon, &mut sessions).await;
    let other = session_with_script(&daemon, &mut sessions).await;
    let mut stream = sessions
        .turn(v1::TurnRequest {
            session_id: id.clone(),
            text: "write the report".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    let card = next_card(&mut stream).await;
    assert!(!card.is_empty());

    let answer = |session: &str, answer: v1::CardAnswer| v1::AnswerCardRequest {
        session_id: session.to_owned(),
        card_id: card.clone(),
        answer: answer.into(),
    };
    let foreign = sessions
        .answer_card(answer(&other, v1::CardAnswer::AllowSession))
        .await
        .unwrap()
        .into_inner();
    assert!(!foreign.accepted, "another session cannot answer this card");
    let busy = sessions
        .turn(v1::TurnRequest {
            session_id: id.clone(),
            text: "again".to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(busy.code(), Code::FailedPrecondition, "one turn at a time");

    let first = sessions
        .answer_card(answer(&id, v1::CardAnswer::AllowOnce))
        .await
        .unwrap()
        .into_inner();
    assert!(first.accepted);
    let second = sessions
        .answer_card(answer(&id, v1::CardAnswer::Deny))
        .await
        .unwrap()
        .into_inner();
    assert!(!second.accepted, "a second answer changes nothing");

    let mut reason = String::new();
    while let Some(event) = stream.message().await.unwrap() {
        if let Some(v1::turn_event::Event::TurnEnded(ended)) = event.event {
            reason = ended.reason;
        }
    }
    assert_eq!(reason, "end_turn");
    let mut ledger = v1::ledger_client::LedgerClient::new(daemon.channel().await);
    let grants = ledger
        .list_grants(v1::ListGrantsRequest::default())
        .await
        .unwrap()
        .into_inner()
        .grants;
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].lifetime, i32::from(v1::GrantLifetime::Once));
    daemon.stop().await;
}

#[tokio::test]
async fn cancelling_ends_the_turn_and_lapses_its_card() {
    let daemon = InProcess::start().await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = session_with_script(&daemon, &mut sessions).await;
    let mut stream = sessions
        .turn(v1::TurnRequest {
            session_id: id.clone(),
            text: "write the report".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    let card = next_card(&mut stream).await;
    let cancelled = sessions
        .cancel_turn(v1::CancelTurnRequest {
            session_id: id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(cancelled.cancelled);
    let mut reason = String::new();
    while let Some(event) = stream.message().await.unwrap() {
        if let Some(v1::turn_event::Event::TurnEnded(ended)) = event.event {
            reason = ended.reason;
        }
    }
    assert_eq!(reason, "cancelled");
    let late = sessions
        .answer_card(v1::AnswerCardRequest {
            session_id: id,
            card_id: card,
            answer: v1::CardAnswer::AllowSession.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!late.accepted, "a lapsed card grants nothing");
    daemon.stop().await;
}
