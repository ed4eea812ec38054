//! Search at scale, side by side with tantivy's BM25 in the same run.
//!
//! At 1,000, 10,000 and 50,000 entries of the shared corpus (see `corpus`), every evaluation
//! query is searched for its top 10 by this index and by a tantivy index of the same entries
//! (name and body fields, English stemming, query parsed leniently, names read back from the
//! store so both sides hand over names). The two are interleaved query by query so that both
//! see the same noise; the run prints p50 and p99 per size, their ratio, the build times, and
//! for queries that spell a tool's name the time per thousand entries, which stays flat when a
//! name query is linear in the entries it touches.

use std::hint::black_box;
use std::time::{Duration, Instant};

use codaris_index::{Entry, Index, SearchRequest, Searcher};
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{
    Field, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::{TantivyDocument, doc};

mod corpus;

const SIZES: [usize; 3] = [1_000, 10_000, 50_000];
const LIMIT: usize = 10;
/// Queries that spell a tool's name, each present in every size of the corpus.
const NAME_QUERIES: [&str; 4] = ["read_file", "search_issues", "read file", "websearch"];

fn or_exit<T, E: std::fmt::Display>(result: Result<T, E>, what: &str) -> T {
    match result {
        Ok(value) => value,
        Err(e) => {
            eprintln!("{what}: {e}");
            std::process::exit(1)
        }
    }
}

/// The tantivy side: an in-memory index with one segment, and what a query needs.
struct Reference {
    searcher: tantivy::Searcher,
    parser: QueryParser,
    name: Field,
}

impl Reference {
    fn build(entries: &[Entry]) -> Reference {
        let indexing = TextFieldIndexing::default()
            .set_tokenizer("en_stem")
            .set_index_option(IndexRecordOption::WithFreqs);
        let text = TextOptions::default().set_indexing_options(indexing);
        let mut schema = Schema::builder();
        let name = schema.add_text_field("name", text.clone() | STORED);
        let body = schema.add_text_field("body", text);
        let index = tantivy::Index::create_in_ram(schema.build());
        let mut writer = or_exit(
            index.writer_with_num_threads(1, 200_000_000),
            "tantivy writer",
        );
        for e in entries {
            let body_text = format!(
                "{} {} {} {}",
                e.server.as_deref().unwrap_or(""),
                e.keywords.join(" "),
                e.description,
                e.args.join(" ")
            );
            or_exit(
                writer.add_document(doc!(name => e.name.as_str(), body => body_text)),
                "tantivy add",
            );
        }
        or_exit(writer.commit(), "tantivy commit");
        let reader = or_exit(index.reader(), "tantivy reader");
        let searcher = reader.searcher();
        let mut parser = QueryParser::for_index(&index, vec![name, body]);
        parser.set_field_boost(name, 3.0);
        Reference {
            searcher,
            parser,
            name,
        }
    }

    fn search(&self, query: &str) -> Vec<String> {
        let (query, _) = self.parser.parse_query_lenient(query);
        let top = or_exit(
            self.searcher
                .search(&query, &TopDocs::with_limit(LIMIT).order_by_score()),
            "tantivy search",
        );
        top.into_iter()
            .filter_map(|(_, address)| {
                let doc: TantivyDocument = self.searcher.doc(address).ok()?;
                doc.get_first(self.name)
                    .and_then(|v| v.as_str())
                    .map(str::to_owned)
            })
            .collect()
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The median time of `build`, its input made and its result dropped outside the timing (the
/// daemon hands its own entries over and drops the old index after the swap).
fn median_build<I, T>(
    times: usize,
    mut input: impl FnMut() -> I,
    mut build: impl FnMut(I) -> T,
) -> Duration {
    let mut took: Vec<Duration> = (0..times)
        .map(|_| {
            let input = input();
            let start = Instant::now();
            let built = black_box(build(input));
            let elapsed = start.elapsed();
            drop(built);
            elapsed
        })
        .collect();
    took.sort_unstable();
    took[took.len() / 2]
}

fn main() {
    let queries = corpus::queries();
    println!(
        "\n== search at scale: top {LIMIT}, {} queries",
        queries.len()
    );
    println!(
        "{:>6}  {:>10} {:>10}  {:>10} {:>10}  {:>6} {:>6}  {:>9} {:>9}",
        "tools", "ours p50", "ours p99", "tv p50", "tv p99", "p50 x", "p99 x", "build", "tv build"
    );
    let mut names = Vec::new();
    for n in SIZES {
        let entries = corpus::grown(n);
        let builds = if n > 10_000 { 3 } else { 9 };
        let build = median_build(builds, || entries.clone(), Index::build);
        let tv_build = median_build(builds.min(3), || (), |()| Reference::build(&entries));
        let index = Index::build(entries.clone());
        let reference = Reference::build(&entries);
        let rounds = if n <= 1_000 {
            40
        } else if n <= 10_000 {
            15
        } else {
            5
        };
        let mut searcher = Searcher::new();
        let mut ours = Vec::with_capacity(rounds * queries.len());
        let mut theirs = Vec::with_capacity(rounds * queries.len());
        for _ in 0..rounds {
            for q in &queries {
                let request = SearchRequest::new(&q.query).kind(q.kind).limit(LIMIT);
                let start = Instant::now();
                black_box(searcher.search(&index, &request));
                ours.push(start.elapsed());
                let start = Instant::now();
                black_box(reference.search(&q.query));
                theirs.push(start.elapsed());
            }
        }
        ours.sort_unstable();
        theirs.sort_unstable();
        let (p50, p99) = (percentile(&ours, 0.5), percentile(&ours, 0.99));
        let (t50, t99) = (percentile(&theirs, 0.5), percentile(&theirs, 0.99));
        println!(
            "{n:>6}  {:>10.1?} {:>10.1?}  {:>10.1?} {:>10.1?}  {:>6.2} {:>6.2}  {:>9.1?} {:>9.1?}",
            p50,
            p99,
            t50,
            t99,
            t50.as_secs_f64() / p50.as_secs_f64(),
            t99.as_secs_f64() / p99.as_secs_f64(),
            build,
            tv_build
        );
        for name in NAME_QUERIES {
            let request = SearchRequest::new(name).limit(LIMIT);
            let mut took: Vec<Duration> = (0..51)
                .map(|_| {
                    let start = Instant::now();
                    black_box(searcher.search(&index, &request));
                    start.elapsed()
                })
                .collect();
            took.sort_unstable();
            names.push((n, name, took[took.len() / 2]));
        }
    }
    println!("\n== name queries: median, and per thousand entries (flat when linear)");
    for (n, name, took) in names {
        println!(
            "{n:>6}  {name:<16} {:>10.1?}  {:>8.2?} per 1k",
            took,
            took.mul_f64(1_000.0 / n as f64)
        );
    }
    println!();
}
