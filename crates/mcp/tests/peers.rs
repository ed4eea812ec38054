//! The client against six real MCP servers, started from the pinned install of
//! `.ci/mcp-peers.sh` (never through `npx -y`): server-everything, server-filesystem and
//! server-memory on Node, mcp-server-time, mcp-server-git and mcp-server-fetch on Python. Each
//! handshakes at protocol 2025-11-25, lists the tools it is known to offer to a client with no
//! capabilities, and answers one call; server-everything also over streamable HTTP.
//!
//! Under CI (`CI` set) missing peers fail the test; elsewhere the test says so and passes.

#![cfg(test)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use codaris_mcp::{Rendered, ServerName, ServerRegistry, ServerSpec, ServerView, State, Transport};
use serde_json::{Value, json};

/// Python servers take about a second to start, Node ones half that; CI machines are slower.
const STARTUP: Duration = Duration::from_secs(60);

const NEEDED: [&str; 6] = [
    "npm/node_modules/.bin/mcp-server-everything",
    "npm/node_modules/.bin/mcp-server-filesystem",
    "npm/node_modules/.bin/mcp-server-memory",
    "venv/bin/mcp-server-time",
    "venv/bin/mcp-server-git",
    "venv/bin/mcp-server-fetch",
];

fn name(text: &str) -> ServerName {
    ServerName::parse(text).unwrap()
}

fn spec(server: &str, program: &Path, args: &[&str]) -> ServerSpec {
    let mut spec = ServerSpec::stdio(
        name(server),
        program.to_str().unwrap(),
        args.iter().map(|a| (*a).to_owned()).collect(),
    );
    spec.startup_timeout = Some(STARTUP);
    spec.tool_timeout = Some(Duration::from_secs(30));
    spec
}

fn with_env(mut spec: ServerSpec, key: &str, value: &str) -> ServerSpec {
    if let Transport::Stdio { env, .. } = &mut spec.transport {
        env.insert(key.to_owned(), value.to_owned());
    }
    spec
}

/// A git repository with one commit and one untracked file.
fn repository(at: &Path) {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(at)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    std::fs::create_dir_all(at).unwrap();
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(at.join("README"), "hello\n").unwrap();
    git(&["add", "README"]);
    git(&["commit", "-q", "-m", "first"]);
    std::fs::write(at.join("new.txt"), "untracked\n").unwrap();
}

async fn ready(registry: &ServerRegistry, server: &str) -> ServerView {
    let view = registry
        .settled(&name(server), STARTUP + Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(
        view.state,
        State::Ready,
        "{server} did not start: {:?}",
        view.error
    );
    view
}

async fn call(registry: &ServerRegistry, tool: &str, arguments: Value) -> Rendered {
    registry
        .call(tool, arguments)
        .await
        .unwrap_or_else(|err| panic!("{tool}: {err}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_real_servers_over_stdio() {
    let Some(peers) = support::installed(&NEEDED) else {
        return;
    };
    let npm = peers.join("npm/node_modules/.bin");
    let venv = peers.join("venv/bin");
    let scratch = tempfile::tempdir().unwrap();
    let files = scratch.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("a.txt"), "alpha\n").unwrap();
    let repo = scratch.path().join("repo");
    repository(&repo);
    let memory = scratch.path().join("memory.jsonl");

    let registry = ServerRegistry::new();
    let files_arg = files.to_str().unwrap();
    registry.add(spec(
        "everything",
        &npm.join("mcp-server-everything"),
        &["stdio"],
    ));
    registry.add(spec(
        "filesystem",
        &npm.join("mcp-server-filesystem"),
        &[files_arg],
    ));
    registry.add(with_env(
        spec("memory", &npm.join("mcp-server-memory"), &[]),
        "MEMORY_FILE_PATH",
        memory.to_str().unwrap(),
    ));
    registry.add(spec(
        "time",
        &venv.join("mcp-server-time"),
        &["--local-timezone", "UTC"],
    ));
    registry.add(spec(
        "git",
        &venv.join("mcp-server-git"),
        &["--repository", repo.to_str().unwrap()],
    ));
    registry.add(spec("fetch", &venv.join("mcp-server-fetch"), &[]));

    let expected = BTreeMap::from([
        ("everything", 13),
        ("filesystem", 14),
        ("memory", 9),
        ("time", 2),
        ("git", 12),
        ("fetch", 1),
    ]);
    let mut all = BTreeSet::new();
    let mut total = 0;
    for (server, count) in &expected {
        let view = ready(&registry, server).await;
        assert_eq!(view.protocol, "2025-11-25", "{server}");
        let names: Vec<&str> = view.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(view.tools.len(), *count, "{server} lists {names:?}");
        for tool in view.tools.iter() {
            let prefixed = tool.prefixed(&view.spec.name);
            assert!(prefixed.starts_with(&format!("{server}__")), "{prefixed}");
            assert!(prefixed.len() <= 64, "{prefixed}");
            assert!(all.insert(prefixed.clone()), "{prefixed} twice");
        }
        total += count;
    }
    assert_eq!(all.len(), total);
    assert_eq!(total, 51);

    let echo = call(
        &registry,
        "everything__echo",
        json!({"message": "hi there"}),
    )
    .await;
    assert!(!echo.is_error && echo.text.contains("hi there"), "{echo:?}");

    let listed = call(
        &registry,
        "filesystem__list_directory",
        json!({"path": files_arg}),
    )
    .await;
    assert!(
        !listed.is_error && listed.text.contains("a.txt"),
        "{listed:?}"
    );
    let outside = call(
        &registry,
        "filesystem__read_text_file",
        json!({"path": repo.join("README").to_str().unwrap()}),
    )
    .await;
    assert!(outside.is_error, "{outside:?}");
    assert!(outside.text.contains("Access denied"), "{}", outside.text);

    let graph = call(&registry, "memory__read_graph", json!({})).await;
    assert!(
        !graph.is_error && graph.text.contains("entities"),
        "{graph:?}"
    );

    let now = call(
        &registry,
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert!(!now.is_error && now.text.contains("UTC"), "{now:?}");

    let status = call(
        &registry,
        "git__git_status",
        json!({"repo_path": repo.to_str().unwrap()}),
    )
    .await;
    assert!(
        !status.is_error && status.text.contains("new.txt"),
        "{status:?}"
    );

    // No network here, and loopback is refused by its own guard: an error result, not a crash.
    let fetched = call(
        &registry,
        "fetch__fetch",
        json!({"url": "http://127.0.0.1:9/"}),
    )
    .await;
    assert!(fetched.is_error, "{fetched:?}");
    assert_eq!(ready(&registry, "fetch").await.restarts, 0);

    registry.shutdown().await;
}

/// server-everything serving streamable HTTP on `port`, stopped when the handle drops.
fn everything_over_http(program: &Path, port: u16) -> tokio::process::Child {
    tokio::process::Command::new(program)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// A port nothing listens on now (server-everything takes its port from `PORT` only).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_streamable_http_offers_what_it_offers_over_stdio() {
    let Some(peers) = support::installed(&NEEDED[..1]) else {
        return;
    };
    let program = peers.join("npm/node_modules/.bin/mcp-server-everything");
    let port = free_port();
    let _server = everything_over_http(&program, port);

    let registry = ServerRegistry::new();
    // It takes a moment to listen: the registry retries a refused connection with backoff.
    let mut over_http =
        ServerSpec::http(name("everything"), format!("http://127.0.0.1:{port}/mcp"));
    over_http.startup_timeout = Some(STARTUP);
    registry.add(over_http);
    let mut changes = registry.changes();
    let http = tokio::time::timeout(STARTUP, async {
        loop {
            changes.borrow_and_update();
            let view = registry.server(&name("everything")).unwrap();
            if view.state == State::Ready {
                return view;
            }
            changes.changed().await.unwrap();
        }
    })
    .await
    .expect("server-everything over HTTP never became ready");
    assert_eq!(http.protocol, "2025-11-25");

    registry.add(spec("stdio", &program, &["stdio"]));
    let stdio = ready(&registry, "stdio").await;
    let tools = |view: &ServerView| -> BTreeSet<(String, String)> {
        view.tools
            .iter()
            .map(|t| (t.name.clone(), t.definition_digest()))
            .collect()
    };
    assert_eq!(http.tools.len(), 13);
    assert_eq!(tools(&http), tools(&stdio));

    let echo = call(
        &registry,
        "everything__echo",
        json!({"message": "over http"}),
    )
    .await;
    assert!(
        !echo.is_error && echo.text.contains("over http"),
        "{echo:?}"
    );
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_http_server_is_reached_again() {
    let Some(peers) = support::installed(&NEEDED[..1]) else {
        return;
    };
    let program = peers.join("npm/node_modules/.bin/mcp-server-everything");
    let port = free_port();
    let start = || everything_over_http(&program, port);
    let mut first = start();
    let registry = ServerRegistry::new();
    let mut spec = ServerSpec::http(name("everything"), format!("http://127.0.0.1:{port}/mcp"));
    spec.startup_timeout = Some(STARTUP);
    spec.tool_timeout = Some(Duration::from_secs(3));
    registry.add(spec);
    let before = wait_ready(&registry, |_| true).await;
    let echo = call(&registry, "everything__echo", json!({"message": "one"})).await;
    assert!(echo.text.contains("one"));

    first.kill().await.unwrap();
    let _second = start();
    // Until it listens again calls fail, but at once (never by the tool timeout), and once it
    // does they reach it: a new session, or a new connection after a failed ping.
    let began = std::time::Instant::now();
    let echoed = loop {
        let attempt = std::time::Instant::now();
        match registry
            .call("everything__echo", json!({"message": "again"}))
            .await
        {
            Ok(echoed) => break echoed,
            Err(err) => {
                assert!(
                    attempt.elapsed() < Duration::from_secs(3),
                    "a call waited {:?}: {err}",
                    attempt.elapsed()
                );
                assert!(began.elapsed() < STARTUP, "never reached again: {err}");
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(echoed.text.contains("again"), "{echoed:?}");
    let after = wait_ready(&registry, |_| true).await;
    assert_eq!(after.tools.len(), before.tools.len());
    registry.shutdown().await;
}

/// Waits on the registry's changes until `everything` is ready and `also` holds.
async fn wait_ready(registry: &ServerRegistry, also: impl Fn(&ServerView) -> bool) -> ServerView {
    let mut changes = registry.changes();
    tokio::time::timeout(STARTUP, async {
        loop {
            changes.borrow_and_update();
            let view = registry.server(&name("everything")).unwrap();
            if view.state == State::Ready && also(&view) {
                return view;
            }
            changes.changed().await.unwrap();
        }
    })
    .await
    .expect("server-everything never became ready")
}

/// server-everything told roots: while it handles `initialized` it sends a burst of
/// `list_changed` (two with roots alone, measured; more with sampling and elicitation) and
/// then offers `get-roots-list` too. The burst ends in one publish of the whole set, listed at
/// most twice (the first listing and one re-list for the whole burst), and nothing after.
async fn a_handshake_burst_is_one_publish(spec: ServerSpec, expect_notifications: bool) {
    let roots = tempfile::tempdir().unwrap();
    let registry = ServerRegistry::with_roots(vec![roots.path().to_path_buf()]);
    let changes = registry.changes();
    let before = *changes.borrow();
    registry.add(spec);
    let view = wait_ready(&registry, |_| true).await;
    // Past the longest a burst may put off a refresh: any late publish would have come.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let after = registry.server(&name("everything")).unwrap();
    let ticks = *changes.borrow() - before;
    assert_eq!(
        ticks, 2,
        "one tick for the add and one for the whole tool set"
    );
    assert!(after.listings <= 2, "listed {} times", after.listings);
    if expect_notifications {
        assert!(
            after.list_changed >= 2,
            "a burst of list_changed: {}",
            after.list_changed
        );
    }
    let names: BTreeSet<&str> = view.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(view.tools.len(), 14, "{names:?}");
    assert!(names.contains("get-roots-list"), "{names:?}");
    assert_eq!(after.tools, view.tools);

    let listed = call(&registry, "everything__get-roots-list", json!({})).await;
    let uri = url_of(roots.path());
    assert!(
        !listed.is_error && listed.text.contains(&uri),
        "{uri} not in {listed:?}"
    );
    registry.shutdown().await;
}

fn url_of(dir: &Path) -> String {
    format!("file://{}", dir.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_s_burst_during_its_handshake_is_one_reindex_over_stdio() {
    let Some(peers) = support::installed(&NEEDED[..1]) else {
        return;
    };
    let program = peers.join("npm/node_modules/.bin/mcp-server-everything");
    let mut spec = spec("everything", &program, &["stdio"]);
    spec.share_roots = true;
    a_handshake_burst_is_one_publish(spec, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_s_burst_during_its_handshake_is_one_reindex_over_http() {
    let Some(peers) = support::installed(&NEEDED[..1]) else {
        return;
    };
    let program = peers.join("npm/node_modules/.bin/mcp-server-everything");
    let port = free_port();
    let _server = everything_over_http(&program, port);
    // Listening before the registry connects, so the first attempt is the one counted.
    let deadline = std::time::Instant::now() + STARTUP;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "never listened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut spec = ServerSpec::http(name("everything"), format!("http://127.0.0.1:{port}/mcp"));
    spec.startup_timeout = Some(STARTUP);
    spec.share_roots = true;
    // Over HTTP the notifications sent during the handshake are lost (rmcp opens its stream
    // after it): the full listing after the handshake is what gives the whole set.
    a_handshake_burst_is_one_publish(spec, false).await;
}

/// Roots changed while servers run are told to them (`notifications/roots/list_changed`), not
/// put in force by a restart: server-filesystem, which serves its roots instead of the folders
/// on its command line, serves the new one, and server-everything lists it, each on the
/// connection it started with. A server registered without `share_roots` is not told; roots
/// set again unchanged tell nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_roots_are_told_to_running_servers_without_a_restart() {
    let Some(peers) = support::installed(&NEEDED[..2]) else {
        return;
    };
    let npm = peers.join("npm/node_modules/.bin");
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = first.path().canonicalize().unwrap();
    let second_dir = second.path().canonicalize().unwrap();
    std::fs::write(second_dir.join("note.txt"), "in the second root\n").unwrap();
    let registry = ServerRegistry::with_roots(vec![first.clone()]);
    let mut filesystem = spec(
        "filesystem",
        &npm.join("mcp-server-filesystem"),
        &[first.to_str().unwrap()],
    );
    filesystem.share_roots = true;
    let mut everything = spec("everything", &npm.join("mcp-server-everything"), &["stdio"]);
    everything.share_roots = true;
    // Registered without `share_roots`: it is never told the roots, nor that they changed.
    let unshared = spec("unshared", &npm.join("mcp-server-everything"), &["stdio"]);
    registry.add(filesystem);
    registry.add(everything);
    registry.add(unshared);
    ready(&registry, "filesystem").await;
    ready(&registry, "everything").await;
    ready(&registry, "unshared").await;
    let note = json!({"path": second_dir.join("note.txt").to_str().unwrap()});
    let refused = call(&registry, "filesystem__read_text_file", note.clone()).await;
    assert!(refused.is_error, "{refused:?}");

    let mut told: Vec<String> = registry
        .set_roots(vec![first.clone(), second_dir.clone()])
        .await
        .iter()
        .map(ToString::to_string)
        .collect();
    told.sort();
    assert_eq!(told, ["everything", "filesystem"]);
    // Each asks for the roots again when told; poll until it has.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let read = loop {
        let read = call(&registry, "filesystem__read_text_file", note.clone()).await;
        if !read.is_error || std::time::Instant::now() > deadline {
            break read;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(read.text.contains("in the second root"), "{read:?}");
    let uri = url_of(&second_dir);
    let listed = loop {
        let listed = call(&registry, "everything__get-roots-list", json!({})).await;
        if listed.text.contains(&uri) || std::time::Instant::now() > deadline {
            break listed;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(listed.text.contains(&uri), "{uri} not in {listed:?}");
    // Without roots the server offers no `get-roots-list` at all.
    let unshared = registry.server(&name("unshared")).unwrap();
    assert!(
        !unshared.tools.iter().any(|t| t.name == "get-roots-list"),
        "{:?}",
        unshared.tools
    );
    for server in ["filesystem", "everything"] {
        let view = registry.server(&name(server)).unwrap();
        assert_eq!((view.state, view.restarts), (State::Ready, 0), "{server}");
    }
    assert!(
        registry
            .set_roots(vec![first.clone(), second_dir.clone()])
            .await
            .is_empty()
    );
    registry.shutdown().await;
}
