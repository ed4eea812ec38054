//! The immutable index: entries in name order, an inverted index of weighted terms, the name
//! lookups for exact matches, and the speller. Built once from entries; never changed after.

use std::collections::{BTreeMap, HashMap};

use crate::entry::{Entry, Server};
use crate::fuzzy::Speller;
use crate::hash::Fixed;
use crate::stem::stem;
use crate::synonyms::GROUPS;
use crate::text::{each_word, is_stop_word, name_key_into};

/// The fields of an entry that ranking reads, with how much a word in each counts and how much a
/// long field dilutes it (the BM25F `b`). A name is short and chosen with care, so a word there
/// says most; a description is long and full of incidental words.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    weight: f32,
    b: f32,
}

/// Name (the tool part), server (its name and keywords), keywords, description, argument names.
const FIELD_COUNT: usize = 5;
const NAME: usize = 0;
const SERVER: usize = 1;
const KEYWORDS: usize = 2;
const DESCRIPTION: usize = 3;
const ARGS: usize = 4;

const FIELDS: [Field; FIELD_COUNT] = [
    Field {
        weight: 3.0,
        b: 0.4,
    },
    Field {
        weight: 1.2,
        b: 0.0,
    },
    Field {
        weight: 2.0,
        b: 0.3,
    },
    Field {
        weight: 1.0,
        b: 0.6,
    },
    Field {
        weight: 0.3,
        b: 0.3,
    },
];

/// The bit of a document's flags set when the entry is switched on.
pub(crate) const ENABLED: u8 = 0b1_0000;

/// BM25 saturation: how quickly repeats of a word stop adding to its score.
const K1: f32 = 1.2;

/// One entry's share of one term: the term's whole BM25F contribution, computed at build time
/// so that a search only adds numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Posting {
    pub(crate) doc: u32,
    pub(crate) score: f32,
    /// The share of the entry's name this term makes up (`1 / words in the name`), or 0 when the
    /// term is not in the name: how much of the name a query word accounts for.
    pub(crate) name_share: f32,
}

/// Every tool, skill and reference Codaris can offer, ranked for `search_tools`. Immutable: the
/// daemon builds a new one when the tool set changes and swaps it whole (for example behind an
/// `Arc`). Cheap to share between threads; each search brings its own
/// [`Searcher`](crate::Searcher).
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// Entries sorted by name, so that a document number orders like its name.
    pub(crate) entries: Vec<Entry>,
    /// Per document, [`ENABLED`] and its kind's bit ([`Kind::bit`](crate::Kind)): what a search
    /// filters by, one byte beside the scores instead of a load of the entry.
    pub(crate) flags: Vec<u8>,
    /// Lowercase full name -> document.
    pub(crate) names: HashMap<String, u32, Fixed>,
    /// Lowercase tool part of an MCP name (after `__`) -> documents.
    pub(crate) bare_names: HashMap<String, Vec<u32>, Fixed>,
    /// A tool part's words joined by spaces (`read file`) -> documents.
    pub(crate) name_keys: HashMap<String, Vec<u32>, Fixed>,
    /// Stem -> term number.
    pub(crate) terms: HashMap<String, u32, Fixed>,
    /// Term number -> postings, in document order.
    pub(crate) postings: Vec<Vec<Posting>>,
    /// Term number -> inverse document frequency.
    pub(crate) idf: Vec<f32>,
    /// Stem of any word of the synonym groups -> the other terms of its groups in the index.
    pub(crate) synonyms: HashMap<String, Vec<u32>, Fixed>,
    pub(crate) speller: Speller,
}

impl Index {
    /// Builds the index from entries. MCP tools' keywords are only their own; use
    /// [`Index::build_with_servers`] to let a server's keywords count for all its tools.
    pub fn build(entries: Vec<Entry>) -> Index {
        Index::build_with_servers(entries, &[])
    }

    /// Builds the index from entries and the keywords of the MCP servers that own them.
    ///
    /// The result does not depend on the order of `entries` or `servers`: entries are sorted by
    /// name, and of two entries with the same name the one that sorts first by its other fields
    /// is kept.
    pub fn build_with_servers(entries: Vec<Entry>, servers: &[Server]) -> Index {
        let entries = in_name_order(entries);

        let mut server_words: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for server in servers {
            server_words
                .entry(server.name.as_str())
                .or_default()
                .extend(server.keywords.iter().map(String::as_str));
        }

        let mut index = Index {
            entries: Vec::new(),
            ..Index::default()
        };
        // First pass: every distinct word is interned once (stop-word check, stem and compound
        // split are then done per word, not per occurrence); documents hold word numbers.
        let mut vocabulary: HashMap<String, u32, Fixed> = HashMap::default();
        let mut surface: Vec<Surface> = Vec::new();
        let mut doc_words: Vec<[Vec<u32>; FIELD_COUNT]> = Vec::with_capacity(entries.len());
        let mut buf = String::new();
        let mut key = String::new();
        for (doc, entry) in entries.iter().enumerate() {
            let doc = doc as u32;
            let (server_part, tool_part) = split_name(entry);
            index.names.insert(entry.name.to_lowercase(), doc);
            if server_part.is_some() {
                index
                    .bare_names
                    .entry(tool_part.to_lowercase())
                    .or_default()
                    .push(doc);
            }
            // Looked up before it is owned: many tools share a tool part (`read file`).
            name_key_into(tool_part, &mut buf, &mut key);
            match index.name_keys.get_mut(key.as_str()) {
                Some(docs) => docs.push(doc),
                None => {
                    index.name_keys.insert(key.clone(), vec![doc]);
                }
            }

            // Each field's pieces are split one by one rather than joined with spaces first:
            // the same words, without a string built per field.
            let server = server_part.or(entry.server.as_deref());
            let server_keywords = server.and_then(|s| server_words.get(s));
            let mut fields: [Vec<u32>; FIELD_COUNT] = Default::default();
            let mut add = |field: usize, text: &str| {
                each_word(text, &mut buf, |word| {
                    let id = match vocabulary.get(word) {
                        Some(&id) => id,
                        None => {
                            let id = surface.len() as u32;
                            surface.push(Surface {
                                stop: is_stop_word(word),
                                word: word.to_owned(),
                                count: 0,
                                named: false,
                                splits: false,
                            });
                            vocabulary.insert(word.to_owned(), id);
                            id
                        }
                    };
                    let Some(info) = surface.get_mut(id as usize) else {
                        return;
                    };
                    if info.stop {
                        return;
                    }
                    info.count += 1;
                    info.named |= matches!(field, NAME | SERVER | KEYWORDS);
                    info.splits |= matches!(field, NAME | KEYWORDS);
                    fields[field].push(id);
                });
            };
            add(NAME, tool_part);
            if let Some(server) = server {
                add(SERVER, server);
            }
            for word in server_keywords.into_iter().flatten() {
                add(SERVER, word);
            }
            for word in &entry.keywords {
                add(KEYWORDS, word);
            }
            add(DESCRIPTION, &entry.description);
            for arg in &entry.args {
                add(ARGS, arg);
            }
            doc_words.push(fields);
        }

        // Each word's term, and for compounds of names and keywords the terms of their parts
        // (`worklog` also counts as `work` and `log`, `websearch` as `web` and `search`).
        let known = |w: &str| {
            vocabulary
                .get(w)
                .and_then(|&id| surface.get(id as usize))
                .is_some_and(|s| !s.stop)
        };
        let mut word_terms: Vec<(u32, Option<(u32, u32)>)> = Vec::with_capacity(surface.len());
        for info in &surface {
            let mut term_of = |w: &str| {
                let next = index.terms.len() as u32;
                *index.terms.entry(stem(w)).or_insert(next)
            };
            if info.stop {
                word_terms.push((u32::MAX, None));
                continue;
            }
            let own = term_of(&info.word);
            let parts = if info.splits {
                compound_parts(&info.word, &known).map(|(a, b)| (term_of(a), term_of(b)))
            } else {
                None
            };
            word_terms.push((own, parts));
        }

        // Second pass: term counts per field. `slot` finds a term's row for the current
        // document in constant time.
        let mut slot: Vec<(u32, u32)> = vec![(u32::MAX, 0); index.terms.len()];
        let mut doc_terms: Vec<Vec<(u32, [u16; FIELD_COUNT])>> = Vec::with_capacity(entries.len());
        let mut lengths: Vec<[u32; FIELD_COUNT]> = Vec::with_capacity(entries.len());
        for (doc, fields) in doc_words.iter().enumerate() {
            let doc = doc as u32;
            let mut counts: Vec<(u32, [u16; FIELD_COUNT])> = Vec::new();
            let mut length = [0u32; FIELD_COUNT];
            for (field, ids) in fields.iter().enumerate() {
                length[field] = ids.len() as u32;
                for &id in ids {
                    let Some(&(own, parts)) = word_terms.get(id as usize) else {
                        continue;
                    };
                    let terms =
                        std::iter::once(own).chain(parts.into_iter().flat_map(|(a, b)| [a, b]));
                    for term in terms {
                        let Some(row) = slot.get_mut(term as usize) else {
                            continue;
                        };
                        if row.0 != doc {
                            *row = (doc, counts.len() as u32);
                            counts.push((term, [0u16; FIELD_COUNT]));
                        }
                        if let Some((_, c)) = counts.get_mut(row.1 as usize) {
                            c[field] = c[field].saturating_add(1);
                        }
                    }
                }
            }
            doc_terms.push(counts);
            lengths.push(length);
        }
        let spelled: Vec<(String, bool, u32)> = surface
            .into_iter()
            .filter(|s| !s.stop)
            .map(|s| (s.word, s.named, s.count))
            .collect();

        let n = entries.len().max(1) as f32;
        let mut average = [0f32; FIELD_COUNT];
        for length in &lengths {
            for (avg, len) in average.iter_mut().zip(length) {
                *avg += *len as f32;
            }
        }
        for avg in &mut average {
            *avg = (*avg / n).max(1.0);
        }

        let mut df = vec![0usize; index.terms.len()];
        for counts in &doc_terms {
            for (term, _) in counts {
                if let Some(d) = df.get_mut(*term as usize) {
                    *d += 1;
                }
            }
        }
        index.postings = df.iter().map(|&d| Vec::with_capacity(d)).collect();
        // Document frequency leaves out the server field: a server's keywords are on every one
        // of its tools, and must not make `invoice` look common because the payments server
        // lists it. A word found only in server fields counts those.
        let mut own_df = vec![0u32; index.terms.len()];
        for (doc, counts) in doc_terms.iter().enumerate() {
            for (term, count) in counts {
                if count.iter().enumerate().any(|(f, c)| f != SERVER && *c > 0)
                    && let Some(df) = own_df.get_mut(*term as usize)
                {
                    *df += 1;
                }
                let mut tf = 0f32;
                for (field, spec) in FIELDS.iter().enumerate() {
                    if count[field] == 0 {
                        continue;
                    }
                    let norm = 1.0 - spec.b + spec.b * lengths[doc][field] as f32 / average[field];
                    tf += spec.weight * f32::from(count[field]) / norm;
                }
                let name_share = if count[NAME] > 0 {
                    1.0 / lengths[doc][NAME].max(1) as f32
                } else {
                    0.0
                };
                if let Some(list) = index.postings.get_mut(*term as usize) {
                    list.push(Posting {
                        doc: doc as u32,
                        score: tf,
                        name_share,
                    });
                }
            }
        }
        index.idf = Vec::with_capacity(index.postings.len());
        for (list, own) in index.postings.iter_mut().zip(&own_df) {
            let df = if *own > 0 {
                *own as f32
            } else {
                list.len() as f32
            };
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            index.idf.push(idf);
            for posting in list.iter_mut() {
                let tf = posting.score;
                posting.score = idf * tf * (K1 + 1.0) / (K1 + tf);
            }
        }

        index.synonyms = synonym_table(&index.terms);
        index.speller = Speller::build(spelled);
        index.flags = entries
            .iter()
            .map(|e| e.kind.bit() | if e.enabled { ENABLED } else { 0 })
            .collect();
        index.entries = entries;
        index
    }

    /// How many entries the index holds, switched-off ones included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the index holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every entry, in name order (what `codaris tools list` shows).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry called `name`, if any (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.names
            .get(&name.to_lowercase())
            .and_then(|&doc| self.entries.get(doc as usize))
    }

    /// The term number of a stem, if the index has it.
    pub(crate) fn term(&self, stem: &str) -> Option<u32> {
        self.terms.get(stem).copied()
    }

    /// The inverse document frequency of a term.
    pub(crate) fn idf(&self, term: u32) -> f32 {
        self.idf.get(term as usize).copied().unwrap_or(0.0)
    }

    /// Whether document `doc` is switched on and of a kind in `mask` ([`KindFilter::mask`]).
    ///
    /// [`KindFilter::mask`]: crate::KindFilter
    pub(crate) fn admits(&self, doc: u32, mask: u8) -> bool {
        self.flags
            .get(doc as usize)
            .is_some_and(|&f| f & ENABLED != 0 && f & mask != 0)
    }

    /// The postings of a term.
    pub(crate) fn postings(&self, term: u32) -> &[Posting] {
        self.postings.get(term as usize).map_or(&[], Vec::as_slice)
    }
}

/// The entries sorted by name, one per name: of two with the same name, the one that sorts
/// first by its other fields. Sorts their numbers rather than the entries, so a sort moves four
/// bytes instead of a whole entry, and compares the other fields only when names tie.
fn in_name_order(entries: Vec<Entry>) -> Vec<Entry> {
    let mut order: Vec<u32> = (0..entries.len() as u32).collect();
    let at = |i: u32| &entries[i as usize];
    order.sort_by(|&a, &b| {
        let (a, b) = (at(a), at(b));
        a.name.cmp(&b.name).then_with(|| {
            (
                a.kind,
                &a.server,
                &a.description,
                &a.keywords,
                &a.args,
                &a.slash,
            )
                .cmp(&(
                    b.kind,
                    &b.server,
                    &b.description,
                    &b.keywords,
                    &b.args,
                    &b.slash,
                ))
                .then(a.enabled.cmp(&b.enabled))
                .then(a.path.cmp(&b.path))
        })
    });
    order.dedup_by(|later, first| at(*later).name == at(*first).name);
    let mut slots: Vec<Option<Entry>> = entries.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|i| slots.get_mut(i as usize).and_then(Option::take))
        .collect()
}

/// One distinct word met while building.
struct Surface {
    word: String,
    /// A stop word: interned only so it is checked once.
    stop: bool,
    /// How often it occurs.
    count: u32,
    /// Whether it occurs in a name, a server or keywords.
    named: bool,
    /// Whether it occurs in a name or keywords, where a compound is split into its parts.
    splits: bool,
}

/// Splits a compound word of a name or keyword into two words the index also has, the most
/// even split first: `worklog` -> `work` + `log`. Parts are at least three letters so that
/// `oncall` does not become `on` + `call` through a stop word.
fn compound_parts<'w>(word: &'w str, known: &impl Fn(&str) -> bool) -> Option<(&'w str, &'w str)> {
    const MIN_PART: usize = 3;
    if word.len() < 2 * MIN_PART || !word.is_ascii() {
        return None;
    }
    let mut splits: Vec<usize> = (MIN_PART..=word.len() - MIN_PART).collect();
    splits.sort_by_key(|&at| (at.abs_diff(word.len() - at), at));
    splits.into_iter().find_map(|at| {
        let (a, b) = word.split_at(at);
        (known(a) && known(b)).then_some((a, b))
    })
}

/// Splits `server__tool` into its parts; a core tool, skill or reference is all tool part.
pub(crate) fn split_name(entry: &Entry) -> (Option<&str>, &str) {
    match entry.name.split_once("__") {
        Some((server, tool)) if !server.is_empty() && !tool.is_empty() => (Some(server), tool),
        _ => (None, entry.name.as_str()),
    }
}

/// For the stem of every word of the synonym groups, the terms of the index that share a group
/// with it. Keyed by stem rather than term so that a query word the index lacks (`repair`) still
/// reaches the words it has (`fix`).
fn synonym_table(terms: &HashMap<String, u32, Fixed>) -> HashMap<String, Vec<u32>, Fixed> {
    let mut table: HashMap<String, Vec<u32>, Fixed> = HashMap::default();
    for group in GROUPS {
        let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
        for a in &stems {
            let list = table.entry(a.clone()).or_default();
            for b in &stems {
                if let Some(&id) = terms.get(b)
                    && a != b
                    && !list.contains(&id)
                {
                    list.push(id);
                }
            }
        }
    }
    table.retain(|_, list| !list.is_empty());
    for list in table.values_mut() {
        list.sort_unstable();
    }
    table
}
