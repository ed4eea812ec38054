//! The index build alone, at the sizes the daemon meets: 600 tools (a handful of MCP servers,
//! rebuilt on every `tools/list_changed`), 1,000, 10,000 and 50,000 entries of the shared corpus.
//!
//! `cargo bench -p codaris-index --bench build` prints the median and p99 build time per size,
//! the input cloned and the index dropped outside the timing (the daemon hands its own entries
//! over and drops the old index after the swap). Two more modes serve changing the build:
//!
//! - `-- --once N [R]` builds N entries once (or R times), for `valgrind --tool=callgrind
//!   --toggle-collect='*build_with_servers*'`, whose instruction count is steady on a loaded
//!   machine where wall-clock time is not, or for `perf stat` (CPU time, less disturbed by
//!   load than wall-clock time: the difference of R and 0 builds over R);
//! - `-- --dump` prints every evaluation query's results (name and the exact bits of the score)
//!   at 600 and 10,000 entries, so that two builds can be diffed to show ranking is unchanged.

use std::hint::black_box;
use std::time::{Duration, Instant};

use codaris_index::{Index, SearchRequest, Searcher};

mod corpus;

const SIZES: [usize; 4] = [600, 1_000, 10_000, 50_000];

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn times() {
    println!("\n== index build: median and p99");
    println!(
        "{:>6}  {:>5}  {:>10} {:>10} {:>10}",
        "tools", "runs", "median", "p99", "min"
    );
    for n in SIZES {
        let entries = corpus::grown(n);
        let runs = match n {
            0..=1_000 => 201,
            1_001..=10_000 => 41,
            _ => 9,
        };
        let mut took: Vec<Duration> = (0..runs)
            .map(|_| {
                let input = entries.clone();
                let start = Instant::now();
                let index = black_box(Index::build(input));
                let elapsed = start.elapsed();
                drop(index);
                elapsed
            })
            .collect();
        took.sort_unstable();
        println!(
            "{n:>6}  {runs:>5}  {:>10.2?} {:>10.2?} {:>10.2?}",
            percentile(&took, 0.5),
            percentile(&took, 0.99),
            took[0]
        );
    }
    println!();
}

fn dump() {
    let queries = corpus::queries();
    let mut searcher = Searcher::new();
    for n in [600, 10_000] {
        let index = Index::build(corpus::grown(n));
        for q in &queries {
            let request = SearchRequest::new(&q.query).kind(q.kind).limit(20);
            let outcome = searcher.search(&index, &request);
            let hits: Vec<String> = outcome
                .hits()
                .iter()
                .map(|h| format!("{}={:016x}", h.name, h.score.to_bits()))
                .collect();
            println!("{n} {:?} {:?}: {}", q.query, q.kind, hits.join(" "));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--dump") {
        dump();
    } else if let Some(n) = args
        .iter()
        .position(|a| a == "--once")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
    {
        let times: usize = args
            .iter()
            .position(|a| a == "--once")
            .and_then(|i| args.get(i + 2))
            .and_then(|r| r.parse().ok())
            .unwrap_or(1);
        let entries = corpus::grown(n);
        for _ in 0..times {
            black_box(Index::build(entries.clone()));
        }
    } else {
        times();
    }
}
