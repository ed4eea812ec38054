//! `session/new`'s `additionalDirectories` through `codaris acp` and a real daemon: each
//! directory is a root of the session that names it only — its tools read and write there
//! without a card, its commands write there under the sandbox, its decisions in the ledger
//! carry it, `session/list` shows it and `session/load` keeps it — and what an editor could
//! slip in is refused: a link into the state directory, a relative path, a file, `/`, the
//! home directory; a `..` path is taken where it leads; a root swapped for a link after the
//! session was opened is no root any more.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    Implementation, InitializeRequest, ListSessionsRequest, LoadSessionRequest, NewSessionRequest,
    PermissionOptionKind, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionId, SessionNotification,
    StopReason,
};
use agent_client_protocol::{Agent, Client};
use codaris_test_support::sandbox::{Sandbox, stderr};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::acp::{agent_with, text};

/// Every session's first turn reads, writes and runs a command in `../data`, a sibling of
/// its project; a second turn (C's) reads where its swapped root now leads, by that path
/// and by its own.
fn script(outside: &Path) -> Value {
    json!({"turns": [
        {"rounds": [
            {"tool_calls": [{"name": "read_file", "args": {"path": "../data/samples.csv"}}]},
            {"tool_calls": [{"name": "write", "args": {"path": "../data/new.txt", "content": "written\n"}}]},
            {"tool_calls": [{"name": "run_command", "args": {"command": "echo made > ../data/cmd.txt"}}]},
            {"text": "done"}
        ]},
        {"rounds": [
            {"tool_calls": [{"name": "read_file", "args": {"path": outside.join("samples.csv")}}]},
            {"tool_calls": [{"name": "read_file", "args": {"path": "../data/samples.csv"}}]},
            {"text": "done"}
        ]}
    ]})
}

/// What the editor saw, by session.
#[derive(Debug, Default)]
struct Seen {
    /// (session, update) for every `session/update`.
    updates: Vec<(String, Value)>,
    /// The sessions of the cards asked.
    cards: Vec<String>,
}

/// A project and its `data` sibling holding `samples.csv` with `line`.
fn place(dir: &Path, line: &str) -> (PathBuf, PathBuf) {
    let proj = dir.join("proj");
    let data = dir.join("data");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("samples.csv"), format!("{line}\n")).unwrap();
    (proj, data)
}

/// The results (`tool_call_update`s that end a call) of one session, by the tool's input path.
fn ended<'a>(seen: &'a Seen, session: &str) -> Vec<&'a Value> {
    seen.updates
        .iter()
        .filter(|(s, u)| {
            s == session
                && u["sessionUpdate"] == "tool_call_update"
                && (u["status"] == "completed" || u["status"] == "failed")
        })
        .map(|(_, u)| u)
        .collect()
}

fn error_text(err: &agent_client_protocol::Error) -> String {
    format!("{} {:?}", err.message, err.data)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn additional_directories_are_roots_of_their_session_only_and_refuse_what_they_must() {
    let sandbox = Sandbox::new();
    let root = std::fs::canonicalize(sandbox.root.path()).unwrap();
    // A: the session given its data folder; B: the same project without it; C: given its
    // data folder, which is then swapped for a link to a folder outside every root.
    let (proj_a, data_a) = place(&root.join("a"), "sample,reads");
    let (proj_c, data_c) = place(&root.join("c"), "harmless");
    let outside = root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("samples.csv"), "secret\n").unwrap();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(root.join("a-file"), "x").unwrap();
    std::os::unix::fs::symlink(sandbox.state_dir(), root.join("to-state")).unwrap();
    let script_path = root.join("script.json");
    std::fs::write(&script_path, script(&outside).to_string()).unwrap();
    let _daemon = sandbox.start_daemon(&[]);

    let seen: Arc<Mutex<Seen>> = Arc::default();
    // Cards of session A (then C's first turn) are allowed once; B's command too, so the
    // sandbox is what stops it; any other card is refused.
    let trusted: Arc<Mutex<Option<String>>> = Arc::default();
    let command_only: Arc<Mutex<Option<String>>> = Arc::default();
    let command_card = Arc::clone(&command_only);
    let command_set = Arc::clone(&command_only);
    let on_update = Arc::clone(&seen);
    let on_card = Arc::clone(&seen);
    let trusted_card = Arc::clone(&trusted);
    let (pa, pc, da, dc, out, home2, r) = (
        proj_a.clone(),
        proj_c.clone(),
        data_a.clone(),
        data_c.clone(),
        outside.clone(),
        home.clone(),
        root.clone(),
    );
    let outcome = Client
        .v1()
        .name("codaris-e2e")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                on_update.lock().unwrap().updates.push((
                    n.session_id.0.to_string(),
                    serde_json::to_value(&n.update).unwrap(),
                ));
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let session = request.session_id.0.to_string();
                on_card.lock().unwrap().cards.push(session.clone());
                let command = command_card.lock().unwrap().as_deref() == Some(session.as_str())
                    && *request.tool_call.tool_call_id.0 == *"call_0_2_0";
                let kind = if command
                    || trusted_card.lock().unwrap().as_deref() == Some(session.as_str())
                {
                    PermissionOptionKind::AllowOnce
                } else {
                    PermissionOptionKind::RejectOnce
                };
                let id = request
                    .options
                    .iter()
                    .find(|o| o.kind == kind)
                    .map(|o| o.option_id.clone())
                    .unwrap();
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(
            agent_with(
                &sandbox,
                &script_path,
                &["--permission-mode", "accept_edits"],
            ),
            async move |cx: ConnectionTo<Agent>| {
                let init = cx
                    .send_request(
                        InitializeRequest::new(ProtocolVersion::V1)
                            .client_info(Implementation::new("codaris-e2e", "1.0")),
                    )
                    .block_task()
                    .await?;
                let init = serde_json::to_value(&init).unwrap();
                let new = |cwd: &Path, dirs: Vec<PathBuf>| {
                    cx.send_request(NewSessionRequest::new(cwd).additional_directories(dirs))
                        .block_task()
                };

                // What an editor could slip in: each refused with a sentence.
                let mut refusals = Vec::new();
                for dirs in [
                    vec![r.join("to-state")],
                    vec![PathBuf::from("data")],
                    vec![r.join("a-file")],
                    vec![PathBuf::from("/")],
                    vec![home2.clone()],
                    vec![da.clone(), r.join("missing")],
                ] {
                    let err = new(&pa, dirs.clone()).await.unwrap_err();
                    refusals.push((dirs, error_text(&err)));
                }

                // A, through a `..` path that leads to its data folder.
                let a = new(&pa, vec![pa.join("..").join("data")]).await?.session_id;
                *trusted.lock().unwrap() = Some(a.0.to_string());
                let a_stop = cx
                    .send_request(PromptRequest::new(a.clone(), text("use the data")))
                    .block_task()
                    .await?
                    .stop_reason;
                let b = new(&pa, Vec::new()).await?.session_id;
                *command_set.lock().unwrap() = Some(b.0.to_string());
                std::fs::remove_file(da.join("new.txt")).unwrap();
                std::fs::remove_file(da.join("cmd.txt")).unwrap();
                let b_stop = cx
                    .send_request(PromptRequest::new(b.clone(), text("use the data")))
                    .block_task()
                    .await?
                    .stop_reason;
                // C: its root swapped for a link after its first turn.
                let c = new(&pc, vec![dc.clone()]).await?.session_id;
                *trusted.lock().unwrap() = Some(c.0.to_string());
                cx.send_request(PromptRequest::new(c.clone(), text("use the data")))
                    .block_task()
                    .await?;
                *trusted.lock().unwrap() = None;
                std::fs::remove_dir_all(&dc).unwrap();
                std::os::unix::fs::symlink(&out, &dc).unwrap();
                let c_stop = cx
                    .send_request(PromptRequest::new(c.clone(), text("read it again")))
                    .block_task()
                    .await?
                    .stop_reason;

                let listed = cx
                    .send_request(ListSessionsRequest::new())
                    .block_task()
                    .await?;
                let listed = serde_json::to_value(&listed).unwrap();
                // A load keeps the session's roots; other ones are refused.
                cx.send_request(LoadSessionRequest::new(a.clone(), pa.clone()))
                    .block_task()
                    .await?;
                let other = cx
                    .send_request(
                        LoadSessionRequest::new(a.clone(), pa.clone())
                            .additional_directories(vec![out.clone()]),
                    )
                    .block_task()
                    .await
                    .unwrap_err();
                Ok((
                    init,
                    refusals,
                    [a, b, c].map(|s: SessionId| s.0.to_string()),
                    [a_stop, b_stop, c_stop],
                    listed,
                    error_text(&other),
                ))
            },
        )
        .await;
    let (init, refusals, [a, b, c], stops, listed, other) = outcome.unwrap();
    let seen = seen.lock().unwrap();

    assert_eq!(
        init["agentCapabilities"]["sessionCapabilities"]["additionalDirectories"],
        json!({})
    );
    let said: Vec<&str> = [
        "is inside codarisd's state directory",
        "must be an absolute path",
        "is not a directory",
        "would open the whole disk or the home directory",
        "would open the whole disk or the home directory",
        "cannot be used",
    ]
    .to_vec();
    for ((dirs, error), said) in refusals.iter().zip(said) {
        assert!(error.contains(said), "{dirs:?}: {error}");
    }
    assert_eq!(stops, [StopReason::EndTurn; 3]);

    // A: the read and the write needed no card, the command's card was allowed, and all
    // three reached the data folder.
    let a_ended = ended(&seen, &a);
    assert_eq!(a_ended.len(), 3, "{a_ended:#?}");
    assert!(
        a_ended.iter().all(|u| u["status"] == "completed"),
        "{a_ended:#?}"
    );
    assert!(
        a_ended[0]["rawOutput"]
            .as_str()
            .unwrap()
            .contains("sample,reads")
    );
    assert_eq!(
        seen.cards.iter().filter(|s| **s == a).count(),
        1,
        "{:?}",
        seen.cards
    );
    // B: the same turn in the same project, without the root: the read and the write are
    // refused, and its command, allowed, cannot write there under the sandbox.
    let b_ended = ended(&seen, &b);
    assert_eq!(b_ended.len(), 3, "{b_ended:#?}");
    assert!(
        b_ended[..2].iter().all(|u| u["status"] == "failed"),
        "{b_ended:#?}"
    );
    assert!(!data_a.join("new.txt").exists());
    if sandbox.landlock_or_skip("additional_directories_are_roots_of_their_session_only") {
        assert!(!data_a.join("cmd.txt").exists(), "{b_ended:#?}");
        let said = b_ended[2]["rawOutput"].as_str().unwrap();
        assert!(
            said.contains("the sandbox refused `../data/cmd.txt`"),
            "{said}"
        );
    }
    // C: its root worked, until swapped for a link: then it leads nowhere the session may
    // go, by the link's target or by its own path, and the secret stays unread.
    let c_ended = ended(&seen, &c);
    assert_eq!(c_ended.len(), 5, "{c_ended:#?}");
    assert!(
        c_ended[0]["rawOutput"]
            .as_str()
            .unwrap()
            .contains("harmless")
    );
    assert!(
        c_ended[3..].iter().all(|u| u["status"] == "failed"),
        "{c_ended:#?}"
    );
    assert!(
        !c_ended.iter().any(|u| u.to_string().contains("secret")),
        "{c_ended:#?}"
    );

    // The record keeps A's root resolved, shown by session/list; a load with others refused.
    let a_listed = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == a.as_str())
        .unwrap();
    assert_eq!(
        a_listed["additionalDirectories"],
        json!([data_a.display().to_string()])
    );
    assert!(
        other.contains("keeps the additional directories it was opened with"),
        "{other}"
    );

    // Every decision of A's turn recorded the root in the ledger; none of B's did.
    let export = root.join("export.jsonl");
    let output = sandbox.cli(&["ledger", "export", "-o", export.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let decisions: Vec<Value> = std::fs::read_to_string(&export)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "decision")
        .collect();
    let roots_of = |session: &str| -> Vec<Value> {
        decisions
            .iter()
            .filter(|d| d["session_id"] == session)
            .map(|d| d["request"]["task"]["allowed_roots"].clone())
            .collect()
    };
    let data = json!(data_a.display().to_string());
    let a_roots = roots_of(&a);
    assert!(!a_roots.is_empty(), "{decisions:#?}");
    assert!(
        a_roots
            .iter()
            .all(|r| r.as_array().unwrap().contains(&data)),
        "{a_roots:#?}"
    );
    assert!(
        roots_of(&b)
            .iter()
            .all(|r| !r.as_array().unwrap().contains(&data))
    );
}
