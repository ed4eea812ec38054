//! The editor's MCP servers (`session/new {mcpServers}`) through `codaris acp` and a real
//! daemon, with `codaris-mcp-fixture` as the editor's stdio server: its tools join the session
//! that names it as `name__tool` — found by `search_tools`, called, decided by the policy and
//! recorded under that name — with the daemon's environment scrubbed as for a configured
//! server; another session never sees them; a name that clashes, repeats or is no server name
//! makes no session; `session/load` starts the server again from the servers it is given.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    EnvVariable, HttpHeader, Implementation, InitializeRequest, ListSessionsRequest,
    LoadSessionRequest, McpServer, McpServerHttp, McpServerStdio, NewSessionRequest,
    PermissionOptionKind, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification, StopReason,
};
use agent_client_protocol::{Agent, Client};
use codaris_proto::v1;
use codaris_test_support::sandbox::{Sandbox, binary, stderr, wait_for};
use hyper_util::rt::TokioIo;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::net::UnixStream;
use tonic::transport::{Endpoint, Uri};

use crate::acp::{agent_with, text};

/// Every session's first turn searches for the echo tool and calls it, then binds and calls
/// the environment tool of the editor's stdio server `ed`, then the echo of its HTTP server
/// `web`; the second turn (after `session/load`) echoes again.
fn script() -> Value {
    json!({"turns": [
        {"rounds": [
            {"tool_calls": [{"name": "search_tools", "args": {"query": "echoes its text"}}]},
            {"tool_calls": [{"name": "ed__echo", "args": {"text": "from the editor's server"}}]},
            {"tool_calls": [{"name": "search_tools", "args": {"query": "ed__env"}}]},
            {"tool_calls": [{"name": "ed__env", "args": {}}]},
            {"tool_calls": [{"name": "search_tools", "args": {"query": "web__echo"}}]},
            {"tool_calls": [{"name": "web__echo", "args": {"text": "over http"}}]},
            {"text": "done"}
        ]},
        {"rounds": [
            {"tool_calls": [{"name": "ed__echo", "args": {"text": "again after load"}}]},
            {"text": "done again"}
        ]}
    ]})
}

/// Ends session `id` through the daemon's API (the adapter lets sessions go, never ends them).
async fn end_session(sandbox: &Sandbox, id: &str) {
    let socket = sandbox.socket();
    let channel = Endpoint::from_static("http://codarisd.local")
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let socket = socket.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?)) }
        }))
        .await
        .unwrap();
    v1::sessions_client::SessionsClient::new(channel)
        .end_session(v1::EndSessionRequest { id: id.to_owned() })
        .await
        .unwrap();
}

/// A child process killed when the test ends, passed or not.
struct Stopped(std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn stdio(name: &str, fixture: &Path) -> McpServer {
    McpServer::Stdio(McpServerStdio::new(name, fixture))
}

/// The text of every call's end, by session, in order: (session, title-less tool output).
fn outputs(updates: &[(String, Value)], session: &str) -> Vec<String> {
    updates
        .iter()
        .filter(|(s, u)| {
            s == session
                && u["sessionUpdate"] == "tool_call_update"
                && (u["status"] == "completed" || u["status"] == "failed")
        })
        .map(|(_, u)| u["content"].to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editors_stdio_server_joins_its_session_only_and_a_clash_makes_no_session() {
    let sandbox = Sandbox::new();
    let root = std::fs::canonicalize(sandbox.root.path()).unwrap();
    let proj = root.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let fixture = binary("codaris-mcp-fixture");
    // A configured server the editor's may not shadow.
    sandbox.write_config(&format!(
        "[mcp.servers.conf]\ncommand = {:?}\n",
        fixture.display().to_string()
    ));
    // The editor's HTTP server: the fixture listening on loopback.
    let mut http = Stopped(
        std::process::Command::new(&fixture)
            .args(["--http", "127.0.0.1:0"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(http.0.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    let script_path = root.join("script.json");
    std::fs::write(&script_path, script().to_string()).unwrap();
    // A provider key in the daemon's environment: no MCP server may inherit it.
    let _daemon = sandbox.start_daemon_in(
        &root,
        &[("OPENAI_API_KEY", "sk-daemon-secret-never-passed")],
        &[],
    );

    let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let on_update = Arc::clone(&seen);
    let fx = fixture.clone();
    let p = proj.clone();
    let outcome = Client
        .v1()
        .name("codaris-e2e")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                on_update.lock().unwrap().push((
                    n.session_id.0.to_string(),
                    serde_json::to_value(&n.update).unwrap(),
                ));
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            // No card is expected (the server asks none); any is refused.
            async move |request: RequestPermissionRequest, responder, _cx| {
                let id = request
                    .options
                    .iter()
                    .find(|o| o.kind == PermissionOptionKind::RejectOnce)
                    .map(|o| o.option_id.clone())
                    .unwrap();
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(
            agent_with(&sandbox, &script_path, &[]),
            async move |cx: ConnectionTo<Agent>| {
                let init = cx
                    .send_request(
                        InitializeRequest::new(ProtocolVersion::V1)
                            .client_info(Implementation::new("codaris-e2e", "1.0")),
                    )
                    .block_task()
                    .await?;
                let init = serde_json::to_value(&init).unwrap();
                let new = |servers: Vec<McpServer>| {
                    cx.send_request(NewSessionRequest::new(&p).mcp_servers(servers))
                        .block_task()
                };

                // Refused, each with a sentence, before any session is made.
                let mut refusals = Vec::new();
                for servers in [
                    vec![stdio("conf", &fx)],
                    vec![stdio("ed", &fx), stdio("ed", &fx)],
                    vec![stdio("../x", &fx)],
                    vec![stdio("github__x", &fx)],
                    vec![stdio("ed", Path::new("/no/such/server"))],
                ] {
                    let err = new(servers).await.unwrap_err();
                    refusals.push(format!("{} {:?}", err.message, err.data));
                }
                let made = cx
                    .send_request(ListSessionsRequest::new())
                    .block_task()
                    .await?
                    .sessions
                    .len();

                // A: the editor's server `ed`, with a variable of its own and a provider
                // key's name set to its own value.
                // `--page-size 97` changes nothing here; it marks this server's processes.
                let ed = McpServer::Stdio(
                    McpServerStdio::new("ed", &fx)
                        .args(vec!["--page-size".to_owned(), "97".to_owned()])
                        .env(vec![
                            EnvVariable::new("EDITOR_SETTING", "from-the-editor"),
                            EnvVariable::new("ANTHROPIC_API_KEY", "the-editors-own-value"),
                        ]),
                );
                let web = McpServer::Http(McpServerHttp::new("web", &url).headers(vec![
                    HttpHeader::new("Authorization", "Bearer editor-token"),
                ]));
                let a = new(vec![ed.clone(), web]).await?.session_id;
                let a_stop = cx
                    .send_request(PromptRequest::new(a.clone(), text("use the editor's tool")))
                    .block_task()
                    .await?
                    .stop_reason;
                // B: the same project, no server of its own: the same turn finds nothing.
                let b = new(Vec::new()).await?.session_id;
                let b_stop = cx
                    .send_request(PromptRequest::new(b.clone(), text("use the editor's tool")))
                    .block_task()
                    .await?
                    .stop_reason;
                // A loaded again with its server passed again: it runs again.
                cx.send_request(LoadSessionRequest::new(a.clone(), &p).mcp_servers(vec![ed]))
                    .block_task()
                    .await?;
                let again = cx
                    .send_request(PromptRequest::new(a.clone(), text("once more")))
                    .block_task()
                    .await?
                    .stop_reason;
                Ok((
                    init,
                    (refusals, made),
                    a.0.to_string(),
                    b.0.to_string(),
                    [a_stop, b_stop, again],
                ))
            },
        )
        .await;
    let (init, (refusals, made), a, b, stops) = outcome.unwrap();
    assert_eq!(made, 0, "a refused session/new made a session");
    assert_eq!(
        init["agentCapabilities"]["mcpCapabilities"]["http"],
        json!(true),
        "{init}"
    );
    let expected = [
        "the MCP server `conf` is one of codarisd's servers already",
        "the MCP server `ed` is named twice",
        "name",
        "name",
        "cannot start: the program `/no/such/server` does not exist",
    ];
    for (refusal, expected) in refusals.iter().zip(expected) {
        assert!(refusal.contains(expected), "{refusal}");
        assert!(!refusal.contains('\n'), "{refusal}");
    }
    assert!(refusals[2].contains("../x"), "{}", refusals[2]);
    assert!(refusals[3].contains("github__x"), "{}", refusals[3]);
    assert_eq!(stops, [StopReason::EndTurn; 3]);

    let updates = seen.lock().unwrap().clone();
    let a_out = outputs(&updates, &a);
    let b_out = outputs(&updates, &b);
    // A found the tool, ran it, and its server's environment is the scrubbed one plus the
    // editor's variables: never the daemon's provider key.
    assert!(a_out[0].contains("ed__echo"), "{a_out:#?}");
    assert!(a_out[1].contains("from the editor's server"), "{a_out:#?}");
    assert!(
        a_out[3].contains("EDITOR_SETTING=from-the-editor"),
        "{a_out:#?}"
    );
    assert!(
        a_out[3].contains("ANTHROPIC_API_KEY=the-editors-own-value"),
        "{a_out:#?}"
    );
    assert!(!a_out[3].contains("sk-daemon-secret"), "{a_out:#?}");
    assert!(a_out[5].contains("over http"), "{a_out:#?}");
    assert!(a_out[6].contains("again after load"), "{a_out:#?}");
    // B never saw it.
    assert!(!b_out[0].contains("ed__echo"), "{b_out:#?}");
    assert!(
        b_out[1].contains("no tool is named `ed__echo`"),
        "{b_out:#?}"
    );

    // Decided and recorded under `ed__echo`, with the definition the policy was given;
    // nothing of the server's environment in the ledger.
    // `session/load` replaced the server it started at `session/new`: one runs.
    let running = || {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|l| l.contains("codaris-mcp-fixture") && l.contains("--page-size 97"))
            .count()
    };
    wait_for(Duration::from_secs(10), || running() == 1);
    assert_eq!(running(), 1);

    // The session's server keeps its name while it runs: `codaris mcp add` may not take it.
    let added = sandbox.cli(&["mcp", "add", "ed", "--", fixture.to_str().unwrap()]);
    assert!(!added.status.success());
    assert!(
        stderr(&added).contains("is a session's own server"),
        "{}",
        stderr(&added)
    );

    // Ending the session stops its server.
    end_session(&sandbox, &a).await;
    wait_for(Duration::from_secs(10), || running() == 0);
    assert_eq!(running(), 0, "the session's server outlived it");

    let export = root.join("export.jsonl");
    let output = sandbox.cli(&["ledger", "export", "-o", export.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let exported = std::fs::read_to_string(&export).unwrap();
    assert!(
        !exported.contains("from-the-editor"),
        "the env was recorded"
    );
    assert!(
        !exported.contains("the-editors-own-value"),
        "the env was recorded"
    );
    assert!(!exported.contains("editor-token"), "a header was recorded");
    let web: Vec<bool> = exported
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "decision" && l["request"]["tool"] == "web__echo")
        .map(|d| d["session_id"] == a.as_str() && d["decision"]["code"] == "allowed_by_default")
        .collect();
    // A's call allowed, B's (no such tool there) not.
    assert_eq!(web, [true, false]);
    let decisions: Vec<Value> = exported
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "decision" && l["request"]["tool"] == "ed__echo")
        .collect();
    let codes: Vec<(&str, &str)> = decisions
        .iter()
        .map(|d| {
            (
                d["session_id"].as_str().unwrap(),
                d["decision"]["code"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        codes,
        [
            (a.as_str(), "allowed_by_default"),
            (b.as_str(), "unknown_tool"),
            (a.as_str(), "allowed_by_default"),
        ],
        "{decisions:#?}"
    );
    assert!(
        decisions[0]["request"]["spec"]["definition"].is_string(),
        "{:#?}",
        decisions[0]
    );
}

/// A subagent has its family's editor servers, as it has the rest of its parent's tools: the
/// child of a session the editor gave `ed` finds and calls `ed__echo`, and the call is decided
/// and recorded under the child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_calls_its_familys_editor_server() {
    let sandbox = Sandbox::new();
    let root = std::fs::canonicalize(sandbox.root.path()).unwrap();
    let proj = root.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let fixture = binary("codaris-mcp-fixture");
    sandbox.write_config("");
    let script = json!({
        "turns": [{"rounds": [
            {"tool_calls": [{"name": "search_tools", "args": {"query": "delegate a task to a subagent"}}]},
            {"tool_calls": [{"name": "spawn_agent", "args": {"prompt": "echo it", "description": "echo"}}]},
            {"text": "done"}
        ]}],
        "children": [{"turns": [{"rounds": [
            {"tool_calls": [{"name": "search_tools", "args": {"query": "echoes its text"}}]},
            {"tool_calls": [{"name": "ed__echo", "args": {"text": "from the child"}}]},
            {"text": "echoed"}
        ]}]}]
    });
    let script_path = root.join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let _daemon = sandbox.start_daemon_in(&root, &[], &[]);
    let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let on_update = Arc::clone(&seen);
    let p = proj.clone();
    let stop = Client
        .v1()
        .name("codaris-e2e")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                on_update.lock().unwrap().push((
                    n.session_id.0.to_string(),
                    serde_json::to_value(&n.update).unwrap(),
                ));
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(
            agent_with(&sandbox, &script_path, &[]),
            async move |cx: ConnectionTo<Agent>| {
                cx.send_request(
                    InitializeRequest::new(ProtocolVersion::V1)
                        .client_info(Implementation::new("codaris-e2e", "1.0")),
                )
                .block_task()
                .await?;
                let session = cx
                    .send_request(
                        NewSessionRequest::new(&p).mcp_servers(vec![stdio("ed", &fixture)]),
                    )
                    .block_task()
                    .await?
                    .session_id;
                let stop = cx
                    .send_request(PromptRequest::new(session, text("have a child echo")))
                    .block_task()
                    .await?
                    .stop_reason;
                Ok(stop)
            },
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn);
    let updates = seen.lock().unwrap().clone();
    let reports = outputs(&updates, "s000001");
    assert!(
        reports.iter().any(
            |r| r.contains("subagent `s000002` (general: echo) reported") && r.contains("echoed")
        ),
        "{reports:#?}"
    );
    let decided = sandbox.cli(&["ledger", "decisions", "--session", "s000002", "--json"]);
    let echo = codaris_test_support::sandbox::events(&decided)
        .into_iter()
        .find(|d| d["tool"] == "ed__echo")
        .expect("the child's call of the editor's tool is recorded under the child");
    assert_eq!(echo["decision"]["verdict"], "allow", "{echo}");
    assert_eq!(echo["parent_session_id"], "s000001");
    end_session(&sandbox, "s000001").await;
}
