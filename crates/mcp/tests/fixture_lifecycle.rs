//! The client against `codaris-mcp-fixture` over a server's life: a chatty server, one that is
//! not there or never answers the handshake, switched off and on, what it may see of the
//! daemon's environment and what it is seen offering, and nothing of it left after shutdown.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]

mod harness;

use std::time::{Duration, Instant};

use codaris_mcp::{ServerRegistry, ServerSpec, State, ToolError};
use harness::*;
use serde_json::json;

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
    let registry = ServerRegistry::new();
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
    let registry = ServerRegistry::new();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_with_a_call_in_flight_ends_the_call_and_the_server() {
    let (registry, _) = started(stdio("busy", &["--child"])).await;
    let pid = stats(&registry, "busy").await["pid"];
    let caller = registry.clone();
    let hanging = tokio::spawn(async move { caller.call("busy__hang", json!({})).await });
    // The call is in flight once the server has it; wait for that on the server's side.
    let mut polls = 0;
    while stats(&registry, "busy").await["hanging"] == 0 {
        polls += 1;
        assert!(polls < 200, "the call never reached the server");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let begun = Instant::now();
    registry.shutdown().await;
    let ended = tokio::time::timeout(Duration::from_secs(10), hanging)
        .await
        .expect("the call in flight outlived the shutdown")
        .unwrap();
    assert!(
        begun.elapsed() < Duration::from_secs(10),
        "took {:?}",
        begun.elapsed()
    );
    assert!(ended.is_err(), "{ended:?}");
    let left = living_in_group(pid);
    assert!(left.is_empty(), "outlived the shutdown: {left:?}");
}
