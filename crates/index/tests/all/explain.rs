//! `codaris tools search --explain`, pinned for three kinds of query over the evaluation
//! catalogue: a query that spells a tool's name, a misspelt one, and a paraphrase that reaches
//! its tool through a synonym.

use codaris_index::{SearchRequest, Searcher, render_explanation};

use super::common::catalog_index;

fn explained(query: &str) -> String {
    let index = catalog_index();
    render_explanation(&Searcher::new().explain(&index, &SearchRequest::new(query)))
}

#[test]
fn a_query_that_spells_a_name() {
    insta::assert_snapshot!("explain_lint_nextflow", explained("lint nextflow"));
}

#[test]
fn a_misspelt_query() {
    insta::assert_snapshot!("explain_typo", explained("serch isues"));
}

#[test]
fn a_paraphrase_through_a_synonym() {
    insta::assert_snapshot!(
        "explain_paraphrase",
        explained("repair the broken pipeline run")
    );
}

#[test]
fn the_explanation_agrees_with_the_search() {
    let index = catalog_index();
    let mut searcher = Searcher::new();
    for query in ["lint nextflow", "serch isues", "take a screenshot", "zzzz"] {
        let request = SearchRequest::new(query);
        let outcome = searcher.search(&index, &request);
        let explanation = searcher.explain(&index, &request);
        let names: Vec<&str> = explanation.hits.iter().map(|h| h.name.as_str()).collect();
        let hits: Vec<&str> = outcome.hits().iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, hits, "{query}");
        for (why, hit) in explanation.hits.iter().zip(outcome.hits()) {
            assert_eq!(why.score, hit.score);
            assert_eq!(
                why.binding == "bound",
                hit.bindable && hit.likely,
                "{query}: {}",
                why.binding
            );
        }
    }
}
