//! A year of use through the real binaries: `codarisd` (release) driven by `codaris run` with
//! the scripted model, session after session, until the ledger holds 100,000 decisions and
//! 10,000 grants across 1,000 sessions (by default). Every tenth of the way it samples what a
//! user would feel — `codaris status`, `codaris ledger decisions -n 20`, the time per tool call
//! of the sessions just run, the daemon's resident memory — and at the end it stops the daemon
//! and times `codaris audit replay` over everything. Costs that do not grow with the history
//! give flat columns; the last row is printed as a ratio to the first (the reference, measured
//! in the same run at a tenth of the history).
//!
//! ```sh
//! cargo build --release --bins
//! cargo bench -p codaris-daemon --bench soak -- [--sessions N] [--calls M] [--grants G] [--cache-mb MB]
//! ```
//!
//! Each session is one turn: `G` writes outside the allowed folders, each in a folder of its own
//! and each after the model asked for it (a card, answered `session` by `--approve session`, so
//! one grant each; the request and the write are both decided calls), then reads inside the
//! project until the session made `M` decided calls. Not run by `cargo test` (it takes minutes).

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod binaries;
use binaries::{bin, proc_kib, spawn, stop, wait_serving};

struct Options {
    sessions: usize,
    calls: usize,
    grants: usize,
    /// `daemon.ledger_cache_mb`, when given: what the daemon's memory may grow to is mostly
    /// sled's page cache, which this bounds.
    cache_mb: Option<usize>,
}

fn options() -> Options {
    let mut options = Options {
        sessions: 1_000,
        calls: 100,
        grants: 10,
        cache_mb: None,
    };
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|at| args.get(at + 1))
            .map(|v| v.parse::<usize>().unwrap())
    };
    if let Some(n) = value("--sessions") {
        options.sessions = n.max(10);
    }
    if let Some(n) = value("--calls") {
        options.calls = n;
    }
    if let Some(n) = value("--grants") {
        options.grants = n;
    }
    options.cache_mb = value("--cache-mb");
    // Each grant takes two decided calls: the request for it and the write.
    options.calls = options.calls.max(2 * options.grants + 1);
    options
}

/// A binary beside the benchmarked `codarisd`, which must be built.
fn built(name: &str) -> std::path::PathBuf {
    let path = bin(name);
    if !path.is_file() {
        eprintln!(
            "{} is missing: run `cargo build --release --bins` first",
            path.display()
        );
        std::process::exit(1);
    }
    path
}

/// The scripted session, in few rounds (a turn has a bounded number of model calls): the model
/// asks for every grant (a card each, answered `session`), writes in each granted folder, then
/// reads distinct files (the loop guard ends a turn that repeats a call) twenty at a time.
fn script(options: &Options, outside: &Path) -> Value {
    let dirs: Vec<PathBuf> = (0..options.grants)
        .map(|g| outside.join(format!("g{g}")))
        .collect();
    let asks: Vec<Value> = dirs
        .iter()
        .map(|dir| {
            json!({"name": "request_capability", "args": {
                "capability": "mutate_outside_fence", "path": dir.display().to_string(),
                "reason": "the soak writes its results there"}})
        })
        .collect();
    let writes: Vec<Value> = dirs
        .iter()
        .map(|dir| {
            json!({"name": "write", "args": {
                "path": dir.join("out.txt").display().to_string(), "content": "x"}})
        })
        .collect();
    let mut rounds = Vec::new();
    if !dirs.is_empty() {
        rounds.push(json!({"tool_calls": asks}));
        rounds.push(json!({"tool_calls": writes}));
    }
    let reads: Vec<Value> = (0..options.calls - 2 * options.grants)
        .map(|n| json!({"name": "read_file", "args": {"path": format!("src/f{n}.txt")}}))
        .collect();
    for chunk in reads.chunks(20) {
        rounds.push(json!({"tool_calls": chunk}));
    }
    rounds.push(json!({"text": "done"}));
    json!({"turns": [{"rounds": rounds}]})
}

struct Daemon {
    child: Child,
    state_dir: PathBuf,
}

impl Daemon {
    fn start(state_dir: &Path, cache_mb: Option<usize>) -> Daemon {
        let config = match cache_mb {
            Some(mb) => format!("[daemon]\nledger_cache_mb = {mb}\n"),
            None => String::new(),
        };
        std::fs::write(state_dir.join("config.toml"), config).unwrap();
        let path = std::env::var("PATH").unwrap_or_default();
        let child = spawn(
            state_dir,
            &state_dir.join("config.toml"),
            &[("PATH", path.as_str())],
        );
        wait_serving(state_dir, Duration::from_millis(5));
        Daemon {
            child,
            state_dir: state_dir.to_path_buf(),
        }
    }

    fn rss_mb(&self) -> f64 {
        proc_kib(self.child.id(), "VmRSS:") as f64 / 1024.0
    }

    fn stop(self) {
        stop(self.child);
    }
}

fn codaris(state_dir: &Path, args: &[&str]) -> std::process::Output {
    let output = Command::new(built("codaris"))
        .env_clear()
        .env("CODARIS_STATE_DIR", state_dir)
        .env("CODARIS_CONFIG", state_dir.join("config.toml"))
        .env("HOME", state_dir)
        .arg("--no-autostart")
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "codaris {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The median of five runs of a command, in milliseconds.
fn median_ms(state_dir: &Path, args: &[&str]) -> f64 {
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let started = Instant::now();
            codaris(state_dir, args);
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[2]
}

struct Row {
    sessions: usize,
    status_ms: f64,
    decisions_ms: f64,
    per_call_ms: f64,
    rss_mb: f64,
}

fn main() {
    let options = options();
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    let (state_dir, project, outside) = (root.join("state"), root.join("proj"), root.join("out"));
    for dir in [&state_dir, &project.join("src"), &outside] {
        std::fs::create_dir_all(dir).unwrap();
    }
    for n in 0..options.calls {
        std::fs::write(project.join(format!("src/f{n}.txt")), "a line\n").unwrap();
    }
    let script_path = root.join("script.json");
    std::fs::write(
        &script_path,
        serde_json::to_vec(&script(&options, &outside)).unwrap(),
    )
    .unwrap();
    let daemon = Daemon::start(&state_dir, options.cache_mb);
    println!(
        "soak: {} sessions of {} decided calls ({} grants each): {} decisions, {} grants",
        options.sessions,
        options.calls,
        options.grants,
        options.sessions * options.calls,
        options.sessions * options.grants
    );
    println!("sessions | status ms | ledger decisions -n 20 ms | ms per call | daemon RSS MB");
    let checkpoint = options.sessions / 10;
    let mut rows: Vec<Row> = Vec::new();
    let mut since = Instant::now();
    for session in 1..=options.sessions {
        let script = script_path.display().to_string();
        let cwd = project.display().to_string();
        codaris(
            &daemon.state_dir,
            &[
                "run",
                "--provider",
                "scripted",
                "--script",
                &script,
                "--cwd",
                &cwd,
                "--approve",
                "session",
                "go",
            ],
        );
        if session % checkpoint == 0 {
            let per_call_ms =
                since.elapsed().as_secs_f64() * 1e3 / (checkpoint * options.calls) as f64;
            let row = Row {
                sessions: session,
                status_ms: median_ms(&daemon.state_dir, &["status", "--json"]),
                decisions_ms: median_ms(
                    &daemon.state_dir,
                    &["ledger", "decisions", "-n", "20", "--json"],
                ),
                per_call_ms,
                rss_mb: daemon.rss_mb(),
            };
            println!(
                "{:>8} | {:>9.2} | {:>25.2} | {:>11.3} | {:>13.1}",
                row.sessions, row.status_ms, row.decisions_ms, row.per_call_ms, row.rss_mb
            );
            rows.push(row);
            since = Instant::now();
        }
    }
    let (first, last) = (&rows[0], &rows[rows.len() - 1]);
    println!(
        "last ÷ first: status {:.2}×, ledger decisions -n 20 {:.2}×, per call {:.2}×, RSS {:+.1} MB; ledger decisions -n 20 ÷ status at the end {:.2}×",
        last.status_ms / first.status_ms,
        last.decisions_ms / first.decisions_ms,
        last.per_call_ms / first.per_call_ms,
        last.rss_mb - first.rss_mb,
        last.decisions_ms / last.status_ms,
    );
    daemon.stop();
    let started = Instant::now();
    let output = codaris(&state_dir, &["audit", "replay", "--json"]);
    let elapsed = started.elapsed();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let decisions = report["decisions"].as_u64().unwrap_or(0);
    let expected = options.sessions * options.calls;
    assert_eq!(
        (
            decisions as usize,
            report["grants"].as_u64().unwrap_or(0) as usize
        ),
        (expected, options.sessions * options.grants),
        "the sessions did not make every call: {report}"
    );
    assert_eq!(report["matched"], report["decisions"], "{report}");
    println!(
        "audit replay: {decisions} decisions, {} matched, {} grants, in {:.2} s ({:.1} µs per decision, the whole command)",
        report["matched"],
        report["grants"],
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / decisions.max(1) as f64
    );
}
