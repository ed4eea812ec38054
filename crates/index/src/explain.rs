//! Why a search ranked its hits as it did, for `codaris tools search --explain`: what each query
//! word stood for (itself, a synonym, a spelling correction), and for each hit which words it
//! matched, in which fields, for how many points, the multipliers applied, and whether it is
//! bound. It re-reads the same numbers the search used, so the explanation cannot drift from the
//! ranking; it is a slow path (it looks fields up per hit) and never runs inside `search_tools`.

use std::fmt::Write as _;

use serde::Serialize;

use crate::binding::{BIND_FLOOR, MAX_BOUND};
use crate::entry::Kind;
use crate::index::{Index, split_name};
use crate::request::{Hit, SearchOutcome, SearchRequest};
use crate::search::{COVERAGE, NAME_BONUS, Searcher, TIER_BONUS, name_tiers, words_that_can_match};
use crate::stem::stem;
use crate::text::{is_stop_word, words};

/// The explanation of one search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The query as searched.
    pub query: String,
    /// Its meaningful words and what each stood for.
    pub words: Vec<QueryWord>,
    /// The hits, best first, each with its reasons.
    pub hits: Vec<HitReasons>,
}

/// One query word and the index terms it was searched as.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryWord {
    /// The word as typed (lowercased).
    pub word: String,
    /// The terms it stood for, with how and how much each counted.
    pub stands_for: Vec<Meaning>,
}

/// One term a query word stood for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Meaning {
    /// The index term (a stem).
    pub term: String,
    /// `itself`, `synonym`, `spelling` (a correction or completion of a word the index lacks)
    /// or `joined words` (two query words the index has as one).
    pub how: &'static str,
    /// The share of a match it is worth (1 for the word itself).
    pub weight: f32,
}

/// Why one hit ranked where it did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HitReasons {
    /// The entry's name.
    pub name: String,
    /// Its kind.
    pub kind: Kind,
    /// Its final score.
    pub score: f64,
    /// Whether the query spells its name: `whole name`, `tool name` (without the server), or
    /// `name words` (`read file` for `read_file`). An exact name comes first whatever its words.
    pub exact_name: Option<&'static str>,
    /// The query words it matched, with their points and fields.
    pub matched: Vec<WordMatch>,
    /// How many of the query's words it matched, and of how many could match anything.
    pub words_matched: usize,
    pub words_total: usize,
    /// The multiplier for matching only some of the words (1 when all match).
    pub coverage: f32,
    /// The multiplier for the query's words accounting for its name (1 when they miss it).
    pub name_bonus: f32,
    /// Whether `search_tools` binds it, or why not.
    pub binding: String,
}

/// One query word matched by a hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WordMatch {
    /// The query word.
    pub word: String,
    /// The term it matched as.
    pub term: String,
    /// How the word stood for the term.
    pub how: &'static str,
    /// Its points before the multipliers (BM25F over the fields, times the term's weight).
    pub points: f32,
    /// The fields the term is in: `name`, `server`, `keywords`, `description`, `arguments`.
    pub fields: Vec<&'static str>,
}

impl Searcher {
    /// Runs `request` and explains its hits.
    pub fn explain(&mut self, index: &Index, request: &SearchRequest<'_>) -> Explanation {
        let outcome = self.search(index, request);
        self.explain_outcome(index, request, &outcome)
    }

    /// Explains `outcome`, the answer this index gave to `request`, without searching again.
    pub fn explain_outcome(
        &mut self,
        index: &Index,
        request: &SearchRequest<'_>,
        outcome: &SearchOutcome,
    ) -> Explanation {
        let query = request.query.trim();
        let groups = self.query_words(index, query);
        let mut names: Vec<&str> = vec![""; index.terms.len()];
        for (stem, &term) in &index.terms {
            if let Some(slot) = names.get_mut(term as usize) {
                *slot = stem.as_str();
            }
        }
        let term_name = |term: u32| names.get(term as usize).copied().unwrap_or("").to_owned();
        let meanings: Vec<Vec<(u32, Meaning)>> = groups
            .iter()
            .map(|(word, alternatives)| {
                let stemmed = stem(word);
                let own = index.term(&stemmed);
                let synonyms = index.synonyms.get(&stemmed);
                alternatives
                    .iter()
                    .map(|&(term, weight)| {
                        let how = if own == Some(term) {
                            "itself"
                        } else if synonyms.is_some_and(|s| s.contains(&term)) {
                            "synonym"
                        } else if own.is_none() {
                            "spelling"
                        } else {
                            // Two query words the index has as one (`screen shot`).
                            "joined words"
                        };
                        let term_text = term_name(term);
                        (
                            term,
                            Meaning {
                                term: term_text,
                                how,
                                weight,
                            },
                        )
                    })
                    .collect()
            })
            .collect();
        let words_out = groups
            .iter()
            .zip(&meanings)
            .map(|((word, _), m)| QueryWord {
                word: word.clone(),
                stands_for: m.iter().map(|(_, meaning)| meaning.clone()).collect(),
            })
            .collect();
        let best_tool = outcome
            .hits()
            .iter()
            .find(|h| h.bindable)
            .map(|h| h.words_score);
        let mut bound_so_far = 0;
        let hits = outcome
            .hits()
            .iter()
            .map(|hit| {
                let reasons = hit_reasons(index, query, hit, &groups, &meanings);
                let binding = binding(hit, best_tool, bound_so_far);
                bound_so_far += usize::from(hit.bindable && hit.likely);
                HitReasons { binding, ..reasons }
            })
            .collect();
        let query = match outcome {
            SearchOutcome::Hits { query, .. } | SearchOutcome::NoHit { query, .. } => query.clone(),
            _ => query.to_owned(),
        };
        Explanation {
            query,
            words: words_out,
            hits,
        }
    }
}

fn hit_reasons(
    index: &Index,
    query: &str,
    hit: &Hit,
    groups: &[(String, crate::search::Alternatives)],
    meanings: &[Vec<(u32, Meaning)>],
) -> HitReasons {
    let doc = index.names.get(&hit.name.to_lowercase()).copied();
    let entry = doc.and_then(|d| index.entries.get(d as usize));
    let mut tier = 0u8;
    if let Some(doc) = doc {
        name_tiers(index, query, |d, t| {
            if d == doc {
                tier = tier.max(t);
            }
        });
    }
    let mut matched = Vec::new();
    let mut named = 0f32;
    for ((word, _), alternatives) in groups.iter().zip(meanings) {
        let mut best: Option<(f32, &Meaning)> = None;
        let mut best_name = 0f32;
        for (term, meaning) in alternatives {
            let Some(posting) = doc.and_then(|d| {
                let list = index.postings(*term);
                list.binary_search_by_key(&d, |p| p.doc)
                    .ok()
                    .and_then(|i| list.get(i))
            }) else {
                continue;
            };
            let points = meaning.weight * posting.score;
            if best.is_none_or(|(p, ..)| points > p) {
                best = Some((points, meaning));
            }
            best_name = best_name.max(meaning.weight * posting.name_share);
        }
        named += best_name;
        if let Some((points, meaning)) = best {
            matched.push(WordMatch {
                word: word.clone(),
                term: meaning.term.clone(),
                how: meaning.how,
                points,
                fields: entry.map_or_else(Vec::new, |e| fields_with(e, &meaning.term)),
            });
        }
    }
    let total = words_that_can_match(groups);
    let cover = matched.len() as f32 / total.max(1) as f32;
    HitReasons {
        name: hit.name.clone(),
        kind: hit.kind,
        score: hit.score,
        exact_name: match tier {
            3 => Some("whole name"),
            2 => Some("tool name"),
            1 => Some("name words"),
            _ => None,
        },
        words_matched: matched.len(),
        words_total: total,
        matched,
        coverage: 1.0 - COVERAGE + COVERAGE * cover,
        name_bonus: 1.0 + NAME_BONUS * named.min(1.0),
        binding: String::new(),
    }
}

/// The fields of `entry` that hold a word whose stem is `term`.
fn fields_with(entry: &crate::entry::Entry, term: &str) -> Vec<&'static str> {
    let has = |text: &str| {
        words(text)
            .iter()
            .any(|w| !is_stop_word(w) && stem(w) == term)
    };
    let (server, tool) = split_name(entry);
    let mut out = Vec::new();
    if has(tool) {
        out.push("name");
    }
    if server.or(entry.server.as_deref()).is_some_and(has) {
        out.push("server");
    }
    if entry.keywords.iter().any(|k| has(k)) || entry.title.as_deref().is_some_and(has) {
        out.push("keywords");
    }
    if has(&entry.description) {
        out.push("description");
    }
    if entry
        .args
        .iter()
        .chain(&entry.arg_descriptions)
        .any(|a| has(a))
    {
        out.push("arguments");
    }
    if out.is_empty() {
        // Matched through part of a longer word (`websearch` as `web`) or the server's keywords.
        out.push("part of a word or server keyword");
    }
    out
}

/// Whether `search_tools` binds `hit`, or why not, in words.
fn binding(hit: &Hit, best_tool: Option<f64>, bound_before: usize) -> String {
    if !hit.slash.is_empty() {
        return format!("not bound: runs only by {}", hit.slash.join(" or "));
    }
    if !hit.bindable {
        return "not bound: read it with read_file".to_owned();
    }
    if hit.likely {
        return "bound".to_owned();
    }
    match best_tool {
        Some(best) if best > 0.0 && hit.words_score < BIND_FLOOR * best => format!(
            "not bound: its words earned {:.2} of the best tool's, under the floor of {BIND_FLOOR:.2}",
            hit.words_score / best
        ),
        _ if bound_before >= MAX_BOUND => {
            format!("not bound: {MAX_BOUND} hits are bound already")
        }
        _ => "not bound".to_owned(),
    }
}

/// Renders an explanation as text, one block per hit.
pub fn render_explanation(explanation: &Explanation) -> String {
    let mut out = format!("Explaining \"{}\"\n", explanation.query);
    out.push_str("Query words:");
    if explanation.words.is_empty() {
        out.push_str(" none");
    }
    for word in &explanation.words {
        let meanings: Vec<String> = word
            .stands_for
            .iter()
            .map(|m| match m.how {
                "itself" => m.term.clone(),
                how => format!("{} ({how}, ×{:.2})", m.term, m.weight),
            })
            .collect();
        let meanings = if meanings.is_empty() {
            "nothing in the index".to_owned()
        } else {
            meanings.join(", ")
        };
        let _ = write!(out, "\n  {} → {meanings}", word.word);
    }
    for (i, hit) in explanation.hits.iter().enumerate() {
        let _ = write!(
            out,
            "\n{}. {} [{}] {:.4} — {}",
            i + 1,
            hit.name,
            hit.kind,
            hit.score,
            hit.binding
        );
        if let Some(exact) = hit.exact_name {
            let _ = write!(
                out,
                "\n   the query spells its {exact}: +{:.0} so it ranks first",
                match exact {
                    "whole name" => 3.0 * TIER_BONUS,
                    "tool name" => 2.0 * TIER_BONUS,
                    _ => TIER_BONUS,
                }
            );
        }
        let _ = write!(
            out,
            "\n   matched {} of {} words (×{:.2}), name covered (×{:.2})",
            hit.words_matched, hit.words_total, hit.coverage, hit.name_bonus
        );
        for m in &hit.matched {
            let how = if m.how == "itself" {
                String::new()
            } else {
                format!(" as {} ({})", m.term, m.how)
            };
            let _ = write!(
                out,
                "\n   {}{how}: {:.2} in {}",
                m.word,
                m.points,
                m.fields.join(", ")
            );
        }
    }
    out
}
