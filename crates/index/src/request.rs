//! What a search is asked and what it answers: plain data the daemon, the agent and the CLI pass
//! around, serialisable for the wire and for `--json`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::entry::{Kind, KindFilter};

/// Longest query accepted, in characters. A request longer than this is a pasted document, not
/// a description of a tool, and would only slow the search down.
pub const MAX_QUERY_CHARS: usize = 500;
/// How many hits `search_tools` returns when the caller does not say.
pub const DEFAULT_LIMIT: usize = 5;

static NOTHING_WITHHELD: BTreeSet<String> = BTreeSet::new();

/// One search: the query, the kind filter, how many hits, and the names the caller withholds
/// (tools this turn may not have, whatever the query).
#[derive(Debug, Clone, Copy)]
pub struct SearchRequest<'a> {
    /// What the model needs, in plain words or as a name.
    pub query: &'a str,
    /// Which kinds of entry may be returned.
    pub kind: KindFilter,
    /// At most this many hits.
    pub limit: usize,
    /// Names that must never appear, such as tools withheld from this turn.
    pub withheld: &'a BTreeSet<String>,
}

impl<'a> SearchRequest<'a> {
    /// A search over every kind, with the default limit and nothing withheld.
    pub fn new(query: &'a str) -> Self {
        SearchRequest {
            query,
            kind: KindFilter::Any,
            limit: DEFAULT_LIMIT,
            withheld: &NOTHING_WITHHELD,
        }
    }

    /// Narrows the search to one kind filter.
    pub fn kind(mut self, kind: KindFilter) -> Self {
        self.kind = kind;
        self
    }

    /// Sets how many hits to return at most.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Sets the names that must never appear.
    pub fn withheld(mut self, withheld: &'a BTreeSet<String>) -> Self {
        self.withheld = withheld;
        self
    }
}

/// One entry found by a search, with what the model-facing text and the binder need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// The entry's name.
    pub name: String,
    /// The entry's kind.
    pub kind: Kind,
    /// Its relevance; higher is better, and only the order means anything.
    pub score: f64,
    /// What its words earned, without the boost that puts an exact name first: what the
    /// relevance floor compares, so a query that spells one tool's name still binds a close
    /// second answer.
    #[serde(default)]
    pub words_score: f64,
    /// The entry's description.
    pub description: String,
    /// Slash commands that run it; a gated tool is described but never bound.
    pub slash: Vec<String>,
    /// For skills and references, the file to read.
    pub path: Option<String>,
    /// Whether the agent could bind it: a core or MCP tool with no slash gate.
    pub bindable: bool,
    /// Whether it is a likely answer: it clears the relevance floor and the cap on weak hits
    /// (see [`crate::binding`]). Only likely bindable hits are bound; the others are listed and
    /// named as not bound, so a weak match costs the turn no schema tokens.
    #[serde(default = "likely_by_default")]
    pub likely: bool,
}

/// Hits written before the floor existed were all bound.
fn likely_by_default() -> bool {
    true
}

/// The answer to one search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum SearchOutcome {
    /// Entries matched, best first.
    Hits {
        /// The query as given, trimmed.
        query: String,
        /// The hits, best first.
        hits: Vec<Hit>,
    },
    /// Nothing matched; these are the closest names, best first.
    NoHit {
        /// The query as given, trimmed.
        query: String,
        /// Up to three names that look most like the query.
        closest: Vec<String>,
    },
    /// The query was empty or only spaces.
    EmptyQuery,
    /// The query is longer than [`MAX_QUERY_CHARS`].
    TooLong {
        /// Its length in characters.
        chars: usize,
        /// The cap.
        max: usize,
    },
}

impl SearchOutcome {
    /// The hits, best first (empty unless the outcome is [`SearchOutcome::Hits`]).
    pub fn hits(&self) -> &[Hit] {
        match self {
            SearchOutcome::Hits { hits, .. } => hits,
            _ => &[],
        }
    }

    /// The names the agent binds for its next step: the likely bindable hits, in rank order.
    pub fn bindable(&self) -> Vec<&str> {
        self.hits()
            .iter()
            .filter(|h| h.bindable && h.likely)
            .map(|h| h.name.as_str())
            .collect()
    }

    /// The bindable hits too weak to bind, in rank order: listed for the model to see, bound only
    /// when it searches again with the name.
    pub fn weak(&self) -> Vec<&str> {
        self.hits()
            .iter()
            .filter(|h| h.bindable && !h.likely)
            .map(|h| h.name.as_str())
            .collect()
    }
}
