//! MCP tools through the whole daemon, against the scripted fixture server
//! (`codaris-mcp-fixture`, built beside the daemon by `cargo test --workspace`): found by search
//! as kind `mcp`, bound, decided by the policy with the spec their registration and definition
//! give, run on the server, and recorded; refused in a read-only turn, outside the fence, when
//! switched off, and after a rug pull.

use std::time::{Duration, Instant};

use codaris_proto::v1;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::InProcess;
use crate::turns::tool_results as turn;

fn fixture() -> String {
    codaris_test_support::sandbox::binary("codaris-mcp-fixture")
        .display()
        .to_string()
}

/// A daemon whose configuration declares the fixture as server `fx`, with `extra` appended to
/// its table; returns once the server's tools are in the index.
async fn daemon_with_fixture(extra: &str) -> InProcess {
    let toml = format!(
        "[mcp.servers.fx]\ncommand = \"{}\"\nkeywords = [\"weather\"]\n{extra}",
        fixture()
    );
    let daemon = InProcess::start_with_toml(&toml).await;
    assert!(
        wait_for_tool(&daemon, "fx__echo", Duration::from_secs(30)).await,
        "the fixture's tools never reached the index"
    );
    daemon
}

async fn tool_names(daemon: &InProcess) -> Vec<v1::ToolInfo> {
    let mut tools = v1::tools_client::ToolsClient::new(daemon.channel().await);
    tools
        .list_tools(v1::ListToolsRequest {})
        .await
        .unwrap()
        .into_inner()
        .tools
}

async fn wait_for_tool(daemon: &InProcess, name: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if tool_names(daemon).await.iter().any(|t| t.name == name) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// A script that searches for `query`, then calls `tool` with `args`.
fn search_then_call(query: &str, tool: &str, args: serde_json::Value) -> serde_json::Value {
    json!({"rounds": [
        {"tool_calls": [{"name": "search_tools", "args": {"query": query}}]},
        {"tool_calls": [{"name": tool, "args": args}]},
        {"text": "done"}
    ]})
}

#[tokio::test]
async fn a_search_finds_an_mcp_tool_by_its_servers_keyword_and_the_call_runs_on_the_server() {
    let daemon = daemon_with_fixture("").await;
    let echo = tool_names(&daemon)
        .await
        .into_iter()
        .find(|t| t.name == "fx__echo")
        .unwrap();
    assert_eq!(echo.kind, "mcp");
    assert_eq!(echo.server, "fx");
    assert!(
        echo.description.starts_with("[fx] "),
        "{}",
        echo.description
    );

    let results = turn(
        &daemon,
        search_then_call("weather echo", "fx__echo", json!({"text": "sunny"})),
        v1::PermissionMode::Ask,
        "echo something",
    )
    .await;
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].2.contains("fx__echo"), "{}", results[0].2);
    assert_eq!(results[1].0, "fx__echo");
    assert_eq!(results[1].1, "allowed_by_default");
    assert!(results[1].2.contains("sunny"), "{}", results[1].2);

    // The decision recorded the definition it was made under.
    let mut ledger = v1::ledger_client::LedgerClient::new(daemon.channel().await);
    let decisions = ledger
        .list_decisions(v1::ListDecisionsRequest {
            limit: 5,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let text = format!("{decisions:?}");
    assert!(text.contains("definition"), "{text}");
}

#[tokio::test]
async fn the_other_agents_spelling_is_the_same_call() {
    let daemon = daemon_with_fixture("").await;
    let results = turn(
        &daemon,
        search_then_call("echo", "mcp__fx__echo", json!({"text": "again"})),
        v1::PermissionMode::Ask,
        "echo",
    )
    .await;
    assert_eq!(results[1].1, "allowed_by_default", "{results:?}");
    assert!(results[1].2.contains("again"));
}

/// The name of an allowed MCP call is read once, where the call enters the turn loop: the
/// decision (its spec, its marks, its server's switch), the record, the run on the server,
/// the output limits and the wire all take the parsed id. Both spellings; the server's name is
/// this test's own, so no other test's calls are counted.
#[tokio::test]
async fn one_allowed_mcp_call_reads_its_name_once() {
    use codaris_catalogue::parse_count;

    let toml = format!(
        "[tools]\nlean_surface = false\n\n[mcp.servers.readonce]\ncommand = \"{}\"\n",
        fixture()
    );
    let daemon = InProcess::start_with_toml(&toml).await;
    assert!(
        wait_for_tool(&daemon, "readonce__echo", Duration::from_secs(30)).await,
        "the fixture's tools never reached the index"
    );
    let names = ["readonce__echo", "mcp__readonce__echo"];
    let before = names.map(parse_count::of);
    let results = turn(
        &daemon,
        json!({"rounds": [
            {"tool_calls": [{"name": names[0], "args": {"text": "once"}}]},
            {"tool_calls": [{"name": names[1], "args": {"text": "again"}}]},
            {"text": "done"}
        ]}),
        v1::PermissionMode::Ask,
        "echo",
    )
    .await;
    assert_eq!(results.len(), 2, "{results:?}");
    for ((tool, code, output), text) in results.iter().zip(["once", "again"]) {
        assert_eq!(code, "allowed_by_default", "{tool}");
        assert!(output.contains(text), "{tool}: {output}");
    }
    let after = names.map(parse_count::of);
    assert_eq!(
        [after[0] - before[0], after[1] - before[1]],
        [1, 1],
        "parses of each called name during its call"
    );
}

/// The decision code and output of calling `tool` with `args` after a search for `query`, in a
/// bypass-mode turn that starts with `text`.
async fn last_call(
    daemon: &InProcess,
    query: &str,
    tool: &str,
    args: serde_json::Value,
    text: &str,
) -> (String, String) {
    let results = turn(
        daemon,
        search_then_call(query, tool, args),
        v1::PermissionMode::Bypass,
        text,
    )
    .await;
    let (_, code, output) = results.last().cloned().unwrap();
    (code, output)
}

#[tokio::test]
async fn a_changing_mcp_tool_is_refused_in_a_review_and_a_path_outside_the_roots_is_refused() {
    let daemon = daemon_with_fixture("").await;
    let inside = daemon.temp.path().join("inside.txt");
    let write = |path: &std::path::Path| json!({"path": path.display().to_string(), "text": "x"});
    // An untrusted server's tool counts as changing things: a read-only activity refuses it.
    let (code, _) = last_call(
        &daemon,
        "write file",
        "fx__write_file",
        write(&inside),
        "/review is this fine?",
    )
    .await;
    assert_eq!(code, "read_only_activity");
    assert!(!inside.exists(), "a refused call never reached the server");

    // Outside every root: refused whatever the mode, and the file is never written; by a path
    // argument, and by a URI in an argument the server does not call a path.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("planted.txt");
    let (code, _) = last_call(
        &daemon,
        "write file",
        "fx__write_file",
        write(&target),
        "write it",
    )
    .await;
    assert_eq!(code, "mutate_outside_fence");
    let uri = json!({"text": format!("file://{}", target.display())});
    let (code, _) = last_call(&daemon, "echo", "fx__echo", uri, "echo").await;
    assert_eq!(code, "mutate_outside_fence");
    assert!(!target.exists());

    // Inside the roots, in agent mode, it runs.
    let (code, _) = last_call(
        &daemon,
        "write file",
        "fx__write_file",
        write(&inside),
        "write it",
    )
    .await;
    assert_eq!(code, "allowed_by_default");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "x");
}

#[tokio::test]
async fn a_switched_off_mcp_tool_is_neither_found_nor_run() {
    let daemon = daemon_with_fixture("").await;
    let mut tools = v1::tools_client::ToolsClient::new(daemon.channel().await);
    tools
        .set_tool_enabled(v1::SetToolEnabledRequest {
            name: "fx__echo".to_owned(),
            enabled: false,
        })
        .await
        .unwrap();
    let results = turn(
        &daemon,
        search_then_call("echo", "fx__echo", json!({"text": "x"})),
        v1::PermissionMode::Bypass,
        "echo",
    )
    .await;
    assert!(!results[0].2.contains("fx__echo —"), "{}", results[0].2);
    assert_eq!(results.last().unwrap().1, "tool_withheld", "{results:?}");
}

#[tokio::test]
async fn a_server_switched_off_from_the_start_has_its_tools_withheld_not_unknown() {
    // Never started, so never listed: its tools are still its own, and withheld.
    let toml = format!(
        "[mcp.servers.fx]\ncommand = \"{}\"\nenabled = false\n",
        fixture()
    );
    let daemon = InProcess::start_with_toml(&toml).await;
    let results = turn(
        &daemon,
        search_then_call("echo", "fx__echo", json!({"text": "x"})),
        v1::PermissionMode::Bypass,
        "echo",
    )
    .await;
    assert!(!results[0].2.contains("fx__echo"), "{}", results[0].2);
    let (_, code, output) = results.last().unwrap();
    assert_eq!(code, "tool_withheld", "{results:?}");
    assert!(output.contains("fx__echo"), "{output}");
    // The other agents' spelling names the same withheld tool.
    let results = turn(
        &daemon,
        search_then_call("echo", "mcp__fx__echo", json!({"text": "x"})),
        v1::PermissionMode::Bypass,
        "echo",
    )
    .await;
    assert_eq!(results.last().unwrap().1, "tool_withheld", "{results:?}");
}

#[tokio::test]
async fn lines_in_a_result_that_look_like_bindings_bind_nothing() {
    let daemon = daemon_with_fixture("").await;
    let script = json!({"rounds": [
        {"tool_calls": [{"name": "search_tools", "args": {"query": "binding lines"}}]},
        {"tool_calls": [{"name": "fx__bound_lines", "args": {}}]},
        {"tool_calls": [{"name": "fx__write_file", "args": {"path": "a.txt", "text": "x"}}]},
        {"text": "done"}
    ]});
    let results = turn(&daemon, script, v1::PermissionMode::Bypass, "go").await;
    assert_eq!(results[1].1, "allowed_by_default", "{results:?}");
    assert!(results[1].2.contains("Bound for your next step"));
    // `fx__write_file` was named in the result, not bound by a search.
    assert_eq!(results[2].1, "not_bound", "{results:?}");
}

#[tokio::test]
async fn a_rug_pull_holds_the_changed_tool_back_with_its_own_code() {
    let daemon = daemon_with_fixture("").await;
    let results = turn(
        &daemon,
        search_then_call("rug pull", "fx__rug_pull", json!({})),
        v1::PermissionMode::Bypass,
        "go",
    )
    .await;
    assert_eq!(
        results.last().unwrap().1,
        "allowed_by_default",
        "{results:?}"
    );
    // The server says its list changed; once the new description is indexed, echo is held.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let echo = tool_names(&daemon)
            .await
            .into_iter()
            .find(|t| t.name == "fx__echo");
        let described = echo.map(|e| e.description).unwrap_or_default();
        if !described.is_empty() && !described.contains("Echoes") || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let results = turn(
        &daemon,
        search_then_call("echo", "fx__echo", json!({"text": "x"})),
        v1::PermissionMode::Bypass,
        "echo",
    )
    .await;
    let (_, code, output) = results.last().unwrap();
    assert_eq!(code, "definition_changed", "{results:?}");
    assert!(output.contains("description changed"), "{output}");
    assert!(output.contains("codaris mcp approve fx"), "{output}");
}

#[tokio::test]
async fn the_daemon_serves_before_a_slow_server_is_ready_and_an_unready_tool_is_not_offered() {
    // A server that never answers its handshake: the daemon is up at once, the tool absent.
    let toml =
        "[mcp.servers.slow]\ncommand = \"sleep\"\nargs = [\"30\"]\nstartup_timeout_seconds = 30\n";
    let started = Instant::now();
    let daemon = InProcess::start_with_toml(toml).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(!tool_names(&daemon).await.iter().any(|t| t.kind == "mcp"));
}

#[tokio::test]
async fn a_crashed_servers_tools_answer_that_it_is_restarting_until_it_is_back() {
    let daemon = daemon_with_fixture("").await;
    let script = json!({"rounds": [
        {"tool_calls": [{"name": "search_tools", "args": {"query": "crash echo"}}]},
        {"tool_calls": [{"name": "fx__crash", "args": {}}]},
        {"tool_calls": [{"name": "fx__echo", "args": {"text": "still there?"}}]},
        {"text": "done"}
    ]});
    let results = turn(&daemon, script, v1::PermissionMode::Bypass, "go").await;
    assert_eq!(results[1].1, "allowed_by_default", "{results:?}");
    // The crash reached the model as a failed call, and the next call of the server's tools
    // says why it cannot run rather than that the tool does not exist.
    assert_eq!(results[2].1, "allowed_by_default", "{results:?}");
    assert!(
        results[2].2.contains("unavailable until it is back"),
        "{}",
        results[2].2
    );
    // It comes back by itself, tools and all.
    let mut tools = v1::tools_client::ToolsClient::new(daemon.channel().await);
    tools.list_tools(v1::ListToolsRequest {}).await.unwrap();
    assert!(wait_for_tool(&daemon, "fx__echo", Duration::from_secs(30)).await);
}

/// `ListServers` saying `ready` is a promise that the server's tools are in the index: a client
/// that waits for it and lists or searches at once must find them, however late the daemon's
/// own re-indexing task runs. Polled without a pause on a runtime of several threads, each of
/// several servers added at run time is checked the moment it first reads ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_listed_ready_has_its_tools_in_the_index_already() {
    let daemon = InProcess::start_with_toml("").await;
    let mut mcp = v1::mcp_client::McpClient::new(daemon.channel().await);
    for n in 0..6 {
        let name = format!("fx{n}");
        mcp.add_server(v1::AddServerRequest {
            name: name.clone(),
            command: fixture(),
            ..Default::default()
        })
        .await
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let servers = mcp
                .list_servers(v1::ListServersRequest {})
                .await
                .unwrap()
                .into_inner()
                .servers;
            let state = servers
                .iter()
                .find(|s| s.name == name)
                .map(|s| s.state.clone())
                .unwrap_or_default();
            assert_ne!(state, "failed", "{servers:?}");
            if state == "ready" {
                break;
            }
            assert!(Instant::now() < deadline, "{name} never became ready");
            tokio::task::yield_now().await;
        }
        let echo = format!("{name}__echo");
        let listed = tool_names(&daemon).await;
        assert!(
            listed.iter().any(|t| t.name == echo),
            "{name} read ready but {echo} was not listed"
        );
    }
}
