//! Ledger read costs against the size of the ledger, each beside a reference measured in the
//! same run:
//! - the newest 20 of 100,000 decisions (what `codaris ledger decisions -n 20` reads) against
//!   reading one record by its key (target: independent of the ledger's size);
//! - the newest 20 of one session's decisions among 100,000, and of a session of
//!   [`ONE_SESSION`] decisions all still in the journal (their index entries held in memory
//!   until the fold; target: no slower than the first);
//! - replay per decision: reading every decision of a 10,000-decision ledger and deciding it
//!   again, divided by the count (target: ≤ 5 µs per decision).
//!
//! The ledgers live in `/dev/shm` when there is one: filling 100,000 decisions through the
//! journal on a real disk would take minutes of `fdatasync`, and reads are what is measured.

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use codaris_ledger::{Backing, DecisionRecord, Ledger, replay};
use codaris_policy::{CapabilityName, Grant, Lifetime};
use criterion::{Criterion, criterion_group, criterion_main};

mod records;

const DECISIONS: usize = 100_000;
const REPLAYED: usize = 10_000;
const SESSIONS: usize = 100;
/// Decisions of one session, fewer than one journal holds (about 62,000 of these records).
const ONE_SESSION: usize = 50_000;

fn temp() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

/// A ledger of `count` decisions spread over `sessions` sessions (`s0`, `s1`, …), and one
/// grant.
fn filled(count: usize, sessions: usize) -> (tempfile::TempDir, Arc<Ledger>, String) {
    let dir = temp();
    let ledger = Arc::new(Ledger::open(&dir.path().join("ledger")).unwrap());
    let writers = 8;
    let threads: Vec<_> = (0..writers)
        .map(|w| {
            let ledger = ledger.clone();
            std::thread::spawn(move || {
                for n in (w..count).step_by(writers) {
                    ledger
                        .append_decision(records::decision_record(format!("s{}", n % sessions)))
                        .unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let grant = ledger
        .append_grant(
            "s1",
            Grant::new(
                CapabilityName::MutateOutsideFence,
                Some("/data/run"),
                Lifetime::Session,
            ),
            Backing::Card {
                card_id: "c1".to_owned(),
            },
            1,
        )
        .unwrap();
    ledger.flush().unwrap();
    (dir, ledger, grant.id)
}

fn newest(ledger: &Ledger, session: Option<&str>, n: usize) -> Vec<DecisionRecord> {
    ledger.newest_decisions(session, n).unwrap().0
}

fn samples(mut f: impl FnMut(), count: usize) -> Vec<Duration> {
    let mut taken: Vec<Duration> = (0..count)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    taken.sort();
    taken
}

fn p(sorted: &[Duration], per_mille: usize) -> Duration {
    sorted[(sorted.len() * per_mille / 1000).min(sorted.len() - 1)]
}

fn list_newest(c: &mut Criterion) {
    let (_dir, ledger, grant_id) = filled(DECISIONS, SESSIONS);
    let (_one_dir, one_session, _) = filled(ONE_SESSION, 1);
    let mut group = c.benchmark_group("reads_100k_decisions");
    group.sample_size(20);
    group.bench_function("one_record", |b| {
        b.iter(|| ledger.grant(&grant_id).unwrap())
    });
    group.bench_function("newest_20", |b| b.iter(|| newest(&ledger, None, 20)));
    group.bench_function("newest_20_of_a_session", |b| {
        b.iter(|| newest(&ledger, Some("s7"), 20))
    });
    group.bench_function("newest_20_of_a_session_in_the_journal", |b| {
        b.iter(|| newest(&one_session, Some("s0"), 20))
    });
    group.finish();

    // Interleaved, so all four see the same machine weather.
    // 200 rounds, or as many as 30 s allow (at least 10): a build that reads the whole
    // ledger takes a second a round.
    let (mut one, mut all, mut session) = (Vec::new(), Vec::new(), Vec::new());
    let mut journalled = Vec::new();
    let began = Instant::now();
    for round in 0..200 {
        if round >= 10 && began.elapsed() > Duration::from_secs(30) {
            break;
        }
        one.extend(samples(|| drop(ledger.grant(&grant_id).unwrap()), 1));
        all.extend(samples(|| drop(newest(&ledger, None, 20)), 1));
        session.extend(samples(|| drop(newest(&ledger, Some("s7"), 20)), 1));
        journalled.extend(samples(|| drop(newest(&one_session, Some("s0"), 20)), 1));
    }
    for v in [&mut one, &mut all, &mut session, &mut journalled] {
        v.sort();
    }
    let ratio = |v: &[Duration]| p(v, 500).as_secs_f64() / p(&one, 500).as_secs_f64();
    println!(
        "{} rounds: one record p50 {:?} p99 {:?}; newest 20 of {DECISIONS} p50 {:?} p99 {:?} ({:.1}x); newest 20 of a session p50 {:?} p99 {:?} ({:.1}x); newest 20 of a session of {ONE_SESSION} in the journal p50 {:?} p99 {:?} ({:.1}x)",
        one.len(),
        p(&one, 500),
        p(&one, 990),
        p(&all, 500),
        p(&all, 990),
        ratio(&all),
        p(&session, 500),
        p(&session, 990),
        ratio(&session),
        p(&journalled, 500),
        p(&journalled, 990),
        ratio(&journalled),
    );
}

fn replay_per_decision(c: &mut Criterion) {
    let (_dir, ledger, _) = filled(REPLAYED, SESSIONS);
    let run = || {
        let (records, corrupt) = ledger.decisions(None).unwrap();
        let report = replay(&records, &corrupt);
        assert_eq!(report.decisions, REPLAYED);
    };
    let mut group = c.benchmark_group("replay");
    group.sample_size(10);
    group.bench_function("read_and_replay_10k_decisions", |b| b.iter(run));
    group.finish();
    let taken = samples(run, 15);
    let per = |d: Duration| d / u32::try_from(REPLAYED).unwrap();
    println!(
        "replay of {REPLAYED} decisions (read + evaluate): per decision p50 {:?} p99 {:?}",
        per(p(&taken, 500)),
        per(p(&taken, 990)),
    );
}

criterion_group!(benches, list_newest, replay_per_decision);
criterion_main!(benches);
