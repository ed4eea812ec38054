//! Cards a person can judge: the diff of an `edit` or a `write` (computed by the daemon before
//! anything is written), the command line of a command, a sentence written for the person; a
//! refusal of one call only (`CARD_ANSWER_DENY_ONCE`) that asks again next time; a failed call
//! marked `failed`; and a model API's retry reported as a `provider_retry` event.

use codaris_proto::v1;
use codaris_test_support::daemon::{InProcess, openai_text};
use codaris_test_support::fake_http::{FakeHttp, Reply};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::turns::{Sessions, answer_to, scripted_session, start_turn};

/// A turn making `calls` one per round, then saying `done`.
fn calls(calls: &[serde_json::Value]) -> serde_json::Value {
    let mut rounds: Vec<serde_json::Value> = calls
        .iter()
        .map(|call| json!({"tool_calls": [call]}))
        .collect();
    rounds.push(json!({"text": "done"}));
    json!({"turns": [{"rounds": rounds}]})
}

/// Every event of the turn, each card answered `answer` (the file as it is when each card
/// arrives is kept beside it, to show nothing was written before the answer).
async fn play(
    sessions: &mut Sessions,
    id: &str,
    answer: v1::CardAnswer,
    watched: &std::path::Path,
) -> (Vec<v1::turn_event::Event>, Vec<Option<String>>) {
    let mut stream = start_turn(sessions, id, "go").await;
    let mut events = Vec::new();
    let mut at_cards = Vec::new();
    while let Some(event) = stream.message().await.unwrap() {
        let Some(event) = event.event else { continue };
        if let v1::turn_event::Event::Card(card) = &event {
            at_cards.push(std::fs::read_to_string(watched).ok());
            sessions
                .answer_card(answer_to(id, card, answer))
                .await
                .unwrap();
        }
        events.push(event);
    }
    (events, at_cards)
}

fn cards(events: &[v1::turn_event::Event]) -> Vec<&v1::Card> {
    events
        .iter()
        .filter_map(|e| match e {
            v1::turn_event::Event::Card(card) => Some(card),
            _ => None,
        })
        .collect()
}

fn results(events: &[v1::turn_event::Event]) -> Vec<&v1::ToolResult> {
    events
        .iter()
        .filter_map(|e| match e {
            v1::turn_event::Event::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_edit_card_shows_the_diff_the_edit_would_make_before_anything_is_written() {
    let daemon = InProcess::start().await;
    let proj = daemon.temp.path().join("proj");
    std::fs::create_dir_all(proj.join("src")).unwrap();
    let file = proj.join("src/main.rs");
    let before = "fn main() {\n    println!(\"hello\");\n}\n";
    std::fs::write(&file, before).unwrap();
    let edit = json!({"name": "edit", "args": {"path": "src/main.rs",
        "oldString": "println!(\"hello\");", "newString": "println!(\"hello, world\");\n    println!(\"bye\");"}});
    let (mut sessions, id) =
        scripted_session(&daemon, &proj, &calls(&[edit]), v1::PermissionMode::Ask).await;
    let (events, at_cards) = play(&mut sessions, &id, v1::CardAnswer::AllowOnce, &file).await;

    let cards = cards(&events);
    assert_eq!(cards.len(), 1, "{events:#?}");
    let card = cards[0];
    assert_eq!(
        card.sentence,
        "Codaris wants to edit `src/main.rs` (2 lines changed)"
    );
    let preview = card.preview.clone().unwrap();
    assert_eq!(preview.kind, "diff");
    assert_eq!(preview.path, "src/main.rs");
    assert_eq!(
        preview.text,
        "--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,3 +1,4 @@\n fn main() {\n-    println!(\"hello\");\n+    println!(\"hello, world\");\n+    println!(\"bye\");\n }\n"
    );
    assert_eq!(
        at_cards,
        [Some(before.to_owned())],
        "nothing written before the answer"
    );
    assert!(std::fs::read_to_string(&file).unwrap().contains("bye"));
    let result = results(&events)[0];
    assert!(!result.failed, "{result:?}");
    daemon.stop().await;
}

#[tokio::test]
async fn a_write_card_shows_the_new_file_or_what_it_replaces() {
    let daemon = InProcess::start().await;
    let proj = daemon.temp.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("old.txt"), "one\ntwo\n").unwrap();
    let script = calls(&[
        json!({"name": "write", "args": {"path": "notes/new.md", "content": "# Notes\nfirst\n"}}),
        json!({"name": "write", "args": {"path": "old.txt", "content": "one\n2\n"}}),
    ]);
    let (mut sessions, id) =
        scripted_session(&daemon, &proj, &script, v1::PermissionMode::Ask).await;
    let (events, _) = play(
        &mut sessions,
        &id,
        v1::CardAnswer::DenyOnce,
        &proj.join("old.txt"),
    )
    .await;
    let cards = cards(&events);
    let shown: Vec<(&str, String)> = cards
        .iter()
        .map(|c| (c.sentence.as_str(), c.preview.clone().unwrap().text))
        .collect();
    assert_eq!(
        shown,
        [
            (
                "Codaris wants to create `notes/new.md` (2 lines changed)",
                "--- /dev/null\n+++ b/notes/new.md\n@@ -0,0 +1,2 @@\n+# Notes\n+first\n".to_owned()
            ),
            (
                "Codaris wants to overwrite `old.txt` (1 line changed)",
                "--- a/old.txt\n+++ b/old.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n".to_owned()
            ),
        ]
    );
    // Refused: nothing was created or changed, not even the new file's directory.
    assert!(!proj.join("notes").exists());
    assert_eq!(
        std::fs::read_to_string(proj.join("old.txt")).unwrap(),
        "one\ntwo\n"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_command_card_shows_the_command_line_and_where_it_runs() {
    let daemon = InProcess::start().await;
    let proj = daemon.temp.path().join("proj");
    std::fs::create_dir_all(proj.join("sub")).unwrap();
    let script = calls(&[json!({"name": "run_command",
        "args": {"command": "rm -rf build && ./configure", "cwd": "sub"}})]);
    let (mut sessions, id) =
        scripted_session(&daemon, &proj, &script, v1::PermissionMode::Ask).await;
    let (events, _) = play(&mut sessions, &id, v1::CardAnswer::DenyOnce, &proj).await;
    let card = cards(&events)[0];
    let sub = proj.join("sub").display().to_string();
    assert_eq!(
        card.sentence,
        format!("Codaris wants to run `rm -rf build && ./configure` in `{sub}`")
    );
    let preview = card.preview.clone().unwrap();
    assert_eq!(preview.kind, "command");
    assert_eq!(
        preview.text,
        format!("$ rm -rf build && ./configure\nin {sub}\n")
    );
    daemon.stop().await;
}

#[tokio::test]
async fn deny_once_refuses_the_call_grants_nothing_and_the_same_call_asks_again() {
    let daemon = InProcess::start().await;
    let proj = daemon.temp.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let write = json!({"name": "write", "args": {"path": "a.txt", "content": "x"}});
    let (mut sessions, id) = scripted_session(
        &daemon,
        &proj,
        &calls(&[write.clone(), write]),
        v1::PermissionMode::Ask,
    )
    .await;
    let (events, _) = play(
        &mut sessions,
        &id,
        v1::CardAnswer::DenyOnce,
        &proj.join("a.txt"),
    )
    .await;
    assert_eq!(cards(&events).len(), 2, "asked again: {events:#?}");
    let refused: Vec<(bool, String, String)> = results(&events)
        .iter()
        .map(|r| {
            let decision = r.decision.clone().unwrap();
            (r.failed, decision.code, r.output.clone())
        })
        .collect();
    let sentence = format!(
        "the user refused this call (`write` on `{}`); do not repeat it unchanged, find another way or ask them",
        proj.join("a.txt").display()
    );
    assert_eq!(
        refused,
        [
            (true, "denied_by_user".to_owned(), sentence.clone()),
            (true, "denied_by_user".to_owned(), sentence),
        ]
    );
    assert!(!proj.join("a.txt").exists());
    let grants = v1::ledger_client::LedgerClient::new(daemon.channel().await)
        .list_grants(v1::ListGrantsRequest {
            session_id: id.clone(),
            include_inactive: true,
        })
        .await
        .unwrap()
        .into_inner()
        .grants;
    assert!(grants.is_empty(), "no deny grant: {grants:?}");
    daemon.stop().await;
}

#[tokio::test]
async fn a_failed_call_is_marked_failed_and_a_good_one_is_not() {
    let daemon = InProcess::start().await;
    let proj = daemon.temp.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("a.txt"), "hello\n").unwrap();
    let script = calls(&[
        json!({"name": "edit", "args": {"path": "a.txt", "newString": "x"}}),
        json!({"name": "read_file", "args": {"path": "a.txt"}}),
    ]);
    let (mut sessions, id) =
        scripted_session(&daemon, &proj, &script, v1::PermissionMode::Bypass).await;
    let (events, _) = play(&mut sessions, &id, v1::CardAnswer::DenyOnce, &proj).await;
    let shown: Vec<(String, bool)> = results(&events)
        .iter()
        .map(|r| (r.tool.clone(), r.failed))
        .collect();
    assert_eq!(
        shown,
        [("edit".to_owned(), true), ("read_file".to_owned(), false)]
    );
    assert!(
        results(&events)[0].output.contains("`oldString`"),
        "{:?}",
        results(&events)[0]
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_rate_limited_model_api_is_retried_and_each_retry_is_an_event() {
    let answered = std::sync::atomic::AtomicUsize::new(0);
    let server = FakeHttp::start(move |seen| {
        if !seen.path().ends_with("/chat/completions") {
            return Reply::not_implemented("fake OpenAI API", seen);
        }
        match answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 => Reply::json(
                429,
                &json!({"error": {"type": "rate_limit", "message": "slow down"}}),
            )
            .header("retry-after", "0"),
            _ => Reply::new(200, "text/event-stream", openai_text("after the wait")),
        }
    });
    let daemon = InProcess::start_with(
        tempfile::tempdir().unwrap(),
        None,
        &[
            ("OPENAI_BASE_URL", &format!("{}/v1", server.url())),
            ("OPENAI_API_KEY", "sk-never-shown-4f2a"),
            ("CODARIS_MODEL", "local-model"),
        ],
    )
    .await;
    let mut sessions = v1::sessions_client::SessionsClient::new(daemon.channel().await);
    let id = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: daemon.temp.path().display().to_string(),
            provider: "openai".to_owned(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    let (events, _) = play(
        &mut sessions,
        &id,
        v1::CardAnswer::DenyOnce,
        daemon.temp.path(),
    )
    .await;
    let retries: Vec<&v1::ProviderRetry> = events
        .iter()
        .filter_map(|e| match e {
            v1::turn_event::Event::ProviderRetry(retry) => Some(retry),
            _ => None,
        })
        .collect();
    assert_eq!(
        retries,
        [&v1::ProviderRetry {
            attempt: 1,
            max_attempts: 4,
            delay_ms: 0,
            reason: "busy (429)".to_owned(),
        }]
    );
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            v1::turn_event::Event::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "after the wait");
    assert!(!format!("{events:?}").contains("sk-never-shown-4f2a"));
    assert_eq!(server.seen().len(), 2);
    daemon.stop().await;
}

/// A daemon that binds every tool (not only the lean nine), so a script can call any of them.
async fn whole_surface() -> InProcess {
    InProcess::start_with(
        tempfile::tempdir().unwrap(),
        None,
        &[("CODARIS_LEAN_7_TOOLS", "0")],
    )
    .await
}

#[tokio::test]
async fn a_patch_card_shows_every_file_it_changes() {
    let daemon = whole_surface().await;
    let proj = daemon.temp.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+TWO\n three\n*** Add File: b.txt\n+new file\n*** End Patch\n";
    let script = calls(&[json!({"name": "apply_patch", "args": {"patch": patch}})]);
    let (mut sessions, id) =
        scripted_session(&daemon, &proj, &script, v1::PermissionMode::Ask).await;
    let (events, _) = play(&mut sessions, &id, v1::CardAnswer::DenyOnce, &proj).await;
    let card = cards(&events)[0];
    assert_eq!(
        card.sentence,
        "Codaris wants to patch 2 files (2 lines changed)"
    );
    let preview = card.preview.clone().unwrap();
    assert_eq!(preview.kind, "diff");
    assert_eq!(preview.path, "", "two files");
    assert_eq!(
        preview.text,
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+new file\n"
    );
    assert!(!proj.join("b.txt").exists());
    daemon.stop().await;
}

/// A patch is read once for each decision made on it: when the call is prepared. Its
/// targets, its card's preview and its run all use what was read then.
#[tokio::test]
async fn a_patch_is_read_once_for_each_decision_and_never_again_by_its_preview_or_run() {
    let daemon = whole_surface().await;
    let proj = daemon.temp.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let read = codaris_tools::files::patch_parse_count::of;
    // No card (edits are accepted): one decision, one read, and the patch applied.
    let allowed = "*** Begin Patch\n*** Add File: allowed.txt\n+read once\n*** End Patch\n";
    let script = calls(&[json!({"name": "apply_patch", "args": {"patch": allowed}})]);
    let (mut sessions, id) =
        scripted_session(&daemon, &proj, &script, v1::PermissionMode::AcceptEdits).await;
    let (events, _) = play(&mut sessions, &id, v1::CardAnswer::AllowOnce, &proj).await;
    assert!(cards(&events).is_empty());
    assert_eq!(
        std::fs::read_to_string(proj.join("allowed.txt")).unwrap(),
        "read once\n"
    );
    assert_eq!(read(allowed), 1, "read when prepared, and not by the run");
    // A card answered yes: decided before the card and again with the grant, so read twice;
    // the card's preview and the run read nothing.
    let asked = "*** Begin Patch\n*** Add File: asked.txt\n+read twice\n*** End Patch\n";
    let script = calls(&[json!({"name": "apply_patch", "args": {"patch": asked}})]);
    let (mut sessions, id) =
        scripted_session(&daemon, &proj, &script, v1::PermissionMode::Ask).await;
    let (events, _) = play(&mut sessions, &id, v1::CardAnswer::AllowOnce, &proj).await;
    assert!(cards(&events)[0].preview.is_some());
    assert_eq!(
        std::fs::read_to_string(proj.join("asked.txt")).unwrap(),
        "read twice\n"
    );
    assert_eq!(read(asked), 2, "one read for each of the two decisions");
    daemon.stop().await;
}

#[tokio::test]
async fn an_http_card_names_the_headers_but_never_shows_their_values() {
    let daemon = whole_surface().await;
    let proj = daemon.temp.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let script = calls(&[json!({"name": "http_request", "args": {
        "url": "https://api.example.org/v1/upload?token=tok-in-the-url&page=1",
        "method": "put",
        "headers": {"Authorization": "Bearer sk-header-secret", "X-Trace": "trace-value-xyz"},
        "body": "hello"
    }})]);
    let (mut sessions, id) =
        scripted_session(&daemon, &proj, &script, v1::PermissionMode::Ask).await;
    let (events, _) = play(&mut sessions, &id, v1::CardAnswer::DenyOnce, &proj).await;
    let card = cards(&events)[0];
    let preview = card.preview.clone().unwrap();
    assert_eq!(preview.kind, "http");
    assert_eq!(
        preview.text,
        "PUT https://api.example.org/v1/upload?token=***&page=1\nheaders: Authorization, X-Trace (values not shown)\nbody: 5 bytes: hello\n"
    );
    assert_eq!(
        card.sentence,
        "Codaris wants to send `PUT https://api.example.org/v1/upload?token=***&page=1`"
    );
    let everything = format!("{:?}", cards(&events));
    // Each secret holds letters outside hex, so it cannot turn up by chance
    // inside the card's random hex answer secret.
    for secret in ["sk-header-secret", "tok-in-the-url", "trace-value-xyz"] {
        assert!(!everything.contains(secret), "{secret} in {everything}");
    }
    daemon.stop().await;
}
