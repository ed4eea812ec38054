//! Daemon speed: a `Daemon.Status` round trip over the Unix socket, `codarisd` from exec to
//! serving, its idle resident memory, and `codaris status` end to end.
//!
//! Criterion reports medians; each group also prints p50/p99 from individually timed samples,
//! since criterion's summary has no tail percentiles. Run `cargo build --release --bins` first so
//! the `codaris` binary sits beside the benchmarked `codarisd`.

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use codaris_daemon::config::{self, Flags, Sources};
use codaris_daemon::{Shutdown, StateClaim};
use codaris_paths::StateLayout;
use codaris_proto::v1;
use criterion::{Criterion, criterion_group, criterion_main};
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Endpoint, Uri};

fn percentiles(label: &str, mut samples: Vec<Duration>) {
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
}

fn status_round_trip(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let temp = tempfile::tempdir().unwrap();
    let state_dir = temp.path().join("state");
    let config = config::resolve(Sources {
        state_dir: state_dir.clone(),
        home: None,
        file: None,
        config_dir: None,
        env: BTreeMap::new(),
        flags: Flags::default(),
    })
    .unwrap();
    let layout = StateLayout::new(&state_dir);
    let socket = layout.socket();
    let claim = StateClaim::acquire(layout).unwrap();
    let shutdown = Shutdown::new();
    let server = runtime.spawn(codaris_daemon::serve(config, claim, shutdown.clone()));
    let mut client = runtime.block_on(async {
        while UnixStream::connect(&socket).await.is_err() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let socket = socket.clone();
        let channel =
            Endpoint::from_static("http://codarisd.bench")
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let socket = socket.clone();
                    async move {
                        Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?))
                    }
                }))
                .await
                .unwrap();
        v1::daemon_client::DaemonClient::new(channel)
    });

    c.bench_function("status_round_trip_unix_socket", |b| {
        b.to_async(&runtime).iter(|| {
            let mut client = client.clone();
            async move { client.status(v1::StatusRequest {}).await.unwrap() }
        });
    });

    let samples = runtime.block_on(async {
        let mut samples = Vec::with_capacity(20_000);
        for _ in 0..20_000 {
            let start = Instant::now();
            client.status(v1::StatusRequest {}).await.unwrap();
            samples.push(start.elapsed());
        }
        samples
    });
    percentiles("status round trip over the socket", samples);

    shutdown.trigger("bench done");
    runtime.block_on(server).unwrap().unwrap();
}

fn bin_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_codarisd"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn spawn_daemon(state_dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_codarisd"))
        .env_clear()
        .env("CODARIS_STATE_DIR", state_dir)
        .env("CODARIS_CONFIG", state_dir.join("absent-config.toml"))
        .env("HOME", state_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn stop(mut child: Child) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    child.wait().unwrap();
}

/// Exec to first answered connection; the poll interval (50 µs) bounds the error.
fn start_once(root: &Path, i: usize) -> (Duration, Child) {
    let state_dir = root.join(format!("s{i}"));
    std::fs::create_dir_all(&state_dir).unwrap();
    // The config file path must exist only when explicit; point it inside so none is read.
    std::fs::write(state_dir.join("absent-config.toml"), "").unwrap();
    let socket = state_dir.join("codaris.sock");
    let start = Instant::now();
    let child = spawn_daemon(&state_dir);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        std::thread::sleep(Duration::from_micros(50));
    }
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
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .unwrap_or("VmRSS: unknown");
    println!(
        "codarisd idle resident memory after 2 s: {}",
        rss.trim_start_matches("VmRSS:").trim()
    );

    let cli = bin_dir().join("codaris");
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
