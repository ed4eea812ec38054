//! The research classifier: does a message ask to look things up (literature, public datasets,
//! GEO/SRA accessions, "what is known about")? Deterministic keyword and pattern rules, tried in
//! a fixed order; the first that fires names itself in the answer. `docs/surface.md` lists them.
//!
//! The classifier is only asked about turns without a slash command: when one was typed, the
//! slash table decides (and `/research` is itself a command).

use serde::{Deserialize, Serialize};

use crate::slash::{looks_like_path, strip};

/// Which rule marked a turn as research.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResearchRule {
    /// `/research` was typed.
    Command,
    /// A public-archive or literature accession: `GSE123`, `SRR123`, `PRJNA123`, `E-MTAB-123`,
    /// `PMC123`, `PMID:123`, a DOI.
    Accession,
    /// A research phrase: "what is known about", "the literature", "state of the art", …
    Phrase,
    /// A literature or data source by name: PubMed, bioRxiv, `GEO`, `SRA`, `ENA`, …
    Source,
    /// A look-up verb before a research noun: "find papers", "search for datasets".
    Lookup,
}

impl ResearchRule {
    /// The snake-case name used in logs and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ResearchRule::Command => "command",
            ResearchRule::Accession => "accession",
            ResearchRule::Phrase => "phrase",
            ResearchRule::Source => "source",
            ResearchRule::Lookup => "lookup",
        }
    }
}

/// Why a turn is research: the rule and the text that made it fire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResearchMatch {
    /// The rule.
    pub rule: ResearchRule,
    /// The words it matched, as written (lowercased for phrases and look-ups).
    pub evidence: String,
}

/// Prefixes of accessions followed by digits only (compared without regard to case).
const ACCESSION_PREFIXES: &[&str] = &[
    "GSE", "GSM", "GPL", "GDS", "SRR", "SRX", "SRP", "SRS", "ERR", "ERX", "ERP", "ERS", "DRR",
    "DRX", "DRP", "DRS", "PRJNA", "PRJEB", "PRJDB", "SAMN", "SAMEA", "SAMD", "PMC", "PMID",
];
/// ArrayExpress accessions: `E-<four letters>-<digits>`.
const ARRAYEXPRESS_KINDS: &[&str] = &["MTAB", "GEOD", "MEXP", "TABM"];

/// Phrases, as lowercase word sequences (an apostrophe splits a word: "what's" is "what s").
const PHRASES: &[&[&str]] = &[
    &["what", "is", "known", "about"],
    &["what", "s", "known", "about"],
    &["whats", "known", "about"],
    &["what", "do", "we", "know", "about"],
    &["what", "does", "the", "literature"],
    &["literature"],
    &["state", "of", "the", "art"],
    &["prior", "work"],
    &["look", "up"],
    &["public", "data"],
    &["public", "dataset"],
    &["public", "datasets"],
    &["published", "data"],
    &["published", "studies"],
    &["search", "the", "web"],
    &["search", "online"],
    &["gene", "expression", "omnibus"],
    &["sequence", "read", "archive"],
    &["european", "nucleotide", "archive"],
];

/// Source names that count in any case.
const SOURCES_ANY_CASE: &[&str] = &[
    "pubmed",
    "biorxiv",
    "medrxiv",
    "arxiv",
    "arrayexpress",
    "scholar",
    "europepmc",
];
/// Source names that count only in capitals (`geo` is also a word and a folder name).
const SOURCES_CAPITALS: &[&str] = &["GEO", "SRA", "ENA", "DDBJ", "PMID", "DOI"];

const LOOKUP_VERBS: &[&str] = &[
    "find",
    "search",
    "look",
    "lookup",
    "locate",
    "list",
    "recommend",
    "suggest",
    "cite",
    "survey",
    "any",
    "there",
];
const RESEARCH_NOUNS: &[&str] = &[
    "paper",
    "papers",
    "publication",
    "publications",
    "article",
    "articles",
    "study",
    "studies",
    "dataset",
    "datasets",
    "preprint",
    "preprints",
    "citation",
    "citations",
    "accession",
    "accessions",
    "cohort",
    "cohorts",
];
/// A research noun right after one of these is something local ("the dataset"), not a
/// look-up.
const LOCAL_DETERMINERS: &[&str] = &[
    "the", "this", "that", "these", "those", "my", "our", "your", "its", "test",
];

/// Classifies a message without slash commands. `None`: not research.
pub fn classify_research(message: &str) -> Option<ResearchMatch> {
    let tokens: Vec<&str> = message.split_whitespace().filter(|t| !is_link(t)).collect();
    if let Some(found) = tokens.iter().find_map(|t| accession(strip(t))) {
        return Some(found);
    }
    // Words, lowercased, from tokens that are not paths or file names.
    let raw: Vec<&str> = tokens
        .iter()
        .map(|t| strip(t))
        .filter(|t| !looks_like_path(t))
        .flat_map(|t| t.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty())
        .collect();
    let words: Vec<String> = raw.iter().map(|w| w.to_lowercase()).collect();
    if let Some(found) = phrase(&words) {
        return Some(found);
    }
    if let Some(found) = source(&raw, &words) {
        return Some(found);
    }
    lookup(&words)
}

/// True for a token holding an `http://` or `https://` link.
pub(crate) fn is_link(token: &str) -> bool {
    let t = strip(token).to_ascii_lowercase();
    t.starts_with("http://") || t.starts_with("https://")
}

fn accession(token: &str) -> Option<ResearchMatch> {
    let hit = |evidence: &str| {
        Some(ResearchMatch {
            rule: ResearchRule::Accession,
            evidence: evidence.to_owned(),
        })
    };
    // A DOI: `10.<digits>/<suffix>`, or `doi:10.…`.
    let bare = token
        .strip_prefix("doi:")
        .or_else(|| token.strip_prefix("DOI:"))
        .unwrap_or(token);
    if let Some(rest) = bare.strip_prefix("10.")
        && let Some((registrant, suffix)) = rest.split_once('/')
        && registrant.len() >= 4
        && registrant.bytes().all(|b| b.is_ascii_digit())
        && !suffix.is_empty()
    {
        return hit(token);
    }
    let upper = token.to_ascii_uppercase();
    if let Some(digits) = upper.strip_prefix("PMID:")
        && digits_at_least(digits, 1)
    {
        return hit(token);
    }
    for prefix in ACCESSION_PREFIXES {
        if let Some(digits) = upper.strip_prefix(prefix)
            && digits_at_least(digits, 3)
        {
            return hit(token);
        }
    }
    let mut parts = upper.split('-');
    if parts.next() == Some("E")
        && parts
            .next()
            .is_some_and(|k| ARRAYEXPRESS_KINDS.contains(&k))
        && parts.next().is_some_and(|d| digits_at_least(d, 1))
        && parts.next().is_none()
    {
        return hit(token);
    }
    None
}

fn digits_at_least(s: &str, n: usize) -> bool {
    s.len() >= n && s.bytes().all(|b| b.is_ascii_digit())
}

fn phrase(words: &[String]) -> Option<ResearchMatch> {
    for phrase in PHRASES {
        if words
            .windows(phrase.len())
            .any(|w| w.iter().zip(phrase.iter()).all(|(a, b)| a == b))
        {
            return Some(ResearchMatch {
                rule: ResearchRule::Phrase,
                evidence: phrase.join(" "),
            });
        }
    }
    None
}

fn source(raw: &[&str], words: &[String]) -> Option<ResearchMatch> {
    let any_case = words
        .iter()
        .find(|w| SOURCES_ANY_CASE.contains(&w.as_str()))
        .map(String::as_str);
    let capitals = raw.iter().find(|w| SOURCES_CAPITALS.contains(w)).copied();
    any_case.or(capitals).map(|w| ResearchMatch {
        rule: ResearchRule::Source,
        evidence: w.to_owned(),
    })
}

fn lookup(words: &[String]) -> Option<ResearchMatch> {
    let verb = words
        .iter()
        .position(|w| LOOKUP_VERBS.contains(&w.as_str()))?;
    let after = &words[verb + 1..];
    after.iter().enumerate().find_map(|(i, w)| {
        let local = i > 0 && LOCAL_DETERMINERS.contains(&after[i - 1].as_str());
        (RESEARCH_NOUNS.contains(&w.as_str()) && !local).then(|| ResearchMatch {
            rule: ResearchRule::Lookup,
            evidence: format!("{} … {}", words[verb], w),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(message: &str) -> Option<ResearchRule> {
        classify_research(message).map(|m| m.rule)
    }

    #[test]
    fn accessions_of_every_archive_fire() {
        for token in [
            "GSE123456",
            "srr1234567",
            "PRJNA765432",
            "E-MTAB-1234",
            "PMC7654321",
            "PMID:31234567",
            "10.1038/s41586-020-2649-2",
            "doi:10.1101/2020.01.01.123456",
        ] {
            assert_eq!(
                rule(&format!("check {token} please")),
                Some(ResearchRule::Accession),
                "{token}"
            );
        }
    }

    #[test]
    fn near_accessions_do_not_fire() {
        for message in [
            "GSE12 is short",
            "the gse folder",
            "E-MTAB",
            "SRRx123",
            "version 10.2",
        ] {
            assert_eq!(rule(message), None, "{message}");
        }
    }
}
