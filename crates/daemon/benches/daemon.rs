//! Daemon speed: a `Daemon.Status` round trip over the Unix socket beside a raw socket echo of
//! the same size in the same run, `Status` with 1,000 sessions against one, `codarisd` from exec
//! to serving, its idle resident memory, and `codaris status` end to end.
//!
//! Criterion reports medians; each group also prints p50/p99 from individually timed samples,
//! since criterion's summary has no tail percentiles. Run `cargo build --release --bins` first so
//! the `codaris` binary sits beside the benchmarked `codarisd`.
//!
//! The round trips are timed one by one and interleaved (one of each in turn), so the machine's
//! load falls on all of them alike, from a current-thread client runtime, as the CLI's:
//!
//! - **raw echo**: a Unix-socket write of the `StatusResponse`'s encoded size and the read of as
//!   many bytes echoed by a thread blocked in `read`: the kernel's part of any round trip.
//! - **in-process**: `Status` against `codaris_daemon::serve` on a two-worker runtime in this
//!   process (no log subscriber), and the health service's `Check` on the same server (tonic
//!   and h2 with no handler work), and `Status` against the same server on a current-thread
//!   runtime of its own thread (what the runtime's flavour costs per call).
//! - **codarisd**: `Status` against the release daemon, exec'd, with its logging, on a state
//!   directory holding one session and on one holding 1,000 (issue #13: at most 1.2× the one);
//!   the 1,000-session one again straight after (its workers still awake), and a third daemon
//!   with `RUST_LOG=off` (what the log subscriber costs per call), and, when
//!   `CODARIS_BENCH_BASELINE` names another build's `codarisd`, that one on one session: a
//!   before/after comparison in the same run, interleaved with the rest.
//! - **shared runtime**: the earlier measurement, client and server on one multi-thread runtime.

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codaris_daemon::config::{self, Flags, Sources};
use codaris_daemon::sessions::store::{NewSession, SessionStore};
use codaris_daemon::{Shutdown, StateClaim};
use codaris_ledger::Ledger;
use codaris_paths::StateLayout;
use codaris_proto::v1;
use criterion::{Criterion, criterion_group, criterion_main};

mod binaries;
use binaries::{bin, proc_kib, spawn, stop, wait_serving};
use hyper_util::rt::TokioIo;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

fn percentiles(label: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let at = |q: f64| {
        let index = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[index]
    };
    println!(
        "{label}: n={} p50={:?} p99={:?} max={:?}",
        samples.len(),
        at(0.50),
        at(0.99),
        at(1.0)
    );
    at(0.50)
}

async fn channel(socket: &Path) -> Channel {
    while UnixStream::connect(socket).await.is_err() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let socket = socket.to_path_buf();
    // The CLI's connector (`codaris_cli::client::connect`), so the client is the one it uses.
    Endpoint::from_static("http://codarisd.bench")
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let socket = socket.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?)) }
        }))
        .await
        .unwrap()
}

/// A thread that echoes whatever one connection sends, in `size`-byte messages.
fn echo_server(dir: &Path, size: usize) -> PathBuf {
    let path = dir.join("echo.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buffer = vec![0; size];
        while stream.read_exact(&mut buffer).is_ok() {
            if stream.write_all(&buffer).is_err() {
                break;
            }
        }
    });
    path
}

/// A state directory holding `count` active sessions, created through the daemon's own store.
fn state_with_sessions(dir: &Path, count: usize) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("absent-config.toml"), "").unwrap();
    let layout = StateLayout::new(dir);
    let ledger = Arc::new(Ledger::open(&layout.ledger()).unwrap());
    let store = SessionStore::open(ledger.clone(), &layout.sessions()).unwrap();
    for _ in 0..count {
        store
            .create(NewSession {
                cwd: dir.to_path_buf(),
                activity: codaris_policy::Activity::Agent,
                permission_mode: codaris_policy::PermissionMode::Ask,
                provider: codaris_agent::ProviderChoice::Scripted,
                model: None,
                script: None,
                base_url: None,
                instructions: Vec::new(),
                child: None,
                reasoning: None,
                title: String::new(),
                additional_dirs: Vec::new(),
            })
            .unwrap();
    }
    drop(store);
    ledger.flush().unwrap();
    dir.to_path_buf()
}

/// `codaris_daemon::serve` on `runtime`, on a fresh state directory: its socket and its stop.
fn serve_in_process(
    runtime: &tokio::runtime::Runtime,
    state_dir: &Path,
) -> (PathBuf, Shutdown, tokio::task::JoinHandle<()>) {
    let config = config::resolve(Sources {
        state_dir: state_dir.to_path_buf(),
        home: None,
        file: None,
        config_dir: None,
        env: BTreeMap::new(),
        flags: Flags::default(),
    })
    .unwrap();
    let layout = StateLayout::new(state_dir);
    let socket = layout.socket();
    let claim = StateClaim::acquire(layout).unwrap();
    let shutdown = Shutdown::new();
    let serving = runtime.spawn(codaris_daemon::serve(config, claim, shutdown.clone()));
    let served = runtime.spawn(async move { serving.await.unwrap().unwrap() });
    (socket, shutdown, served)
}

fn status_round_trip(c: &mut Criterion) {
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let temp = tempfile::tempdir().unwrap();
    let (socket, shutdown, served) = serve_in_process(&server_runtime, &temp.path().join("state"));
    // The same server on a current-thread runtime of its own thread: what the runtime's
    // flavour costs (a multi-thread runtime wakes its other worker for every task it queues).
    let flat_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (flat_socket, flat_shutdown, flat_served) =
        serve_in_process(&flat_runtime, &temp.path().join("flat"));
    let flat = std::thread::spawn(move || flat_runtime.block_on(flat_served).unwrap());

    let one = state_with_sessions(&temp.path().join("one"), 1);
    let many = state_with_sessions(&temp.path().join("many"), 1_000);
    let quiet = state_with_sessions(&temp.path().join("quiet"), 1);
    let daemon_one = spawn_daemon(&one);
    let daemon_many = spawn_daemon(&many);
    // The same daemon with its log filter off: what the subscriber costs per call.
    let daemon_quiet = spawn_daemon_with(&quiet, &[("RUST_LOG", "off")]);
    let baseline = std::env::var_os("CODARIS_BENCH_BASELINE").map(|binary| {
        let state = state_with_sessions(&temp.path().join("baseline"), 1);
        let child = spawn_binary(Path::new(&binary), &state);
        (child, state.join("codaris.sock"))
    });

    let (
        mut in_process,
        mut health,
        mut flat_client,
        mut exec_one,
        mut exec_many,
        mut quiet_client,
    ) = client_runtime.block_on(async {
        let in_process = v1::daemon_client::DaemonClient::new(channel(&socket).await);
        let flat = v1::daemon_client::DaemonClient::new(channel(&flat_socket).await);
        let health = HealthClient::new(channel(&socket).await);
        let exec_one =
            v1::daemon_client::DaemonClient::new(channel(&one.join("codaris.sock")).await);
        let exec_many =
            v1::daemon_client::DaemonClient::new(channel(&many.join("codaris.sock")).await);
        let quiet =
            v1::daemon_client::DaemonClient::new(channel(&quiet.join("codaris.sock")).await);
        (in_process, health, flat, exec_one, exec_many, quiet)
    });
    let mut baseline_client = baseline.as_ref().map(|(_, socket)| {
        client_runtime
            .block_on(async { v1::daemon_client::DaemonClient::new(channel(socket).await) })
    });
    let mut shared = server_runtime
        .block_on(async { v1::daemon_client::DaemonClient::new(channel(&socket).await) });
    let (size, sessions) = client_runtime.block_on(async {
        let one = exec_one
            .status(v1::StatusRequest {})
            .await
            .unwrap()
            .into_inner();
        let many = exec_many
            .status(v1::StatusRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(one.sessions_total, 1);
        assert_eq!(many.sessions_total, 1_000);
        (many.encoded_len(), many.sessions_total)
    });
    let echo_path = echo_server(temp.path(), size);
    let mut echo = client_runtime
        .block_on(UnixStream::connect(&echo_path))
        .unwrap();

    c.bench_function("status_round_trip_unix_socket", |b| {
        b.to_async(&client_runtime).iter(|| {
            let mut client = in_process.clone();
            async move { client.status(v1::StatusRequest {}).await.unwrap() }
        });
    });

    let rounds = 5_000;
    let mut samples: [Vec<Duration>; 10] = Default::default();
    let message = vec![7u8; size];
    let mut answer = vec![0u8; size];
    client_runtime.block_on(async {
        for _ in 0..rounds {
            let start = Instant::now();
            echo.write_all(&message).await.unwrap();
            echo.read_exact(&mut answer).await.unwrap();
            samples[0].push(start.elapsed());

            let start = Instant::now();
            in_process.status(v1::StatusRequest {}).await.unwrap();
            samples[1].push(start.elapsed());

            let start = Instant::now();
            health
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await
                .unwrap();
            samples[2].push(start.elapsed());

            let start = Instant::now();
            flat_client.status(v1::StatusRequest {}).await.unwrap();
            samples[6].push(start.elapsed());

            let start = Instant::now();
            exec_one.status(v1::StatusRequest {}).await.unwrap();
            samples[3].push(start.elapsed());

            let start = Instant::now();
            exec_many.status(v1::StatusRequest {}).await.unwrap();
            samples[4].push(start.elapsed());

            let start = Instant::now();
            quiet_client.status(v1::StatusRequest {}).await.unwrap();
            samples[7].push(start.elapsed());

            // A second call straight after the first, while the daemon's workers still spin:
            // the gap to the first is what waking an idle daemon costs.
            let start = Instant::now();
            exec_many.status(v1::StatusRequest {}).await.unwrap();
            samples[8].push(start.elapsed());

            if let Some(client) = &mut baseline_client {
                let start = Instant::now();
                client.status(v1::StatusRequest {}).await.unwrap();
                samples[9].push(start.elapsed());
            }
        }
    });
    server_runtime.block_on(async {
        for _ in 0..rounds {
            let start = Instant::now();
            shared.status(v1::StatusRequest {}).await.unwrap();
            samples[5].push(start.elapsed());
        }
    });
    let [
        echo_s,
        in_process_s,
        health_s,
        one_s,
        many_s,
        shared_s,
        flat_s,
        quiet_s,
        again_s,
        baseline_s,
    ] = samples;
    println!("round trips over the Unix socket, {size}-byte answer, {rounds} each, interleaved:");
    let echo50 = percentiles("  raw socket echo (reference)", echo_s);
    let ratio = |p50: Duration| p50.as_secs_f64() / echo50.as_secs_f64();
    let p = percentiles("  Status, in-process server", in_process_s);
    println!("    {:.2}× the echo", ratio(p));
    let p = percentiles("  health Check, in-process server", health_s);
    println!("    {:.2}× the echo", ratio(p));
    let p = percentiles(
        "  Status, in-process server on a current-thread runtime",
        flat_s,
    );
    println!("    {:.2}× the echo", ratio(p));
    let one50 = percentiles("  Status, codarisd with 1 session", one_s);
    println!("    {:.2}× the echo", ratio(one50));
    if !baseline_s.is_empty() {
        let p = percentiles("  Status, baseline codarisd with 1 session", baseline_s);
        println!(
            "    {:.2}× the echo, {:.2}× this build's",
            ratio(p),
            p.as_secs_f64() / one50.as_secs_f64()
        );
    }
    let many50 = percentiles(
        &format!("  Status, codarisd with {sessions} sessions"),
        many_s,
    );
    println!(
        "    {:.2}× the echo, {:.2}× the one-session daemon",
        ratio(many50),
        many50.as_secs_f64() / one50.as_secs_f64()
    );
    let p = percentiles("  Status, codarisd with RUST_LOG=off", quiet_s);
    println!("    {:.2}× the echo", ratio(p));
    let p = percentiles(
        &format!("  Status, codarisd with {sessions} sessions, second call in a row"),
        again_s,
    );
    println!("    {:.2}× the echo", ratio(p));
    let p = percentiles(
        "  Status, in-process, client on the server's runtime (after)",
        shared_s,
    );
    println!("    {:.2}× the echo (not interleaved)", ratio(p));

    // A server's orderly stop waits for its connections to close, and a client's connection
    // closes only while its runtime runs: the clients go first.
    drop((
        in_process,
        health,
        flat_client,
        exec_one,
        exec_many,
        quiet_client,
        baseline_client,
        echo,
        shared,
    ));
    drop(client_runtime);
    stop(daemon_one);
    stop(daemon_many);
    stop(daemon_quiet);
    if let Some((child, _)) = baseline {
        stop(child);
    }
    shutdown.trigger("bench done");
    flat_shutdown.trigger("bench done");
    flat.join().unwrap();
    server_runtime.block_on(served).unwrap();
}

/// `codarisd` on `state_dir`, its configuration file inside it so that none of the user's is
/// read, with `env` besides.
fn spawn_daemon_with(state_dir: &Path, env: &[(&str, &str)]) -> Child {
    spawn(state_dir, &state_dir.join("absent-config.toml"), env)
}

/// Another build's `codarisd` (`binary`), set up as [`spawn`] sets up this one.
fn spawn_binary(binary: &Path, state_dir: &Path) -> Child {
    Command::new(binary)
        .env_clear()
        .env("CODARIS_STATE_DIR", state_dir)
        .env("CODARIS_CONFIG", state_dir.join("absent-config.toml"))
        .env("HOME", state_dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

fn spawn_daemon(state_dir: &Path) -> Child {
    spawn_daemon_with(state_dir, &[])
}

/// Exec to first answered connection; the poll interval (50 µs) bounds the error.
fn start_once(root: &Path, i: usize) -> (Duration, Child) {
    let state_dir = root.join(format!("s{i}"));
    std::fs::create_dir_all(&state_dir).unwrap();
    // The config file path must exist only when explicit; point it inside so none is read.
    std::fs::write(state_dir.join("absent-config.toml"), "").unwrap();
    let start = Instant::now();
    let child = spawn_daemon(&state_dir);
    wait_serving(&state_dir, Duration::from_micros(50));
    (start.elapsed(), child)
}

fn startup_and_memory(c: &mut Criterion) {
    let root = tempfile::tempdir().unwrap();
    let mut i = 0;
    let mut group = c.benchmark_group("codarisd");
    group.sample_size(20);
    group.bench_function("exec_to_serving", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                i += 1;
                let (elapsed, child) = start_once(root.path(), i);
                total += elapsed;
                stop(child);
            }
            total
        });
    });
    group.finish();

    let samples = (0..30)
        .map(|_| {
            i += 1;
            let (elapsed, child) = start_once(root.path(), i);
            stop(child);
            elapsed
        })
        .collect();
    percentiles("codarisd exec to serving", samples);

    i += 1;
    let (_, child) = start_once(root.path(), i);
    std::thread::sleep(Duration::from_secs(2));
    println!(
        "codarisd idle resident memory after 2 s: {} kB",
        proc_kib(child.id(), "VmRSS:")
    );

    let cli = bin("codaris");
    if cli.is_file() {
        let state_dir = root.path().join(format!("s{i}"));
        let run = || {
            let output = Command::new(&cli)
                .env_clear()
                .env("CODARIS_STATE_DIR", &state_dir)
                .args(["--no-autostart", "status", "--json"])
                .output()
                .unwrap();
            assert!(output.status.success());
        };
        c.bench_function("codaris_status_end_to_end", |b| b.iter(run));
        let samples = (0..200)
            .map(|_| {
                let start = Instant::now();
                run();
                start.elapsed()
            })
            .collect();
        percentiles("codaris status end to end", samples);
    } else {
        println!(
            "skipped codaris status end to end: {} is not built (run `cargo build --release --bins` first)",
            cli.display()
        );
    }
    stop(child);
}

criterion_group!(benches, status_round_trip, startup_and_memory);
criterion_main!(benches);
