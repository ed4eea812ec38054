use codaris_proto::v1;
use codaris_test_support::daemon::InProcess;
use pretty_assertions::assert_eq;
use tonic::Code;

#[tokio::test]
async fn hello_negotiates_the_highest_shared_version() {
    let daemon = InProcess::start().await;
    let mut client = v1::daemon_client::DaemonClient::new(daemon.channel().await);
    let answer = client
        .hello(v1::HelloRequest {
            client: "test".to_owned(),
            api_versions: vec![7, 1],
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.api_version, 1);
    assert_eq!(answer.supported_api_versions, vec![1]);

    let refused = client
        .hello(v1::HelloRequest {
            client: "future".to_owned(),
            api_versions: vec![2, 3],
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert!(
        refused.message().contains("[2, 3]"),
        "{}",
        refused.message()
    );
    daemon.stop().await;
}

#[tokio::test]
async fn sessions_are_created_listed_and_ended() {
    let daemon = InProcess::start().await;
    let channel = daemon.channel().await;
    let mut sessions = v1::sessions_client::SessionsClient::new(channel.clone());
    let project = daemon.temp.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let project = project.display().to_string();
    for (cwd, field) in [("/w/no-such-project", "cwd"), ("/w/\0nul", "cwd")] {
        let refused = sessions
            .create_session(v1::CreateSessionRequest {
                cwd: cwd.to_owned(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument, "{cwd:?}");
        assert!(refused.message().contains(field), "{}", refused.message());
    }
    // Nothing set up: no test double answers in its place.
    let unset = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: project.clone(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(unset.code(), Code::FailedPrecondition);
    assert!(
        unset.message().contains("codaris login"),
        "{}",
        unset.message()
    );
    let script = daemon.temp.path().join("script.json");
    std::fs::write(&script, r#"{"turns": []}"#).unwrap();
    let created = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: project.clone(),
            activity: v1::Activity::Plan.into(),
            script: script.display().to_string(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(created.cwd, project);
    assert_eq!(created.activity, i32::from(v1::Activity::Plan));
    assert_eq!(created.provider, "scripted");
    assert!(std::path::Path::new(&created.workspace).is_dir());
    assert!(
        created
            .workspace
            .ends_with(&format!("sessions/{}", created.id))
    );

    let listed = sessions
        .list_sessions(v1::ListSessionsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.sessions, vec![created.clone()]);

    let ended = sessions
        .end_session(v1::EndSessionRequest {
            id: created.id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ended.state, i32::from(v1::SessionState::Ended));
    assert!(ended.ended_at.is_some());
    let active = sessions
        .list_sessions(v1::ListSessionsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(active.sessions.is_empty());

    let mut status = v1::daemon_client::DaemonClient::new(channel);
    let status = status
        .status(v1::StatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!((status.sessions_active, status.sessions_total), (0, 1));
    daemon.stop().await;
}

#[tokio::test]
async fn bad_session_requests_are_clear() {
    let daemon = InProcess::start().await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let missing = sessions
        .get_session(v1::GetSessionRequest {
            id: "s404".to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);
    assert_eq!(missing.message(), "no session `s404`");

    let relative = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: "proj".to_owned(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(relative.code(), Code::InvalidArgument);
    assert!(relative.message().contains("cwd"), "{}", relative.message());

    let provider = sessions
        .create_session(v1::CreateSessionRequest {
            provider: "skynet".to_owned(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(provider.code(), Code::InvalidArgument);
    assert!(
        provider.message().contains("skynet"),
        "{}",
        provider.message()
    );
    daemon.stop().await;
}

#[tokio::test]
async fn bad_turn_requests_are_clear_and_stray_answers_change_nothing() {
    let daemon = InProcess::start().await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let missing = sessions
        .turn(v1::TurnRequest {
            session_id: "s404".to_owned(),
            text: "hello".to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);
    let empty = sessions.turn(v1::TurnRequest::default()).await.unwrap_err();
    assert_eq!(empty.code(), Code::InvalidArgument);
    let stray = sessions
        .answer_card(v1::AnswerCardRequest {
            session_id: "s404".to_owned(),
            card_id: "c1".to_owned(),
            answer: v1::CardAnswer::AllowSession.into(),
            answer_secret: String::new(),
            answered_by: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!stray.accepted);
    let idle = sessions
        .cancel_turn(v1::CancelTurnRequest {
            session_id: "s404".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!idle.cancelled);
    daemon.stop().await;
}

#[tokio::test]
async fn health_reports_every_service() {
    let daemon = InProcess::start().await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(daemon.channel().await);
    for service in [
        "",
        "codaris.v1.Daemon",
        "codaris.v1.Sessions",
        "codaris.v1.Tools",
        "codaris.v1.Ledger",
    ] {
        let answer = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.to_owned(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            answer.status,
            i32::from(tonic_health::pb::health_check_response::ServingStatus::Serving),
            "{service}"
        );
    }
    daemon.stop().await;
}

#[tokio::test]
async fn shutdown_rpc_answers_then_stops_and_removes_the_socket() {
    let daemon = InProcess::start().await;
    let mut client = v1::daemon_client::DaemonClient::new(daemon.channel().await);
    client.shutdown(v1::ShutdownRequest {}).await.unwrap();
    let socket = daemon.socket.clone();
    daemon.server.await.unwrap().unwrap();
    assert!(!socket.exists());
    drop(daemon.temp);
}
