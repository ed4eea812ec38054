//! The turn seam over the API: switches and modes shape the surface, guard refusals are in the
//! ledger, a turn nobody follows is cancelled and its command killed, a client re-attaches
//! without losing an event, `EndSession` wins over a turn ending, and a restored session
//! continues where it was.

use std::path::Path;
use std::time::{Duration, Instant};

use codaris_ledger::Ledger;
use codaris_proto::v1;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::cards::one_card_session;
use crate::support::InProcess;
use crate::turns::{Sessions, answer_to, ask_session, rest_of_turn, scripted_session, start_turn};

/// Every event of a turn's stream, to its end.
async fn all_events(stream: &mut tonic::Streaming<v1::TurnEvent>) -> Vec<v1::TurnEvent> {
    let mut events = Vec::new();
    while let Some(event) = stream.message().await.unwrap() {
        events.push(event);
    }
    events
}

fn bindings(events: &[v1::TurnEvent]) -> Vec<Vec<String>> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Some(v1::turn_event::Event::Binding(b)) => Some(b.tools.clone()),
            _ => None,
        })
        .collect()
}

fn results(events: &[v1::TurnEvent]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Some(v1::turn_event::Event::ToolResult(r)) => Some((
                r.tool.clone(),
                r.decision
                    .as_ref()
                    .map(|d| d.code.clone())
                    .unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}

/// Polls `done` until it holds or `limit` passes.
async fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

async fn session_state(sessions: &mut Sessions, id: &str) -> v1::Session {
    sessions
        .get_session(v1::GetSessionRequest { id: id.to_owned() })
        .await
        .unwrap()
        .into_inner()
}

#[tokio::test]
async fn a_core_tool_switched_off_mid_session_is_neither_offered_nor_run() {
    let daemon = InProcess::start().await;
    std::fs::write(daemon.temp.path().join("a.txt"), "alpha\n").unwrap();
    let read = json!({"rounds": [
        {"tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]},
        {"text": "read"}
    ]});
    let script = json!({"turns": [read, read]});
    let (mut sessions, id) = ask_session(&daemon, &script).await;
    let first = all_events(&mut start_turn(&mut sessions, &id, "read a").await).await;
    assert_eq!(
        results(&first),
        [("read_file".to_owned(), "allowed_by_default".to_owned())]
    );

    let mut tools = v1::tools_client::ToolsClient::new(daemon.channel().await);
    tools
        .set_tool_enabled(v1::SetToolEnabledRequest {
            name: "read_file".to_owned(),
            enabled: false,
        })
        .await
        .unwrap();
    let second = all_events(&mut start_turn(&mut sessions, &id, "read a again").await).await;
    for tools in bindings(&second) {
        assert!(!tools.contains(&"read_file".to_owned()), "{tools:?}");
    }
    assert_eq!(
        results(&second),
        [("read_file".to_owned(), "tool_withheld".to_owned())]
    );
    daemon.stop().await;
}

#[tokio::test]
async fn an_ask_session_is_offered_exactly_the_ask_allowlist() {
    let daemon = InProcess::start().await;
    let script = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "write", "args": {"path": "x.txt", "content": "x"}}]},
        {"text": "no"}
    ]}]});
    let path = daemon.temp.path().join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: daemon.temp.path().display().to_string(),
            script: path.display().to_string(),
            activity: v1::Activity::Ask.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    let events = all_events(&mut start_turn(&mut sessions, &id, "what is here?").await).await;
    let allowlist = [
        "search_tools",
        "request_capability",
        "read_file",
        "glob",
        "grep",
    ];
    for tools in bindings(&events) {
        assert_eq!(tools, allowlist);
    }
    // A write sent anyway is refused by the read-only mode, not as unbound (a search could
    // never bind it).
    assert_eq!(
        results(&events),
        [("write".to_owned(), "read_only_activity".to_owned())]
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_guard_refusal_is_in_the_ledger_and_replays_identically() {
    let daemon = InProcess::start().await;
    let search =
        json!({"tool_calls": [{"name": "search_tools", "args": {"query": "lint a pipeline"}}]});
    let script = json!({"turns": [{"rounds": [search, search, {"text": "done"}]}]});
    let (mut sessions, id) = ask_session(&daemon, &script).await;
    let events = all_events(&mut start_turn(&mut sessions, &id, "lint").await).await;
    assert_eq!(
        results(&events),
        [
            ("search_tools".to_owned(), "allowed_by_default".to_owned()),
            ("search_tools".to_owned(), "repeated_search".to_owned()),
        ]
    );
    let temp = daemon.stop_keeping_state().await;
    let ledger = Ledger::open(&temp.path().join("state/ledger")).unwrap();
    let (decisions, corrupt) = ledger.decisions(Some(&id)).unwrap();
    assert!(corrupt.is_empty());
    let codes: Vec<&str> = decisions.iter().map(|d| d.decision.code.as_str()).collect();
    assert_eq!(codes, ["allowed_by_default", "repeated_search"]);
    assert!(decisions[1].request.task.repeated_search.is_some());
    for record in &decisions {
        assert_eq!(
            record.request.evaluate(),
            record.decision,
            "replays identically"
        );
    }
    let report = codaris_ledger::audit(&ledger.evidence().unwrap());
    assert!(report.is_clean(), "{report:?}");
}

fn alive(pid: &str) -> bool {
    Path::new("/proc").join(pid).exists()
        && std::fs::read_to_string(Path::new("/proc").join(pid).join("stat"))
            .is_ok_and(|stat| !stat.contains(") Z "))
}

#[tokio::test]
async fn a_dropped_stream_kills_the_running_command_and_frees_the_session_within_the_grace() {
    let daemon = InProcess::start_with_toml("[daemon]\ndetach_grace_seconds = 1\n").await;
    // A project of its own: commands may not write beside the state directory.
    let project = daemon.temp.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let pidfile = project.join("pid");
    let command = format!("echo $$ > {}; exec sleep 60", pidfile.display());
    let script = json!({"turns": [
        {"rounds": [{"tool_calls": [{"name": "run_command", "args": {"command": command}}]}, {"text": "slept"}]},
        {"rounds": [{"text": "second turn"}]}
    ]});
    let (mut sessions, id) =
        scripted_session(&daemon, &project, &script, v1::PermissionMode::Bypass).await;
    let stream = start_turn(&mut sessions, &id, "sleep").await;
    assert!(
        eventually(Duration::from_secs(20), || std::fs::read_to_string(
            &pidfile
        )
        .is_ok_and(|p| !p.trim().is_empty()))
        .await,
        "the command started"
    );
    let pid = std::fs::read_to_string(&pidfile).unwrap().trim().to_owned();
    assert!(alive(&pid));
    drop(stream);
    assert!(
        eventually(Duration::from_secs(15), || !alive(&pid)).await,
        "the command outlived its abandoned turn"
    );
    // The session is free again: a new turn runs (no `FAILED_PRECONDITION`).
    let deadline = Instant::now() + Duration::from_secs(10);
    let rest = loop {
        match sessions
            .turn(v1::TurnRequest {
                session_id: id.clone(),
                text: "again".to_owned(),
            })
            .await
        {
            Ok(stream) => break rest_of_turn(&mut stream.into_inner()).await,
            Err(status) if Instant::now() < deadline => {
                assert_eq!(status.code(), tonic::Code::FailedPrecondition, "{status:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(status) => panic!("the session stayed busy: {status:?}"),
        }
    };
    assert_eq!(rest.reason, "end_turn");
    assert_eq!(rest.text, "second turn");
    daemon.stop().await;
}

#[tokio::test]
async fn a_client_re_attaches_and_receives_the_missed_events_in_order() {
    let daemon = InProcess::start().await;
    let (mut sessions, id, mut stream) = one_card_session(&daemon).await;
    let mut seen = Vec::new();
    while let Some(event) = stream.message().await.unwrap() {
        let card = matches!(event.event, Some(v1::turn_event::Event::Card(_)));
        seen.push(event);
        if card {
            break;
        }
    }
    // The client goes away; another attaches from the start and from the middle.
    drop(stream);
    let mut again = sessions
        .attach_turn(v1::AttachTurnRequest {
            session_id: id.clone(),
            from_seq: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let mut replayed = Vec::new();
    for _ in 0..seen.len() {
        replayed.push(again.message().await.unwrap().unwrap());
    }
    assert_eq!(replayed, seen, "the same events, seq and time included");
    let seqs: Vec<u64> = replayed.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..seen.len() as u64).collect::<Vec<_>>());
    assert!(replayed.iter().all(|e| e.at.is_some()));
    let Some(v1::turn_event::Event::Card(card)) = &replayed.last().unwrap().event else {
        panic!("the last event seen was the card");
    };
    let mut middle = sessions
        .attach_turn(v1::AttachTurnRequest {
            session_id: id.clone(),
            from_seq: 2,
        })
        .await
        .unwrap()
        .into_inner();
    // The re-attached client answers the card: it holds the turn now.
    let answered = sessions
        .answer_card(answer_to(&id, card, v1::CardAnswer::AllowSession))
        .await
        .unwrap()
        .into_inner();
    assert!(answered.accepted);
    let rest = all_events(&mut again).await;
    let ended = rest.last().and_then(|e| match &e.event {
        Some(v1::turn_event::Event::TurnEnded(ended)) => Some(ended.reason.clone()),
        _ => None,
    });
    assert_eq!(ended.as_deref(), Some("end_turn"));
    assert_eq!(rest[0].seq, seen.len() as u64, "no gap after the replay");
    let from_middle = all_events(&mut middle).await;
    assert_eq!(from_middle[0].seq, 2);
    assert_eq!(
        from_middle.len() as u64 + 2,
        seen.len() as u64 + rest.len() as u64
    );
    daemon.stop().await;
}

#[tokio::test]
async fn attaching_to_a_session_without_a_turn_is_a_clear_precondition() {
    let daemon = InProcess::start().await;
    let script = json!({"turns": []});
    let (mut sessions, id) = ask_session(&daemon, &script).await;
    let status = sessions
        .attach_turn(v1::AttachTurnRequest {
            session_id: id.clone(),
            from_seq: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    assert!(
        status.message().contains("no turn to attach to"),
        "{status:?}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn end_session_racing_a_turn_s_end_never_leaves_the_session_active() {
    let daemon = InProcess::start().await;
    let script = json!({"turns": [{"rounds": [{"text": "quick"}]}]});
    for _ in 0..20 {
        let (mut sessions, id) = ask_session(&daemon, &script).await;
        let mut stream = start_turn(&mut sessions, &id, "go").await;
        let mut ender = sessions.clone();
        let end_id = id.clone();
        let ending = tokio::spawn(async move {
            ender
                .end_session(v1::EndSessionRequest { id: end_id })
                .await
                .unwrap()
        });
        while stream.message().await.ok().flatten().is_some() {}
        ending.await.unwrap();
        // The turn's own bookkeeping may land after EndSession answered: give it time to.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let state = session_state(&mut sessions, &id).await;
        assert_eq!(state.state(), v1::SessionState::Ended, "{state:?}");
    }
    daemon.stop().await;
}

#[tokio::test]
async fn a_restored_session_continues_its_turn_numbering_and_history() {
    let daemon = InProcess::start().await;
    let script = json!({"turns": [
        {"rounds": [{"text": "first"}]},
        {"rounds": [{"text": "second"}]}
    ]});
    let (mut sessions, id) = ask_session(&daemon, &script).await;
    let first = rest_of_turn(&mut start_turn(&mut sessions, &id, "one").await).await;
    assert_eq!(first.text, "first");
    let temp = daemon.stop_keeping_state().await;

    let daemon = InProcess::start_in(temp, None).await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    assert_eq!(session_state(&mut sessions, &id).await.turns, 1);
    let events = all_events(&mut start_turn(&mut sessions, &id, "two").await).await;
    let started = events.iter().find_map(|e| match &e.event {
        Some(v1::turn_event::Event::TurnStarted(s)) => Some(s.turn),
        _ => None,
    });
    assert_eq!(started, Some(1), "the next turn after a restart is turn 1");
    let text: String = events
        .iter()
        .filter_map(|e| match &e.event {
            Some(v1::turn_event::Event::Text(t)) => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        text, "second",
        "the model saw the kept history, so it played turn 1"
    );
    assert_eq!(session_state(&mut sessions, &id).await.turns, 2);
    daemon.stop().await;
}

#[tokio::test]
async fn a_daemon_stops_while_a_turn_waits_on_a_card_and_the_turn_says_cancelled() {
    let daemon = InProcess::start().await;
    let (_sessions, _id, mut stream) = one_card_session(&daemon).await;
    crate::turns::next_card(&mut stream).await;
    let InProcess {
        temp: _temp,
        shutdown,
        server,
        ..
    } = daemon;
    shutdown.trigger("test");
    let rest = rest_of_turn(&mut stream).await;
    assert_eq!(rest.reason, "cancelled", "{rest:?}");
    let stopped = tokio::time::timeout(Duration::from_secs(20), server).await;
    assert!(stopped.is_ok(), "the daemon hung on the waiting turn");
}
