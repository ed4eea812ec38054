//! One tool call's decision path — `Dispatcher::decide`: paths resolved, the session's grants in
//! force read, `evaluate`, the decision appended durably — with few grants and with many, in the
//! call's own session and in others, and the size of the decision record each writes.
//!
//! The target (#13): the call with 10,000 grants in other sessions and 1,000 in its own
//! costs at most 1.2× the call with 10, and the record's size does not grow with the grants.
//! The last case, 10,000 grants in the call's own session, shows that nothing of the call grows
//! with its own session's grants either (how the record names them is kept with the view).
//! Each case prints p50/p99 of individually timed calls, the cases interleaved call by call (the
//! durable append's `fdatasync` is part of every call, so the disk's noise is too), and its
//! record's size in bytes as stored.

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use codaris_test_support::bench::percentiles;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codaris_daemon::calls::dispatch::{Dispatcher, SessionCall};
use codaris_ledger::Ledger;
use codaris_policy::{PermissionMode, Task};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

mod grants;
use grants::give;

fn call(root: &Path, i: usize) -> SessionCall {
    let mut task = Task::new(root.join("proj").display().to_string());
    task.permission_mode = PermissionMode::AcceptEdits;
    SessionCall {
        session_id: "s-own".into(),
        call_id: format!("call{i}").into(),
        tool: codaris_policy::ToolId::parse("write"),
        args: json!({"path": format!("out{}.txt", i % 16), "content": "x"}),
        task,
        cwd: None,
        spec: None,
        marks: None,
    }
}

struct Case {
    label: &'static str,
    own: usize,
    others: usize,
}

fn decision_path(c: &mut Criterion) {
    let cases = [
        Case {
            label: "10 grants",
            own: 10,
            others: 0,
        },
        Case {
            label: "10 own, 10000 in other sessions",
            own: 10,
            others: 10_000,
        },
        Case {
            label: "1000 own, 10000 in other sessions",
            own: 1_000,
            others: 10_000,
        },
        Case {
            label: "10000 own",
            own: 10_000,
            others: 0,
        },
    ];
    let samples_per_case = 300;
    // Every case is set up first, then timed call by call in turn, so that all of them see the
    // same disk and the same neighbours (the fdatasync of each call is most of its cost, and
    // the machine's other work moves it).
    struct Ready {
        label: &'static str,
        _temp: tempfile::TempDir,
        root: std::path::PathBuf,
        dispatcher: Dispatcher,
        /// The session's view, kept while the case is measured, as the daemon's live session
        /// keeps it.
        _lease: codaris_ledger::GrantLease,
        size: usize,
        samples: Vec<Duration>,
    }
    let mut ready = Vec::new();
    for case in cases {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("proj")).unwrap();
        let ledger = Arc::new(Ledger::open(&root.join("ledger")).unwrap());
        let mut cards = 0;
        let sessions = 10;
        for s in 0..sessions {
            give(
                &ledger,
                &format!("s-other{s}"),
                case.others / sessions,
                &mut cards,
            );
        }
        give(&ledger, "s-own", case.own, &mut cards);
        let dispatcher = Dispatcher::new(ledger.clone()).for_session();
        // As the daemon's live session does: its view is kept while the session lives (held
        // in `Ready`, so for every measured call, not only this first one).
        let lease = ledger.lease_grant_view("s-own");
        // The first call fills whatever the decision path keeps between calls.
        let first = dispatcher.decide(call(&root, 0)).unwrap().into_record();
        // The record as stored (its export line): the ledger's grants are named by a grant
        // set, not copied into it.
        let size = ledger
            .export(Some("s-own"))
            .unwrap()
            .0
            .into_iter()
            .find_map(|line| match line {
                codaris_ledger::ExportLine::Decision(d) if d.seq == first.seq => {
                    Some(serde_json::to_vec(&*d).unwrap().len())
                }
                _ => None,
            })
            .unwrap();
        ready.push(Ready {
            label: case.label,
            _temp: temp,
            root,
            dispatcher,
            _lease: lease,
            size,
            samples: Vec::with_capacity(samples_per_case),
        });
    }
    for i in 0..samples_per_case {
        for case in &mut ready {
            let call = call(&case.root, i);
            let started = Instant::now();
            let dispatched = case.dispatcher.decide(call).unwrap();
            case.samples.push(started.elapsed());
            std::hint::black_box(dispatched);
        }
    }
    let mut baseline = None;
    for case in &mut ready {
        let (p50, p99) = percentiles(&mut case.samples);
        let (base50, base99) = *baseline.get_or_insert((p50, p99));
        println!(
            "decision path, {}: n={samples_per_case} p50={p50:?} p99={p99:?} ({:.2}× / {:.2}× the 10-grant p50 / p99), record {} bytes",
            case.label,
            p50.as_secs_f64() / base50.as_secs_f64(),
            p99.as_secs_f64() / base99.as_secs_f64(),
            case.size,
        );
    }
    for case in &ready {
        c.bench_function(&format!("decision path/{}", case.label), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                case.dispatcher.decide(call(&case.root, i)).unwrap()
            });
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = decision_path
}
criterion_main!(benches);
