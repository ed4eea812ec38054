//! Who may answer a card, and what an answer replies: the card's secret, a peer the daemon
//! started, the grant's id once durable, and a recorded deny that asks nothing again.

use codaris_proto::v1;
use codaris_test_support::daemon::InProcess;
use pretty_assertions::assert_eq;
use serde_json::json;
use tonic::Code;

use crate::turns::{Sessions, answer_to, ask_session, next_card, rest_answering, start_turn};

fn asks(capability: &str, path: &str) -> serde_json::Value {
    json!({"tool_calls": [{"name": "request_capability",
        "args": {"capability": capability, "path": path, "reason": "save the report"}}]})
}

async fn grants_of(daemon: &InProcess, session: &str) -> Vec<v1::Grant> {
    v1::ledger_client::LedgerClient::new(daemon.channel().await)
        .list_grants(v1::ListGrantsRequest {
            session_id: session.to_owned(),
            include_inactive: true,
        })
        .await
        .unwrap()
        .into_inner()
        .grants
}

async fn export(daemon: &InProcess) -> String {
    let mut stream = v1::ledger_client::LedgerClient::new(daemon.channel().await)
        .export_ledger(v1::ExportLedgerRequest::default())
        .await
        .unwrap()
        .into_inner();
    let mut text = Vec::new();
    while let Some(chunk) = stream.message().await.unwrap() {
        text.extend(chunk.jsonl);
    }
    String::from_utf8(text).unwrap()
}

/// A turn that asks for one capability on a card, then says `done`: its session and stream.
pub(crate) async fn one_card_session(
    daemon: &InProcess,
) -> (Sessions, String, tonic::Streaming<v1::TurnEvent>) {
    let script = json!({"turns": [{"rounds": [asks("mutate_outside_fence", "/tmp/out"), {"text": "done"}]}]});
    let (mut sessions, id) = ask_session(daemon, &script).await;
    let stream = start_turn(&mut sessions, &id, "save it").await;
    (sessions, id, stream)
}

#[tokio::test]
async fn an_answer_without_the_cards_secret_is_refused_and_the_card_stays_open() {
    let daemon = InProcess::start().await;
    let (mut sessions, id, mut stream) = one_card_session(&daemon).await;
    let card = next_card(&mut stream).await;
    assert_eq!(card.answer_secret.len(), 64, "256 bits in hex");

    // What a process that read the open card from the ledger could send.
    let mut guessed = card.answer_secret.clone().into_bytes();
    guessed[10] = if guessed[10] == b'a' { b'b' } else { b'a' };
    for secret in [String::new(), String::from_utf8(guessed).unwrap()] {
        let mut forged = answer_to(&id, &card, v1::CardAnswer::AllowSession);
        forged.answer_secret = secret;
        let status = sessions.answer_card(forged).await.unwrap_err();
        assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
        assert_eq!(status.message().lines().count(), 1, "{status:?}");
        assert!(status.message().contains(&card.id), "{status:?}");
        assert!(status.message().contains("stays open"), "{status:?}");
    }
    assert!(
        grants_of(&daemon, &id).await.is_empty(),
        "nothing was granted"
    );

    // The secret is in no record an RPC hands out.
    let ledger = export(&daemon).await;
    assert!(ledger.contains(&card.id), "the card is open in the ledger");
    assert!(!ledger.contains(&card.answer_secret), "{ledger}");

    // The card stayed open: its own client answers it.
    let reply = sessions
        .answer_card(answer_to(&id, &card, v1::CardAnswer::Deny))
        .await
        .unwrap()
        .into_inner();
    assert!(reply.accepted);
    rest_answering(&mut stream, &mut sessions, &id, v1::CardAnswer::Deny).await;
    assert!(!export(&daemon).await.contains(&card.answer_secret));
    daemon.stop().await;
}

#[tokio::test]
async fn the_reply_names_the_durable_grant_an_answer_recorded() {
    let daemon = InProcess::start().await;
    for (answer, lifetime) in [
        (v1::CardAnswer::AllowSession, v1::GrantLifetime::Session),
        (v1::CardAnswer::Deny, v1::GrantLifetime::Deny),
    ] {
        let (mut sessions, id, mut stream) = one_card_session(&daemon).await;
        let card = next_card(&mut stream).await;
        let reply = sessions
            .answer_card(answer_to(&id, &card, answer))
            .await
            .unwrap()
            .into_inner();
        assert!(reply.accepted);
        assert!(!reply.grant_id.is_empty(), "{reply:?}");
        assert_eq!(reply.grant_ids, std::slice::from_ref(&reply.grant_id));
        // Already durable when the reply came: listed before the turn is read any further.
        let grants = grants_of(&daemon, &id).await;
        assert_eq!(grants.len(), 1, "{grants:?}");
        assert_eq!(grants[0].id, reply.grant_id);
        assert_eq!(grants[0].lifetime, i32::from(lifetime));
        let exported = export(&daemon).await;
        let card_line = exported
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|l| l["id"] == card.id.as_str() && l["answer"].is_string());
        assert!(card_line.is_some(), "no answered card line in {exported}");
        let card_line = card_line.unwrap();
        assert_eq!(card_line["grant_id"], reply.grant_id.as_str());
        stream_to_end(&mut stream).await;
    }
    daemon.stop().await;
}

async fn stream_to_end(stream: &mut tonic::Streaming<v1::TurnEvent>) {
    while stream.message().await.unwrap().is_some() {}
}

#[tokio::test]
async fn a_recorded_deny_answers_the_same_request_at_once_without_a_card() {
    let daemon = InProcess::start().await;
    let script = json!({"turns": [{"rounds": [
        asks("read_outside_fence", "/etc"),
        asks("read_outside_fence", "/etc"),
        // Beneath the refused path, spelled another way.
        asks("read_outside_fence", "/etc/./ssl/../hosts"),
        {"text": "done"}
    ]}]});
    let (mut sessions, id) = ask_session(&daemon, &script).await;
    let mut stream = start_turn(&mut sessions, &id, "read them").await;
    // Answered no, and then every later card (there must be none) yes.
    let first = next_card(&mut stream).await;
    sessions
        .answer_card(answer_to(&id, &first, v1::CardAnswer::Deny))
        .await
        .unwrap();
    let rest = rest_answering(
        &mut stream,
        &mut sessions,
        &id,
        v1::CardAnswer::AllowSession,
    )
    .await;
    assert!(rest.cards.is_empty(), "{rest:?}");
    let firsts: Vec<&str> = rest
        .outputs
        .iter()
        .map(|o| o.lines().next().unwrap_or(""))
        .collect();
    assert_eq!(
        firsts,
        [
            "the person refused `read_outside_fence` on `/etc`; do not ask again",
            "the person refused `read_outside_fence` on `/etc`; do not ask again",
            "the person refused `read_outside_fence` on `/etc/hosts`; do not ask again",
        ]
    );
    let grants = grants_of(&daemon, &id).await;
    assert_eq!(grants.len(), 1, "only the one deny: {grants:?}");
    daemon.stop().await;
}

#[tokio::test]
async fn a_request_that_could_grant_nothing_raises_no_card() {
    let daemon = InProcess::start().await;
    let script = json!({"turns": [{"rounds": [
        asks("mutate_outside_fence", "out/report.txt"),
        {"tool_calls": [{"name": "request_capability", "args": {"capability": "send_http", "reason": "fetch"}}]},
        {"text": "done"}
    ]}]});
    let (mut sessions, id) = ask_session(&daemon, &script).await;
    let mut stream = start_turn(&mut sessions, &id, "ask").await;
    let rest = rest_answering(
        &mut stream,
        &mut sessions,
        &id,
        v1::CardAnswer::AllowSession,
    )
    .await;
    assert!(rest.cards.is_empty(), "{rest:?}");
    assert_eq!(
        rest.outputs,
        [
            "`path` must be an absolute path for `mutate_outside_fence`, not `out/report.txt`",
            "request_capability for `send_http` needs `path`: the path, origin, tool or command prefix the refusal named",
        ]
    );
    assert!(grants_of(&daemon, &id).await.is_empty());
    daemon.stop().await;
}

/// Set by [`a_process_the_daemon_started_is_refused_at_the_socket`] for the copy of this test
/// binary it runs as a client.
const PROBE_SOCKET: &str = "CODARIS_TEST_PROBE_SOCKET";

/// Run as a child of the daemon's process: calls `Daemon.Status` over the socket and prints
/// `served` or `refused: <why>`. Not a test of its own, so ignored; the test that needs it runs
/// it with `--ignored`. (A binary of its own would be installed along with `codarisd`.)
#[tokio::test]
#[ignore = "the client half of a_process_the_daemon_started_is_refused_at_the_socket, run by it"]
async fn peer_probe() {
    let socket = std::env::var_os(PROBE_SOCKET)
        .unwrap_or_else(|| panic!("{PROBE_SOCKET} names the socket to probe"));
    let connect = tonic::transport::Endpoint::from_static("http://codarisd.test")
        .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
            let socket = socket.clone();
            async move {
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(
                    tokio::net::UnixStream::connect(socket).await?,
                ))
            }
        }))
        .await;
    let outcome = match connect {
        Ok(channel) => v1::daemon_client::DaemonClient::new(channel)
            .status(v1::StatusRequest::default())
            .await
            .map(|_| ())
            .map_err(|status| status.to_string()),
        Err(err) => Err(err.to_string()),
    };
    match outcome {
        Ok(()) => println!("probe: served"),
        Err(why) => println!("probe: refused: {why}"),
    }
}

#[tokio::test]
async fn a_process_the_daemon_started_is_refused_at_the_socket() {
    let daemon = InProcess::start().await;
    // daemon (this process) -> sh -> this test binary as a client.
    let exe = std::env::current_exe().unwrap();
    let output = tokio::process::Command::new("sh")
        .arg("-c")
        .arg("\"$0\" --exact cards::peer_probe --ignored --nocapture --test-threads 1")
        .arg(&exe)
        .env(PROBE_SOCKET, &daemon.socket)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("probe: refused"),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The daemon's own process is served as before.
    let status = v1::daemon_client::DaemonClient::new(daemon.channel().await)
        .status(v1::StatusRequest::default())
        .await;
    assert!(status.is_ok(), "{status:?}");
    daemon.stop().await;
}
