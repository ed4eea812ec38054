//! The names offered when nothing matched.

use crate::index::Index;
use crate::request::SearchRequest;
use crate::text::name_key;

/// The three visible names most like the query, by shared letter pairs (Dice coefficient), ties
/// by name. Used only when nothing matched, so a scan of every name is affordable.
pub(crate) fn closest_names(
    index: &Index,
    query: &str,
    request: &SearchRequest<'_>,
) -> Vec<String> {
    let target = bigrams(&name_key(query).replace(' ', ""));
    let mut scored: Vec<(f32, &str)> = index
        .entries
        .iter()
        .filter(|e| e.enabled && request.kind.admits(e.kind))
        .filter(|e| !request.withheld.contains(&e.name))
        .map(|e| {
            let grams = bigrams(&name_key(&e.name).replace(' ', ""));
            (dice(&target, &grams), e.name.as_str())
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, name)| name.to_owned())
        .collect()
}

fn bigrams(s: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = s.chars().collect();
    let mut grams: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    grams.sort_unstable();
    grams
}

/// Twice the shared pairs over all pairs; both lists sorted.
fn dice(a: &[(char, char)], b: &[(char, char)]) -> f32 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * shared as f32 / (a.len() + b.len()) as f32
}
