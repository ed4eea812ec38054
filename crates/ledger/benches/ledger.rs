//! Ledger durability costs, measured in one run on one directory:
//! - a durable grant append beside a raw `write` + `fdatasync` of a file in the same directory
//!   (target: ≤ 1.2× of it), and, since the journal writes into zeros it wrote ahead, beside a
//!   raw overwrite + `fdatasync` of space already written (the floor for that, printed too);
//! - decision appends from 16 concurrent writers with group commit against one writer
//!   (target: ≥ 8× one writer's throughput).

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codaris_ledger::{Backing, Ledger};
use codaris_policy::{CapabilityName, Grant, Lifetime};
use criterion::{Criterion, criterion_group, criterion_main};

mod records;

fn grant(n: u64) -> Grant {
    Grant::new(
        CapabilityName::MutateOutsideFence,
        Some(&format!("/data/run-{n}")),
        Lifetime::Session,
    )
}

fn durable_grant_vs_fdatasync(c: &mut Criterion) {
    let temp = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(&temp.path().join("ledger")).unwrap();
    let mut raw = std::fs::File::create(temp.path().join("raw")).unwrap();
    let payload = [b'x'; 200];
    let mut n = 0;

    let mut group = c.benchmark_group("durability");
    group.sample_size(30);
    group.bench_function("raw_write_fdatasync", |b| {
        b.iter(|| {
            raw.write_all(&payload).unwrap();
            raw.sync_data().unwrap();
        });
    });
    group.bench_function("durable_grant_append", |b| {
        b.iter(|| {
            n += 1;
            ledger
                .append_grant(
                    "s1",
                    grant(n),
                    Backing::Card {
                        card_id: "c1".to_owned(),
                    },
                    n,
                )
                .unwrap()
        });
    });
    group.finish();

    // The file an overwrite goes into: written (not only allocated) and synced ahead.
    let ahead = std::fs::File::create(temp.path().join("ahead")).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&ahead, &vec![0; 1 << 20], 0).unwrap();
    ahead.sync_all().unwrap();

    // Interleaved, so all three see the same disk weather.
    let (mut raw_samples, mut grant_samples) = (Vec::new(), Vec::new());
    let mut overwrite_samples = Vec::new();
    for at in 0..300u64 {
        let start = Instant::now();
        raw.write_all(&payload).unwrap();
        raw.sync_data().unwrap();
        raw_samples.push(start.elapsed());
        let start = Instant::now();
        std::os::unix::fs::FileExt::write_all_at(&ahead, &payload, at * payload.len() as u64)
            .unwrap();
        ahead.sync_data().unwrap();
        overwrite_samples.push(start.elapsed());
        n += 1;
        let start = Instant::now();
        ledger
            .append_grant(
                "s1",
                grant(n),
                Backing::Card {
                    card_id: "c1".to_owned(),
                },
                n,
            )
            .unwrap();
        grant_samples.push(start.elapsed());
    }
    let raw_p50 = median(&mut raw_samples);
    let grant_p50 = median(&mut grant_samples);
    let overwrite_p50 = median(&mut overwrite_samples);
    println!(
        "durable grant append p50 {grant_p50:?} (p99 {:?}) vs raw write+fdatasync p50 {raw_p50:?} (p99 {:?}): {:.2}x; vs raw overwrite+fdatasync p50 {overwrite_p50:?} (p99 {:?}): {:.2}x",
        p99(&grant_samples),
        p99(&raw_samples),
        grant_p50.as_secs_f64() / raw_p50.as_secs_f64(),
        p99(&overwrite_samples),
        grant_p50.as_secs_f64() / overwrite_p50.as_secs_f64()
    );
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn p99(sorted: &[Duration]) -> Duration {
    sorted[(sorted.len() * 99) / 100]
}

/// Appends per second, and each append's latency, for `writers` threads of `per_writer`.
fn run_writers(ledger: &Arc<Ledger>, writers: usize, per_writer: usize) -> (f64, Vec<Duration>) {
    let start = Instant::now();
    let threads: Vec<_> = (0..writers)
        .map(|_| {
            let ledger = ledger.clone();
            std::thread::spawn(move || {
                (0..per_writer)
                    .map(|_| {
                        let start = Instant::now();
                        ledger
                            .append_decision(records::decision_record("s1"))
                            .unwrap();
                        start.elapsed()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let latencies = threads
        .into_iter()
        .flat_map(|thread| thread.join().unwrap())
        .collect();
    let rate = (writers * per_writer) as f64 / start.elapsed().as_secs_f64();
    (rate, latencies)
}

fn throughput(ledger: &Arc<Ledger>, writers: usize, per_writer: usize) -> f64 {
    run_writers(ledger, writers, per_writer).0
}

fn group_commit(c: &mut Criterion) {
    let temp = tempfile::tempdir().unwrap();
    let ledger = Arc::new(Ledger::open(&temp.path().join("ledger")).unwrap());
    let mut group = c.benchmark_group("decision_appends");
    group.sample_size(10);
    group.bench_function("one_writer_x64", |b| b.iter(|| throughput(&ledger, 1, 64)));
    group.bench_function("sixteen_writers_x64", |b| {
        b.iter(|| throughput(&ledger, 16, 64));
    });
    group.finish();

    // Interleaved, so both see the same disk weather.
    let (mut one, mut sixteen) = (Vec::new(), Vec::new());
    let (mut one_latency, mut sixteen_latency) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let (rate, latencies) = run_writers(&ledger, 1, 200);
        one.push(rate);
        one_latency.extend(latencies);
        let (rate, latencies) = run_writers(&ledger, 16, 200);
        sixteen.push(rate);
        sixteen_latency.extend(latencies);
    }
    let mid = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let one_p50 = median(&mut one_latency);
    let sixteen_p50 = median(&mut sixteen_latency);
    println!(
        "decision appends/s: one writer {:.0} (append p50 {one_p50:?}, p99 {:?}), sixteen writers {:.0} (append p50 {sixteen_p50:?}, p99 {:?}): {:.1}x",
        mid(&one),
        p99(&one_latency),
        mid(&sixteen),
        p99(&sixteen_latency),
        mid(&sixteen) / mid(&one)
    );
}

criterion_group!(benches, durable_grant_vs_fdatasync, group_commit);
criterion_main!(benches);
