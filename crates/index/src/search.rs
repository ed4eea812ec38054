//! Answering one `search_tools` call: the query's words, what each may stand for, the scores,
//! the filters, and the hits in order.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use nucleo_matcher::Matcher;

use crate::binding::mark_likely;
use crate::closest::closest_names;
use crate::entry::Entry;
use crate::fuzzy::Correction;
use crate::index::Index;
use crate::request::{Hit, MAX_QUERY_CHARS, SearchOutcome, SearchRequest};
use crate::stem::stem;
use crate::synonyms::ABBREVIATIONS;
use crate::text::{is_stop_word, name_key, words};

/// How much a synonym of a query word counts against the word itself, so a tool that uses the
/// query's own word still comes first.
pub(crate) const SYNONYM_WEIGHT: f32 = 0.6;
/// How much matching every word of the query counts against matching only some: the score is
/// scaled between `1 - COVERAGE` (one word of many) and 1 (all words).
pub(crate) const COVERAGE: f32 = 0.8;
/// How much an entry whose name the query's words account for entirely gains over one whose
/// name they miss: a name is the tool's own summary of what it does.
pub(crate) const NAME_BONUS: f32 = 0.2;
/// Added to the score per exact-name tier so exact names sort first and their scores stay
/// ordered like their ranks.
pub(crate) const TIER_BONUS: f64 = 100.0;

/// The per-caller half of searching: nucleo's matcher (which owns scratch memory) and score
/// buffers, reused from one search to the next. The [`Index`] is shared immutably; each thread
/// or session that searches keeps its own `Searcher`.
#[derive(Debug, Default)]
pub struct Searcher {
    matcher: Matcher,
    /// Per document: the running score, and how many query words it matched.
    scores: Vec<f32>,
    matched: Vec<u16>,
    /// Per document: how much of its name the query's words account for (0..=1).
    named: Vec<f32>,
    /// Per document: the best alternative of the query word being scored, and the best share
    /// of the name it accounts for.
    best: Vec<f32>,
    best_name: Vec<f32>,
    touched: Vec<u32>,
    word_touched: Vec<u32>,
    /// Per document: its exact-name tier for this query (0 for none), and the documents that
    /// have one, so a touched document's tier is one read rather than a scan of a list.
    tier: Vec<u8>,
    tiered: Vec<u32>,
    corrections: Vec<Correction>,
}

/// What one query word may stand for: terms with how much each counts.
pub(crate) type Alternatives = Vec<(u32, f32)>;

impl Searcher {
    /// A searcher with empty buffers; they grow to the index on first use.
    pub fn new() -> Self {
        Searcher::default()
    }

    /// Ranks `index` for `request`.
    pub fn search(&mut self, index: &Index, request: &SearchRequest<'_>) -> SearchOutcome {
        let query = request.query.trim();
        if query.is_empty() {
            return SearchOutcome::EmptyQuery;
        }
        let chars = query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return SearchOutcome::TooLong {
                chars,
                max: MAX_QUERY_CHARS,
            };
        }
        let n = index.entries.len();
        self.scores.resize(n, 0.0);
        self.matched.resize(n, 0);
        self.best.resize(n, 0.0);
        self.best_name.resize(n, 0.0);
        self.named.resize(n, 0.0);

        self.tier.resize(n, 0);
        self.mark_tiers(index, query);
        let groups = self.query_words(index, query);
        let group_count = words_that_can_match(&groups).max(1) as f32;
        for (_, alternatives) in &groups {
            self.score_word(index, alternatives);
        }

        // A limit of 0 would turn every search into "no hit"; at least one hit is returned.
        let limit = request.limit.max(1);
        let keep = limit.saturating_add(request.withheld.len());
        let mask = request.kind.mask();
        let mut top = TopK::new(keep);
        for &doc in &self.touched {
            if !index.admits(doc, mask) {
                continue;
            }
            let i = doc as usize;
            let cover = f32::from(self.matched[i]) / group_count;
            let named = self.named[i].min(1.0);
            let score =
                self.scores[i] * (1.0 - COVERAGE + COVERAGE * cover) * (1.0 + NAME_BONUS * named);
            top.offer(Ranked {
                tier: self.tier[i],
                score,
                doc,
            });
        }
        for &doc in &self.tiered {
            if index.admits(doc, mask) && self.scores[doc as usize] == 0.0 {
                top.offer(Ranked {
                    tier: self.tier[doc as usize],
                    score: 0.0,
                    doc,
                });
            }
        }
        self.reset();
        let ranked = top.into_sorted();

        let mut hits: Vec<Hit> = ranked
            .iter()
            .filter_map(|r| {
                let entry = index.entries.get(r.doc as usize)?;
                (!request.withheld.contains(&entry.name)).then(|| hit(entry, r.tier, r.score))
            })
            .take(limit)
            .collect();
        mark_likely(&mut hits);
        if hits.is_empty() {
            let closest = closest_names(index, query, request);
            return SearchOutcome::NoHit {
                query: query.to_owned(),
                closest,
            };
        }
        SearchOutcome::Hits {
            query: query.to_owned(),
            hits,
        }
    }

    /// The query's meaningful words, each with the terms it may stand for.
    pub(crate) fn query_words(
        &mut self,
        index: &Index,
        query: &str,
    ) -> Vec<(String, Alternatives)> {
        // Each query word, with the word it was expanded from when it came from a short form.
        let mut raw: Vec<(String, Option<String>)> = Vec::new();
        for word in words(&without_links(query)) {
            if let Some((_, long)) = ABBREVIATIONS.iter().find(|(short, _)| *short == word) {
                for (i, w) in long.iter().enumerate() {
                    raw.push(((*w).to_owned(), (i == 0).then(|| word.clone())));
                }
            } else if let Some((a, b)) = split_unknown(index, &word) {
                // `pullrequest` is searched as `pull request`.
                raw.push((a, None));
                raw.push((b, None));
            } else {
                raw.push((word, None));
            }
        }
        let meaningful: Vec<&(String, Option<String>)> =
            raw.iter().filter(|(w, _)| !is_stop_word(w)).collect();
        // A query of stop words only ("what is it") still searches for them.
        let chosen: Vec<&(String, Option<String>)> = if meaningful.is_empty() {
            raw.iter().collect()
        } else {
            meaningful
        };
        let mut seen: Vec<String> = Vec::new();
        let mut groups = Vec::new();
        for (i, (word, short)) in chosen.iter().enumerate() {
            let stemmed = stem(word);
            if seen.contains(&stemmed) {
                continue;
            }
            let mut alternatives = self.alternatives(index, word, &stemmed);
            let mut also = |term: Option<u32>| {
                if let Some(term) = term {
                    match alternatives.iter_mut().find(|(t, _)| *t == term) {
                        Some((_, w)) => *w = w.max(1.0),
                        None => alternatives.push((term, 1.0)),
                    }
                }
            };
            // The short form itself (`pr`, `k8s`) also counts, as the word it stands for.
            also(short.as_deref().and_then(|s| index.term(&stem(s))));
            // Two words the index has as one (`screen shot` for `screenshot`).
            if let Some((next, _)) = chosen.get(i + 1) {
                let joined = format!("{word}{next}");
                if index.speller.position(&joined).is_some() {
                    also(index.term(&stem(&joined)));
                }
            }
            groups.push((word.clone(), alternatives));
            seen.push(stemmed);
        }
        groups
    }

    /// The terms a query word may stand for: itself, its synonyms, or, when the index does not
    /// know it, the words it is a misspelling or a prefix of.
    fn alternatives(&mut self, index: &Index, word: &str, stemmed: &str) -> Alternatives {
        let mut out: Alternatives = Vec::new();
        let add = |out: &mut Alternatives, term: u32, weight: f32| match out
            .iter_mut()
            .find(|(t, _)| *t == term)
        {
            Some((_, w)) => *w = w.max(weight),
            None => out.push((term, weight)),
        };
        let own = index.term(stemmed);
        match own {
            Some(term) => add(&mut out, term, 1.0),
            None if index.speller.position(word).is_none() => {
                index.speller.corrections(word, &mut self.corrections);
                if self.corrections.is_empty() {
                    index
                        .speller
                        .partials(word, &mut self.matcher, &mut self.corrections);
                }
                for c in &self.corrections {
                    if let Some(term) = index.term(&stem(index.speller.word(c.word))) {
                        add(&mut out, term, c.confidence);
                    }
                }
            }
            None => {}
        }
        if let Some(synonyms) = index.synonyms.get(stemmed) {
            for &term in synonyms {
                // A synonym never counts for more than the query's own word would: a rarer
                // synonym (`add` for `create`) must not outrank the word the query used.
                let rarity = own.map_or(1.0, |o| (index.idf(o) / index.idf(term)).min(1.0));
                add(&mut out, term, SYNONYM_WEIGHT * rarity);
            }
        }
        out
    }

    /// Adds one query word's score to every document: the best of its alternatives, so a tool
    /// that has both a word and its synonym is not counted twice.
    fn score_word(&mut self, index: &Index, alternatives: &Alternatives) {
        for &(term, weight) in alternatives {
            for posting in index.postings(term) {
                let i = posting.doc as usize;
                let value = weight * posting.score;
                if self.best[i] == 0.0 {
                    self.word_touched.push(posting.doc);
                }
                if value > self.best[i] {
                    self.best[i] = value;
                }
                let share = weight * posting.name_share;
                if share > self.best_name[i] {
                    self.best_name[i] = share;
                }
            }
        }
        for &doc in &self.word_touched {
            let i = doc as usize;
            if self.matched[i] == 0 {
                self.touched.push(doc);
            }
            self.scores[i] += self.best[i];
            self.named[i] += self.best_name[i];
            self.matched[i] = self.matched[i].saturating_add(1);
            self.best[i] = 0.0;
            self.best_name[i] = 0.0;
        }
        self.word_touched.clear();
    }

    fn reset(&mut self) {
        for &doc in &self.touched {
            self.scores[doc as usize] = 0.0;
            self.matched[doc as usize] = 0;
            self.named[doc as usize] = 0.0;
        }
        self.touched.clear();
        for &doc in &self.tiered {
            if let Some(t) = self.tier.get_mut(doc as usize) {
                *t = 0;
            }
        }
        self.tiered.clear();
    }

    /// Marks the entries whose name the query spells (see [`name_tiers`]). A document keeps its
    /// best tier.
    fn mark_tiers(&mut self, index: &Index, query: &str) {
        name_tiers(index, query, |doc, tier| {
            if let Some(t) = self.tier.get_mut(doc as usize) {
                if *t == 0 {
                    self.tiered.push(doc);
                }
                *t = (*t).max(tier);
            }
        });
    }
}

/// Calls `mark` for each entry whose name the query spells: the whole name (tier 3), an MCP
/// tool's name without its server (tier 2), or the same words in another spelling, `read file`
/// for `read_file` (tier 1).
pub(crate) fn name_tiers(index: &Index, query: &str, mut mark: impl FnMut(u32, u8)) {
    let lower = query.to_lowercase();
    if let Some(&doc) = index.names.get(&lower) {
        mark(doc, 3);
    }
    for &doc in index.bare_names.get(&lower).into_iter().flatten() {
        mark(doc, 2);
    }
    let key = name_key(query);
    if !key.is_empty() {
        for &doc in index.name_keys.get(&key).into_iter().flatten() {
            mark(doc, 1);
        }
    }
}

/// How many query words can match anything: a word the index has nothing for (a number, a
/// name) cannot tell entries apart, so it does not count against the ones that match the rest.
pub(crate) fn words_that_can_match(groups: &[(String, Alternatives)]) -> usize {
    groups.iter().filter(|(_, a)| !a.is_empty()).count()
}

/// The query with every link replaced by the word `url`: a pasted address says the request is
/// about a URL, while its pieces (`https`, `com`) say nothing.
fn without_links(query: &str) -> String {
    query
        .split_whitespace()
        .map(|token| {
            let lower = token.to_ascii_lowercase();
            if lower.contains("://") || lower.starts_with("www.") {
                "url"
            } else {
                token
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A query word the index does not know, split into two words it does (`pullrequest`), the most
/// even split first. Parts are at least three letters.
fn split_unknown(index: &Index, word: &str) -> Option<(String, String)> {
    const MIN_PART: usize = 3;
    if word.len() < 2 * MIN_PART
        || !word.is_ascii()
        || index.term(&stem(word)).is_some()
        || index.speller.position(word).is_some()
    {
        return None;
    }
    let mut splits: Vec<usize> = (MIN_PART..=word.len() - MIN_PART).collect();
    splits.sort_by_key(|&at| (at.abs_diff(word.len() - at), at));
    splits.into_iter().find_map(|at| {
        let (a, b) = word.split_at(at);
        let known = |w: &str| index.speller.position(w).is_some() && !is_stop_word(w);
        (known(a) && known(b)).then(|| (a.to_owned(), b.to_owned()))
    })
}

/// One candidate hit: its exact-name tier, its score and its document.
#[derive(Debug, Clone, Copy)]
struct Ranked {
    tier: u8,
    score: f32,
    doc: u32,
}

impl Ranked {
    /// Best tier, then best score, then name (document order is name order): `Less` is better.
    fn order(&self, other: &Ranked) -> Ordering {
        other
            .tier
            .cmp(&self.tier)
            .then(other.score.total_cmp(&self.score))
            .then(self.doc.cmp(&other.doc))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Ranked) -> bool {
        self.order(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Ranked) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    /// Worse is greater, so the heap's top is the worst hit kept.
    fn cmp(&self, other: &Ranked) -> Ordering {
        self.order(other)
    }
}

/// The best `k` candidates seen so far: a heap with the worst of them on top, so each candidate
/// costs one comparison unless it is among the best, and nothing else is sorted.
struct TopK {
    k: usize,
    heap: BinaryHeap<Ranked>,
}

impl TopK {
    fn new(k: usize) -> TopK {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1024)),
        }
    }

    fn offer(&mut self, candidate: Ranked) {
        if self.heap.len() < self.k {
            self.heap.push(candidate);
        } else if let Some(mut worst) = self.heap.peek_mut()
            && candidate < *worst
        {
            *worst = candidate;
        }
    }

    /// The candidates kept, best first.
    fn into_sorted(self) -> Vec<Ranked> {
        self.heap.into_sorted_vec()
    }
}

fn hit(entry: &Entry, tier: u8, score: f32) -> Hit {
    let round = |s: f64| (s * 10_000.0).round() / 10_000.0;
    let words_score = f64::from(score);
    Hit {
        name: entry.name.clone(),
        kind: entry.kind,
        score: round(words_score + TIER_BONUS * f64::from(tier)),
        words_score: round(words_score),
        description: entry.description.clone(),
        slash: entry.slash.clone(),
        path: entry.path.clone(),
        bindable: entry.is_bindable(),
        likely: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Kind;

    fn index() -> Index {
        Index::build(vec![
            Entry::new("pull_request", Kind::Core, "Open a pull request."),
            Entry::new("take_screenshot", Kind::Core, "Capture the screen."),
        ])
    }

    #[test]
    fn links_become_the_word_url() {
        assert_eq!(
            without_links("open https://x.org/a?b=c now"),
            "open url now"
        );
        assert_eq!(without_links("see www.example.com"), "see url");
    }

    #[test]
    fn run_together_words_split_into_known_ones() {
        let index = index();
        assert_eq!(
            split_unknown(&index, "pullrequest"),
            Some(("pull".to_owned(), "request".to_owned()))
        );
        assert_eq!(split_unknown(&index, "pull"), None);
        assert_eq!(split_unknown(&index, "zzzzzzzz"), None);
    }

    #[test]
    fn a_searcher_survives_a_smaller_index() {
        let big = Index::build(
            (0..50)
                .map(|i| Entry::new(format!("tool_{i}"), Kind::Core, "Does a thing."))
                .collect(),
        );
        let small = index();
        let mut searcher = Searcher::new();
        assert_eq!(
            searcher
                .search(&big, &SearchRequest::new("tool"))
                .hits()
                .len(),
            5
        );
        let outcome = searcher.search(&small, &SearchRequest::new("screen shot").limit(0));
        let names: Vec<&str> = outcome.hits().iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["take_screenshot"]);
    }
}
