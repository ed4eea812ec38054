//! The client against `codaris-mcp-fixture`, a server scripted to misbehave: long paginated
//! lists and a looping cursor, a reply over the stdio line limit, a call that never answers, a
//! crash mid-call, definitions that change after they were listed, bursts of list_changed, an
//! HTTP server that restarts or goes away. Over stdio, and over streamable HTTP where the
//! transports differ. A server's life (start, switch, environment, shutdown) is in
//! `fixture_lifecycle.rs`.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]

mod harness;

use std::time::{Duration, Instant};

use codaris_mcp::{CallError, MAX_LINE, ServerRegistry, ServerSpec, State, ToolError};
use harness::*;
use serde_json::json;

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
    let registry = ServerRegistry::new();
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
    match failed {
        Err(ToolError::Call {
            source: CallError::Closed(why),
            ..
        }) => assert!(why.contains("16 MiB"), "{why}"),
        other => panic!("expected the reply to be dropped, got {other:?}"),
    }
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
    // From the moment the call failed, the server's tools are unavailable until it is back.
    let refused = registry.call("boom__echo", json!({"text": "x"})).await;
    assert!(
        matches!(
            &refused,
            Err(ToolError::Unavailable { server, .. }) if server == "boom"
        ),
        "{refused:?}"
    );
    let failed = wait_for(&registry, "boom", "failed", |v| v.state != State::Ready).await;
    assert!(
        failed.tools.is_empty(),
        "a failed server's tools are withdrawn"
    );
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
