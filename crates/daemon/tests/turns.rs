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

async fn session_with_script(daemon: &InProcess, sessions: &mut Sessions) -> String {
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

pub(crate) type Sessions = v1::sessions_client::SessionsClient<tonic::transport::Channel>;

/// A session in `cwd` whose model plays `script` (written beside the daemon's state), under
/// permission mode `mode`.
pub(crate) async fn scripted_session(
    daemon: &InProcess,
    cwd: &std::path::Path,
    script: &serde_json::Value,
    mode: v1::PermissionMode,
) -> (Sessions, String) {
    let path = daemon.temp.path().join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: cwd.display().to_string(),
            script: path.display().to_string(),
            permission_mode: mode.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    (sessions, id)
}

/// A session in the daemon's own directory, permission mode `ask`, playing `script`.
pub(crate) async fn ask_session(
    daemon: &InProcess,
    script: &serde_json::Value,
) -> (Sessions, String) {
    scripted_session(daemon, daemon.temp.path(), script, v1::PermissionMode::Ask).await
}

pub(crate) async fn start_turn(
    sessions: &mut Sessions,
    id: &str,
    text: &str,
) -> tonic::Streaming<v1::TurnEvent> {
    sessions
        .turn(v1::TurnRequest {
            session_id: id.to_owned(),
            text: text.to_owned(),
        })
        .await
        .unwrap()
        .into_inner()
}

/// The tool results of one scripted turn (`script` is the turn's `{"rounds": …}`) started
/// with `text` in the daemon's directory: (tool, decision code, output) in order.
pub(crate) async fn tool_results(
    daemon: &InProcess,
    script: serde_json::Value,
    mode: v1::PermissionMode,
    text: &str,
) -> Vec<(String, String, String)> {
    let script = serde_json::json!({"turns": [script]});
    let (mut sessions, id) = scripted_session(daemon, daemon.temp.path(), &script, mode).await;
    let mut stream = start_turn(&mut sessions, &id, text).await;
    let mut results = Vec::new();
    while let Some(event) = stream.message().await.unwrap() {
        if let Some(v1::turn_event::Event::ToolResult(r)) = event.event {
            let code = r.decision.map(|d| d.code).unwrap_or_default();
            results.push((r.tool, code, r.output));
        }
    }
    results
}

/// What the rest of a turn reported.
#[derive(Debug, Default)]
pub(crate) struct Rest {
    pub(crate) outputs: Vec<String>,
    /// The sentences of the cards shown.
    pub(crate) cards: Vec<String>,
    pub(crate) text: String,
    pub(crate) usage: String,
    pub(crate) reason: String,
}

/// Reads a turn's stream to its end.
pub(crate) async fn rest_of_turn(stream: &mut tonic::Streaming<v1::TurnEvent>) -> Rest {
    read_turn(stream, None).await
}

/// One turn of a fresh scripted session in the daemon's directory, read to its end.
pub(crate) async fn scripted_turn(
    daemon: &InProcess,
    script: &serde_json::Value,
    mode: v1::PermissionMode,
    text: &str,
) -> Rest {
    let (mut sessions, id) = scripted_session(daemon, daemon.temp.path(), script, mode).await;
    let mut stream = start_turn(&mut sessions, &id, text).await;
    rest_of_turn(&mut stream).await
}

/// Reads a turn's stream to its end, answering every card of session `id` with `answer`.
pub(crate) async fn rest_answering(
    stream: &mut tonic::Streaming<v1::TurnEvent>,
    sessions: &mut Sessions,
    id: &str,
    answer: v1::CardAnswer,
) -> Rest {
    read_turn(stream, Some((sessions, id, answer))).await
}

async fn read_turn(
    stream: &mut tonic::Streaming<v1::TurnEvent>,
    mut answering: Option<(&mut Sessions, &str, v1::CardAnswer)>,
) -> Rest {
    let mut rest = Rest::default();
    while let Some(event) = stream.message().await.unwrap() {
        match event.event {
            Some(v1::turn_event::Event::ToolResult(result)) => rest.outputs.push(result.output),
            Some(v1::turn_event::Event::Text(text)) => rest.text.push_str(&text.text),
            Some(v1::turn_event::Event::Usage(usage)) => rest.usage = usage.line,
            Some(v1::turn_event::Event::TurnEnded(ended)) => rest.reason = ended.reason,
            Some(v1::turn_event::Event::Card(card)) => {
                if let Some((sessions, id, answer)) = answering.as_mut() {
                    sessions
                        .answer_card(answer_to(id, &card, *answer))
                        .await
                        .unwrap();
                }
                rest.cards.push(card.sentence);
            }
            _ => {}
        }
    }
    rest
}

/// Reads events until a card arrives; returns it.
pub(crate) async fn next_card(stream: &mut tonic::Streaming<v1::TurnEvent>) -> v1::Card {
    while let Some(event) = stream.message().await.unwrap() {
        if let Some(v1::turn_event::Event::Card(card)) = event.event {
            return card;
        }
    }
    panic!("the turn ended without showing a card");
}

/// The answer to `card` of session `session` that its turn's client would send.
pub(crate) fn answer_to(
    session: &str,
    card: &v1::Card,
    answer: v1::CardAnswer,
) -> v1::AnswerCardRequest {
    v1::AnswerCardRequest {
        session_id: session.to_owned(),
        card_id: card.id.clone(),
        answer: answer.into(),
        answer_secret: card.answer_secret.clone(),
        answered_by: String::new(),
    }
}

#[tokio::test]
async fn a_card_is_answered_only_from_its_own_session_and_only_once() {
    let daemon = InProcess::start().await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = session_with_script(&daemon, &mut sessions).await;
    let other = session_with_script(&daemon, &mut sessions).await;
    let mut stream = start_turn(&mut sessions, &id, "write the report").await;
    let card = next_card(&mut stream).await;
    assert!(!card.id.is_empty());

    let answer = |session: &str, answer: v1::CardAnswer| answer_to(session, &card, answer);
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

    assert_eq!(rest_of_turn(&mut stream).await.reason, "end_turn");
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
    let mut stream = start_turn(&mut sessions, &id, "write the report").await;
    let card = next_card(&mut stream).await;
    let cancelled = sessions
        .cancel_turn(v1::CancelTurnRequest {
            session_id: id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(cancelled.cancelled);
    assert_eq!(rest_of_turn(&mut stream).await.reason, "cancelled");
    let late = sessions
        .answer_card(answer_to(&id, &card, v1::CardAnswer::AllowSession))
        .await
        .unwrap()
        .into_inner();
    assert!(!late.accepted, "a lapsed card grants nothing");
    daemon.stop().await;
}

/// A fake OpenAI-compatible server on loopback: answers every request with one streamed text
/// reply, and keeps the request bodies.
async fn fake_openai() -> (String, crate::support::Bodies) {
    let reply = crate::support::openai_stream(&[
        serde_json::json!({"id":"1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello from the model."},"finish_reason":null}]}),
        serde_json::json!({"id":"1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}),
        serde_json::json!({"id":"1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":40}}}),
    ]);
    let (base, bodies) = crate::support::fake_model(vec![reply]).await;
    (format!("{base}/v1"), bodies)
}

#[tokio::test]
async fn a_session_can_talk_to_an_openai_compatible_server() {
    let (base, bodies) = fake_openai().await;
    let daemon = InProcess::start_with(
        tempfile::tempdir().unwrap(),
        None,
        &[
            ("OPENAI_BASE_URL", &base),
            ("OPENAI_API_KEY", "sk-test-secret"),
            ("CODARIS_MODEL", "local-model"),
        ],
    )
    .await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = sessions
        .create_session(v1::CreateSessionRequest {
            provider: "openai".to_owned(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    let mut stream = start_turn(&mut sessions, &id, "hi").await;
    let rest = rest_of_turn(&mut stream).await;
    assert_eq!(rest.text, "Hello from the model.");
    assert_eq!(rest.reason, "end_turn");
    assert!(rest.usage.contains("cache read 40"), "{}", rest.usage);
    let body: serde_json::Value = serde_json::from_str(&bodies.lock().unwrap()[0]).unwrap();
    assert_eq!(body["model"], "local-model");
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    // The always-on nine, in the fixed order.
    assert_eq!(
        tools,
        [
            "search_tools",
            "request_capability",
            "read_file",
            "glob",
            "grep",
            "edit",
            "write",
            "run_command",
            "planner"
        ]
    );
    daemon.stop().await;
}

#[tokio::test]
async fn an_unanswered_card_grants_nothing_when_it_times_out() {
    let daemon = InProcess::start_with_toml("[daemon]\ncard_timeout_seconds = 1\n").await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = session_with_script(&daemon, &mut sessions).await;
    let mut stream = start_turn(&mut sessions, &id, "write the report").await;
    let card = next_card(&mut stream).await;
    let rest = rest_of_turn(&mut stream).await;
    assert_eq!(rest.reason, "end_turn");
    assert_eq!(
        rest.outputs,
        ["nobody answered the card; nothing was granted"]
    );
    let late = sessions
        .answer_card(answer_to(&id, &card, v1::CardAnswer::AllowSession))
        .await
        .unwrap()
        .into_inner();
    assert!(!late.accepted);
    let mut ledger = v1::ledger_client::LedgerClient::new(daemon.channel().await);
    let grants = ledger
        .list_grants(v1::ListGrantsRequest {
            include_inactive: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .grants;
    assert!(grants.is_empty(), "a timeout grants nothing");
    daemon.stop().await;
}

#[tokio::test]
async fn tool_results_are_cut_to_the_configured_output_limits() {
    let daemon = InProcess::start_with_toml("[tools.output_limits]\nmax_lines = 3\n").await;
    let file = daemon.temp.path().join("long.txt");
    let text: String = (0..50).map(|i| format!("line {i}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let script = daemon.temp.path().join("read.json");
    std::fs::write(
        &script,
        format!(
            r#"{{"turns": [{{"rounds": [{{"tool_calls": [{{"name": "read_file", "args": {{"path": "{}"}}}}]}}, {{"tool_calls": [{{"name": "grep", "args": {{"pattern": "(unclosed"}}}}]}}, {{"tool_calls": [{{"name": "search_tools", "args": {{"query": "read write files"}}}}]}}, {{"text": "ok"}}]}}]}}"#,
            file.display()
        ),
    )
    .unwrap();
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: daemon.temp.path().display().to_string(),
            script: script.display().to_string(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    let mut stream = start_turn(&mut sessions, &id, "read it").await;
    let outputs = rest_of_turn(&mut stream).await.outputs;
    let output = &outputs[0];
    assert_eq!(output.lines().count(), 4, "{output}");
    assert!(output.contains("[output cut: showing 3 of"), "{output}");
    // An error and the loop's own search are cut the same way.
    assert!(outputs[1].contains("bad regular expression"), "{outputs:?}");
    assert!(outputs[1].lines().count() <= 4, "{outputs:?}");
    assert!(
        outputs[2].contains("[output cut: showing 3 of"),
        "{outputs:?}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn allowlisted_commands_run_without_a_card_and_may_write_to_the_sandbox_dirs() {
    let outside = tempfile::tempdir().unwrap();
    let cache = outside.path().join("cache");
    let other = outside.path().join("other");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let daemon = InProcess::start_with_toml(&format!(
        "[daemon]\ncard_timeout_seconds = 1\n[tools]\ncommand_allowlist = [\"touch\"]\nsandbox_writable = [\"{}\"]\n",
        cache.display()
    ))
    .await;
    let call = |command: String| serde_json::json!({"tool_calls": [{"name": "run_command", "args": {"command": command}}]});
    let script = serde_json::json!({"turns": [{"rounds": [
        call(format!("touch {}/made", cache.display())),
        call(format!("touch {}/made", other.display())),
        call(format!("touch {}/x; rm -f {}/made", cache.display(), cache.display())),
        {"text": "done"}
    ]}]});
    let rest = scripted_turn(&daemon, &script, v1::PermissionMode::Ask, "touch them").await;
    // Only the line with an `rm` in it needed a person; it lapsed, so nothing was removed.
    assert_eq!(rest.cards.len(), 1, "{rest:?}");
    assert!(
        rest.cards[0].starts_with(&format!(
            "Codaris wants to run `touch {}/x; rm -f",
            cache.display()
        )),
        "{rest:?}"
    );
    assert!(cache.join("made").exists(), "{rest:?}");
    assert!(!cache.join("x").exists(), "{rest:?}");
    match codaris_tools::shell::landlock_status() {
        codaris_tools::shell::LandlockStatus::Active(_) => {
            assert!(!other.join("made").exists(), "{rest:?}");
        }
        codaris_tools::shell::LandlockStatus::Unsupported(reason) => {
            // Under CI the kernel has Landlock: its absence is a failure, not a pass.
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "Landlock is required under CI but unavailable: {reason}"
            );
            eprintln!("SKIPPED the Landlock half of this test: {reason}");
        }
    }
    daemon.stop().await;
}

#[tokio::test]
async fn a_command_card_can_allow_its_programs_for_the_session() {
    let daemon = InProcess::start().await;
    std::fs::create_dir_all(daemon.temp.path().join("sub")).unwrap();
    let call = |command: &str, cwd: &str| serde_json::json!({"tool_calls": [{"name": "run_command", "args": {"command": command, "cwd": cwd}}]});
    let script = serde_json::json!({"turns": [{"rounds": [
        call("echo one | cat", "."),
        call("cat /dev/null; echo two", "sub"),
        call("ls", "sub"),
        {"text": "done"}
    ]}]});
    let (mut sessions, id) = ask_session(&daemon, &script).await;
    let mut stream = start_turn(&mut sessions, &id, "run them").await;
    let mut cards = Vec::new();
    let mut outputs = Vec::new();
    while let Some(event) = stream.message().await.unwrap() {
        match event.event {
            Some(v1::turn_event::Event::Card(card)) => {
                let answer = if cards.is_empty() {
                    v1::CardAnswer::AllowPrograms
                } else {
                    v1::CardAnswer::Deny
                };
                let reply = sessions
                    .answer_card(answer_to(&id, &card, answer))
                    .await
                    .unwrap()
                    .into_inner();
                assert!(reply.accepted);
                cards.push(card.programs);
            }
            Some(v1::turn_event::Event::ToolResult(result)) => outputs.push(result.output),
            _ => {}
        }
    }
    // The first line's programs were granted; the second line needed no card; `ls` did, and
    // was refused.
    assert_eq!(
        cards,
        vec![
            vec!["echo".to_owned(), "cat".to_owned()],
            vec!["ls".to_owned()]
        ]
    );
    assert!(outputs[0].contains("one"), "{outputs:?}");
    assert!(outputs[1].contains("two"), "{outputs:?}");
    let grants = v1::ledger_client::LedgerClient::new(daemon.channel().await)
        .list_grants(v1::ListGrantsRequest {
            session_id: id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .grants;
    let program_grants: Vec<_> = grants
        .iter()
        .filter_map(|g| g.capability.as_ref())
        .filter(|c| c.name == "run_program")
        .map(|c| c.path.clone())
        .collect();
    assert_eq!(program_grants, ["echo", "cat"]);
    daemon.stop().await;
}

#[tokio::test]
async fn a_card_without_programs_refuses_a_program_wide_answer() {
    let daemon = InProcess::start().await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = session_with_script(&daemon, &mut sessions).await;
    let mut stream = start_turn(&mut sessions, &id, "save the report").await;
    let card = next_card(&mut stream).await;
    let answer = |answer: v1::CardAnswer| answer_to(&id, &card, answer);
    let status = sessions
        .answer_card(answer(v1::CardAnswer::AllowPrograms))
        .await
        .err()
        .unwrap();
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert!(status.message().contains("lists no programs"), "{status:?}");
    let reply = sessions
        .answer_card(answer(v1::CardAnswer::Deny))
        .await
        .unwrap()
        .into_inner();
    assert!(reply.accepted, "the card stayed open");
    rest_of_turn(&mut stream).await;
    daemon.stop().await;
}

#[tokio::test]
async fn the_api_token_is_out_of_every_tools_reach() {
    // The token exists while the daemon listens on TCP.
    let daemon = InProcess::start_with_toml("[daemon]\nlisten = \"127.0.0.1:0\"\n").await;
    let state = daemon.temp.path().join("state");
    let token = std::fs::read_to_string(state.join("token")).unwrap();
    assert!(!token.trim().is_empty());
    let call = |tool: &str, args: serde_json::Value| serde_json::json!({"tool_calls": [{"name": tool, "args": args}]});
    let script = serde_json::json!({"turns": [{"rounds": [
        call("read_file", serde_json::json!({"path": state.join("token")})),
        call("grep", serde_json::json!({"pattern": ".", "path": state})),
        call("write", serde_json::json!({"path": state.join("token"), "content": "mine"})),
        {"text": "done"}
    ]}]});
    let rest = scripted_turn(&daemon, &script, v1::PermissionMode::Bypass, "look around").await;
    assert_eq!(rest.outputs.len(), 3, "{rest:?}");
    assert!(rest.outputs[0].contains("credentials"), "{rest:?}");
    assert!(rest.outputs[2].contains("credentials"), "{rest:?}");
    for output in &rest.outputs {
        assert!(!output.contains(token.trim()), "the token leaked: {output}");
    }
    assert_eq!(std::fs::read_to_string(state.join("token")).unwrap(), token);
    daemon.stop().await;
}

#[tokio::test]
async fn worktree_create_moves_the_session_into_the_worktree() {
    let daemon = InProcess::start_with_toml("[tools]\nlean_surface = false\n").await;
    let base = daemon.temp.path().canonicalize().unwrap();
    let repo = codaris_test_support::git::origin_and_clone(&base);
    let worktree = repo.join(".worktrees/feat-x");
    let call = |tool: &str, args: serde_json::Value| serde_json::json!({"tool_calls": [{"name": tool, "args": args}]});
    let script = serde_json::json!({"turns": [
        {"rounds": [
            call("worktree_create", serde_json::json!({"branch": "feat/x"})),
            call("run_command", serde_json::json!({"command": "pwd"})),
            call("write", serde_json::json!({"path": "NOTES.md", "content": "moved\n"})),
            {"text": "done"}
        ]},
        {"rounds": [call("read_file", serde_json::json!({"path": "NOTES.md"})), {"text": "done"}]}
    ]});
    let (mut sessions, id) =
        scripted_session(&daemon, &repo, &script, v1::PermissionMode::Bypass).await;
    // `worktree_create` is class `always`: it asks even under bypass.
    let mut stream = start_turn(&mut sessions, &id, "make a worktree").await;
    let first = rest_answering(&mut stream, &mut sessions, &id, v1::CardAnswer::AllowOnce).await;
    assert!(
        first.outputs[0].contains("the session now works there"),
        "{first:?}"
    );
    assert!(
        first.outputs[1].contains(&worktree.display().to_string()),
        "the command ran in the worktree: {first:?}"
    );
    assert_eq!(
        std::fs::read_to_string(worktree.join("NOTES.md")).unwrap(),
        "moved\n"
    );
    assert!(!repo.join("NOTES.md").exists());
    let mut stream = start_turn(&mut sessions, &id, "read it back").await;
    let second = rest_of_turn(&mut stream).await;
    assert!(
        second.outputs[0].contains("moved"),
        "the next turn starts there too: {second:?}"
    );
    let session = sessions
        .get_session(v1::GetSessionRequest { id: id.clone() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(session.cwd, worktree.display().to_string());
    daemon.stop().await;
}
