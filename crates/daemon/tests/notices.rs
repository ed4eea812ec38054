//! A background command that finishes is told to its session: the note rides with the next
//! message the model receives, and never as something the person typed.

use std::time::Duration;

use codaris_proto::v1;
use codaris_test_support::daemon::{InProcess, fake_model, openai_text, openai_tool_call};
use serde_json::{Value, json};

use crate::turns::{rest_of_turn, start_turn};

#[tokio::test]
async fn a_finished_background_command_reaches_the_next_turn() {
    let temp = tempfile::tempdir().unwrap();
    let (base, bodies) = fake_model(vec![
        openai_tool_call(
            "call_1",
            "run_command",
            &json!({"command": "echo finished-marker", "background": true}),
        ),
        openai_text("started"),
        openai_text("noted"),
    ])
    .await;
    let daemon = InProcess::start_with(
        temp,
        None,
        &[
            ("OPENAI_BASE_URL", &format!("{base}/v1")),
            ("OPENAI_API_KEY", "sk-test"),
            ("CODARIS_MODEL", "local-model"),
        ],
    )
    .await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: daemon.temp.path().display().to_string(),
            provider: "openai".to_owned(),
            permission_mode: v1::PermissionMode::Bypass.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    let mut stream = start_turn(&mut sessions, &id, "start it").await;
    let first = rest_of_turn(&mut stream).await;
    assert!(
        first.outputs[0].contains("started background task"),
        "{first:?}"
    );
    // The notice travels from the pool to the session on its own task, so it may miss the
    // next turn by a hair and ride with the one after: ask until it arrives (a slower machine
    // only takes more turns), then check where it rode.
    let mut carried = None;
    for turn in 0..100 {
        let mut stream = start_turn(&mut sessions, &id, &format!("anything new? {turn}")).await;
        assert_eq!(rest_of_turn(&mut stream).await.text, "noted");
        let bodies = bodies.lock().unwrap().clone();
        let body: Value = serde_json::from_str(bodies.last().unwrap()).unwrap();
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["role"], "user");
        let content = last["content"].as_str().unwrap().to_owned();
        if content.contains("bg-1") {
            carried = Some((turn, content));
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(carried.is_some(), "the notice never reached the model");
    let (turn, content) = carried.unwrap();
    assert!(
        content.starts_with(&format!(
            "anything new? {turn}\n\n[background task `bg-1` (`echo finished-marker`) finished"
        )),
        "{content}"
    );
    daemon.stop().await;
}
