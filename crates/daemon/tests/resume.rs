//! Resuming stored sessions and switching their model and modes, over the API in-process:
//! the model is sent the earlier messages (after a daemon restart too), an ended session's
//! grants stay lapsed, and a switch takes effect on the next turn.

use codaris_proto::v1;
use codaris_test_support::daemon::{InProcess, fake_model, openai_text};
use pretty_assertions::assert_eq;
use tonic::Code;

use crate::turns::{
    Sessions, answer_to, next_card, rest_answering, rest_of_turn, scripted_session, start_turn,
};

const OPENAI_ENV: [(&str, &str); 2] = [
    ("OPENAI_API_KEY", "sk-test-resume"),
    ("CODARIS_MODEL", "first-model"),
];

/// A daemon in `temp` whose OpenAI route goes to the fake server at `base`.
async fn openai_daemon(temp: tempfile::TempDir, base: &str) -> InProcess {
    let url = format!("{base}/v1");
    let mut env = OPENAI_ENV.to_vec();
    env.push(("OPENAI_BASE_URL", &url));
    InProcess::start_with(temp, None, &env).await
}

async fn openai_session(sessions: &mut Sessions, cwd: &std::path::Path) -> String {
    sessions
        .create_session(v1::CreateSessionRequest {
            provider: "openai".to_owned(),
            cwd: cwd.display().to_string(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id
}

/// The chat messages of one request body the fake server received, as (role, content).
fn messages(body: &str) -> Vec<(String, String)> {
    let body: serde_json::Value = serde_json::from_str(body).unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The session's grants in force.
async fn standing(
    ledger: &mut v1::ledger_client::LedgerClient<tonic::transport::Channel>,
    id: &str,
) -> Vec<v1::Grant> {
    ledger
        .list_grants(v1::ListGrantsRequest {
            session_id: id.to_owned(),
            include_inactive: false,
        })
        .await
        .unwrap()
        .into_inner()
        .grants
}

fn session_of(sessions: &[v1::Session], id: &str) -> v1::Session {
    sessions.iter().find(|s| s.id == id).unwrap().clone()
}

#[tokio::test]
async fn an_ended_session_resumed_after_a_restart_sends_the_model_its_earlier_messages() {
    let (base, bodies) = fake_model(vec![
        openai_text("The word is heron."),
        openai_text("You told me: heron."),
    ])
    .await;
    let daemon = openai_daemon(tempfile::tempdir().unwrap(), &base).await;
    let project = daemon.temp.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = openai_session(&mut sessions, &project).await;
    let fresh = sessions
        .get_session(v1::GetSessionRequest { id: id.clone() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(fresh.title, "", "no title before the first turn");
    assert_eq!(fresh.last_activity_at, fresh.created_at);

    let first = "Remember the word heron.\nIt matters later.";
    let mut stream = start_turn(&mut sessions, &id, first).await;
    assert_eq!(rest_of_turn(&mut stream).await.reason, "end_turn");
    sessions
        .end_session(v1::EndSessionRequest { id: id.clone() })
        .await
        .unwrap();
    drop(sessions);
    let temp = daemon.stop_keeping_state().await;

    // A new daemon on the same state: the session and its conversation are still there.
    let daemon = openai_daemon(temp, &base).await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let listed = sessions
        .list_sessions(v1::ListSessionsRequest {
            include_ended: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .sessions;
    let stored = session_of(&listed, &id);
    assert_eq!(stored.state, i32::from(v1::SessionState::Ended));
    assert_eq!(stored.title, "Remember the word heron.");
    assert_eq!(stored.turns, 1);
    let at = |t: &Option<prost_types::Timestamp>| t.as_ref().map(|t| (t.seconds, t.nanos));
    assert!(
        at(&stored.last_activity_at) >= at(&stored.created_at),
        "{stored:?}"
    );
    assert!(
        at(&stored.last_activity_at) <= at(&stored.ended_at),
        "{stored:?}"
    );

    let resumed = sessions
        .resume_session(v1::ResumeSessionRequest {
            id: id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(resumed.state, i32::from(v1::SessionState::Active));
    assert_eq!(resumed.ended_at, None);
    assert_eq!(resumed.cwd, project.display().to_string(), "its own cwd");
    let mut stream = start_turn(&mut sessions, &id, "Which word was it?").await;
    let rest = rest_of_turn(&mut stream).await;
    assert_eq!(rest.text, "You told me: heron.");

    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2, "one request per turn");
    let sent: Vec<(String, String)> = messages(&bodies[1])
        .into_iter()
        .filter(|(role, _)| role != "system")
        .collect();
    assert_eq!(
        sent,
        [
            ("user".to_owned(), first.to_owned()),
            ("assistant".to_owned(), "The word is heron.".to_owned()),
            ("user".to_owned(), "Which word was it?".to_owned()),
        ]
    );
    let after = sessions
        .get_session(v1::GetSessionRequest { id: id.clone() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(after.turns, 2);
    let history = |limit: u32| {
        let mut sessions = sessions.clone();
        let id = id.clone();
        async move {
            sessions
                .get_history(v1::GetHistoryRequest {
                    session_id: id,
                    limit,
                })
                .await
                .unwrap()
                .into_inner()
                .messages
                .into_iter()
                .map(|m| (m.role, m.text))
                .collect::<Vec<_>>()
        }
    };
    let pair = |role: &str, text: &str| (role.to_owned(), text.to_owned());
    assert_eq!(
        history(0).await,
        [
            pair("user", first),
            pair("assistant", "The word is heron."),
            pair("user", "Which word was it?"),
            pair("assistant", "You told me: heron."),
        ]
    );
    assert_eq!(
        history(2).await,
        [
            pair("user", "Which word was it?"),
            pair("assistant", "You told me: heron."),
        ]
    );
    assert_eq!(
        after.title, "Remember the word heron.",
        "the first prompt names it"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_resume_never_revives_a_grant_the_end_lapsed() {
    let daemon = InProcess::start().await;
    // Two turns alike: ask for a grant, then finish.
    let asks = serde_json::json!({"rounds": [
        {"tool_calls": [{"name": "request_capability",
                         "args": {"capability": "mutate_outside_fence", "path": "/tmp/out", "reason": "save the report"}}]},
        {"text": "done"}]});
    let script = serde_json::json!({"turns": [asks, asks]});
    let (mut sessions, id) = scripted_session(
        &daemon,
        daemon.temp.path(),
        &script,
        v1::PermissionMode::Ask,
    )
    .await;
    let mut stream = start_turn(&mut sessions, &id, "save the report").await;
    let rest = rest_answering(
        &mut stream,
        &mut sessions,
        &id,
        v1::CardAnswer::AllowSession,
    )
    .await;
    assert_eq!(rest.cards.len(), 1);
    let mut ledger = v1::ledger_client::LedgerClient::new(daemon.channel().await);
    assert_eq!(standing(&mut ledger, &id).await.len(), 1);

    sessions
        .end_session(v1::EndSessionRequest { id: id.clone() })
        .await
        .unwrap();
    sessions
        .resume_session(v1::ResumeSessionRequest {
            id: id.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        standing(&mut ledger, &id).await,
        [],
        "the lapsed grant stays lapsed"
    );

    // The same request asks again: nothing the old session was granted carries over.
    let mut stream = start_turn(&mut sessions, &id, "save it again").await;
    let card = next_card(&mut stream).await;
    assert!(card.sentence.contains("/tmp/out"), "{}", card.sentence);
    sessions
        .answer_card(answer_to(&id, &card, v1::CardAnswer::Deny))
        .await
        .unwrap();
    assert_eq!(rest_of_turn(&mut stream).await.reason, "end_turn");
    daemon.stop().await;
}

#[tokio::test]
async fn a_switched_model_answers_the_next_turn_and_modes_change_only_as_asked() {
    let (base, bodies) = fake_model(vec![openai_text("ok")]).await;
    let daemon = openai_daemon(tempfile::tempdir().unwrap(), &base).await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = openai_session(&mut sessions, daemon.temp.path()).await;
    let mut stream = start_turn(&mut sessions, &id, "hello").await;
    rest_of_turn(&mut stream).await;

    let switched = sessions
        .update_session(v1::UpdateSessionRequest {
            id: id.clone(),
            model: "second-model".to_owned(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(switched.model, "second-model");
    assert_eq!(
        switched.activity,
        i32::from(v1::Activity::Agent),
        "unchanged"
    );
    assert_eq!(switched.permission_mode, i32::from(v1::PermissionMode::Ask));
    let mut stream = start_turn(&mut sessions, &id, "again").await;
    rest_of_turn(&mut stream).await;
    let models: Vec<String> = bodies
        .lock()
        .unwrap()
        .iter()
        .map(|b| serde_json::from_str::<serde_json::Value>(b).unwrap()["model"].to_string())
        .collect();
    assert_eq!(models, ["\"first-model\"", "\"second-model\""]);

    let planned = sessions
        .update_session(v1::UpdateSessionRequest {
            id: id.clone(),
            activity: v1::Activity::Plan.into(),
            permission_mode: v1::PermissionMode::AcceptEdits.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(planned.activity, i32::from(v1::Activity::Plan));
    assert_eq!(
        planned.permission_mode,
        i32::from(v1::PermissionMode::AcceptEdits)
    );
    assert_eq!(planned.model, "second-model", "unchanged");

    // Refused, and nothing changes: a model name with a space, an unknown enum value.
    for bad in [
        v1::UpdateSessionRequest {
            id: id.clone(),
            model: "two words".to_owned(),
            ..Default::default()
        },
        v1::UpdateSessionRequest {
            id: id.clone(),
            activity: 99,
            ..Default::default()
        },
    ] {
        let refused = sessions.update_session(bad).await.unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    }
    let now = sessions
        .get_session(v1::GetSessionRequest { id: id.clone() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(now, planned);

    sessions
        .end_session(v1::EndSessionRequest { id: id.clone() })
        .await
        .unwrap();
    let ended = sessions
        .update_session(v1::UpdateSessionRequest {
            id: id.clone(),
            model: "third".to_owned(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(ended.code(), Code::FailedPrecondition, "{ended:?}");
    daemon.stop().await;
}

#[tokio::test]
async fn resuming_an_unknown_or_malformed_id_is_refused_plainly() {
    let daemon = InProcess::start().await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let unknown = sessions
        .resume_session(v1::ResumeSessionRequest {
            id: "s424242".to_owned(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    assert!(unknown.message().contains("s424242"), "{unknown:?}");
    let unknown = sessions
        .get_history(v1::GetHistoryRequest {
            session_id: "s424242".to_owned(),
            limit: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    let malformed = sessions
        .resume_session(v1::ResumeSessionRequest {
            id: "../../etc".to_owned(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(malformed.code(), Code::InvalidArgument);
    let unknown = sessions
        .update_session(v1::UpdateSessionRequest {
            id: "s424242".to_owned(),
            model: "m".to_owned(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    daemon.stop().await;
}
