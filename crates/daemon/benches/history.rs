//! A daemon with a long history: `codaris ledger decisions -n 20` on a ledger of 100,000
//! decisions against `codaris status` on the same daemon, both exec'd and interleaved, and the
//! daemon's resident memory before and after (issue #13: at most 2× `status`, at most 10 MB of
//! growth).
//!
//! The decisions are written with the ledger's own API before `codarisd` starts, from many
//! threads at once, so the group commit puts many appends in one `fdatasync`. Each is the
//! decision of a `write` with its session's 10 grants in force (grant records, as card answers
//! record them: the decision names them by their grant set), spread over 100 sessions. Run
//! `cargo build --release --bins` first so the `codaris` binary sits beside `codarisd`.

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use codaris_test_support::bench::percentiles;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use codaris_ledger::{DecisionRecord, Ledger};
use codaris_paths::StateLayout;
use codaris_policy::{Grant, PermissionMode, Request, Task};
use criterion::{Criterion, criterion_group, criterion_main};

mod binaries;
use binaries::{bin, proc_kib, spawn, stop, wait_serving};
mod grants;
use serde_json::json;

const DECISIONS: usize = 100_000;
const SESSIONS: usize = 100;
/// Writers at once: enough that each commit carries a batch.
const WRITERS: usize = 16;

/// One decision as the dispatcher records it, for session `session` and call `i`, with the
/// session's `grants` in force.
fn record(root: &Path, session: usize, i: usize, grants: &[Grant]) -> DecisionRecord {
    let mut task = Task::new(root.join("proj").display().to_string());
    task.permission_mode = PermissionMode::AcceptEdits;
    let grants = grants.to_vec();
    let request = Request {
        tool: codaris_policy::ToolId::parse("write"),
        args: json!({"path": format!("out{}.txt", i % 16), "content": "x"}),
        task,
        grants,
        spec: None,
    };
    let decision = request.evaluate();
    DecisionRecord::new(
        format!("s-{session:03}"),
        request,
        decision,
        1_000 + i as u64,
    )
}

/// A state directory whose ledger holds `DECISIONS` decisions.
fn prepare(dir: &Path) -> Duration {
    std::fs::create_dir_all(dir.join("proj")).unwrap();
    std::fs::write(dir.join("absent-config.toml"), "").unwrap();
    let layout = StateLayout::new(dir);
    let ledger = Ledger::open(&layout.ledger()).unwrap();
    let mut cards = 0;
    let in_force: Vec<Vec<Grant>> = (0..SESSIONS)
        .map(|s| {
            let session = format!("s-{s:03}");
            grants::give(&ledger, &session, 10, &mut cards);
            ledger.grant_view(&session).unwrap().grants
        })
        .collect();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for writer in 0..WRITERS {
            let (ledger, in_force) = (&ledger, &in_force);
            scope.spawn(move || {
                for i in (writer..DECISIONS).step_by(WRITERS) {
                    let session = i % SESSIONS;
                    ledger
                        .append_decision(record(dir, session, i, &in_force[session]))
                        .unwrap();
                }
            });
        }
    });
    let took = started.elapsed();
    ledger.flush().unwrap();
    took
}

fn history(c: &mut Criterion) {
    let cli = bin("codaris");
    if !cli.is_file() {
        println!(
            "skipped: {} is not built (run `cargo build --release --bins` first)",
            cli.display()
        );
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let state = temp.path().canonicalize().unwrap().join("state");
    let took = prepare(&state);
    println!("{DECISIONS} decisions written by {WRITERS} threads in {took:.1?}");

    let started = Instant::now();
    let daemon = spawn(&state, &state.join("absent-config.toml"), &[]);
    wait_serving(&state, Duration::from_micros(100));
    println!(
        "codarisd on {DECISIONS} decisions: exec to serving {:.1?}, RSS then {} KiB (peak {} KiB)",
        started.elapsed(),
        proc_kib(daemon.id(), "VmRSS:"),
        proc_kib(daemon.id(), "VmHWM:"),
    );
    let run = |args: &[&str]| {
        let output = Command::new(&cli)
            .env_clear()
            .env("CODARIS_STATE_DIR", &state)
            .arg("--no-autostart")
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    // The first of each pays for what the daemon loads on first use; RSS is read after it.
    let listed = run(&["ledger", "decisions", "-n", "20", "--json"]);
    assert_eq!(listed.lines().count(), 20);
    run(&["status", "--json"]);
    let rss_before = proc_kib(daemon.id(), "VmRSS:");

    let rounds = 200;
    let mut status = Vec::with_capacity(rounds);
    let mut decisions = Vec::with_capacity(rounds);
    let mut session = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let start = Instant::now();
        run(&["status", "--json"]);
        status.push(start.elapsed());
        let start = Instant::now();
        run(&["ledger", "decisions", "-n", "20", "--json"]);
        decisions.push(start.elapsed());
        let start = Instant::now();
        let id = format!("s-{:03}", i % SESSIONS);
        run(&[
            "ledger",
            "decisions",
            "-n",
            "20",
            "--json",
            "--session",
            &id,
        ]);
        session.push(start.elapsed());
    }
    let rss_after = proc_kib(daemon.id(), "VmRSS:");
    let (status50, status99) = percentiles(&mut status);
    println!(
        "exec'd, interleaved, {rounds} each ({} bytes for 20 decisions):",
        listed.len()
    );
    println!("  codaris status (reference)                 p50={status50:?} p99={status99:?}");
    for (label, samples) in [
        ("codaris ledger decisions -n 20", &mut decisions),
        ("codaris ledger decisions -n 20 --session", &mut session),
    ] {
        let (p50, p99) = percentiles(samples);
        println!(
            "  {label:<42} p50={p50:?} p99={p99:?}  {:.2}× status p50, {:.2}× p99",
            p50.as_secs_f64() / status50.as_secs_f64(),
            p99.as_secs_f64() / status99.as_secs_f64(),
        );
    }
    println!(
        "  codarisd RSS after the first reads {} KiB, after {} more: {} KiB (growth {} KiB)",
        rss_before,
        rounds * 3,
        rss_after,
        rss_after.saturating_sub(rss_before)
    );

    c.bench_function("history/codaris ledger decisions -n 20", |b| {
        b.iter(|| run(&["ledger", "decisions", "-n", "20", "--json"]));
    });
    c.bench_function("history/codaris status", |b| {
        b.iter(|| run(&["status", "--json"]));
    });
    stop(daemon);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = history
}
criterion_main!(benches);
