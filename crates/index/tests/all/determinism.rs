//! The order of entries at build time never changes a result, and ties go by name.

use codaris_index::{Entry, Index, Kind, SearchRequest, Searcher};
use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::common::catalog;

const QUERIES: &[&str] = &[
    "search issues",
    "take a screenshot",
    "read a file",
    "lint nextflow",
    "list",
    "run the pipeline and repair what breaks",
    "serch isues",
    "create",
];

fn results(index: &Index) -> Vec<Vec<(String, f64)>> {
    let mut searcher = Searcher::new();
    QUERIES
        .iter()
        .map(|q| {
            searcher
                .search(index, &SearchRequest::new(q).limit(10))
                .hits()
                .iter()
                .map(|h| (h.name.clone(), h.score))
                .collect()
        })
        .collect()
}

#[test]
fn equal_scores_are_ordered_by_name() {
    let same = |name: &str| Entry::new(name, Kind::Core, "Frobnicate the widget.");
    let index = Index::build(vec![same("zeta"), same("alpha"), same("mid")]);
    let outcome = Searcher::new().search(&index, &SearchRequest::new("frobnicate"));
    let names: Vec<&str> = outcome.hits().iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["alpha", "mid", "zeta"]);
}

#[test]
fn reversed_catalogue_gives_identical_results() {
    let entries = catalog();
    let mut reversed = entries.clone();
    reversed.reverse();
    assert_eq!(
        results(&Index::build(entries)),
        results(&Index::build(reversed))
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]
    #[test]
    fn shuffled_catalogue_gives_identical_results(seed in any::<u64>()) {
        let entries = catalog();
        let mut shuffled = entries.clone();
        // A small deterministic shuffle driven by the generated seed (Fisher-Yates, xorshift).
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let j = (state % (i as u64 + 1)) as usize;
            shuffled.swap(i, j);
        }
        prop_assert_eq!(results(&Index::build(entries)), results(&Index::build(shuffled)));
    }
}

/// Two builds of the same catalogue answer every query of the unseen set identically: the same
/// hits, scores and binding, and the same explanation.
#[test]
fn two_builds_of_one_catalogue_answer_alike() {
    use codaris_index::{parse_catalog, parse_queries, render_explanation};
    let text = super::common::UNSEEN_CATALOG;
    let build = || Index::build(parse_catalog(text).expect("the unseen catalogue parses"));
    let (a, b) = (build(), build());
    let queries = parse_queries(super::common::UNSEEN_DEV).expect("the queries parse");
    let (mut sa, mut sb) = (Searcher::new(), Searcher::new());
    for q in &queries {
        let request = SearchRequest::new(&q.query).limit(10);
        assert_eq!(
            sa.search(&a, &request),
            sb.search(&b, &request),
            "{}",
            q.query
        );
        assert_eq!(
            render_explanation(&sa.explain(&a, &request)),
            render_explanation(&sb.explain(&b, &request)),
        );
    }
}
