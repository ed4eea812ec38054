//! What the tests against `codaris-mcp-fixture` share: starting it over stdio or HTTP, and
//! waiting on the registry instead of sleeping.

// Each test crate uses a different part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use codaris_mcp::{ServerName, ServerRegistry, ServerSpec, ServerView, State};
use serde_json::json;
use tokio::io::AsyncBufReadExt;

pub const FIXTURE: &str = env!("CARGO_BIN_EXE_codaris-mcp-fixture");
/// How long anything here may take before the test counts it as hung.
pub const PATIENCE: Duration = Duration::from_secs(30);
/// The scripted tools every fixture offers (echo … stats).
pub const SCRIPTED: usize = 13;

pub fn name(text: &str) -> ServerName {
    ServerName::parse(text).unwrap()
}

pub fn stdio(server: &str, args: &[&str]) -> ServerSpec {
    ServerSpec::stdio(
        name(server),
        FIXTURE,
        args.iter().map(|a| (*a).to_owned()).collect(),
    )
}

/// A fixture serving streamable HTTP on a free port, stopped when dropped.
pub struct HttpFixture {
    pub child: tokio::process::Child,
    pub url: String,
}

pub async fn http_fixture(args: &[&str]) -> HttpFixture {
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

pub fn http(server: &str, fixture: &HttpFixture) -> ServerSpec {
    ServerSpec::http(name(server), fixture.url.clone())
}

/// Waits, on the registry's change counter, until `server` satisfies `done`.
pub async fn wait_for(
    registry: &ServerRegistry,
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

pub async fn ready(registry: &ServerRegistry, server: &str) -> ServerView {
    wait_for(registry, server, "ready", |v| v.state == State::Ready).await
}

pub async fn started(spec: ServerSpec) -> (ServerRegistry, ServerView) {
    let server = spec.name.to_string();
    let registry = ServerRegistry::new();
    registry.add(spec);
    let view = ready(&registry, &server).await;
    (registry, view)
}

pub async fn text(registry: &ServerRegistry, tool: &str, arguments: serde_json::Value) -> String {
    let rendered = registry.call(tool, arguments).await.unwrap();
    assert!(!rendered.is_error, "{tool} failed: {}", rendered.text);
    rendered.text
}

/// The fixture's counters (`stats`), by name.
pub async fn stats(registry: &ServerRegistry, server: &str) -> BTreeMap<String, u64> {
    text(registry, &format!("{server}__stats"), json!({}))
        .await
        .lines()
        .filter_map(|line| line.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.parse().unwrap()))
        .collect()
}

pub fn digest(view: &ServerView, tool: &str) -> Option<String> {
    view.tools
        .iter()
        .find(|t| t.name == tool)
        .map(|t| t.definition_digest())
}

/// The processes of process group `group` still alive once it has had up to 5 s to die.
///
/// A SIGKILL is delivered asynchronously: a process sent one can still be seen running (`R`)
/// for a moment while it exits. The fixture's child sleeps for 600 s, so a group that was never
/// killed is still reported.
pub fn living_in_group(group: u64) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let living = living_in_group_now(group);
        if living.is_empty() || std::time::Instant::now() >= deadline {
            return living;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The processes of process group `group` that are alive (not zombies waiting to be reaped).
fn living_in_group_now(group: u64) -> Vec<String> {
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
