//! Finding the words of the index a misspelt or half-typed query word stands for.
//!
//! Two complementary tools, both word-level and so cheap on 10,000 entries:
//!
//! - a symmetric-delete speller (every word and every one-letter deletion of it, hashed and
//!   sorted) finds words within one edit — a dropped, added, changed or swapped letter — and,
//!   for long words, some within two; a candidate is confirmed with the true edit distance;
//! - `nucleo-matcher` matches the query word as a subsequence of the words of names and
//!   keywords only (never descriptions), which finds a prefix or an abbreviation (`nextfl`,
//!   `autopil`, `srch`) that is too far from the whole word for an edit distance.

use nucleo_matcher::{Matcher, Utf32Str};

use crate::hash::hash_bytes as hash;

/// One word the query word may stand for, and how sure that is (0..=1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Correction {
    /// Index into [`Speller::words`].
    pub(crate) word: u32,
    /// 1.0 for an exact spelling, less the further away the word is.
    pub(crate) confidence: f32,
}

/// The words of the index, arranged for spelling correction.
#[derive(Debug, Clone, Default)]
pub(crate) struct Speller {
    /// Every distinct lowercase word of every field, sorted.
    words: Vec<Box<str>>,
    /// Whether the word occurs in a name or the keywords (so it may take a partial match).
    in_name: Vec<bool>,
    /// How often the word occurs: of two equally close corrections the common one is likelier.
    counts: Vec<u32>,
    /// `(hash, word)` of each word and each one-letter deletion of it, sorted.
    deletes: Vec<(u64, u32)>,
    /// Words of names and keywords, ordered by first letter then word, for partial matches.
    by_first: Vec<u32>,
}

/// Words shorter than this are never corrected: a three-letter word is one edit from dozens.
const MIN_CORRECTED_LEN: usize = 4;
/// How sure a partial (subsequence) match must be, relative to the query word matching itself.
const MIN_PARTIAL_RATIO: f32 = 0.55;
/// At most this many partial matches per query word.
const MAX_PARTIALS: usize = 3;

impl Speller {
    /// Builds the speller from distinct `(word, occurs in a name or keyword, count)` triples.
    pub(crate) fn build(mut distinct: Vec<(String, bool, u32)>) -> Speller {
        distinct.sort_unstable();
        distinct.dedup_by(|later, first| later.0 == first.0);
        let mut words: Vec<Box<str>> = Vec::with_capacity(distinct.len());
        let mut in_name: Vec<bool> = Vec::with_capacity(distinct.len());
        let mut counts: Vec<u32> = Vec::with_capacity(distinct.len());
        for (word, named, count) in distinct {
            words.push(word.into_boxed_str());
            in_name.push(named);
            counts.push(count);
        }
        let mut deletes = Vec::new();
        let mut buf = Vec::new();
        for (i, word) in words.iter().enumerate() {
            let i = i as u32;
            let bytes = word.as_bytes();
            if !word.is_ascii() || bytes.len() < MIN_CORRECTED_LEN - 1 {
                continue;
            }
            deletes.push((hash(bytes), i));
            for skip in 0..bytes.len() {
                without(bytes, skip, &mut buf);
                deletes.push((hash(&buf), i));
            }
        }
        deletes.sort_unstable();
        deletes.dedup();
        let mut by_first: Vec<u32> = (0..words.len() as u32)
            .filter(|&i| in_name[i as usize])
            .collect();
        by_first.sort_by(|&a, &b| words[a as usize].cmp(&words[b as usize]));
        Speller {
            words,
            in_name,
            counts,
            deletes,
            by_first,
        }
    }

    /// The word at `index`.
    pub(crate) fn word(&self, index: u32) -> &str {
        self.words.get(index as usize).map_or("", |w| w)
    }

    /// The index of `word` if the index contains it exactly.
    pub(crate) fn position(&self, word: &str) -> Option<u32> {
        self.words
            .binary_search_by(|w| (**w).cmp(word))
            .ok()
            .map(|i| i as u32)
    }

    /// Words within a small edit distance of `word` (which the index does not contain).
    pub(crate) fn corrections(&self, word: &str, out: &mut Vec<Correction>) {
        out.clear();
        let bytes = word.as_bytes();
        if !word.is_ascii() || bytes.len() < MIN_CORRECTED_LEN {
            return;
        }
        // One edit for ordinary words; two for long ones, where two slips are common and a
        // second word that close is rare.
        let max_distance = if bytes.len() >= 8 { 2 } else { 1 };
        let mut candidates: Vec<u32> = Vec::new();
        let mut buf = Vec::new();
        self.collect(hash(bytes), &mut candidates);
        for skip in 0..bytes.len() {
            without(bytes, skip, &mut buf);
            self.collect(hash(&buf), &mut candidates);
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut found: Vec<(u32, usize)> = candidates
            .into_iter()
            .filter_map(|cand| {
                osa_distance(bytes, self.word(cand).as_bytes(), max_distance)
                    .filter(|&d| d > 0)
                    .map(|d| (cand, d))
            })
            .collect();
        // Only the closest candidates: a word one slip away beats any two slips away.
        let Some(best) = found.iter().map(|&(_, d)| d).min() else {
            return;
        };
        found.retain(|&(_, d)| d == best);
        let count = |w: u32| self.counts.get(w as usize).copied().unwrap_or(1) as f32;
        let most = found.iter().map(|&(w, _)| count(w)).fold(1.0, f32::max);
        let base = if best == 1 { 0.8 } else { 0.6 };
        for (word, _) in found {
            // Scaled by how common the word is next to the other candidates, on a log scale.
            let share = (1.0 + count(word)).ln() / (1.0 + most).ln();
            out.push(Correction {
                word,
                confidence: base * (0.7 + 0.3 * share),
            });
        }
    }

    /// Words of names and keywords that contain `word` as a subsequence starting with the same
    /// letter (`nextfl` -> `nextflow`), best first, scored by nucleo against a perfect match.
    pub(crate) fn partials(&self, word: &str, matcher: &mut Matcher, out: &mut Vec<Correction>) {
        out.clear();
        let Some(first) = word.chars().next() else {
            return;
        };
        if word.chars().count() < 3 || !word.is_ascii() {
            return;
        }
        let needle = Utf32Str::Ascii(word.as_bytes());
        let Some(perfect) = matcher.fuzzy_match(needle, needle).filter(|&p| p > 0) else {
            return;
        };
        let start = self
            .by_first
            .partition_point(|&i| self.word(i).chars().next().is_some_and(|c| c < first));
        for &i in &self.by_first[start..] {
            let candidate = self.word(i);
            if !candidate.starts_with(first) {
                break;
            }
            if candidate.len() <= word.len() || !candidate.is_ascii() {
                continue;
            }
            let hay = Utf32Str::Ascii(candidate.as_bytes());
            if let Some(score) = matcher.fuzzy_match(hay, needle) {
                let ratio = f32::from(score) / f32::from(perfect);
                if ratio >= MIN_PARTIAL_RATIO {
                    out.push(Correction {
                        word: i,
                        confidence: ratio.min(1.0) * 0.7,
                    });
                }
            }
        }
        // Best first; ties by word so the order never depends on anything else.
        out.sort_by(|a, b| {
            b.confidence
                .total_cmp(&a.confidence)
                .then_with(|| self.word(a.word).cmp(self.word(b.word)))
        });
        out.truncate(MAX_PARTIALS);
    }

    fn collect(&self, key: u64, out: &mut Vec<u32>) {
        let start = self.deletes.partition_point(|&(h, _)| h < key);
        for &(h, w) in &self.deletes[start..] {
            if h != key {
                break;
            }
            out.push(w);
        }
    }

    /// Heap bytes held, for the memory budget.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.words.iter().map(|w| w.len()).sum::<usize>()
            + self.words.capacity() * std::mem::size_of::<Box<str>>()
            + self.in_name.capacity()
            + self.counts.capacity() * 4
            + self.deletes.capacity() * std::mem::size_of::<(u64, u32)>()
            + self.by_first.capacity() * 4
    }
}

fn without(bytes: &[u8], skip: usize, buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(&bytes[..skip]);
    buf.extend_from_slice(&bytes[skip + 1..]);
}

/// Optimal-string-alignment distance (edits plus swaps of neighbours), or `None` above `max`.
pub(crate) fn osa_distance(a: &[u8], b: &[u8], max: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let width = b.len() + 1;
    let mut prev2 = vec![0usize; width];
    let mut prev: Vec<usize> = (0..width).collect();
    let mut cur = vec![0usize; width];
    for i in 1..=a.len() {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
            row_min = row_min.min(d);
        }
        if row_min > max {
            return None;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[b.len()]).filter(|&d| d <= max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn speller(words: &[&str]) -> Speller {
        Speller::build(words.iter().map(|w| ((*w).to_owned(), true, 1)).collect())
    }

    fn corrected(s: &Speller, word: &str) -> Vec<String> {
        let mut out = Vec::new();
        s.corrections(word, &mut out);
        out.iter().map(|c| s.word(c.word).to_owned()).collect()
    }

    #[test]
    fn edit_distance_counts_swaps_as_one() {
        assert_eq!(osa_distance(b"lsit", b"list", 2), Some(1));
        assert_eq!(osa_distance(b"nextflw", b"nextflow", 2), Some(1));
        assert_eq!(osa_distance(b"abc", b"xyz", 1), None);
    }

    #[test]
    fn corrects_one_slip_of_each_sort() {
        let s = speller(&["list", "issues", "nextflow", "screenshot", "search"]);
        assert_eq!(corrected(&s, "lsit"), ["list"]);
        assert_eq!(corrected(&s, "isssues"), ["issues"]);
        assert_eq!(corrected(&s, "nextflw"), ["nextflow"]);
        assert_eq!(corrected(&s, "screnshot"), ["screenshot"]);
        assert_eq!(corrected(&s, "saerch"), ["search"]);
        assert!(corrected(&s, "zzzz").is_empty());
    }

    #[test]
    fn partial_names_find_their_word() {
        let s = speller(&["nextflow", "network", "autopilot"]);
        let mut m = Matcher::default();
        let mut out = Vec::new();
        s.partials("nextfl", &mut m, &mut out);
        assert_eq!(out.first().map(|c| s.word(c.word)), Some("nextflow"));
        s.partials("autopil", &mut m, &mut out);
        assert_eq!(out.first().map(|c| s.word(c.word)), Some("autopilot"));
    }
}
