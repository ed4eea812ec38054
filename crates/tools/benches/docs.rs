//! `codaris_docs_search` over the whole built-in documentation (#43, item 5). Target: at most
//! 1 ms an answer, for any query: the tool's whole answer is timed (ranking every section with
//! the index crate and writing the hits), the index already built, as every search after a
//! process's first finds it.
//!
//! Besides criterion's own estimates, it prints p50/p99 of individually timed answers over a
//! mix of queries (short and long, words the docs use and words they do not, a misspelling),
//! and the one-off cost of building the section index.

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use codaris_test_support::bench::percentiles;
use std::time::{Duration, Instant};

use codaris_tools::docs::{docs, search};
use criterion::{Criterion, criterion_group, criterion_main};

const QUERIES: &[&str] = &[
    "add an MCP server",
    "how do I add an MCP server to codaris",
    "permission mode plan",
    "skills directory",
    "undo the last turn",
    "exit codes of the cli",
    "configure the anthropic api key and choose a model",
    "why was my run_command refused by the sandbox landlock",
    "nf-core lint compliance rules remediation plan",
    "ledger replay verify chain",
    "mcp",
    "a",
    "kubernetes helm chart deployment",
    "permision mod",
    "how do I make codaris run my nextflow pipeline with the test profile and resume after a failure, keeping the work directory and reading the trace",
];
const ROUNDS: usize = 200;

/// A query as long as search takes (500 characters), of words from all over the docs: every
/// word is looked up, so this is the most work one query can ask for.
fn longest_query() -> String {
    let words = [
        "session",
        "ledger",
        "policy",
        "grant",
        "card",
        "sandbox",
        "landlock",
        "nextflow",
        "pipeline",
        "samplesheet",
        "compaction",
        "provider",
        "anthropic",
        "openai",
        "model",
        "skills",
        "reference",
        "search",
        "index",
        "binding",
        "slash",
        "review",
        "lint",
        "mcp",
        "server",
        "stdio",
        "http",
        "token",
        "socket",
        "daemon",
        "status",
        "doctor",
        "undo",
        "checkpoint",
        "worktree",
        "background",
        "preview",
        "research",
        "pubmed",
        "geo",
        "sra",
        "seqera",
        "wave",
        "telemetry",
        "otlp",
        "config",
        "allowed",
        "dirs",
        "permission",
        "mode",
    ];
    let mut query = String::new();
    for word in words.iter().cycle() {
        if query.len() + word.len() + 1 > codaris_index::MAX_QUERY_CHARS {
            break;
        }
        if !query.is_empty() {
            query.push(' ');
        }
        query.push_str(word);
    }
    query
}

fn bench(c: &mut Criterion) {
    let started = Instant::now();
    let sections = docs().sections().len();
    eprintln!(
        "docs index: {sections} sections built in {:?}",
        started.elapsed()
    );

    let longest = longest_query();
    let queries: Vec<&str> = QUERIES.iter().copied().chain([longest.as_str()]).collect();
    let mut all = Vec::with_capacity(queries.len() * ROUNDS);
    let mut worst = (Duration::ZERO, "");
    for query in queries.iter().copied() {
        let mut samples = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            let at = Instant::now();
            std::hint::black_box(search(query, None).unwrap());
            samples.push(at.elapsed());
        }
        all.extend_from_slice(&samples);
        let (p50, p99) = percentiles(&mut samples);
        eprintln!("  {query:?}: p50 {p50:?}, p99 {p99:?}");
        if p99 > worst.0 {
            worst = (p99, query);
        }
    }
    let (p50, p99) = percentiles(&mut all);
    eprintln!(
        "codaris_docs_search, {} answers over {} queries: p50 {p50:?}, p99 {p99:?}; worst query's p99 {:?} ({:?})",
        all.len(),
        queries.len(),
        worst.0,
        worst.1
    );

    let mut group = c.benchmark_group("codaris_docs_search");
    for (name, query) in [
        ("short", "add an MCP server"),
        ("question", "how do I add an MCP server to codaris"),
        ("no_hit", "kubernetes helm chart deployment"),
        ("long", QUERIES[QUERIES.len() - 1]),
        ("longest", longest.as_str()),
    ] {
        group.bench_function(name, |b| b.iter(|| search(query, None).unwrap()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
