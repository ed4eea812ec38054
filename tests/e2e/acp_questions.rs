//! The model's `question`, its usage and a compaction as an editor sees them over ACP, with
//! the real `codaris acp` and daemon playing a script: an editor without forms gets one
//! `session/request_permission` per question, an option per label, and the labels it picks
//! are what the model reads; an editor that takes forms gets one `elicitation/create` form;
//! each turn's usage is a `usage_update` with the context window's size; a compaction is a
//! `compaction_update` for an editor that advertised `session.compaction`, and nothing for one
//! that did not.

use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ClientSessionCapabilities, CompactionCapabilities,
    CreateElicitationRequest, CreateElicitationResponse, ElicitationCapabilities,
    ElicitationFormCapabilities, Implementation, InitializeRequest, LoadSessionRequest,
    NewSessionRequest, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification, StopReason,
};
use agent_client_protocol::{Agent, Client};
use codaris_test_support::sandbox::Sandbox;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::acp::{agent_with, text, updates_of};

fn call(name: &str, args: Value) -> Value {
    json!({"tool_calls": [{"name": name, "args": args}]})
}

/// One turn: two questions (one answer of two; several, or words of the person's own),
/// then a compaction asked for (the next round's text is its summary), then the end.
fn script() -> Value {
    json!({"turns": [{"rounds": [
        call("search_tools", json!({"query": "ask the user a multiple-choice question"})),
        call("question", json!({"questions": [
            {"header": "Aligner", "question": "Which aligner?", "options": [
                {"label": "bwa", "description": "short reads"}, {"label": "STAR", "description": "RNA-seq"}]},
            {"header": "Checks", "question": "Which checks?", "multiple": true, "custom": true,
             "options": [{"label": "lint"}, {"label": "test"}]}
        ]})),
        call("search_tools", json!({"query": "compact the context"})),
        call("compact_context", json!({})),
        {"text": "The person chose the aligner and the checks."},
        {"text": "Done."}
    ]}]})
}

/// What the editor saw.
#[derive(Debug, Default)]
struct Seen {
    updates: Vec<Value>,
    /// Each permission request and each form, as sent.
    asked: Vec<Value>,
}

/// Plays the script's turn for an editor with `capabilities`; permission requests answered
/// by the option named `STAR` or `lint`, forms with bwa and lint + test.
async fn play(capabilities: ClientCapabilities) -> (StopReason, Seen) {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let script_path = sandbox.root.path().join("script.json");
    std::fs::write(&script_path, script().to_string()).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let (on_update, on_permission, on_form) =
        (Arc::clone(&seen), Arc::clone(&seen), Arc::clone(&seen));
    let stop = Client
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
                on_permission
                    .lock()
                    .unwrap()
                    .asked
                    .push(serde_json::to_value(&request).unwrap());
                let chosen = request
                    .options
                    .iter()
                    .find(|o| o.name == "STAR" || o.name == "lint")
                    .map(|o| o.option_id.clone());
                responder.respond(RequestPermissionResponse::new(match chosen {
                    Some(id) => {
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
                    }
                    None => RequestPermissionOutcome::Cancelled,
                }))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CreateElicitationRequest, responder, _cx| {
                on_form
                    .lock()
                    .unwrap()
                    .asked
                    .push(serde_json::to_value(&request).unwrap());
                let answer: CreateElicitationResponse = serde_json::from_value(json!({
                    "action": "accept",
                    "content": {"q00": "bwa", "q01": ["test", "lint"]}
                }))
                .unwrap();
                responder.respond(answer)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(
            agent_with(&sandbox, &script_path, &[]),
            async move |cx: ConnectionTo<Agent>| {
                cx.send_request(
                    InitializeRequest::new(ProtocolVersion::V1)
                        .client_capabilities(capabilities)
                        .client_info(Implementation::new("codaris-e2e", "1.0")),
                )
                .block_task()
                .await?;
                let id = cx
                    .send_request(NewSessionRequest::new(proj.clone()))
                    .block_task()
                    .await?
                    .session_id;
                let done = cx
                    .send_request(PromptRequest::new(id.clone(), text("set up the alignment")))
                    .block_task()
                    .await?;
                // The history replayed: its compaction among it.
                cx.send_request(LoadSessionRequest::new(id, proj.clone()))
                    .block_task()
                    .await?;
                Ok(done.stop_reason)
            },
        )
        .await
        .unwrap();
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    (stop, seen)
}

/// What the model read from `question`: the `rawOutput` of its call's end.
fn answer_read(seen: &Seen) -> String {
    let call = updates_of(&seen.updates, "tool_call")
        .into_iter()
        .find(|c| c["rawInput"].get("questions").is_some())
        .unwrap()["toolCallId"]
        .clone();
    updates_of(&seen.updates, "tool_call_update")
        .into_iter()
        .find(|u| u["toolCallId"] == call && u["status"] == "completed")
        .unwrap_or_else(|| panic!("{:#?}", seen.updates))["rawOutput"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The turn's usage: the window's fill and its size (the scripted model's 200,000).
fn usage_seen(seen: &Seen) {
    let usage = updates_of(&seen.updates, "usage_update");
    assert!(!usage.is_empty(), "{:#?}", seen.updates);
    assert!(
        usage
            .iter()
            .all(|u| u["size"] == 200_000 && u["used"].as_u64().unwrap() > 0),
        "{usage:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_forms_each_question_is_a_permission_request_and_a_compaction_is_shown() {
    let (stop, seen) = play(
        ClientCapabilities::new()
            .session(ClientSessionCapabilities::new().compaction(CompactionCapabilities::new())),
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    // One request per question, an option per label and one to skip, on the question's call.
    assert_eq!(seen.asked.len(), 2, "{:#?}", seen.asked);
    let names: Vec<&Value> = seen.asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["name"])
        .collect();
    assert_eq!(names, [&json!("bwa"), &json!("STAR"), &json!("Skip")]);
    assert_eq!(seen.asked[1]["toolCall"]["title"], "Checks: Which checks?");
    assert_eq!(
        answer_read(&seen),
        "question: the user answered\n1. Aligner: STAR\n2. Checks: lint"
    );
    usage_seen(&seen);
    // The turn's compaction, then the replayed history's.
    let compactions = updates_of(&seen.updates, "compaction_update");
    assert_eq!(compactions.len(), 2, "{:#?}", seen.updates);
    assert!(
        compactions[1]["compactionId"]
            .as_str()
            .unwrap()
            .starts_with("compaction-history-"),
        "{compactions:#?}"
    );
    assert_eq!(compactions[0]["status"], "completed");
    assert!(
        compactions[0]["summary"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("context compacted (tool): "),
        "{compactions:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_forms_the_questions_are_one_form_and_no_compaction_is_sent_unasked() {
    let (stop, seen) = play(
        ClientCapabilities::new()
            .elicitation(ElicitationCapabilities::new().form(ElicitationFormCapabilities::new())),
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(seen.asked.len(), 1, "{:#?}", seen.asked);
    let form = &seen.asked[0];
    assert_eq!(form["mode"], "form");
    assert_eq!(
        form["requestedSchema"]["properties"]["q01"]["type"],
        "array"
    );
    assert_eq!(
        answer_read(&seen),
        "question: the user answered\n1. Aligner: bwa\n2. Checks: lint, test"
    );
    usage_seen(&seen);
    // Neither the turn's compaction nor the replayed one reach an editor that did not ask.
    assert!(updates_of(&seen.updates, "compaction_update").is_empty());
}
