//! MCP through the daemon (issue #14): what the daemon adds to a call of an MCP tool, against a
//! direct rmcp call to the same fixture server in the same run, and `codarisd`'s ready time
//! with six servers configured against none.
//!
//! - **direct rmcp**: `call_tool("echo")` on an rmcp client of the fixture server
//!   (`codaris-mcp-fixture`, stdio), nothing else.
//! - **through the daemon**: what a turn's host does for the same call on its own connection to
//!   another instance of the fixture: the policy's spec built from the registration and the
//!   definition (`McpHub::external_spec`), `Dispatcher::decide` (paths resolved, grants read,
//!   `evaluate`, the decision appended durably — one `fdatasync`), then `McpHub::run` (the
//!   registry's call with its timeout, the result rendered). The two are timed call by call in
//!   turn, so they share the machine's noise; the overhead is the difference of the medians.
//! - **ready time**: `codarisd` exec'd until its socket answers, with no MCP server configured
//!   and with six (the fixture, stdio, each under its own name): servers start in the
//!   background, so the two should match.
//!
//! Run `cargo build --release --bins` first (the fixture and the daemon come from there).

#![expect(clippy::unwrap_used, clippy::panic, reason = "benchmark set-up")]

use codaris_test_support::bench::percentiles;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codaris_daemon::calls::builtins::Pictures;
use codaris_daemon::calls::dispatch::{Dispatcher, SessionCall};
use codaris_daemon::mcp::McpHub;
use codaris_daemon::toolset::registry::ToolRegistry;
use codaris_ledger::Ledger;
use codaris_mcp::{ServerName, ServerSpec};
use codaris_policy::{PermissionMode, Task};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

mod binaries;

const CALLS: usize = 2_000;

fn main() {
    let fixture = binaries::bin("codaris-mcp-fixture");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // The reference: rmcp alone.
        let mut child = tokio::process::Command::new(&fixture)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let transport = rmcp::transport::async_rw::AsyncRwTransport::new_client(
            child.stdout.take().unwrap(),
            child.stdin.take().unwrap(),
        );
        let direct = ().serve(transport).await.unwrap();

        // The daemon's path, on a ledger and index of its own.
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("proj")).unwrap();
        let ledger = Arc::new(Ledger::open(&root.join("ledger")).unwrap());
        let tools = Arc::new(ToolRegistry::new(Vec::new(), None).unwrap());
        let spec = ServerSpec::stdio(
            ServerName::parse("fx").unwrap(),
            fixture.display().to_string(),
            Vec::new(),
        );
        let hub = McpHub::start(vec![spec], Vec::new(), &ledger, tools.clone()).unwrap();
        hub.launch();
        let deadline = Instant::now() + Duration::from_secs(30);
        // The name is read once, where a call enters; the bench starts after that.
        let codaris_policy::ToolId::Mcp(echo) = codaris_policy::ToolId::parse("fx__echo") else {
            panic!("`fx__echo` reads as an MCP tool");
        };
        while hub.external_spec(&echo).is_none() {
            assert!(Instant::now() < deadline, "the fixture never became ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let dispatcher = Dispatcher::new(ledger.clone()).for_session();
        // As the daemon's live session does: its view is kept while the session lives.
        let _lease = ledger.lease_grant_view("s");
        let mut task = Task::new(root.join("proj").display().to_string());
        task.permission_mode = PermissionMode::AcceptEdits;

        let (mut rmcp_alone, mut daemon) = (Vec::new(), Vec::new());
        for i in 0..CALLS {
            let started = Instant::now();
            let params = CallToolRequestParams::new("echo")
                .with_arguments(json!({"text": "hi"}).as_object().unwrap().clone());
            direct.peer().call_tool(params).await.unwrap();
            rmcp_alone.push(started.elapsed());

            let started = Instant::now();
            let spec = hub.external_spec(&echo);
            let call = SessionCall {
                session_id: "s".into(),
                call_id: format!("c{i}").into(),
                tool: codaris_policy::ToolId::Mcp(echo.clone()),
                args: json!({"text": "hi"}),
                task: task.clone(),
                cwd: None,
                spec,
                marks: hub.argument_marks(&echo),
            };
            let dispatched = {
                let dispatcher = dispatcher.clone();
                tokio::task::spawn_blocking(move || dispatcher.decide(call))
                    .await
                    .unwrap()
                    .unwrap()
            };
            let codaris_daemon::calls::dispatch::Dispatched::Run(permit) = dispatched else {
                panic!("the call was not allowed");
            };
            let run = hub
                .run(
                    permit.tool().mcp().unwrap(),
                    permit.args(),
                    &permit.task().cwd,
                    &Pictures::Shown,
                )
                .await;
            assert!(!run.is_error, "{}", run.output);
            daemon.push(started.elapsed());
        }
        let (a50, a99) = percentiles(&mut rmcp_alone);
        let (d50, d99) = percentiles(&mut daemon);
        println!("an MCP call, {CALLS} each, interleaved:");
        println!("  direct rmcp call_tool: p50 {a50:?} p99 {a99:?}");
        println!("  through the daemon (spec, decide and record, run): p50 {d50:?} p99 {d99:?}");
        println!(
            "  the daemon's own overhead at p50: {:?}",
            d50.saturating_sub(a50)
        );
        hub.shutdown().await;
        direct.cancel().await.unwrap();
    });

    ready_time(&fixture);
}

/// `codarisd` from exec to serving, with no MCP server and with six, interleaved.
fn ready_time(fixture: &std::path::Path) {
    let temp = tempfile::tempdir().unwrap();
    let none = temp.path().join("none.toml");
    std::fs::write(&none, "").unwrap();
    let six = temp.path().join("six.toml");
    let servers: String = (1..=6)
        .map(|n| format!("[mcp.servers.fx{n}]\ncommand = \"{}\"\n", fixture.display()))
        .collect();
    std::fs::write(&six, servers).unwrap();
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for round in 0..20 {
        for (config, samples) in [(&none, &mut without), (&six, &mut with)] {
            let state = temp.path().join(format!("state-{round}-{}", samples.len()));
            let started = Instant::now();
            let child = binaries::spawn(&state, config, &[]);
            binaries::wait_serving(&state, Duration::from_millis(1));
            samples.push(started.elapsed());
            binaries::stop(child);
        }
    }
    let (n50, n99) = percentiles(&mut without);
    let (s50, s99) = percentiles(&mut with);
    println!("codarisd exec to serving, 20 each, interleaved:");
    println!("  no MCP server: p50 {n50:?} p99 {n99:?}");
    println!(
        "  six MCP servers configured: p50 {s50:?} p99 {s99:?} ({:.2}× none)",
        s50.as_secs_f64() / n50.as_secs_f64()
    );
}
