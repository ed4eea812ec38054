//! The scheduler's idle cost (#45): it keeps every job's next due time in one ordered queue and
//! arms one timer for the earliest, so finding the next due job among 1,000 (and re-arming after
//! one changed) is O(log n) and nothing runs between due times. This measures the queue's two
//! operations at 1,000 and at 100,000 jobs: the second should cost about as much as the first
//! (a logarithm apart), never a hundred times more.

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use std::path::PathBuf;

use chrono::{Duration, Utc};
use codaris_daemon::scheduler::files::JobKey;
use codaris_daemon::scheduler::queue::DueQueue;
use codaris_tools::scheduler::JobScope;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

fn queue(jobs: usize) -> (DueQueue<JobKey>, Vec<JobKey>) {
    let start = Utc::now();
    let dir = PathBuf::from("/home/me/.config/codaris/scheduler");
    let mut queue = DueQueue::default();
    let keys: Vec<JobKey> = (0..jobs)
        .map(|n| JobKey {
            scope: JobScope::User,
            dir: dir.clone(),
            id: format!("job-{n:06}"),
        })
        .collect();
    for (n, key) in keys.iter().enumerate() {
        // Spread over a day, in an order unlike the keys'.
        let minutes = i64::try_from((n * 7919) % (24 * 60)).unwrap();
        queue.set(key, Some(start + Duration::minutes(minutes)));
    }
    (queue, keys)
}

fn next_due(c: &mut Criterion) {
    let mut group = c.benchmark_group("scheduler next due");
    for jobs in [1_000, 100_000] {
        let (mut queue, keys) = queue(jobs);
        group.bench_with_input(BenchmarkId::new("first", jobs), &jobs, |b, _| {
            b.iter(|| std::hint::black_box(queue.first().map(|(at, _)| at)));
        });
        let later = Utc::now() + Duration::days(2);
        let mut n = 0;
        group.bench_with_input(BenchmarkId::new("re-arm one job", jobs), &jobs, |b, _| {
            b.iter(|| {
                // A job ran: its next time moves, and the timer is armed for the new first.
                let key = &keys[n % keys.len()];
                n += 1;
                queue.set(
                    key,
                    Some(later + Duration::seconds(i64::try_from(n).unwrap())),
                );
                std::hint::black_box(queue.first().map(|(at, _)| at))
            });
        });
    }
    group.finish();
}

criterion_group!(benches, next_due);
criterion_main!(benches);
