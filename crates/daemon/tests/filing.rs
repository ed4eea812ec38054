//! `session_describe` through the daemon's API: it files the session it runs in, in plan mode
//! too, `GetHistory` carries what it filed, and ask mode, whose tools stay read-only, refuses it.

use codaris_proto::v1;
use codaris_test_support::daemon::InProcess;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::turns::{rest_of_turn, start_turn};

/// A turn that binds `session_describe` by search, then calls it with `args`.
fn describing(args: serde_json::Value) -> serde_json::Value {
    json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "search_tools", "args": {"query": "session title tags"}}]},
        {"tool_calls": [{"name": "session_describe", "args": args}]},
        {"text": "done"}
    ]}]})
}

async fn session(
    daemon: &InProcess,
    script: &serde_json::Value,
    activity: v1::Activity,
) -> (crate::turns::Sessions, String) {
    let path = daemon.temp.path().join(format!("{activity:?}.json"));
    std::fs::write(&path, script.to_string()).unwrap();
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = sessions
        .create_session(v1::CreateSessionRequest {
            script: path.display().to_string(),
            activity: activity.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    (sessions, id)
}

async fn history(sessions: &mut crate::turns::Sessions, id: &str) -> v1::GetHistoryResponse {
    sessions
        .get_history(v1::GetHistoryRequest {
            session_id: id.to_owned(),
            limit: 0,
        })
        .await
        .unwrap()
        .into_inner()
}

#[tokio::test]
async fn a_plan_mode_session_files_itself_and_get_history_shows_it() {
    let daemon = InProcess::start().await;
    let script = describing(json!({"title": "Plan the QC step", "tags": ["QC", "plan"]}));
    let (mut sessions, id) = session(&daemon, &script, v1::Activity::Plan).await;
    // Another session, never filed: the call files its own session only.
    let (_, other) = session(&daemon, &script, v1::Activity::Plan).await;
    let mut stream = start_turn(&mut sessions, &id, "work out the QC").await;
    let rest = rest_of_turn(&mut stream).await;
    assert!(
        rest.outputs
            .iter()
            .any(|o| o.starts_with(&format!("session `{id}`: changed"))),
        "{rest:?}"
    );
    let filed = history(&mut sessions, &id).await;
    assert_eq!(filed.title, "Plan the QC step");
    assert_eq!(filed.tags, ["plan", "qc"]);
    assert_eq!(filed.messages.len(), 2, "the conversation is still there");
    let untouched = history(&mut sessions, &other).await;
    assert_eq!((untouched.title.as_str(), untouched.tags.len()), ("", 0));
    daemon.stop().await;
}

#[tokio::test]
async fn ask_mode_refuses_it_and_the_filing_stays() {
    let daemon = InProcess::start().await;
    let script = describing(json!({"title": "renamed", "tags": ["x"]}));
    let (mut sessions, id) = session(&daemon, &script, v1::Activity::Ask).await;
    let mut stream = start_turn(&mut sessions, &id, "just a question").await;
    let rest = rest_of_turn(&mut stream).await;
    assert_eq!(
        rest.outputs.last().map(String::as_str),
        Some(
            "tool `session_describe` is not available in `ask` mode, which allows read-only tools; searching does not bind it: only the user can switch to agent mode (`/mode agent` in chat)"
        ),
        "{rest:?}"
    );
    let kept = history(&mut sessions, &id).await;
    assert_eq!(kept.title, "just a question");
    assert!(kept.tags.is_empty());
    daemon.stop().await;
}
