//! The corpus every index bench searches, shared so that each side of a comparison reads the
//! same entries and the same queries.
//!
//! Entries are grown from the evaluation catalogue: every real entry is repeated under numbered
//! copies of its server (`github_7__search_issues`), and each copy's description gains the first
//! sentence of another entry, so the vocabulary and the posting lists grow the way a large
//! registry's would rather than just repeating. The queries are the evaluation queries.

use codaris_index::{Entry, QueryLine, parse_catalog, parse_queries};

pub fn catalogue() -> Vec<Entry> {
    match parse_catalog(include_str!("../../eval/catalog.jsonl")) {
        Ok(entries) => entries,
        Err(e) => {
            eprintln!("the evaluation catalogue does not parse: {e}");
            std::process::exit(1)
        }
    }
}

/// The tuned and the held-out evaluation queries.
pub fn queries() -> Vec<QueryLine> {
    let mut all = Vec::new();
    for text in [
        include_str!("../../eval/queries.jsonl"),
        include_str!("../../eval/holdout.jsonl"),
    ] {
        match parse_queries(text) {
            Ok(q) => all.extend(q),
            Err(e) => {
                eprintln!("the evaluation queries do not parse: {e}");
                std::process::exit(1)
            }
        }
    }
    all
}

/// Grows the real catalogue to `n` entries (see the module comment).
pub fn grown(n: usize) -> Vec<Entry> {
    let real = catalogue();
    let first_sentence = |e: &Entry| {
        e.description
            .split_terminator(['.', ';'])
            .next()
            .unwrap_or("")
            .to_owned()
    };
    (0..n)
        .map(|i| {
            let copy = i / real.len();
            let mut entry = real[i % real.len()].clone();
            if copy > 0 {
                let other = &real[(i * 7 + copy * 13) % real.len()];
                let (server, tool) = match entry.name.split_once("__") {
                    Some((s, t)) => (s.to_owned(), t.to_owned()),
                    None => ("builtin".to_owned(), entry.name.clone()),
                };
                entry.name = format!("{server}_{copy}__{tool}");
                entry.server = Some(format!("{server}_{copy}"));
                entry.description = format!("{} {}.", entry.description, first_sentence(other));
            }
            entry
        })
        .collect()
}
