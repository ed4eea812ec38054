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
//! `… audit 2000 DIR`: a ledger of that many decisions over ten sessions of ten card grants
//! each, kept in `DIR`, and its whole audit (`Ledger::audit`, what `codaris audit replay` runs);
//! run again on the same `DIR` (under callgrind), it only opens and audits that ledger.

#![expect(clippy::unwrap_used, reason = "profiling set-up")]

use std::sync::Arc;

use codaris_ledger::{Backing, DecisionRecord, Ledger};
use codaris_policy::{CapabilityName, Grant, Lifetime, Request, Task};

mod records;

/// The daemon benches' set-up of card grants: grants as card answers record them.
#[path = "../../daemon/benches/grants/mod.rs"]
mod grants;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let what = args.first().map_or("append", String::as_str);
    let count: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(200);
    // A third argument keeps the ledger in that directory; `audit` then audits a ledger it
    // finds there without writing one, so callgrind can count an audit in a process of its own.
    let temp = tempfile::tempdir().unwrap();
    let dir = args
        .get(2)
        .map_or_else(|| temp.path().to_owned(), std::path::PathBuf::from);
    let ledger = Arc::new(Ledger::open(&dir.join("ledger")).unwrap());
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
        "replay" => {
            fill(&ledger, count);
            read_and_replay(&ledger);
        }
        "audit" if !ledger.grants(None).unwrap().0.is_empty() => audit(&ledger),
        "audit" => {
            let mut cards = 0;
            let sessions = (0..10)
                .map(|s| {
                    let session = format!("s{s}");
                    grants::give(&ledger, &session, 10, &mut cards);
                    let (records, corrupt) = ledger.grants(Some(&session)).unwrap();
                    assert!(corrupt.is_empty(), "{corrupt:?}");
                    (session, records.into_iter().map(|r| r.grant).collect())
                })
                .collect();
            decide(&ledger, sessions, count);
            // As an orderly stop leaves it: an open then has no journal to replay.
            ledger.fold_journal().unwrap();
            audit(&ledger);
        }
        "show" => println!(
            "{}",
            serde_json::to_string(&records::decision_record("s1")).unwrap()
        ),
        other => {
            eprintln!("unknown profile `{other}`: append, sixteen, grant, replay, audit or show");
            std::process::exit(2);
        }
    }
}

/// Fills `count` decisions over ten sessions of ten grants each (grants whose cards the
/// ledger lacks: an audit would find them unbacked).
fn fill(ledger: &Arc<Ledger>, count: usize) {
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
    decide(ledger, sessions, count);
}

/// Records `count` decisions spread over `sessions`, each seeing its session's grants, from
/// eight threads.
fn decide(ledger: &Arc<Ledger>, sessions: Vec<(String, Vec<Grant>)>, count: usize) {
    let sessions = Arc::new(sessions);
    let threads: Vec<_> = (0..8)
        .map(|w| {
            let (ledger, sessions) = (ledger.clone(), sessions.clone());
            std::thread::spawn(move || {
                for n in (w..count).step_by(8) {
                    let (session, grants) = &sessions[n % sessions.len()];
                    let request = Request {
                        tool: codaris_policy::ToolId::parse("read_file"),
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
}

#[inline(never)]
fn audit(ledger: &Ledger) {
    let started = std::time::Instant::now();
    let report = ledger.audit().unwrap();
    assert!(report.is_clean(), "{report:?}");
    println!(
        "the whole audit of {} decisions: {:.2} µs each",
        report.decisions,
        started.elapsed().as_secs_f64() * 1e6 / report.decisions as f64
    );
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
