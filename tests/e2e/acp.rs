//! `codaris acp` driven by the ACP crate's own client side: the real `codaris` binary against a
//! real daemon playing a script. A turn reads, asks (answered by the option's kind), edits
//! (a diff), plans; a long command is cancelled (its process gone); plan mode refuses a write
//! with the policy's sentence; `session/load` replays the history; the ledger says the editor
//! answered.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, Implementation, InitializeRequest, LoadSessionRequest,
    NewSessionRequest, PermissionOptionKind, PromptRequest, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome,
    SessionNotification, SetSessionModeRequest, StopReason, TextContent,
};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client};
use codaris_test_support::sandbox::{Sandbox, alive, stderr, wait_for};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// What the editor saw: every `session/update` as JSON, every card's options.
#[derive(Debug, Default)]
struct Seen {
    updates: Vec<Value>,
    cards: Vec<Value>,
}

type Shared = Arc<Mutex<Seen>>;

/// The script: turn 0 reads, edits (a card), plans; turn 1 runs a command that sleeps until
/// it is cancelled; turn 2 (in plan mode) tries to write.
pub fn script() -> Value {
    json!({"turns": [
        {"rounds": [
            {"text": "Reading the readme.", "tool_calls": [{"name": "read_file", "args": {"path": "README.md"}}]},
            {"tool_calls": [{"name": "edit", "args": {"path": "main.nf", "oldString": "process A", "newString": "process B"}}]},
            {"tool_calls": [{"name": "planner", "args": {"action": "replace", "markdown": "- [x] read\n- [~] edit\n- [ ] test"}}]},
            {"text": "Renamed the process."}
        ]},
        {"rounds": [
            {"tool_calls": [{"name": "run_command", "args": {"command": "echo $$ > sleep.pid && exec sleep 300"}}]},
            {"text": "never seen"}
        ]},
        {"rounds": [
            {"tool_calls": [{"name": "write", "args": {"path": "new.txt", "content": "x"}}]},
            {"text": "Plan mode kept the file unwritten."}
        ]}
    ]})
}

fn agent(sandbox: &Sandbox, script: &Path) -> AcpAgent {
    agent_with(sandbox, script, &[])
}

/// `codaris acp --script SCRIPT` and `extra` flags, on the sandbox's daemon and home.
pub fn agent_with(sandbox: &Sandbox, script: &Path, extra: &[&str]) -> AcpAgent {
    let bin = codaris_test_support::sandbox::binary("codaris");
    let mut args = vec!["acp", "--script", script.to_str().unwrap()];
    args.extend_from_slice(extra);
    AcpAgent::new(
        AcpAgentConfig::new(bin)
            .args(args)
            .env(
                "HOME",
                sandbox.root.path().join("home").display().to_string(),
            )
            .env(
                "CODARIS_STATE_DIR",
                sandbox.state_dir().display().to_string(),
            )
            .env(
                "CODARIS_CONFIG",
                sandbox
                    .root
                    .path()
                    .join("config.toml")
                    .display()
                    .to_string(),
            ),
    )
}

pub fn text(prompt: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(prompt))]
}

pub fn updates_of<'a>(seen: &'a [Value], kind: &str) -> Vec<&'a Value> {
    seen.iter().filter(|u| u["sessionUpdate"] == kind).collect()
}

/// Waits until the sleeping command wrote its pid and runs.
fn sleeping_pid(file: &Path) -> u32 {
    let mut pid = 0;
    wait_for(Duration::from_secs(30), || {
        pid = std::fs::read_to_string(file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0);
        pid != 0 && alive(pid)
    });
    pid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_drives_a_turn_answers_cards_by_kind_cancels_and_reloads() {
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("README.md"), "hello\n").unwrap();
    std::fs::write(proj.join("main.nf"), "process A {}\n").unwrap();
    let script_path = sandbox.root.path().join("script.json");
    std::fs::write(&script_path, script().to_string()).unwrap();
    let _daemon = sandbox.start_daemon(&[]);

    let seen: Shared = Arc::default();
    let on_update = Arc::clone(&seen);
    let on_card = Arc::clone(&seen);
    let proj2: PathBuf = proj.clone();
    let pid_seen = Arc::new(Mutex::new(0u32));
    let pid_out = Arc::clone(&pid_seen);
    let outcome = Client
        .v1()
        .name("codaris-e2e")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                on_update
                    .lock()
                    .unwrap()
                    .updates
                    .push(serde_json::to_value(&n.update).unwrap());
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                on_card
                    .lock()
                    .unwrap()
                    .cards
                    .push(serde_json::to_value(&request).unwrap());
                // By kind, never by position.
                let once = request
                    .options
                    .iter()
                    .find(|o| o.kind == PermissionOptionKind::AllowOnce)
                    .map(|o| o.option_id.clone());
                responder.respond(RequestPermissionResponse::new(match once {
                    Some(id) => {
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
                    }
                    None => RequestPermissionOutcome::Cancelled,
                }))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(
            agent(&sandbox, &script_path),
            async move |cx: ConnectionTo<Agent>| {
                let init = cx
                    .send_request(
                        InitializeRequest::new(ProtocolVersion::V1)
                            .client_info(Implementation::new("codaris-e2e", "1.0")),
                    )
                    .block_task()
                    .await?;
                let init = serde_json::to_value(&init).unwrap();
                let session = cx
                    .send_request(NewSessionRequest::new(proj2.clone()))
                    .block_task()
                    .await?;
                let new = serde_json::to_value(&session).unwrap();
                let id = session.session_id.clone();

                let first = cx
                    .send_request(PromptRequest::new(id.clone(), text("read and rename")))
                    .block_task()
                    .await?;

                // A long command, cancelled once it runs.
                let long = cx.send_request(PromptRequest::new(id.clone(), text("sleep")));
                let pid = tokio::task::spawn_blocking({
                    let file = proj2.join("sleep.pid");
                    move || sleeping_pid(&file)
                })
                .await
                .unwrap();
                *pid_out.lock().unwrap() = pid;
                cx.send_notification(CancelNotification::new(id.clone()))?;
                let cancelled = long.block_task().await?;

                cx.send_request(SetSessionModeRequest::new(id.clone(), "plan"))
                    .block_task()
                    .await?;
                let refused = cx
                    .send_request(PromptRequest::new(id.clone(), text("write a file")))
                    .block_task()
                    .await?;
                cx.send_request(LoadSessionRequest::new(id.clone(), proj2.clone()))
                    .block_task()
                    .await?;
                Ok((
                    init,
                    new,
                    first.stop_reason,
                    cancelled.stop_reason,
                    refused.stop_reason,
                ))
            },
        )
        .await;
    let (init, new, first, cancelled, refused) = outcome.unwrap();
    let seen = seen.lock().unwrap();

    // The handshake advertises what works.
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentInfo"]["name"], "codaris");
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    // The session's modes and the two config options.
    assert_eq!(new["modes"]["currentModeId"], "agent");
    let options: Vec<&Value> = new["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["id"])
        .collect();
    assert_eq!(options, [&json!("mode"), &json!("permission_mode")]);
    let commands = updates_of(&seen.updates, "available_commands_update");
    assert!(
        commands[0]["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "review"),
        "{commands:?}"
    );

    assert_eq!(first, StopReason::EndTurn);
    assert_eq!(cancelled, StopReason::Cancelled);
    assert_eq!(refused, StopReason::EndTurn);

    // Text streamed as message chunks.
    let chunks = updates_of(&seen.updates, "agent_message_chunk");
    assert_eq!(chunks[0]["content"]["text"], "Reading the readme.");
    // The read: kind, location, input.
    let calls = updates_of(&seen.updates, "tool_call");
    let read = calls.iter().find(|c| c["kind"] == "read").unwrap();
    assert_eq!(
        read["locations"][0]["path"],
        proj.join("README.md").display().to_string()
    );
    assert_eq!(read["rawInput"]["path"], "README.md");
    // The edit asked first: three options, by kind; it completed with a diff.
    let kinds: Vec<&Value> = seen.cards[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["kind"])
        .collect();
    assert_eq!(
        kinds,
        [
            &json!("allow_once"),
            &json!("allow_always"),
            &json!("reject_once")
        ]
    );
    let edit = calls.iter().find(|c| c["kind"] == "edit").unwrap();
    let done = updates_of(&seen.updates, "tool_call_update")
        .into_iter()
        .find(|u| u["toolCallId"] == edit["toolCallId"] && u["status"] == "completed")
        .unwrap();
    assert_eq!(
        done["content"][0],
        json!({"type": "diff", "path": proj.join("main.nf").display().to_string(),
               "oldText": "process A", "newText": "process B"})
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("main.nf")).unwrap(),
        "process B {}\n"
    );
    // The planner is the plan, whole, and no tool card.
    let plans = updates_of(&seen.updates, "plan");
    assert_eq!(plans[0]["entries"].as_array().unwrap().len(), 3);
    assert_eq!(plans[0]["entries"][1]["status"], "in_progress");
    assert!(
        !calls
            .iter()
            .any(|c| c["title"].as_str().unwrap().starts_with("planner"))
    );

    // The cancelled command is gone.
    let pid = *pid_seen.lock().unwrap();
    wait_for(Duration::from_secs(10), || !alive(pid));

    // Plan mode: echoed, and the write failed with the policy's sentence.
    let mode = updates_of(&seen.updates, "current_mode_update");
    assert_eq!(mode[0]["currentModeId"], "plan");
    let write = calls
        .iter()
        .find(|c| c["rawInput"]["path"] == "new.txt")
        .unwrap();
    let failed = updates_of(&seen.updates, "tool_call_update")
        .into_iter()
        .find(|u| u["toolCallId"] == write["toolCallId"] && u["status"] == "failed")
        .unwrap();
    let sentence = failed["content"][0]["content"]["text"].as_str().unwrap();
    assert!(sentence.contains("plan"), "{sentence}");
    assert!(!proj.join("new.txt").exists());

    // The load replayed the history: the first prompt as the person typed it.
    let replayed = updates_of(&seen.updates, "user_message_chunk");
    assert_eq!(replayed[0]["content"]["text"], "read and rename");

    // The ledger says the editor answered the card.
    let export = sandbox.root.path().join("export.jsonl");
    let output = sandbox.cli(&["ledger", "export", "-o", export.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let cards: Vec<Value> = std::fs::read_to_string(&export)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "card")
        .collect();
    assert!(
        cards
            .iter()
            .any(|c| c["answered_by"] == "acp:codaris-e2e" && c["answer"] == "allow_once"),
        "{cards:#?}"
    );
}
