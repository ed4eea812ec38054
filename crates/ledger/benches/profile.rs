//! Not a benchmark of its own: a fixed amount of ledger work, for `valgrind --tool=callgrind`
//! (whose instruction counts do not move with the machine's load, unlike the timings of the
//! other benches). Run it twice with different counts and divide the difference by the
//! difference of the counts, so that opening the ledger and building the binary's statics
//! cancel out:
//!
//! `valgrind --tool=callgrind target/release/deps/profile-… append 400` (and `append 200`)
//! `… sixteen 400`: the same appends from sixteen writers (the group commit's share).
//! `… replay 2000`: a ledger of that many decisions, each naming the set of its session's ten
//! grants, read back and replayed; with `--toggle-collect='codaris_ledger::store::Ledger::decisions*'
//! --toggle-collect='codaris_ledger::replay::replay*'` callgrind counts only the read and the
//! replay.

#![expect(clippy::unwrap_used, reason = "profiling set-up")]

use std::sync::Arc;

use codaris_ledger::{Backing, DecisionRecord, Ledger};
use codaris_policy::{CapabilityName, Grant, Lifetime, Request, Task};

mod records;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let what = args.first().map_or("append", String::as_str);
    let count: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(200);
    let temp = tempfile::tempdir().unwrap();
    let ledger = Arc::new(Ledger::open(&temp.path().join("ledger")).unwrap());
    match what {
        "append" => {
            for _ in 0..count {
                ledger
                    .append_decision(records::decision_record("s1"))
                    .unwrap();
            }
        }
        "sixteen" => {
            let threads: Vec<_> = (0..16)
                .map(|w| {
                    let ledger = ledger.clone();
                    std::thread::spawn(move || {
                        for _ in (w..count).step_by(16) {
                            ledger
                                .append_decision(records::decision_record("s1"))
                                .unwrap();
                        }
                    })
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
        }
        "grant" => {
            for n in 0..count {
                let grant = Grant::new(
                    CapabilityName::MutateOutsideFence,
                    Some(&format!("/data/run-{n}")),
                    Lifetime::Session,
                );
                let backing = Backing::Card {
                    card_id: "c1".to_owned(),
                };
                ledger.append_grant("s1", grant, backing, n as u64).unwrap();
            }
        }
        "replay" => replay(&ledger, count),
        "show" => println!(
            "{}",
            serde_json::to_string(&records::decision_record("s1")).unwrap()
        ),
        other => {
            eprintln!("unknown profile `{other}`: append, sixteen, grant, replay or show");
            std::process::exit(2);
        }
    }
}

/// Fills `count` decisions over ten sessions of ten grants each, then reads and replays them.
fn replay(ledger: &Arc<Ledger>, count: usize) {
    let sessions: Vec<(String, Vec<Grant>)> = (0..10)
        .map(|s| {
            let session = format!("s{s}");
            let grants = (0..10)
                .map(|g| {
                    let grant = Grant::new(
                        CapabilityName::ReadOutsideFence,
                        Some(&format!("/data/{s}/{g}")),
                        Lifetime::Session,
                    );
                    let backing = Backing::Card {
                        card_id: format!("c{s}"),
                    };
                    ledger
                        .append_grant(&session, grant, backing, 1)
                        .unwrap()
                        .grant
                })
                .collect();
            (session, grants)
        })
        .collect();
    let sessions = Arc::new(sessions);
    let threads: Vec<_> = (0..8)
        .map(|w| {
            let (ledger, sessions) = (ledger.clone(), sessions.clone());
            std::thread::spawn(move || {
                for n in (w..count).step_by(8) {
                    let (session, grants) = &sessions[n % sessions.len()];
                    let request = Request {
                        tool: "read_file".to_owned(),
                        args: serde_json::json!({"path": format!("src/f{}.rs", n % 50)}),
                        task: Task::new("/w/proj"),
                        grants: grants.clone(),
                        spec: None,
                    };
                    let decision = request.evaluate();
                    let record = DecisionRecord::new(session.clone(), request, decision, 1);
                    ledger.append_decision(record).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    read_and_replay(ledger);
}

#[inline(never)]
fn read_and_replay(ledger: &Ledger) {
    let started = std::time::Instant::now();
    let (records, corrupt) = ledger.decisions(None).unwrap();
    let report = codaris_ledger::replay(&records, &corrupt);
    assert!(report.is_clean(), "{report:?}");
    println!(
        "read and replay of {} decisions: {:.2} µs each",
        report.decisions,
        started.elapsed().as_secs_f64() * 1e6 / report.decisions as f64
    );
}
