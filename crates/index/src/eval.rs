//! Measuring ranking quality on a set of queries with known answers.
//!
//! A query counts as found at `k` when any of its acceptable names is among the first `k` hits
//! (several tools can answer one request, so this is success@k, which the issue calls
//! recall@k). MRR is the mean of one over the rank of the first acceptable hit within the first
//! [`EVAL_DEPTH`] hits, zero when none is there.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::baseline::Bm25;
use crate::catalog::QueryLine;
use crate::index::Index;
use crate::request::SearchRequest;
use crate::search::Searcher;

/// How many hits are looked at per query.
pub const EVAL_DEPTH: usize = 10;

/// Ranking quality over a set of queries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Queries measured.
    pub queries: usize,
    /// Share of queries answered by the first hit.
    pub recall_at_1: f64,
    /// Share answered within the first three hits.
    pub recall_at_3: f64,
    /// Share answered within the first five hits.
    pub recall_at_5: f64,
    /// Mean reciprocal rank of the first acceptable hit.
    pub mrr: f64,
}

/// A query none of whose answers came first, kept so a person can see what went wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Miss {
    /// The query.
    pub query: String,
    /// Its style.
    pub style: String,
    /// Its acceptable names.
    pub relevant: Vec<String>,
    /// The 1-based rank of the first acceptable hit, if any was in the first [`EVAL_DEPTH`].
    pub rank: Option<usize>,
    /// The first three hits.
    pub top: Vec<String>,
}

/// The evaluation's result: overall, per style, and the misses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    /// Over every query that has acceptable names.
    pub overall: Metrics,
    /// Per style (`paraphrase`, `goal`, `keyword`, `typo`, `exact`; `unstyled` for none).
    pub by_style: BTreeMap<String, Metrics>,
    /// Queries whose first hit was not acceptable.
    pub misses: Vec<Miss>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    queries: usize,
    at1: usize,
    at3: usize,
    at5: usize,
    reciprocal: f64,
}

impl Tally {
    fn add(&mut self, rank: Option<usize>) {
        self.queries += 1;
        if let Some(r) = rank {
            self.at1 += usize::from(r <= 1);
            self.at3 += usize::from(r <= 3);
            self.at5 += usize::from(r <= 5);
            self.reciprocal += 1.0 / r as f64;
        }
    }

    fn metrics(self) -> Metrics {
        let n = self.queries.max(1) as f64;
        Metrics {
            queries: self.queries,
            recall_at_1: self.at1 as f64 / n,
            recall_at_3: self.at3 as f64 / n,
            recall_at_5: self.at5 as f64 / n,
            mrr: self.reciprocal / n,
        }
    }
}

/// Evaluates any ranker: `rank` returns the names it ranks for a query, best first. Queries with
/// no acceptable names are skipped.
pub fn evaluate<F>(queries: &[QueryLine], mut rank: F) -> EvalReport
where
    F: FnMut(&QueryLine) -> Vec<String>,
{
    let mut overall = Tally::default();
    let mut styles: BTreeMap<String, Tally> = BTreeMap::new();
    let mut misses = Vec::new();
    for query in queries.iter().filter(|q| !q.relevant.is_empty()) {
        let ranked = rank(query);
        let position = ranked
            .iter()
            .take(EVAL_DEPTH)
            .position(|name| query.relevant.contains(name))
            .map(|p| p + 1);
        let style = query.style.clone().unwrap_or_else(|| "unstyled".to_owned());
        overall.add(position);
        styles.entry(style.clone()).or_default().add(position);
        if position != Some(1) {
            misses.push(Miss {
                query: query.query.clone(),
                style,
                relevant: query.relevant.clone(),
                rank: position,
                top: ranked.into_iter().take(3).collect(),
            });
        }
    }
    EvalReport {
        overall: overall.metrics(),
        by_style: styles.into_iter().map(|(k, t)| (k, t.metrics())).collect(),
        misses,
    }
}

/// Evaluates the index's ranking.
pub fn evaluate_index(index: &Index, searcher: &mut Searcher, queries: &[QueryLine]) -> EvalReport {
    evaluate(queries, |q| {
        let request = SearchRequest::new(&q.query).kind(q.kind).limit(EVAL_DEPTH);
        searcher
            .search(index, &request)
            .hits()
            .iter()
            .map(|h| h.name.clone())
            .collect()
    })
}

/// Evaluates the plain BM25 baseline on the same queries.
pub fn evaluate_baseline(baseline: &Bm25, queries: &[QueryLine]) -> EvalReport {
    evaluate(queries, |q| {
        baseline
            .search(&q.query, q.kind, EVAL_DEPTH)
            .into_iter()
            .map(|h| h.name)
            .collect()
    })
}

impl fmt::Display for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>5}  {:.3}  {:.3}  {:.3}  {:.3}",
            self.queries, self.recall_at_1, self.recall_at_3, self.recall_at_5, self.mrr
        )
    }
}

impl fmt::Display for EvalReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<12}{:>5}  {:>5}  {:>5}  {:>5}  {:>5}",
            "style", "n", "r@1", "r@3", "r@5", "mrr"
        )?;
        writeln!(f, "{:<12}{}", "overall", self.overall)?;
        for (style, metrics) in &self.by_style {
            writeln!(f, "{style:<12}{metrics}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(query: &str, style: &str, relevant: &[&str]) -> QueryLine {
        QueryLine {
            query: query.to_owned(),
            kind: crate::entry::KindFilter::Any,
            style: Some(style.to_owned()),
            relevant: relevant.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn metrics_count_the_first_acceptable_rank() {
        let queries = [
            q("a", "x", &["a"]),
            q("b", "x", &["b"]),
            q("c", "y", &["c"]),
        ];
        let report = evaluate(&queries, |q| match q.query.as_str() {
            "a" => vec!["a".into()],
            "b" => vec!["z".into(), "y".into(), "b".into()],
            _ => vec![],
        });
        assert_eq!(report.overall.queries, 3);
        assert!((report.overall.recall_at_1 - 1.0 / 3.0).abs() < 1e-9);
        assert!((report.overall.recall_at_3 - 2.0 / 3.0).abs() < 1e-9);
        assert!((report.overall.mrr - (1.0 + 1.0 / 3.0) / 3.0).abs() < 1e-9);
        assert_eq!(report.by_style.len(), 2);
        assert_eq!(report.misses.len(), 2);
    }
}
