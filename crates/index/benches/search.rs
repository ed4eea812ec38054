//! Speed and memory of the index at 10,000 tools, next to the plain BM25 baseline.
//!
//! The 10,000 entries are the shared corpus grown from the evaluation catalogue (see `corpus`);
//! the queries are the evaluation queries. Besides criterion's medians, the run prints query-latency percentiles (p50, p99),
//! the build time, and the heap the index holds, measured with a counting allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use codaris_index::{Bm25, Index, KindFilter, QueryLine, SearchRequest, Searcher};
use corpus::{grown, queries};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

mod corpus;

/// Counts the bytes currently allocated, so the index's heap can be measured, not estimated.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

#[expect(
    unsafe_code,
    reason = "a global allocator is an unsafe trait; this one only counts"
)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const TOOLS: usize = 10_000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Times every query `rounds` times and returns the sorted latencies.
fn latencies(rounds: usize, mut run: impl FnMut(&QueryLine)) -> Vec<Duration> {
    let queries = queries();
    let mut all = Vec::with_capacity(rounds * queries.len());
    for _ in 0..rounds {
        for q in &queries {
            let start = Instant::now();
            run(q);
            all.push(start.elapsed());
        }
    }
    all.sort_unstable();
    all
}

fn report() {
    let entries = grown(TOOLS);
    let mut builds: Vec<Duration> = (0..9)
        .map(|_| {
            let input = entries.clone();
            let start = Instant::now();
            let index = Index::build(black_box(input));
            let took = start.elapsed();
            black_box(index);
            took
        })
        .collect();
    builds.sort_unstable();

    let entries_heap = {
        let before = LIVE.load(Ordering::Relaxed);
        let copy = entries.clone();
        let after = LIVE.load(Ordering::Relaxed);
        black_box(copy);
        after - before
    };
    let before = LIVE.load(Ordering::Relaxed);
    let index = Index::build(entries.clone());
    let index_heap = LIVE.load(Ordering::Relaxed) - before;
    let before = LIVE.load(Ordering::Relaxed);
    let baseline = Bm25::build(entries.clone());
    let baseline_heap = LIVE.load(Ordering::Relaxed) - before;

    let mut searcher = Searcher::new();
    let ours = latencies(20, |q| {
        let request = SearchRequest::new(&q.query).kind(q.kind).limit(5);
        black_box(searcher.search(&index, &request));
    });
    let theirs = latencies(20, |q| {
        black_box(baseline.search(&q.query, KindFilter::Any, 5));
    });

    println!("\n== codaris-index at {} entries", index.len());
    println!(
        "build: median {:.2?} (min {:.2?}, max {:.2?})",
        builds[builds.len() / 2],
        builds[0],
        builds[builds.len() - 1]
    );
    println!(
        "heap: index {:.1} MiB (of which the entries themselves {:.1} MiB; size estimate {:.1} MiB), bm25 baseline {:.1} MiB",
        mib(index_heap),
        mib(entries_heap),
        mib(index.heap_bytes()),
        mib(baseline_heap)
    );
    for (name, sorted) in [("index", &ours), ("bm25 baseline", &theirs)] {
        println!(
            "query {name}: p50 {:.1?}  p90 {:.1?}  p99 {:.1?}  max {:.1?}  ({} timed)",
            percentile(sorted, 0.5),
            percentile(sorted, 0.9),
            percentile(sorted, 0.99),
            percentile(sorted, 1.0),
            sorted.len()
        );
    }
    println!();
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn benches(c: &mut Criterion) {
    report();
    let entries = grown(TOOLS);
    let queries = queries();
    let index = Index::build(entries.clone());
    let baseline = Bm25::build(entries.clone());

    let mut group = c.benchmark_group("10k");
    group.sample_size(20);
    // The entries are cloned outside the timing: the daemon hands its own over.
    group.bench_function("build_index", |b| {
        b.iter_batched(|| entries.clone(), Index::build, BatchSize::LargeInput)
    });
    group.bench_function("build_bm25", |b| {
        b.iter_batched(|| entries.clone(), Bm25::build, BatchSize::LargeInput)
    });
    group.sample_size(50);
    let mut searcher = Searcher::new();
    // One iteration searches every evaluation query once; divide by their count per query.
    group.bench_function(format!("index_all_{}_queries", queries.len()), |b| {
        b.iter(|| {
            for q in &queries {
                let request = SearchRequest::new(&q.query).kind(q.kind).limit(5);
                black_box(searcher.search(&index, &request));
            }
        })
    });
    group.bench_function(format!("bm25_all_{}_queries", queries.len()), |b| {
        b.iter(|| {
            for q in &queries {
                black_box(baseline.search(&q.query, KindFilter::Any, 5));
            }
        })
    });
    group.finish();
}

criterion_group!(search, benches);
criterion_main!(search);
