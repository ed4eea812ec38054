//! The extractive half of `web_research`: the text of each source (a page's Markdown, an
//! article's abstract) split into paragraphs and sentences, every sentence scored against the
//! question with BM25 — the words' weights counted across every source read, so a word they all
//! share tells little — and the best sentences picked across sources, a few per source at most.
//! A claim is a source's own sentence, as written: nothing here rewords anything.

use std::collections::{HashMap, HashSet};

/// Words too common to tell one passage from another (and to make a search query sharper).
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "being", "between", "both", "but", "by", "can", "could", "did", "do", "does",
    "doing", "during", "each", "either", "etc", "every", "few", "for", "from", "get", "gets",
    "had", "has", "have", "having", "he", "her", "here", "him", "his", "how", "i", "if", "in",
    "into", "is", "it", "its", "just", "me", "might", "more", "most", "much", "must", "my", "no",
    "nor", "not", "now", "of", "on", "one", "only", "or", "other", "our", "out", "over", "own",
    "please", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under",
    "until", "up", "us", "very", "was", "we", "were", "what", "when", "where", "whether", "which",
    "while", "who", "whom", "why", "will", "with", "within", "without", "would", "you", "your",
];

/// Words that end in a full stop without ending a sentence.
const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "fig", "figs", "eq", "al", "dr", "mr", "mrs", "ms", "prof", "no",
    "approx", "cf", "ca", "st", "jr", "sr", "inc", "ltd", "co", "resp", "ref", "refs", "vol", "pp",
    "ed", "eds", "sec", "ch", "min", "max", "nos", "spp", "sp", "var",
];

/// BM25's usual constants: term frequency saturation and length normalisation.
const K1: f64 = 1.2;
const B: f64 = 0.75;
/// Sentences shorter than this say too little to rest a claim on.
const MIN_SENTENCE_CHARS: usize = 30;
/// Characters of a claim and of the passage around it, at most.
pub(crate) const CLAIM_CHARS: usize = 320;
pub(crate) const PASSAGE_CHARS: usize = 640;

pub(crate) fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word)
}

/// A crude English stemmer, enough for "tasks" to match "task" and "caching" to match "cache"
/// (both become "cach"): applied alike to the question and to the sources.
pub(crate) fn stem(word: &str) -> String {
    let len = word.chars().count();
    let cut = |text: &str, suffix: &str| text[..text.len() - suffix.len()].to_owned();
    if len > 4 && word.ends_with("ies") {
        return format!("{}y", cut(word, "ies"));
    }
    if len > 5 && word.ends_with("ing") {
        return cut(word, "ing");
    }
    if len > 4 && word.ends_with("ed") && !word.ends_with("eed") {
        return cut(word, "ed");
    }
    let single = if len > 4
        && ["ches", "shes", "sses", "xes"]
            .iter()
            .any(|s| word.ends_with(s))
    {
        cut(word, "es")
    } else if len > 3
        && word.ends_with('s')
        && !["ss", "us", "is"].iter().any(|s| word.ends_with(s))
    {
        cut(word, "s")
    } else {
        word.to_owned()
    };
    if single.chars().count() > 4 && single.ends_with('e') {
        return cut(&single, "e");
    }
    single
}

/// Every word of `text`, lowercased and stemmed.
pub(crate) fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(|word| stem(&word.to_lowercase()))
        .collect()
}

/// The question's distinct stemmed words that are not stopwords (all of its words when every
/// one is a stopword), in order.
pub(crate) fn terms(question: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    let words: Vec<String> = question
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|word| !word.is_empty())
        .collect();
    let content: Vec<&String> = words.iter().filter(|w| !is_stopword(w)).collect();
    let chosen = if content.is_empty() {
        words.iter().collect()
    } else {
        content
    };
    chosen
        .into_iter()
        .map(|word| stem(word))
        .filter(|term| seen.insert(term.clone()))
        .collect()
}

/// The paragraphs of a source, each as its sentences. Markdown (`markdown` true) loses its
/// headings, code blocks, tables and inline markup (links keep their text); plain text is only
/// split at blank lines.
pub(crate) fn paragraphs(text: &str, markdown: bool) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_fence = false;
    let flush = |current: &mut String, out: &mut Vec<Vec<String>>| {
        let cleaned = if markdown {
            clean_inline(current)
        } else {
            current.clone()
        };
        let sentences = sentences(&cleaned);
        if !sentences.is_empty() {
            out.push(sentences);
        }
        current.clear();
    };
    for line in text.lines() {
        let trimmed = line.trim();
        if markdown && (trimmed.starts_with("```") || trimmed.starts_with("~~~")) {
            flush(&mut current, &mut out);
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if trimmed.is_empty() {
            flush(&mut current, &mut out);
            continue;
        }
        if markdown {
            if trimmed.starts_with('#') || trimmed.starts_with('|') || is_rule(trimmed) {
                flush(&mut current, &mut out);
                continue;
            }
            if let Some(item) = list_item(trimmed) {
                flush(&mut current, &mut out);
                current.push_str(item);
                continue;
            }
        }
        let line = if markdown {
            trimmed.trim_start_matches('>').trim_start()
        } else {
            trimmed
        };
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(line);
    }
    flush(&mut current, &mut out);
    out
}

fn is_rule(line: &str) -> bool {
    line.len() >= 3
        && line
            .chars()
            .all(|c| matches!(c, '-' | '*' | '_' | '=' | ' '))
}

/// The text of a list item line (`- x`, `* x`, `+ x`, `3. x`, `3) x`), without its marker.
fn list_item(line: &str) -> Option<&str> {
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(marker) {
            return Some(rest.trim_start());
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || digits > 3 {
        return None;
    }
    let rest = &line[digits..];
    rest.strip_prefix(". ")
        .or_else(|| rest.strip_prefix(") "))
        .map(str::trim_start)
}

/// Markdown's inline markup taken off: `\*` is a literal star, an unescaped `*` or `_` is
/// emphasis, code keeps its text as written, `[text](url)` keeps its text and an image goes.
fn clean_inline(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(&c) = chars.get(at) {
        let next = chars.get(at + 1).copied();
        match c {
            '\\' if next.is_some_and(|n| n.is_ascii_punctuation()) => {
                out.extend(next);
                at += 2;
            }
            '!' if next == Some('[') => match link_at(&chars, at + 1) {
                Some((_, after)) => at = after,
                None => {
                    out.push(c);
                    at += 1;
                }
            },
            '[' => match link_at(&chars, at) {
                Some((close, after)) => {
                    let inner: String = chars[at + 1..close].iter().collect();
                    out.push_str(&clean_inline(&inner));
                    at = after;
                }
                None => {
                    out.push(c);
                    at += 1;
                }
            },
            '`' => {
                let run = chars[at..].iter().take_while(|c| **c == '`').count();
                match closing_ticks(&chars, at + run, run) {
                    // Code is literal: its stars and underscores are the text.
                    Some(close) => {
                        out.extend(&chars[at + run..close]);
                        at = close + run;
                    }
                    None => at += run,
                }
            }
            '*' | '_' => at += 1,
            _ => {
                out.push(c);
                at += 1;
            }
        }
    }
    out
}

/// Where a run of exactly `run` backticks starts at or after `from`.
fn closing_ticks(chars: &[char], from: usize, run: usize) -> Option<usize> {
    let mut at = from;
    while at < chars.len() {
        if chars[at] == '`' {
            let length = chars[at..].iter().take_while(|c| **c == '`').count();
            if length == run {
                return Some(at);
            }
            at += length;
        } else {
            at += 1;
        }
    }
    None
}

/// For `[` at `open`: the index of its `]` and the index just past the `(…)` that follows it,
/// when they make a link.
fn link_at(chars: &[char], open: usize) -> Option<(usize, usize)> {
    let close = matching(chars, open, '[', ']')?;
    if chars.get(close + 1) != Some(&'(') {
        return None;
    }
    let end = matching(chars, close + 1, '(', ')')?;
    Some((close, end + 1))
}

fn matching(chars: &[char], open: usize, left: char, right: char) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = open;
    while let Some(&c) = chars.get(at) {
        if c == '\\' {
            at += 2;
            continue;
        }
        if c == left {
            depth += 1;
        } else if c == right {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return Some(at);
            }
        }
        at += 1;
    }
    None
}

/// `text` cut into sentences, whitespace collapsed. A full stop ends one only when followed by a
/// space and what could open a sentence, and not after an abbreviation or an initial.
pub(crate) fn sentences(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for (index, word) in words.iter().enumerate() {
        current.push(word);
        let opens_next = words
            .get(index + 1)
            .and_then(|next| next.chars().next())
            .is_none_or(|c| c.is_uppercase() || c.is_ascii_digit() || "\"'“‘([".contains(c));
        if ends_sentence(word) && opens_next {
            out.push(current.join(" "));
            current.clear();
        }
    }
    if !current.is_empty() {
        out.push(current.join(" "));
    }
    out
}

fn ends_sentence(word: &str) -> bool {
    let bare = word.trim_end_matches(['"', '\'', ')', ']', '”', '’']);
    let Some(last) = bare.chars().last() else {
        return false;
    };
    if matches!(last, '!' | '?' | '…') {
        return true;
    }
    if last != '.' {
        return false;
    }
    let stem = bare
        .trim_end_matches('.')
        .trim_start_matches(['(', '[', '"', '\'', '“', '‘']);
    let lower = stem.to_lowercase();
    let initial = stem.chars().count() == 1 && stem.chars().all(char::is_uppercase);
    !(initial || ABBREVIATIONS.contains(&lower.as_str()) || stem.is_empty())
}

/// One source's text as given to [`select`].
#[derive(Debug, Clone)]
pub(crate) struct Source<'a> {
    pub(crate) text: &'a str,
    pub(crate) markdown: bool,
}

/// A picked sentence: which source it is from, the sentence itself (the claim) and the passage
/// around it (the sentences either side, within its paragraph), both cut to length.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Passage {
    pub(crate) source: usize,
    pub(crate) claim: String,
    pub(crate) passage: String,
    pub(crate) score: f64,
}

struct Candidate {
    source: usize,
    paragraph: usize,
    sentence: usize,
    score: f64,
    words: HashSet<String>,
}

/// The best sentences about `question` across `sources`: at most `max` in all and `per_source`
/// from one source, best first. A sentence must hold two of the question's terms (its only one
/// when it has one); one that repeats a sentence already picked, or sits beside one, is passed
/// over.
pub(crate) fn select(
    question: &str,
    sources: &[Source<'_>],
    max: usize,
    per_source: usize,
) -> Vec<Passage> {
    let terms = terms(question);
    if terms.is_empty() {
        return Vec::new();
    }
    let split: Vec<Vec<Vec<String>>> = sources
        .iter()
        .map(|source| paragraphs(source.text, source.markdown))
        .collect();
    let idf = inverse_frequencies(&split, &terms);
    let mut sentences = Vec::new();
    for (source, paragraphs) in split.iter().enumerate() {
        for (paragraph, list) in paragraphs.iter().enumerate() {
            for (sentence, text) in list.iter().enumerate() {
                if readable_sentence(text) {
                    sentences.push((source, paragraph, sentence, tokens(text)));
                }
            }
        }
    }
    let total: usize = sentences.iter().map(|(.., words)| words.len()).sum();
    let average = (total as f64 / sentences.len().max(1) as f64).max(1.0);
    let needed = terms.len().min(2);
    let mut candidates: Vec<Candidate> = sentences
        .into_iter()
        .filter_map(|(source, paragraph, sentence, words)| {
            let score = score(&terms, &idf, &words, average, needed)?;
            Some(Candidate {
                source,
                paragraph,
                sentence,
                score,
                words: words.into_iter().collect(),
            })
        })
        .collect();
    candidates.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.source.cmp(&b.source))
            .then(a.paragraph.cmp(&b.paragraph))
            .then(a.sentence.cmp(&b.sentence))
    });
    let mut picked: Vec<&Candidate> = Vec::new();
    let mut per: HashMap<usize, usize> = HashMap::new();
    for candidate in &candidates {
        if picked.len() >= max {
            break;
        }
        let used = per.get(&candidate.source).copied().unwrap_or(0);
        let beside = |other: &&Candidate| {
            other.source == candidate.source
                && other.paragraph == candidate.paragraph
                && other.sentence.abs_diff(candidate.sentence) <= 1
        };
        let repeats = |other: &&Candidate| jaccard(&other.words, &candidate.words) >= 0.8;
        if used >= per_source || picked.iter().any(beside) || picked.iter().any(repeats) {
            continue;
        }
        per.insert(candidate.source, used + 1);
        picked.push(candidate);
    }
    picked
        .into_iter()
        .filter_map(|candidate| {
            let list = split.get(candidate.source)?.get(candidate.paragraph)?;
            let claim = list.get(candidate.sentence)?;
            Some(Passage {
                source: candidate.source,
                claim: quote(claim, CLAIM_CHARS),
                passage: around(list, candidate.sentence),
                score: candidate.score,
            })
        })
        .collect()
}

/// Whether a sentence is prose worth quoting: long enough, and mostly letters (not a row of
/// numbers, a URL or a code fragment).
fn readable_sentence(text: &str) -> bool {
    let chars = text.chars().count();
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    chars >= MIN_SENTENCE_CHARS && letters * 2 >= chars && text.split_whitespace().count() >= 4
}

/// Each term's inverse document frequency, a paragraph counting as a document.
fn inverse_frequencies(split: &[Vec<Vec<String>>], terms: &[String]) -> HashMap<String, f64> {
    let paragraphs: Vec<HashSet<String>> = split
        .iter()
        .flatten()
        .map(|list| list.iter().flat_map(|s| tokens(s)).collect())
        .collect();
    let n = paragraphs.len() as f64;
    terms
        .iter()
        .map(|term| {
            let df = paragraphs.iter().filter(|p| p.contains(term)).count() as f64;
            (term.clone(), (1.0 + (n - df + 0.5) / (df + 0.5)).ln())
        })
        .collect()
}

/// BM25 of one sentence, raised by the share of the question's terms it covers and by each pair
/// of them it holds side by side as the question does; `None` below `needed` distinct terms.
fn score(
    terms: &[String],
    idf: &HashMap<String, f64>,
    words: &[String],
    average: f64,
    needed: usize,
) -> Option<f64> {
    let length = words.len() as f64;
    let mut bm25 = 0.0;
    let mut matched = 0usize;
    for term in terms {
        let tf = words.iter().filter(|word| *word == term).count() as f64;
        if tf == 0.0 {
            continue;
        }
        matched += 1;
        let weight = idf.get(term).copied().unwrap_or(0.0);
        bm25 += weight * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average));
    }
    if matched < needed {
        return None;
    }
    let coverage = matched as f64 / terms.len() as f64;
    let pairs = terms
        .windows(2)
        .filter(|pair| words.windows(2).any(|seen| seen == *pair))
        .count();
    Some(bm25 * (0.5 + coverage) * (1.0 + 0.25 * pairs as f64))
}

fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// The sentence at `at` with the ones either side, as long as the whole fits the passage length
/// (the one after is dropped first, then the one before).
fn around(list: &[String], at: usize) -> String {
    let start = at.saturating_sub(1);
    let end = (at + 2).min(list.len());
    for (from, to) in [(start, end), (start, (at + 1).min(end)), (at, at + 1)] {
        let joined = list.get(from..to).unwrap_or_default().join(" ");
        if joined.chars().count() <= PASSAGE_CHARS {
            return joined;
        }
    }
    quote(list.get(at).map_or("", String::as_str), PASSAGE_CHARS)
}

/// `text` as is when it fits `max` characters, else cut at the last word boundary before and
/// closed with an ellipsis.
pub(crate) fn quote(text: &str, max: usize) -> String {
    let text = text.trim();
    let Some((end, _)) = text.char_indices().nth(max) else {
        return text.to_owned();
    };
    let head = &text[..end];
    let cut = match head.rfind(char::is_whitespace) {
        Some(space) if space >= end / 2 => &head[..space],
        _ => head,
    };
    format!(
        "{}…",
        cut.trim_end_matches(|c: char| c.is_whitespace() || ",;:-–—(".contains(c))
    )
}

#[cfg(test)]
mod tests;
