//! A year of use, in process: a ledger holding 100,000 decisions and 10,000 grants across 1,000
//! sessions, against a fresh ledger (one session, its 10 grants, 1,000 decisions) as the
//! reference, each measure interleaved call by call between the two so both see the same disk
//! and the same neighbours. What it shows: a call's decision path, the newest decisions of the
//! ledger and of one session, and replay per decision, cost the same with a year behind them.
//! Search at 50,000 tools is measured against tantivy by `codaris-index`'s `scale` bench; the
//! daemon's own round trips by `daemon` and the whole binaries by `soak`.
//!
//! `cargo bench -p codaris-daemon --bench year` (setting up the year takes about a minute).

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use codaris_test_support::bench::percentiles;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codaris_daemon::calls::dispatch::{Dispatcher, SessionCall};
use codaris_ledger::Ledger;
use codaris_policy::{PermissionMode, Task};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

mod grants;
use grants::give;

const SESSIONS: usize = 1_000;
const GRANTS_PER_SESSION: usize = 10;
const DECISIONS: usize = 100_000;
const REFERENCE_DECISIONS: usize = 1_000;
const WRITERS: usize = 16;

fn session(n: usize) -> String {
    format!("s{n:05}")
}

fn call(root: &Path, session: &str, i: usize) -> SessionCall {
    let mut task = Task::new(root.join("proj").display().to_string());
    task.permission_mode = PermissionMode::AcceptEdits;
    // Reads and writes inside the project, and runs of a granted program: the mix of a session.
    let (tool, args) = match i % 3 {
        0 => ("read_file", json!({"path": format!("src/f{}.rs", i % 50)})),
        1 => (
            "write",
            json!({"path": format!("out/{}.txt", i % 16), "content": "x"}),
        ),
        _ => ("run_command", json!({"command": "cargo test"})),
    };
    SessionCall {
        session_id: session.into(),
        call_id: format!("call{i}").into(),
        tool: codaris_policy::ToolId::parse(tool),
        args: json!(args),
        task,
        cwd: None,
        spec: None,
        marks: None,
    }
}

struct Side {
    _temp: tempfile::TempDir,
    root: PathBuf,
    ledger: Arc<Ledger>,
    dispatcher: Dispatcher,
    /// The session the timed calls are made in.
    session: String,
    /// Keeps its view in memory, as its live session does in the daemon.
    _lease: codaris_ledger::GrantLease,
}

/// A ledger of `sessions` sessions with their grants and `decisions` decisions spread over
/// them, written by `WRITERS` threads through the dispatcher (as concurrent turns would).
fn side(sessions: usize, decisions: usize) -> Side {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("proj/src")).unwrap();
    let ledger = Arc::new(Ledger::open(&root.join("ledger")).unwrap());
    let mut cards = 0;
    for s in 0..sessions {
        give(&ledger, &session(s), GRANTS_PER_SESSION, &mut cards);
    }
    let dispatcher = Dispatcher::new(ledger.clone()).with_command_allowlist(&["cargo".to_owned()]);
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (dispatcher, root) = (dispatcher.clone(), root.clone());
            std::thread::spawn(move || {
                for i in (w..decisions).step_by(WRITERS) {
                    dispatcher
                        .decide(call(&root, &session(i % sessions), i))
                        .unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    Side {
        _lease: ledger.lease_grant_view(&session(sessions / 2)),
        _temp: temp,
        root,
        ledger,
        dispatcher: dispatcher.for_session(),
        session: session(sessions / 2),
    }
}

/// One phase of a replay, answering how many decisions it covered.
type Phase = dyn Fn(&Side) -> usize;

/// Times `measure` on the year and on the reference in turn, `n` times each, and prints both
/// with their ratio.
fn compare(label: &str, n: usize, year: &Side, fresh: &Side, measure: impl Fn(&Side, usize)) {
    let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        for (side, samples) in [(year, &mut a), (fresh, &mut b)] {
            let started = Instant::now();
            measure(side, i);
            samples.push(started.elapsed());
        }
    }
    let ((a50, a99), (b50, b99)) = (percentiles(&mut a), percentiles(&mut b));
    println!(
        "{label}: a year p50={a50:?} p99={a99:?}; fresh p50={b50:?} p99={b99:?}; year ÷ fresh {:.2}× / {:.2}×",
        a50.as_secs_f64() / b50.as_secs_f64(),
        a99.as_secs_f64() / b99.as_secs_f64(),
    );
}

fn year(c: &mut Criterion) {
    let started = Instant::now();
    let year = side(SESSIONS, DECISIONS);
    println!(
        "a year: {SESSIONS} sessions, {} grants, {DECISIONS} decisions, set up in {:.1} s",
        SESSIONS * GRANTS_PER_SESSION,
        started.elapsed().as_secs_f64()
    );
    let fresh = side(1, REFERENCE_DECISIONS);

    compare("decision path", 300, &year, &fresh, |side, i| {
        std::hint::black_box(
            side.dispatcher
                .decide(call(&side.root, &side.session, i))
                .unwrap(),
        );
    });
    compare("newest 20 decisions", 300, &year, &fresh, |side, _| {
        let (newest, _) = side.ledger.newest_decisions(None, 20).unwrap();
        assert_eq!(newest.len(), 20);
    });
    compare(
        "newest 20 decisions of one session",
        300,
        &year,
        &fresh,
        |side, _| {
            let (newest, _) = side
                .ledger
                .newest_decisions(Some(&side.session), 20)
                .unwrap();
            assert_eq!(newest.len(), 20);
        },
    );

    // Replay reads and decides everything: per decision, a year against a thousand, in its
    // phases — the decisions read back (grants filled in) and decided again; the whole evidence
    // read (every record, each decision's stored digest); the audit of it (replay, what backs
    // each grant, the chain walked); and the same audit streamed, as the command runs it.
    let per_decision = |side: &Side, phase: &Phase| {
        let mut runs: Vec<f64> = (0..3)
            .map(|_| {
                let started = Instant::now();
                let decisions = phase(side);
                started.elapsed().as_secs_f64() * 1e6 / decisions as f64
            })
            .collect();
        runs.sort_by(f64::total_cmp);
        runs[1]
    };
    let phases: [(&str, &Phase); 4] = [
        ("read and replay (Ledger::decisions + replay)", &|side| {
            let (records, corrupt) = side.ledger.decisions(None).unwrap();
            let report = codaris_ledger::replay(&records, &corrupt);
            assert!(report.is_clean(), "{report:?}");
            report.decisions
        }),
        ("read the evidence (Ledger::evidence)", &|side| {
            side.ledger.evidence().unwrap().decisions.len()
        }),
        ("the whole audit (evidence + audit)", &|side| {
            let report = codaris_ledger::audit(&side.ledger.evidence().unwrap());
            assert!(report.is_clean(), "{report:?}");
            report.decisions
        }),
        // What `codaris audit replay` runs: the same report, a batch of decisions at a time.
        ("the streaming audit (Ledger::audit)", &|side| {
            let report = side.ledger.audit().unwrap();
            assert!(report.is_clean(), "{report:?}");
            report.decisions
        }),
    ];
    for (label, phase) in phases {
        let (a, b) = (per_decision(&year, phase), per_decision(&fresh, phase));
        println!(
            "{label}, per decision, median of 3: a year {a:.2} µs; fresh {b:.2} µs; year ÷ fresh {:.2}×",
            a / b
        );
    }

    let mut group = c.benchmark_group("a year");
    group.sample_size(20);
    for (label, side) in [("a year", &year), ("fresh", &fresh)] {
        group.bench_function(format!("decision path/{label}"), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                side.dispatcher
                    .decide(call(&side.root, &side.session, i))
                    .unwrap()
            });
        });
        group.bench_function(format!("newest 20/{label}"), |b| {
            b.iter(|| side.ledger.newest_decisions(None, 20).unwrap());
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3));
    targets = year
}
criterion_main!(benches);
