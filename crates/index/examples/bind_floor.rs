//! How the relevance floor for binding was chosen (issue 41, item 3): for each floor (a share of
//! the best bindable hit's words score, see `codaris_index::binding`) and cap, over every
//! evaluation set, the hits bound per search that answer nothing (bound-but-irrelevant) and the
//! share of searches whose bound set holds an answer (R@3 of the bound set). Floor 0 with cap 5
//! is how search bound before the floor. With a query as the argument it prints that query's
//! bindable hits and their shares of the top words score instead.
//!
//! `cargo run --release -p codaris-index --example bind_floor [-- QUERY]`

use codaris_index::{
    Index, QueryLine, SearchOutcome, SearchRequest, Searcher, parse_catalog, parse_queries,
};

fn main() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/eval");
    let read = |name: &str| std::fs::read_to_string(format!("{dir}/{name}")).unwrap_or_default();
    let build = |name: &str| parse_catalog(&read(name)).map(Index::build);
    let (Ok(index), Ok(unseen)) = (build("catalog.jsonl"), build("unseen/catalog.jsonl")) else {
        eprintln!("a catalogue does not parse");
        return;
    };
    let mut searcher = Searcher::new();
    // With a query given, its bindable hits and their shares of the top score.
    if let Some(query) = std::env::args().nth(1) {
        let outcome = searcher.search(&index, &SearchRequest::new(&query).limit(5));
        let top = outcome
            .hits()
            .iter()
            .find(|h| h.bindable)
            .map_or(1.0, |h| h.words_score);
        for hit in outcome.hits().iter().filter(|h| h.bindable) {
            println!("{:.2}  {}", hit.words_score / top, hit.name);
        }
        return;
    }
    let sets = [
        ("queries.jsonl", &index),
        ("holdout.jsonl", &index),
        ("unseen/dev.jsonl", &unseen),
        ("unseen/queries.jsonl", &unseen),
    ];
    for (set, index) in sets {
        let Ok(queries) = parse_queries(&read(set)) else {
            eprintln!("{set} does not parse");
            continue;
        };
        let queries: Vec<QueryLine> = queries
            .into_iter()
            .filter(|q| !q.relevant.is_empty())
            .collect();
        // Each search's bindable hits with their scores, once.
        let searched: Vec<(Vec<(String, f64)>, &QueryLine)> = queries
            .iter()
            .map(|q| {
                let outcome =
                    searcher.search(index, &SearchRequest::new(&q.query).kind(q.kind).limit(5));
                let hits = match &outcome {
                    SearchOutcome::Hits { hits, .. } => hits
                        .iter()
                        .filter(|h| h.bindable)
                        .map(|h| (h.name.clone(), h.words_score))
                        .collect(),
                    _ => Vec::new(),
                };
                (hits, q)
            })
            .collect();
        println!("{set}: {} queries", queries.len());
        println!("floor  cap  irrelevant bound/search  R@3 of bound");
        for floor in [0.0, 0.4, 0.5, 0.6, 0.7, 0.8] {
            for cap in [5usize, 3, 2] {
                let mut irrelevant = 0usize;
                let mut found = 0usize;
                for (hits, q) in &searched {
                    let top = hits.first().map_or(0.0, |h| h.1);
                    let bound: Vec<&String> = hits
                        .iter()
                        .filter(|(_, score)| *score >= floor * top)
                        .take(cap)
                        .map(|(name, _)| name)
                        .collect();
                    irrelevant += bound.iter().filter(|n| !q.relevant.contains(n)).count();
                    found += usize::from(bound.iter().take(3).any(|n| q.relevant.contains(n)));
                }
                println!(
                    "{floor:>5.1}  {cap:>3}  {:>24.2}  {:>12.3}",
                    irrelevant as f64 / searched.len() as f64,
                    found as f64 / searched.len() as f64
                );
            }
        }
    }
}
