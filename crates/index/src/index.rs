//! The immutable index: entries in name order, an inverted index of weighted terms, the name
//! lookups for exact matches, and the speller. Built once from entries; never changed after.

use std::collections::{BTreeMap, HashMap};

use crate::entry::{Entry, Server};
use crate::fuzzy::Speller;
use crate::hash::Fixed;
use crate::stem::stem;
use crate::synonyms::GROUPS;
use crate::text::{is_stop_word, split_words};
use crate::vocabulary::Vocabulary;

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

        // One name per entry: sized once rather than rehashed as it grows (the same number
        // of buckets growth would reach).
        let mut index = Index {
            entries: Vec::new(),
            names: HashMap::with_capacity_and_hasher(entries.len(), Fixed::default()),
            ..Index::default()
        };
        // First pass: every distinct word is interned once (stop-word check, stem and compound
        // split are then done per word, not per occurrence); documents hold word numbers, all
        // in one list with each document's field ends beside it, so no document allocates.
        let mut vocabulary = Vocabulary::with_capacity(1024);
        let mut surface: Vec<Surface> = Vec::new();
        // Temporary, so a generous guess (a short description's words) costs nothing kept.
        let mut doc_words: Vec<u32> = Vec::with_capacity(entries.len() * 32);
        let mut field_ends: Vec<[u32; FIELD_COUNT]> = Vec::with_capacity(entries.len());
        let mut buf = String::new();
        let mut key = String::new();
        for (doc, entry) in entries.iter().enumerate() {
            let doc = doc as u32;
            let (server_part, tool_part) = split_name(entry);
            let lower = entry.name.to_lowercase();
            if server_part.is_some() {
                // ASCII lowercasing keeps byte offsets, so the tool part is the name's tail.
                let bare = if entry.name.is_ascii() {
                    lower[lower.len() - tool_part.len()..].to_owned()
                } else {
                    tool_part.to_lowercase()
                };
                index.bare_names.entry(bare).or_default().push(doc);
            }
            index.names.insert(lower, doc);

            let server = server_part.or(entry.server.as_deref());
            let server_keywords = server.and_then(|s| server_words.get(s));
            let mut ends = [0u32; FIELD_COUNT];
            key.clear();
            // Each field's pieces are split one by one rather than joined with spaces first:
            // the same words, without a string built per field. The name's words, stop words
            // included, also make its name key (`read file`).
            let mut add = |field: usize, text: &str| {
                // A name's words are its identifier's parts; elsewhere a camel-case run also
                // counts whole (`JavaScript` as `javascript`).
                split_words(text, &mut buf, field != NAME, |word| {
                    if field == NAME {
                        if !key.is_empty() {
                            key.push(' ');
                        }
                        key.push_str(word);
                    }
                    let id = match vocabulary.get(word) {
                        Some(id) => id,
                        None => {
                            let id = surface.len() as u32;
                            surface.push(Surface {
                                stop: is_stop_word(word),
                                word: word.to_owned(),
                                count: 0,
                                named: false,
                                splits: false,
                            });
                            vocabulary.insert(word, id);
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
                    doc_words.push(id);
                });
                ends[field] = doc_words.len() as u32;
            };
            add(NAME, tool_part);
            add(SERVER, server.unwrap_or(""));
            for word in server_keywords.into_iter().flatten() {
                add(SERVER, word);
            }
            add(KEYWORDS, "");
            for word in &entry.keywords {
                add(KEYWORDS, word);
            }
            if let Some(title) = &entry.title {
                add(KEYWORDS, title);
            }
            add(DESCRIPTION, &entry.description);
            add(ARGS, "");
            for arg in &entry.args {
                add(ARGS, arg);
            }
            for text in &entry.arg_descriptions {
                add(ARGS, text);
            }
            field_ends.push(ends);
            // Looked up before it is owned: many tools share a tool part (`read file`).
            match index.name_keys.get_mut(key.as_str()) {
                Some(docs) => docs.push(doc),
                None => {
                    index.name_keys.insert(key.clone(), vec![doc]);
                }
            }
        }

        // Each word's term, and for compounds of names and keywords the terms of their parts
        // (`worklog` also counts as `work` and `log`, `websearch` as `web` and `search`).
        let known = |w: &str| {
            vocabulary
                .get(w)
                .and_then(|id| surface.get(id as usize))
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

        // Second pass: term counts per field, every document's in one list (`doc_starts` says
        // where each begins), and document frequencies counted as a term first meets a
        // document. `slot` finds a term's row for the current document in constant time.
        let term_count = index.terms.len();
        let mut slot: Vec<(u32, u32)> = vec![(u32::MAX, 0); term_count];
        let mut counts: Vec<(u32, [u16; FIELD_COUNT])> = Vec::with_capacity(doc_words.len());
        let mut doc_starts: Vec<u32> = Vec::with_capacity(entries.len() + 1);
        let mut lengths: Vec<[u32; FIELD_COUNT]> = Vec::with_capacity(entries.len());
        let mut df = vec![0u32; term_count];
        let mut start = 0usize;
        for (doc, ends) in field_ends.iter().enumerate() {
            let doc = doc as u32;
            doc_starts.push(counts.len() as u32);
            let mut length = [0u32; FIELD_COUNT];
            for (field, &end) in ends.iter().enumerate() {
                let end = end as usize;
                let ids = doc_words.get(start..end).unwrap_or(&[]);
                start = end;
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
                            if let Some(d) = df.get_mut(term as usize) {
                                *d += 1;
                            }
                        }
                        if let Some((_, c)) = counts.get_mut(row.1 as usize) {
                            c[field] = c[field].saturating_add(1);
                        }
                    }
                }
            }
            lengths.push(length);
        }
        doc_starts.push(counts.len() as u32);
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

        index.postings = df.iter().map(|&d| Vec::with_capacity(d as usize)).collect();
        // Document frequency leaves out the server field: a server's keywords are on every one
        // of its tools, and must not make `invoice` look common because the payments server
        // lists it. A word found only in server fields counts those.
        let mut own_df = vec![0u32; term_count];
        for (doc, (bounds, length)) in doc_starts.windows(2).zip(&lengths).enumerate() {
            let rows = counts
                .get(bounds[0] as usize..bounds[1] as usize)
                .unwrap_or(&[]);
            // A field's length norm is the same for every term of the document.
            let mut norms = [1f32; FIELD_COUNT];
            for ((norm, spec), (len, avg)) in norms
                .iter_mut()
                .zip(&FIELDS)
                .zip(length.iter().zip(&average))
            {
                *norm = 1.0 - spec.b + spec.b * *len as f32 / avg;
            }
            let name_share = 1.0 / length[NAME].max(1) as f32;
            for (term, count) in rows {
                if count.iter().enumerate().any(|(f, c)| f != SERVER && *c > 0)
                    && let Some(df) = own_df.get_mut(*term as usize)
                {
                    *df += 1;
                }
                let mut tf = 0f32;
                for ((spec, norm), &c) in FIELDS.iter().zip(&norms).zip(count) {
                    if c != 0 {
                        tf += spec.weight * f32::from(c) / norm;
                    }
                }
                if let Some(list) = index.postings.get_mut(*term as usize) {
                    list.push(Posting {
                        doc: doc as u32,
                        score: tf,
                        name_share: if count[NAME] > 0 { name_share } else { 0.0 },
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
    let at = |i: u32| &entries[i as usize];
    // Each number sorts with the first 16 bytes of its name as one integer (zero-padded, big
    // endian, so integers order like the bytes): most comparisons are then one integer
    // comparison rather than a call to compare strings that share a server prefix. Only equal
    // prefixes compare whole names.
    let mut order: Vec<(u128, u32)> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut prefix = [0u8; 16];
            let bytes = e.name.as_bytes();
            let n = bytes.len().min(16);
            prefix[..n].copy_from_slice(&bytes[..n]);
            (u128::from_be_bytes(prefix), i as u32)
        })
        .collect();
    // Every field takes part in the order, so entries that compare equal are the same and an
    // unstable sort gives the same result as a stable one, with less moving.
    let full = |&(_, a): &(u128, u32), &(_, b): &(u128, u32)| {
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
    };
    // Integers first (inlined comparisons of two words), then each run of equal prefixes by
    // the whole order: the same result as sorting by the whole order alone.
    order.sort_unstable();
    for run in order.chunk_by_mut(|a, b| a.0 == b.0) {
        if run.len() > 1 {
            run.sort_unstable_by(full);
        }
    }
    order.dedup_by(|later, first| at(later.1).name == at(first.1).name);
    let mut slots: Vec<Option<Entry>> = entries.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|(_, i)| slots.get_mut(i as usize).and_then(Option::take))
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
    // Split points from the middle out, the earlier of two equally even ones first, without
    // a list sorted per word: `diff` is how much longer the second part is than the first.
    let len = word.len();
    (len % 2..=len - 2 * MIN_PART)
        .step_by(2)
        .flat_map(|diff| {
            let early = (len - diff) / 2;
            [Some(early), (diff > 0).then_some(len - early)]
        })
        .flatten()
        .find_map(|at| {
            let (a, b) = word.split_at(at);
            (known(a) && known(b)).then_some((a, b))
        })
}

/// Splits `server__tool` into its parts; a core tool, skill or reference is all tool part.
/// The entry names its server, so the name is not searched for the separator: how a called
/// name splits is the catalogue's `McpTool`, the one place that rule is written.
pub(crate) fn split_name(entry: &Entry) -> (Option<&str>, &str) {
    let name = entry.name.as_str();
    let tool = entry
        .server
        .as_deref()
        .and_then(|server| Some((server, name.strip_prefix(server)?.strip_prefix("__")?)));
    match tool {
        Some((server, tool)) if !tool.is_empty() => (Some(server), tool),
        _ => (None, name),
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
