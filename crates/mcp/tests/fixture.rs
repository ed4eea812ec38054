//! The client against `codaris-mcp-fixture`, a server scripted to misbehave: long paginated
//! lists and a looping cursor, a reply over the stdio line limit, a call that never answers, a
//! crash mid-call, definitions that change after they were listed, bursts of list_changed, and a
//! child process left in its group. Over stdio, and over streamable HTTP where the transports
//! differ.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use codaris_mcp::{
    CallError, MAX_LINE, Registry, ServerName, ServerSpec, ServerView, State, ToolError,
};
use serde_json::json;
use tokio::io::AsyncBufReadExt;

const FIXTURE: &str = env!("CARGO_BIN_EXE_codaris-mcp-fixture");
/// How long anything here may take before the test counts it as hung.
const PATIENCE: Duration = Duration::from_secs(30);
/// The scripted tools every fixture offers (echo … stats).
const SCRIPTED: usize = 13;

fn name(text: &str) -> ServerName {
    ServerName::parse(text).unwrap()
}

fn stdio(server: &str, args: &[&str]) -> ServerSpec {
    ServerSpec::stdio(
        name(server),
        FIXTURE,
        args.iter().map(|a| (*a).to_owned()).collect(),
    )
}

/// A fixture serving streamable HTTP on a free port, stopped when dropped.
struct HttpFixture {
    child: tokio::process::Child,
    url: String,
}

async fn http_fixture(args: &[&str]) -> HttpFixture {
    let mut child = tokio::process::Command::new(FIXTURE)
        .args(["--http", "127.0.0.1:0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(PATIENCE, lines.next_line())
        .await
        .expect("the HTTP fixture did not start")
        .unwrap()
        .expect("the HTTP fixture ended before it listened");
    let url = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    HttpFixture { child, url }
}

fn http(server: &str, fixture: &HttpFixture) -> ServerSpec {
    ServerSpec::http(name(server), fixture.url.clone())
}

/// Waits, on the registry's change counter, until `server` satisfies `done`.
async fn wait_for(
    registry: &Registry,
    server: &str,
    what: &str,
    done: impl Fn(&ServerView) -> bool,
) -> ServerView {
    let mut changes = registry.changes();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        changes.borrow_and_update();
        let view = registry
            .server(&name(server))
            .expect("the server is registered");
        if done(&view) {
            return view;
        }
        tokio::time::timeout_at(deadline, changes.changed())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{server} never got {what}: {:?} {:?}",
                    view.state, view.error
                )
            })
            .unwrap();
    }
}

async fn ready(registry: &Registry, server: &str) -> ServerView {
    wait_for(registry, server, "ready", |v| v.state == State::Ready).await
}

async fn started(spec: ServerSpec) -> (Registry, ServerView) {
    let server = spec.name.to_string();
    let registry = Registry::new();
    registry.add(spec);
    let view = ready(&registry, &server).await;
    (registry, view)
}

async fn text(registry: &Registry, tool: &str, arguments: serde_json::Value) -> String {
    let rendered = registry.call(tool, arguments).await.unwrap();
    assert!(!rendered.is_error, "{tool} failed: {}", rendered.text);
    rendered.text
}

/// The fixture's counters (`stats`), by name.
async fn stats(registry: &Registry, server: &str) -> BTreeMap<String, u64> {
    text(registry, &format!("{server}__stats"), json!({}))
        .await
        .lines()
        .filter_map(|line| line.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.parse().unwrap()))
        .collect()
}

fn digest(view: &ServerView, tool: &str) -> Option<String> {
    view.tools
        .iter()
        .find(|t| t.name == tool)
        .map(|t| t.definition_digest())
}

// --- Listing ---------------------------------------------------------------------------------

async fn all_pages_are_listed(spec: ServerSpec) {
    let (registry, view) = started(spec).await;
    assert_eq!(view.tools.len(), SCRIPTED + 250);
    assert_eq!(view.protocol, "2025-11-25");
    assert!(
        view.server_info.starts_with("codaris-mcp-fixture "),
        "{}",
        view.server_info
    );
    let names: Vec<String> = view
        .tools
        .iter()
        .map(|t| t.prefixed(&view.spec.name))
        .collect();
    assert!(names.contains(&"fx__tool_000".to_owned()));
    assert!(names.contains(&"fx__tool_249".to_owned()));
    let unique: std::collections::BTreeSet<_> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "a page was listed twice");
    // 262 tools at 7 a page.
    assert_eq!(stats(&registry, "fx").await["lists"], 38);
    assert_eq!(text(&registry, "fx__tool_123", json!({})).await, "tool_123");
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_of_a_long_list_is_listed_over_stdio() {
    all_pages_are_listed(stdio("fx", &["--tools", "250", "--page-size", "7"])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_of_a_long_list_is_listed_over_http() {
    let fixture = http_fixture(&["--tools", "250", "--page-size", "7"]).await;
    all_pages_are_listed(http("fx", &fixture)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_cursor_fails_the_server_and_names_the_cursor() {
    let registry = Registry::new();
    registry.add(stdio("loop", &["--tools", "20", "--repeat-cursor"]));
    let view = wait_for(&registry, "loop", "failed", |v| v.state == State::Failed).await;
    let error = view.error.unwrap_or_default();
    assert!(error.contains("repeats the cursor `loop`"), "{error}");
    assert!(view.tools.is_empty());
    let refused = registry.call("loop__echo", json!({"text": "hi"})).await;
    assert!(
        matches!(refused, Err(ToolError::Unavailable { .. })),
        "{refused:?}"
    );
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_are_listed_after_notifications_sent_during_the_handshake() {
    // server-everything sends list_changed while it handles `initialized`; over stdio they can
    // arrive before the first listing's reply, over HTTP they may be lost. Either way the
    // registry ends up with the whole set, listed at most twice.
    let fixture = http_fixture(&["--list-changed-on-init", "5"]).await;
    for spec in [
        stdio("early", &["--list-changed-on-init", "5"]),
        http("early", &fixture),
    ] {
        let (registry, view) = started(spec).await;
        assert_eq!(view.tools.len(), SCRIPTED);
        let lists = stats(&registry, "early").await["lists"];
        assert!((1..=2).contains(&lists), "listed {lists} times");
        registry.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_listed_twice_is_offered_once_as_first_listed() {
    let (registry, view) = started(stdio("dup", &["--duplicate"])).await;
    let names: Vec<String> = view
        .tools
        .iter()
        .map(|t| t.prefixed(&view.spec.name))
        .collect();
    let unique: std::collections::BTreeSet<_> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    assert_eq!(view.tools.len(), SCRIPTED);
    let echo = view.tool("dup__echo").unwrap();
    assert_eq!(echo.description, "Echoes its text.");
    assert_eq!(
        text(&registry, "dup__echo", json!({"text": "once"})).await,
        "once"
    );
    registry.shutdown().await;
}

// --- Replies that never come -----------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_over_the_line_limit_fails_the_call_at_once() {
    let (registry, _) = started(stdio("big", &[])).await;
    let begun = Instant::now();
    let failed = registry
        .call("big__huge", json!({"bytes": MAX_LINE + 1}))
        .await;
    assert!(begun.elapsed() < PATIENCE, "took {:?}", begun.elapsed());
    match failed {
        Err(ToolError::Call {
            source: CallError::Closed(why),
            ..
        }) => assert!(why.contains("larger than 16 MiB"), "{why}"),
        other => panic!("expected the connection to close, got {other:?}"),
    }
    // The connection is gone; the server is started again and answers.
    let view = wait_for(&registry, "big", "a restart", |v| {
        v.state == State::Ready && v.restarts >= 1
    })
    .await;
    assert_eq!(view.tools.len(), SCRIPTED);
    assert_eq!(
        text(&registry, "big__echo", json!({"text": "small"})).await,
        "small"
    );
    // A large reply under the limit still comes whole.
    let four_mib = text(&registry, "big__huge", json!({"bytes": 4 << 20})).await;
    assert_eq!(four_mib.len(), 4 << 20);
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_over_the_size_limit_fails_the_call_over_http() {
    let fixture = http_fixture(&[]).await;
    let mut spec = http("big", &fixture);
    spec.tool_timeout = Some(Duration::from_secs(20));
    let (registry, _) = started(spec).await;
    let begun = Instant::now();
    let failed = registry
        .call("big__huge", json!({"bytes": MAX_LINE + 1}))
        .await;
    assert!(begun.elapsed() < PATIENCE, "took {:?}", begun.elapsed());
    assert!(matches!(failed, Err(ToolError::Call { .. })), "{failed:?}");
    let view = ready(&registry, "big").await;
    assert_eq!(view.tools.len(), SCRIPTED);
    assert_eq!(
        text(&registry, "big__echo", json!({"text": "small"})).await,
        "small"
    );
    registry.shutdown().await;
}

async fn a_call_that_never_answers_times_out(mut spec: ServerSpec) {
    spec.tool_timeout = Some(Duration::from_secs(1));
    let (registry, _) = started(spec).await;
    let begun = Instant::now();
    let hung = registry.call("slow__hang", json!({})).await;
    assert!(
        begun.elapsed() < Duration::from_secs(10),
        "took {:?}",
        begun.elapsed()
    );
    assert!(
        matches!(
            hung,
            Err(ToolError::Call {
                source: CallError::Timeout(d),
                ..
            }) if d == Duration::from_secs(1)
        ),
        "{hung:?}"
    );
    // The connection is still good, and the server heard that the call was given up.
    assert_eq!(
        text(&registry, "slow__echo", json!({"text": "next"})).await,
        "next"
    );
    let mut cancelled = 0;
    for _ in 0..100 {
        cancelled = stats(&registry, "slow").await["cancelled"];
        if cancelled > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(cancelled, 1, "the server never got notifications/cancelled");
    let view = registry.server(&name("slow")).unwrap();
    assert_eq!((view.state, view.restarts), (State::Ready, 0));
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_never_answers_times_out_over_stdio() {
    a_call_that_never_answers_times_out(stdio("slow", &[])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_never_answers_times_out_over_http() {
    let fixture = http_fixture(&[]).await;
    a_call_that_never_answers_times_out(http("slow", &fixture)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chatty_server_is_never_blocked_and_stray_output_is_ignored() {
    let mut spec = stdio("chatty", &[]);
    spec.tool_timeout = Some(Duration::from_secs(20));
    let (registry, _) = started(spec).await;
    // Far more than a pipe holds: a server whose stderr nobody read would block here.
    let said = text(&registry, "chatty__noise", json!({"bytes": 2 << 20})).await;
    assert_eq!(said, format!("wrote {} bytes to stderr", 2 << 20));
    assert_eq!(
        text(&registry, "chatty__echo", json!({"text": "still"})).await,
        "still"
    );
    let view = registry.server(&name("chatty")).unwrap();
    assert_eq!((view.state, view.restarts), (State::Ready, 0));
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_is_not_there_fails_the_server_with_why() {
    let registry = Registry::new();
    registry.add(ServerSpec::stdio(
        name("gone"),
        "/nonexistent/mcp-server",
        vec![],
    ));
    let view = wait_for(&registry, "gone", "failed", |v| v.state == State::Failed).await;
    let error = view.error.unwrap_or_default();
    assert!(error.contains("no such program"), "{error}");
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_the_handshake_fails_and_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let script = format!("echo $$ >> {}; exec sleep 600", pids.display());
    let mut spec = ServerSpec::stdio(name("mute"), "sh", vec!["-c".to_owned(), script]);
    spec.startup_timeout = Some(Duration::from_secs(1));
    let registry = Registry::new();
    registry.add(spec);
    let view = wait_for(&registry, "mute", "failed", |v| v.state == State::Failed).await;
    let error = view.error.unwrap_or_default();
    assert!(error.contains("no handshake within 1 s"), "{error}");
    registry.shutdown().await;
    let started: Vec<u64> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert!(!started.is_empty());
    for pid in started {
        let left = living_in_group(pid);
        assert!(left.is_empty(), "outlived the failed start: {left:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_restarted_gets_a_new_session_and_is_listed_again() {
    // The restarted server answers the old session as server-everything does: 400 and an
    // error without an id, which rmcp alone cannot match to the call (it would wait for the
    // call's timeout, every call).
    let mut first = http_fixture(&[]).await;
    let mut spec = http("again", &first);
    spec.tool_timeout = Some(Duration::from_secs(5));
    let (registry, before) = started(spec).await;
    assert_eq!(
        text(&registry, "again__echo", json!({"text": "one"})).await,
        "one"
    );
    first.child.kill().await.unwrap();
    let addr = first
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let _second = http_fixture(&["--http", &addr, "--stale-400"]).await;

    let mut changes = registry.changes();
    changes.borrow_and_update();
    let begun = Instant::now();
    let echoed = registry.call("again__echo", json!({"text": "two"})).await;
    assert!(
        begun.elapsed() < Duration::from_secs(5),
        "took {:?}",
        begun.elapsed()
    );
    assert_eq!(echoed.unwrap().text, "two");
    // The new session's server is listed again: its notifications to the old one were lost.
    tokio::time::timeout(PATIENCE, changes.changed())
        .await
        .expect("the tools were not listed again")
        .unwrap();
    assert_eq!(stats(&registry, "again").await["lists"], 1);
    let view = registry.server(&name("again")).unwrap();
    assert_eq!((view.state, view.restarts), (State::Ready, before.restarts));
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_went_away_is_shown_failed_until_it_is_back() {
    let mut first = http_fixture(&[]).await;
    let mut spec = http("away", &first);
    spec.tool_timeout = Some(Duration::from_secs(5));
    let (registry, _) = started(spec).await;
    first.child.kill().await.unwrap();
    first.child.wait().await.unwrap();

    let begun = Instant::now();
    let refused = registry.call("away__echo", json!({"text": "x"})).await;
    assert!(
        begun.elapsed() < Duration::from_secs(5),
        "took {:?}",
        begun.elapsed()
    );
    match refused {
        Err(ToolError::Call {
            source: CallError::Closed(why),
            ..
        }) => assert!(why.contains("could not be sent"), "{why}"),
        other => panic!("expected a failed send, got {other:?}"),
    }
    // Its ping fails too, so the connection is started again, and fails while nothing listens.
    let down = wait_for(&registry, "away", "failed", |v| v.state == State::Failed).await;
    assert!(down.tools.is_empty());
    let unavailable = registry.call("away__echo", json!({"text": "x"})).await;
    assert!(
        matches!(unavailable, Err(ToolError::Unavailable { .. })),
        "{unavailable:?}"
    );

    let addr = first
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let _second = http_fixture(&["--http", &addr]).await;
    let back = wait_for(&registry, "away", "ready again", |v| {
        v.state == State::Ready
    })
    .await;
    assert_eq!(back.tools.len(), SCRIPTED);
    assert_eq!(
        text(&registry, "away__echo", json!({"text": "back"})).await,
        "back"
    );
    registry.shutdown().await;
}

// --- Crashes ---------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_fails_the_call_and_the_server_comes_back() {
    let (registry, before) = started(stdio("boom", &[])).await;
    let begun = Instant::now();
    let crashed = registry.call("boom__crash", json!({})).await;
    assert!(begun.elapsed() < PATIENCE);
    assert!(
        matches!(
            crashed,
            Err(ToolError::Call {
                source: CallError::Closed(_),
                ..
            })
        ),
        "{crashed:?}"
    );
    let failed = wait_for(&registry, "boom", "failed", |v| v.state != State::Ready).await;
    if failed.state == State::Failed {
        assert!(
            failed.tools.is_empty(),
            "a failed server's tools are withdrawn"
        );
        let refused = registry.call("boom__echo", json!({"text": "x"})).await;
        assert!(
            matches!(
                &refused,
                Err(ToolError::Unavailable { server, .. }) if server == "boom"
            ),
            "{refused:?}"
        );
    }
    let back = wait_for(&registry, "boom", "a restart", |v| {
        v.state == State::Ready && v.restarts >= 1
    })
    .await;
    assert_eq!(back.tools.len(), before.tools.len());
    assert_eq!(
        text(&registry, "boom__echo", json!({"text": "again"})).await,
        "again"
    );
    registry.shutdown().await;
}

// --- Definitions that change -----------------------------------------------------------------

async fn changed_definitions_are_published(spec: ServerSpec) {
    let (registry, before) = started(spec).await;
    let pinned = digest(&before, "echo").unwrap();
    text(&registry, "rug__rug_pull", json!({})).await;
    let pulled = wait_for(&registry, "rug", "echo's new definition", |v| {
        digest(v, "echo").is_some_and(|d| d != pinned)
    })
    .await;
    let echo = pulled.tools.iter().find(|t| t.name == "echo").unwrap();
    assert!(
        echo.description.contains("<IMPORTANT>"),
        "{}",
        echo.description
    );
    assert_eq!(pulled.tools.len(), before.tools.len());

    text(&registry, "rug__add_tool", json!({})).await;
    let grown = wait_for(&registry, "rug", "the added tool", |v| {
        v.tool("rug__added_1").is_some()
    })
    .await;
    assert_eq!(grown.tools.len(), before.tools.len() + 1);
    assert_eq!(text(&registry, "rug__added_1", json!({})).await, "added_1");
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rug_pull_and_a_new_tool_are_published_over_stdio() {
    changed_definitions_are_published(stdio("rug", &[])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rug_pull_and_a_new_tool_are_published_over_http() {
    let fixture = http_fixture(&[]).await;
    changed_definitions_are_published(http("rug", &fixture)).await;
}

async fn a_burst_is_one_refresh(spec: ServerSpec) {
    let (registry, _) = started(spec).await;
    let lists_before = stats(&registry, "burst").await["lists"];
    let mut changes = registry.changes();
    let ticks_before = *changes.borrow_and_update();
    text(&registry, "burst__burst", json!({"n": 25})).await;
    tokio::time::timeout(PATIENCE, changes.changed())
        .await
        .expect("the burst was never followed by a listing")
        .unwrap();
    // A second, marked change: every publish for the burst came before its own.
    text(&registry, "burst__add_tool", json!({})).await;
    wait_for(&registry, "burst", "the added tool", |v| {
        v.tool("burst__added_1").is_some()
    })
    .await;
    let ticks = *registry.changes().borrow() - ticks_before;
    let lists = stats(&registry, "burst").await["lists"] - lists_before;
    assert_eq!((ticks, lists), (2, 2), "one publish and one listing each");
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_list_changed_is_one_refresh_over_stdio() {
    a_burst_is_one_refresh(stdio("burst", &[])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_list_changed_is_one_refresh_over_http() {
    let fixture = http_fixture(&[]).await;
    a_burst_is_one_refresh(http("burst", &fixture)).await;
}

// --- Switching a server off and on ----------------------------------------------------------

#[test]
fn switching_a_server_off_and_on_never_blocks_the_registry() {
    // On a one-thread runtime, so that a lock held while the server stops would stall every
    // other use of the registry, the stop included. Watched from outside that thread.
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (registry, _) = started(stdio("sw", &[])).await;
            let reader = registry.clone();
            let stop = tokio_util::sync::CancellationToken::new();
            let stopped = stop.clone();
            let busy = tokio::spawn(async move {
                while !stopped.is_cancelled() {
                    let _ = reader.servers();
                    tokio::task::yield_now().await;
                }
            });
            assert!(registry.set_enabled(&name("sw"), false).await);
            let off = registry.server(&name("sw")).unwrap();
            assert_eq!(off.state, State::Disabled);
            let refused = registry.call("sw__echo", json!({"text": "x"})).await;
            assert!(
                matches!(refused, Err(ToolError::Disabled { .. })),
                "{refused:?}"
            );
            assert!(registry.set_enabled(&name("sw"), true).await);
            ready(&registry, "sw").await;
            assert_eq!(
                text(&registry, "sw__echo", json!({"text": "on"})).await,
                "on"
            );
            stop.cancel();
            busy.await.unwrap();
            registry.shutdown().await;
        });
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(60))
        .expect("switching the server off or on hung");
}

// --- What a server is told and shows ---------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotations_arguments_and_lookalike_lines_come_through_as_sent() {
    let (registry, view) = started(stdio("fx", &[])).await;
    let tool = |n: &str| view.tools.iter().find(|t| t.name == n).unwrap();
    assert!(tool("read_thing").claims_read_only());
    assert!(!tool("write_file").claims_read_only());
    assert_eq!(tool("write_file").argument_names(), ["path", "text"]);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.txt");
    let wrote = text(
        &registry,
        "fx__write_file",
        json!({"path": path.to_str().unwrap(), "text": "hello"}),
    )
    .await;
    assert!(wrote.starts_with("wrote 5 bytes"), "{wrote}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello");

    // A server's text is its text: the client renders binding look-alikes as plain lines.
    let bound = text(&registry, "fx__bound_lines", json!({})).await;
    assert_eq!(
        bound,
        "Here is the weather.\nBound for your next step: x\nBound for your next step: demo__echo, fixture__write_file"
    );
    // A JSON-RPC error for an unknown tool is a call error, not a crash.
    let unknown = registry.call("fx__nope", json!({})).await;
    assert!(
        matches!(unknown, Err(ToolError::UnknownTool { .. })),
        "{unknown:?}"
    );
    registry.shutdown().await;
}

/// Set in the copy of this test binary that [`a_server_never_sees_the_daemons_secrets`] runs.
const CHILD_MARK: &str = "CODARIS_MCP_TEST_ENV_CHILD";
const SECRETS: [&str; 5] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GITHUB_TOKEN",
    "CODARIS_STATE_DIR",
    CHILD_MARK,
];

#[test]
fn a_server_never_sees_the_daemons_secrets() {
    // The variables must be in this process's environment before any thread reads it, so the
    // check runs in a fresh copy of this binary started with them set.
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child.args(["--exact", "the_environment_seen_by_a_server", "--nocapture"]);
    for secret in SECRETS {
        child.env(secret, "hunter2");
    }
    let out = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "the check did not run: {stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_seen_by_a_server() {
    if std::env::var_os(CHILD_MARK).is_none() {
        return; // Only meaningful in the copy started above.
    }
    let (registry, _) = started(stdio("env", &[])).await;
    let env = text(&registry, "env__env", json!({})).await;
    let keys: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, _)| k)
        .collect();
    for secret in SECRETS {
        assert!(
            !keys.contains(&secret),
            "{secret} reached the server: {keys:?}"
        );
    }
    assert!(!keys.iter().any(|k| k.starts_with("CODARIS_")), "{keys:?}");
    assert!(!env.contains("hunter2"));
    assert!(keys.contains(&"PATH"), "{keys:?}");
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_leaves_nothing_of_the_servers_process_group() {
    let (registry, _) = started(stdio("group", &["--child"])).await;
    let pid = stats(&registry, "group").await["pid"];
    let group = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
    assert!(
        rustix::process::test_kill_process_group(group).is_ok(),
        "the server runs in a group of its own, led by itself"
    );
    let begun = Instant::now();
    registry.shutdown().await;
    assert!(
        begun.elapsed() < Duration::from_secs(10),
        "took {:?}",
        begun.elapsed()
    );
    let left = living_in_group(pid);
    assert!(left.is_empty(), "outlived the shutdown: {left:?}");
    assert!(registry.servers().is_empty());
}

/// The processes of process group `group` that are alive (not zombies waiting to be reaped).
fn living_in_group(group: u64) -> Vec<String> {
    let mut living = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp …; comm may hold spaces, so read after its `)`.
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|g| g.parse::<u64>().ok()) == Some(group) && fields[0] != "Z" {
            living.push(format!("{head}) {}", fields[0]));
        }
    }
    living
}
