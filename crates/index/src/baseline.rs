//! A plain BM25 over name and description, as published tool-retrieval work measures it. Kept
//! only as a yardstick for the evaluation and the benchmark: no field weights, no stemming, no
//! synonyms, no typo handling.

use std::collections::HashMap;

use crate::entry::{Entry, KindFilter};

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// A BM25 index over each entry's name and description as one bag of lowercase words.
#[derive(Debug, Clone, Default)]
pub struct Bm25 {
    entries: Vec<Entry>,
    postings: HashMap<String, Vec<(u32, f32)>>,
}

/// One ranked entry of the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct BaselineHit {
    /// The entry's name.
    pub name: String,
    /// Its BM25 score.
    pub score: f32,
}

fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

impl Bm25 {
    /// Builds the baseline from entries; like [`crate::Index`], independent of their order.
    pub fn build(mut entries: Vec<Entry>) -> Bm25 {
        entries.sort_by(|a, b| a.name.cmp(&b.name).then(a.description.cmp(&b.description)));
        entries.dedup_by(|later, first| later.name == first.name);
        let mut counts: HashMap<String, Vec<(u32, f32)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(entries.len());
        for (doc, entry) in entries.iter().enumerate() {
            let mut length = 0usize;
            let text = format!("{} {}", entry.name, entry.description);
            for token in tokens(&text) {
                length += 1;
                let list = counts.entry(token).or_default();
                match list.last_mut() {
                    Some((d, tf)) if *d == doc as u32 => *tf += 1.0,
                    _ => list.push((doc as u32, 1.0)),
                }
            }
            lengths.push(length as f32);
        }
        let n = entries.len().max(1) as f32;
        let average = (lengths.iter().sum::<f32>() / n).max(1.0);
        for list in counts.values_mut() {
            let df = list.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for (doc, tf) in list.iter_mut() {
                let len = lengths.get(*doc as usize).copied().unwrap_or(average);
                let norm = K1 * (1.0 - B + B * len / average);
                *tf = idf * *tf * (K1 + 1.0) / (*tf + norm);
            }
        }
        Bm25 {
            entries,
            postings: counts,
        }
    }

    /// The best `limit` enabled entries admitted by `kind`, best first, ties by name.
    pub fn search(&self, query: &str, kind: KindFilter, limit: usize) -> Vec<BaselineHit> {
        let mut scores: HashMap<u32, f32> = HashMap::new();
        let mut seen: Vec<String> = Vec::new();
        for token in tokens(query) {
            if seen.contains(&token) {
                continue;
            }
            for &(doc, s) in self.postings.get(&token).into_iter().flatten() {
                *scores.entry(doc).or_default() += s;
            }
            seen.push(token);
        }
        let mut ranked: Vec<(f32, u32)> = scores
            .into_iter()
            .filter(|(doc, _)| {
                self.entries
                    .get(*doc as usize)
                    .is_some_and(|e| e.enabled && kind.admits(e.kind))
            })
            .map(|(doc, s)| (s, doc))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        ranked
            .into_iter()
            .take(limit)
            .filter_map(|(score, doc)| {
                self.entries.get(doc as usize).map(|e| BaselineHit {
                    name: e.name.clone(),
                    score,
                })
            })
            .collect()
    }
}
