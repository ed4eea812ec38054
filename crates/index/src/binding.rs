//! Which hits a search binds. A search lists up to five hits, but binding a tool costs the turn
//! its schema's tokens for three turns, so only the likely ones are bound: hits whose words earned
//! at least [`BIND_FLOOR`] of what the best bindable hit's earned ([`Hit::words_score`]: an exact
//! name ranks first but does not make every other answer look weak), at most [`MAX_BOUND`] of
//! them. The rest stay
//! in the answer, named as not bound, and a search with one of their names binds it.

use crate::request::Hit;

/// A bindable hit is likely when its score is at least this share of the best bindable hit's.
pub const BIND_FLOOR: f64 = 0.5;
/// At most this many hits are bound by one search, however close their scores.
pub const MAX_BOUND: usize = 3;

/// Marks each hit likely or not, in place. Hits that cannot be bound (skills, references,
/// slash-gated tools) keep `likely` as it is: it says nothing about them.
pub(crate) fn mark_likely(hits: &mut [Hit]) {
    let Some(best) = hits.iter().find(|h| h.bindable).map(|h| h.words_score) else {
        return;
    };
    let mut bound = 0;
    for hit in hits.iter_mut().filter(|h| h.bindable) {
        // A best score of 0 (an exact name with no other evidence) binds that hit alone.
        let strong = if best > 0.0 {
            hit.words_score >= BIND_FLOOR * best
        } else {
            bound == 0
        };
        hit.likely = strong && bound < MAX_BOUND;
        bound += usize::from(hit.likely);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Kind;

    fn hit(name: &str, score: f64, bindable: bool) -> Hit {
        Hit {
            name: name.to_owned(),
            kind: Kind::Core,
            score,
            words_score: score,
            description: String::new(),
            slash: Vec::new(),
            path: None,
            bindable,
            likely: true,
        }
    }

    fn likely(hits: &[Hit]) -> Vec<&str> {
        hits.iter()
            .filter(|h| h.bindable && h.likely)
            .map(|h| h.name.as_str())
            .collect()
    }

    #[test]
    fn one_strong_hit_is_bound_and_four_weak_ones_are_not() {
        let mut hits = vec![
            hit("lint_pipeline", 10.0, true),
            hit("check_run_status", 2.0, true),
            hit("run_built_pipeline", 1.9, true),
            hit("fetch_test_data", 1.5, true),
            hit("show_run", 1.0, true),
        ];
        mark_likely(&mut hits);
        assert_eq!(likely(&hits), ["lint_pipeline"]);
    }

    #[test]
    fn close_hits_are_bound_up_to_the_cap() {
        let mut hits: Vec<Hit> = (0..5)
            .map(|i| hit(&format!("t{i}"), 10.0 - f64::from(i), true))
            .collect();
        mark_likely(&mut hits);
        assert_eq!(likely(&hits), ["t0", "t1", "t2"]);
    }

    #[test]
    fn the_floor_is_relative_to_the_best_bindable_hit() {
        // A skill first with a high score does not stop the tool after it being bound.
        let mut hits = vec![
            hit("nf-core-modules", 30.0, false),
            hit("create_module", 6.0, true),
            hit("lint_module", 4.0, true),
        ];
        mark_likely(&mut hits);
        assert_eq!(likely(&hits), ["create_module", "lint_module"]);
    }
}
