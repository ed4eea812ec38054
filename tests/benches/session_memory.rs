//! What a daemon keeps of the sessions it ended (issue 48, item 7): start `codarisd` on a
//! private state directory as the end-to-end tests do, create and end sessions over gRPC, and
//! read the daemon's `RssAnon` (anonymous memory: heap and stacks, not the mapped program) from
//! `/proc/<pid>/status` when idle at start, after a warm-up, and after the sessions, each after
//! a moment of quiet. It prints figures; it asserts nothing (memory is not a pass/fail test).
//!
//! `cargo build --bins && cargo run -p codaris-e2e --example session_memory -- [N] [turn|plain]`
//! (default 2000 `turn`). `turn`: each session runs one scripted turn (a command, which makes
//! the session's task pool, and a `read_file`, which loads its grant view and grant set) before
//! it is ended, so everything a session holds is made and must go; `plain`: create and end only.
//! The binaries are the ones in `CODARIS_BIN_DIR` (default: this example's target directory).
//! `MALLOC_ARENA_MAX` in the environment is passed on to the daemon (glibc's arenas);
//! `SESSION_MEMORY_TRIM=1` makes the daemon call `malloc_trim(0)` through `gdb` at the end and
//! reads again (what the allocator kept of freed memory, against what is still in use);
//! `SESSION_MEMORY_CACHE_MB=N` sets `daemon.ledger_cache_mb` (sled's page cache). The state
//! directory is made under `TMPDIR`: `TMPDIR=/dev/shm` takes the disk's syncs out of the run
//! (on a loaded machine a session's create and end wait seconds for them), not its memory.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a measuring driver"
)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use codaris_proto::v1;
use codaris_test_support::sandbox::Sandbox;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};

/// How long the daemon is left alone before each reading.
const QUIET: Duration = Duration::from_secs(3);
/// Sessions made before the `before` reading, so what the first sessions make once (the
/// spawner thread, the cgroup subtree, lazily built tables) is not counted as kept.
const WARM_UP: usize = 50;

async fn connect(socket: PathBuf) -> Channel {
    Endpoint::from_static("http://codarisd.local")
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let socket = socket.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?)) }
        }))
        .await
        .expect("connect to codarisd")
}

/// A `/proc/<pid>/status` field, in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read status");
    text.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .expect("status field")
}

fn reading(pid: u32, what: &str) -> u64 {
    let anon = status_kib(pid, "RssAnon");
    let rss = status_kib(pid, "VmRSS");
    println!(
        "{what:>8}: RssAnon {:>7.2} MiB  VmRSS {:>7.2} MiB",
        mib(anon),
        mib(rss)
    );
    anon
}

#[expect(clippy::cast_precision_loss, reason = "a reading in MiB")]
fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Creates a session, runs its turn (with `turn`) to its end, and ends it.
async fn one(
    sessions: &mut v1::sessions_client::SessionsClient<Channel>,
    cwd: &str,
    script: &str,
    turn: bool,
) {
    let session = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: cwd.to_owned(),
            permission_mode: v1::PermissionMode::Bypass as i32,
            script: script.to_owned(),
            ..Default::default()
        })
        .await
        .expect("create session")
        .into_inner();
    if turn {
        let mut events = sessions
            .turn(v1::TurnRequest {
                session_id: session.id.clone(),
                text: "go".to_owned(),
            })
            .await
            .expect("start turn")
            .into_inner();
        while let Some(event) = events.message().await.expect("turn event") {
            if std::env::var_os("SESSION_MEMORY_TRACE").is_some() {
                eprintln!("{event:?}");
            }
            if matches!(event.event, Some(v1::turn_event::Event::TurnEnded(_))) {
                break;
            }
        }
    }
    sessions
        .end_session(v1::EndSessionRequest { id: session.id })
        .await
        .expect("end session");
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().map_or(2000, |n| n.parse().expect("a count"));
    let turn = args.next().as_deref() != Some("plain");
    let sandbox = Sandbox::new();
    let cwd = sandbox.root.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(cwd.join("notes.md"), "a note\n").unwrap();
    let script = sandbox.root.path().join("script.json");
    let rounds = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "run_command", "args": {"command": "true"}}]},
        {"tool_calls": [{"name": "read_file", "args": {"path": "notes.md"}}]},
        {"text": "done"}
    ]}]});
    std::fs::write(&script, rounds.to_string()).unwrap();
    // The sandbox clears the environment; glibc's arena limit is passed on for the experiment.
    let arenas = std::env::var("MALLOC_ARENA_MAX").ok();
    let env: Vec<(&str, &str)> = arenas
        .iter()
        .map(|n| ("MALLOC_ARENA_MAX", n.as_str()))
        .collect();
    // `SESSION_MEMORY_CACHE_MB`: sled's page cache, to tell what it keeps from the rest.
    sandbox.write_config(&match std::env::var("SESSION_MEMORY_CACHE_MB") {
        Ok(mb) => format!("[daemon]\nledger_cache_mb = {mb}\n"),
        Err(_) => String::new(),
    });
    // Not `start_daemon`: that keeps the daemon's log lines in a pipe nobody reads here, and a
    // full pipe stops the daemon at its next line.
    let mut daemon = sandbox
        .command("codarisd")
        .envs(env)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn codarisd");
    codaris_test_support::sandbox::wait_for(Duration::from_secs(20), || {
        std::os::unix::net::UnixStream::connect(sandbox.socket()).is_ok()
    });
    let pid = daemon.id();
    let mut sessions = v1::sessions_client::SessionsClient::new(connect(sandbox.socket()).await);
    let (cwd, script) = (cwd.display().to_string(), script.display().to_string());
    println!(
        "{count} sessions, {}",
        if turn { "one turn each" } else { "no turn" }
    );
    tokio::time::sleep(QUIET).await;
    let idle = reading(pid, "idle");
    for _ in 0..WARM_UP {
        one(&mut sessions, &cwd, &script, turn).await;
    }
    tokio::time::sleep(QUIET).await;
    let before = reading(pid, "before");
    let started = Instant::now();
    for n in 1..=count {
        one(&mut sessions, &cwd, &script, turn).await;
        if n % 500 == 0 {
            eprintln!("{n} sessions, {:.1} s", started.elapsed().as_secs_f64());
        }
    }
    let took = started.elapsed();
    tokio::time::sleep(QUIET).await;
    let after = reading(pid, "after");
    println!(
        "after - idle: {:+.2} MiB, after - before: {:+.2} MiB ({count} sessions in {:.1} s)",
        mib(after) - mib(idle),
        mib(after) - mib(before),
        took.as_secs_f64()
    );
    if std::env::var_os("SESSION_MEMORY_TRIM").is_some() {
        // What glibc's allocator keeps of memory already freed: ask it to give it all back.
        let trimmed = std::process::Command::new("gdb")
            .args([
                "-p",
                &pid.to_string(),
                "-batch",
                "-ex",
                "call (int) malloc_trim(0)",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("run gdb");
        assert!(trimmed.success(), "gdb could not call malloc_trim");
        let trimmed = reading(pid, "trimmed");
        println!("trimmed - idle: {:+.2} MiB", mib(trimmed) - mib(idle));
    }
    if let Some(seconds) = std::env::var_os("SESSION_MEMORY_HOLD") {
        // Time to look at the daemon from outside (a heap profiler's attach) before it stops.
        let seconds = seconds.to_str().and_then(|s| s.parse().ok()).unwrap_or(60);
        println!("holding the daemon (pid {pid}) for {seconds} s");
        tokio::time::sleep(Duration::from_secs(seconds)).await;
    }
    // Stopped as a user would, so it stops its own children (the built-in MCP server) too.
    let raw = rustix::process::Pid::from_raw(i32::try_from(pid).expect("a pid")).expect("a pid");
    rustix::process::kill_process(raw, rustix::process::Signal::TERM).expect("stop codarisd");
    daemon.wait().expect("reap codarisd");
}
