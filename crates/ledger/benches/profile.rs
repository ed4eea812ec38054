//! Not a benchmark of its own: a fixed amount of ledger work, for `valgrind --tool=callgrind`
//! (whose instruction counts do not move with the machine's load, unlike the timings of the
//! other benches). Run it twice with different counts and divide the difference by the
//! difference of the counts, so that opening the ledger and building the binary's statics
//! cancel out:
//!
//! `valgrind --tool=callgrind target/release/deps/profile-… append 400` (and `append 200`)
//! `… sixteen 400`: the same appends from sixteen writers (the group commit's share).

#![expect(clippy::unwrap_used, reason = "profiling set-up")]

use std::sync::Arc;

use codaris_ledger::{Backing, DecisionRecord, Ledger};
use codaris_policy::{CapabilityName, Grant, Lifetime, Request, Task};

fn decision_record() -> DecisionRecord {
    // The shape of the `ledger` bench's decisions.
    let request = Request {
        tool: "write".to_owned(),
        args: serde_json::json!({"path": "/etc/hosts", "content": "x"}),
        task: Task::new("/w/proj"),
        grants: Vec::new(),
        spec: None,
    };
    let decision = request.evaluate();
    DecisionRecord::new("s1", request, decision, 1)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let what = args.first().map_or("append", String::as_str);
    let count: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(200);
    let temp = tempfile::tempdir().unwrap();
    let ledger = Arc::new(Ledger::open(&temp.path().join("ledger")).unwrap());
    match what {
        "append" => {
            for _ in 0..count {
                ledger.append_decision(decision_record()).unwrap();
            }
        }
        "sixteen" => {
            let threads: Vec<_> = (0..16)
                .map(|w| {
                    let ledger = ledger.clone();
                    std::thread::spawn(move || {
                        for _ in (w..count).step_by(16) {
                            ledger.append_decision(decision_record()).unwrap();
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
        other => panic!("unknown profile `{other}`: append, sixteen or grant"),
    }
}
