//! The chain: every record version the ledger appends (a grant, a card, a decision, and each
//! update of one: a spend, a revocation, a card's answer) gets a [`Link`] whose hash covers the
//! previous link's, in the order the lines reached the journal.
//!
//! sled keeps only a record's latest version, so a link names its record by kind and key and
//! holds the digest of that version; verification compares each record with its latest link.
//! Links are append-only: a link is never overwritten. What verification reports:
//! - a record no link covers (inserted, or written before the chain existed): `unlinked`;
//! - a link whose `prev` is not the hash of the link before it (inserted): `broken_link`;
//! - a link whose own hash does not match its fields: `link_altered`;
//! - a record whose digest is not its latest link's (altered): `altered`;
//! - a link whose record is missing, or a gap in the sequence (removed): `missing`, `gap`.
//!
//! The hash is SHA-256 without a key: the chain shows what changed in a ledger, not who may
//! extend it. Someone able to write the state directory can append well-formed links at its
//! tail; that is why no tool or command may reach the state directory, and why a grant must
//! also name what backs it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Which tree a record lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    Grant,
    Card,
    Decision,
    /// The grants a decision saw, by id (schema 2; see `grant_sets.rs`).
    GrantSet,
}

impl RecordKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Grant => "grant",
            RecordKind::Card => "card",
            RecordKind::Decision => "decision",
            RecordKind::GrantSet => "grant_set",
        }
    }
}

/// One version of one record, in the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// Position in the chain, from 1, without gaps.
    pub seq: u64,
    pub kind: RecordKind,
    /// The record's key: a grant or card id, a decision's `seq` in decimal.
    pub key: String,
    pub session_id: String,
    /// SHA-256 (hex) of this version of the record, in canonical JSON (see [`digest`]).
    pub digest: String,
    /// SHA-256 (hex) of the record's bytes exactly as this ledger stored them (absent in links
    /// written before it was recorded). Covered by `hash`: an audit of the ledger whose record
    /// bytes still hash to it knows the record is the version `digest` covers without
    /// encoding it again in canonical JSON, which was a quarter of an audit's work. Bytes that
    /// differ (the same content stored again by another build) are checked by `digest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored: Option<String>,
    /// `hash` of the link before this one; [`GENESIS`] for the first.
    pub prev: String,
    /// SHA-256 (hex) of this link's fields and `prev` (see [`link_hash`]).
    pub hash: String,
}

/// The `prev` of the first link.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The end of the chain: where the next link attaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail {
    pub seq: u64,
    pub hash: String,
}

impl Default for Tail {
    fn default() -> Self {
        Tail {
            seq: 0,
            hash: GENESIS.to_owned(),
        }
    }
}

impl Tail {
    pub fn after(link: &Link) -> Tail {
        Tail {
            seq: link.seq,
            hash: link.hash.clone(),
        }
    }

    /// The next link, and moves the tail past it. `stored`: the digest of the record's bytes
    /// as stored ([`bytes_digest`]).
    pub fn link(
        &mut self,
        kind: RecordKind,
        key: &str,
        session_id: &str,
        digest: &str,
        stored: Option<&str>,
    ) -> Link {
        // A forged link may have claimed the last number; saturating keeps appends working
        // (the gap before the forged link is reported).
        let seq = self.seq.saturating_add(1);
        let hash = link_hash(seq, kind, key, session_id, digest, stored, &self.hash);
        let link = Link {
            seq,
            kind,
            key: key.to_owned(),
            session_id: session_id.to_owned(),
            digest: digest.to_owned(),
            stored: stored.map(str::to_owned),
            prev: std::mem::replace(&mut self.hash, hash.clone()),
            hash,
        };
        self.seq = seq;
        link
    }
}

/// SHA-256 over a fixed layout (each text preceded by its length), so no choice of key or
/// session id can make two different links hash alike. A link with a `stored` digest hashes
/// under its own tag, with that digest as one more text: taking it out of a link, or putting
/// one in, changes the link's hash.
pub fn link_hash(
    seq: u64,
    kind: RecordKind,
    key: &str,
    session_id: &str,
    digest: &str,
    stored: Option<&str>,
    prev: &str,
) -> String {
    let mut hasher = Sha256::new();
    let texts = [prev, kind.as_str(), key, session_id, digest];
    let (tag, stored): (&[u8], &[&str]) = match &stored {
        None => (b"codaris-ledger-chain-1", &[]),
        Some(stored) => (b"codaris-ledger-chain-2", std::slice::from_ref(stored)),
    };
    hasher.update(tag);
    for text in texts.iter().chain(stored) {
        hasher.update((text.len() as u64).to_be_bytes());
        hasher.update(text.as_bytes());
    }
    hasher.update(seq.to_be_bytes());
    hex(&hasher.finalize())
}

/// SHA-256 (hex) of a record's bytes as stored: a link's `stored`.
pub(crate) fn bytes_digest(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// SHA-256 (hex) of a record in canonical JSON: object keys sorted, members whose value is
/// `null` left out. Independent of how a build orders map keys, and of fields added later with
/// a `null` default, so an older record verifies under a newer build.
///
/// Written straight from the record (see `canonical.rs`); a record of a shape that writer leaves
/// alone, or that fails there, takes the route the digests were first made by: through a
/// `serde_json::Value`.
pub fn digest(record: &impl Serialize) -> Result<String, serde_json::Error> {
    let mut bytes = Vec::with_capacity(1024);
    match crate::canonical::write(record, &mut bytes) {
        Ok(()) => Ok(hex(&Sha256::digest(&bytes))),
        Err(_) => digest_by_value(record),
    }
}

/// [`digest`] through a `serde_json::Value`: the definition the canonical writer must match.
pub(crate) fn digest_by_value(record: &impl Serialize) -> Result<String, serde_json::Error> {
    Ok(hex(&Sha256::digest(canonical_by_value(record)?)))
}

/// A record's canonical JSON through a `serde_json::Value`.
pub(crate) fn canonical_by_value(record: &impl Serialize) -> Result<Vec<u8>, serde_json::Error> {
    let value = serde_json::to_value(record)?;
    let mut bytes = Vec::new();
    canonical(&value, &mut bytes)?;
    Ok(bytes)
}

fn canonical(value: &Value, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    match value {
        Value::Object(map) => {
            let mut members: Vec<_> = map.iter().filter(|(_, v)| !v.is_null()).collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (n, (name, member)) in members.into_iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, name)?;
                out.push(b':');
                canonical(member, out)?;
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                canonical(item, out)?;
            }
            out.push(b']');
        }
        scalar => serde_json::to_writer(&mut *out, scalar)?,
    }
    Ok(())
}

/// Lowercase hex. Written into bytes and checked as UTF-8 once (a fast pass over ASCII): an
/// audit makes about seven of these a decision, and pushing each digit as a `char` was 5 % of
/// its CPU.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = vec![0u8; bytes.len() * 2];
    for (pair, byte) in text.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0xf)];
    }
    String::from_utf8(text).unwrap_or_default()
}

/// What verification found wrong with the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChainProblem {
    /// A record that no link covers: inserted, or written before the chain existed.
    Unlinked,
    /// A link whose `prev` is not the hash of the link before it: inserted.
    BrokenLink,
    /// A link whose hash does not match its own fields.
    LinkAltered,
    /// Two links with one sequence number.
    DuplicateSeq,
    /// A record that differs from the version its latest link digested: altered.
    Altered,
    /// A link whose record is missing: removed.
    Missing,
    /// Sequence numbers missing from the chain: links (and their records) removed.
    Gap,
}

/// One finding of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainFinding {
    pub problem: ChainProblem,
    /// The link concerned (for a gap, the first missing number); `None` for an unlinked record.
    pub seq: Option<u64>,
    pub kind: Option<RecordKind>,
    pub key: String,
    pub session_id: String,
    /// One sentence.
    pub detail: String,
}

impl std::fmt::Display for ChainFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(seq) = self.seq {
            write!(f, "link {seq}: ")?;
        }
        if let Some(kind) = self.kind {
            write!(f, "{} `{}`", kind.as_str(), self.key)?;
            if !self.session_id.is_empty() {
                write!(f, " (session `{}`)", self.session_id)?;
            }
            write!(f, ": ")?;
        }
        f.write_str(&self.detail)
    }
}

/// A record as verification sees it.
#[derive(Debug, Clone)]
pub struct Stored {
    pub kind: RecordKind,
    pub key: String,
    pub session_id: String,
    pub digest: String,
}

/// Walks the chain and compares every record with its latest link. `scope` is the session an
/// export was limited to: links of other sessions then have no record, and that is expected.
pub fn verify(links: &[Link], records: &[Stored], scope: Option<&str>) -> Vec<ChainFinding> {
    let mut check = ChainCheck::walk(links, |n| link_hash_matches(&links[n]), scope);
    for record in records {
        check.record(record.kind, &record.key, &record.session_id, &record.digest);
    }
    check.finish()
}

/// Whether a link's hash is the hash of its own fields.
pub(crate) fn link_hash_matches(link: &Link) -> bool {
    link_hash(
        link.seq,
        link.kind,
        &link.key,
        &link.session_id,
        &link.digest,
        link.stored.as_deref(),
        &link.prev,
    ) == link.hash
}

/// [`verify`] a record at a time: the chain walked first, then each record compared with its
/// latest link as it comes, then the links whose records never came. A caller that reads the
/// records in batches (a ledger's whole audit) never holds them all.
pub(crate) struct ChainCheck<'a> {
    findings: Vec<ChainFinding>,
    /// Each record's latest link, by its index in `links`.
    latest: HashMap<(RecordKind, &'a str), usize>,
    links: &'a [Link],
    /// Whether a record came for the link at that index.
    seen: Vec<bool>,
    /// Whether the walk found nothing wrong with the link at that index.
    sound: Vec<bool>,
    scope: Option<&'a str>,
}

impl<'a> ChainCheck<'a> {
    /// Walks `links` in sequence order; `hash_ok` says whether the hash of the link at an index
    /// matches its fields (the caller may have hashed them ahead of time, in parallel).
    pub(crate) fn walk(
        links: &'a [Link],
        hash_ok: impl Fn(usize) -> bool,
        scope: Option<&'a str>,
    ) -> ChainCheck<'a> {
        let mut findings = Vec::new();
        let mut sorted: Vec<usize> = (0..links.len()).collect();
        sorted.sort_by_key(|&n| links[n].seq);
        let mut expected = 1u64;
        let mut prev = GENESIS;
        let mut latest = HashMap::with_capacity(links.len());
        // A link is sound when the walk finds nothing wrong with it and the next link names
        // its hash: a link forged in the middle of the chain, even with a hash that matches
        // its fields, breaks the link after it. The last link is never sound (nothing after it
        // names it), so its record is always checked in full.
        let mut sound = vec![false; links.len()];
        let mut last_clean = None;
        for n in sorted {
            let link = &links[n];
            let finding = |problem, detail: &str| ChainFinding {
                problem,
                seq: Some(link.seq),
                kind: Some(link.kind),
                key: link.key.clone(),
                session_id: link.session_id.clone(),
                detail: detail.to_owned(),
            };
            if link.seq < expected {
                findings.push(finding(
                    ChainProblem::DuplicateSeq,
                    "a second link with this number (inserted)",
                ));
                continue;
            }
            let before = findings.len();
            if link.seq > expected {
                findings.push(ChainFinding {
                    problem: ChainProblem::Gap,
                    seq: Some(expected),
                    kind: None,
                    key: String::new(),
                    session_id: String::new(),
                    detail: format!(
                        "links {expected} to {} are missing (their records were removed)",
                        link.seq - 1
                    ),
                });
            } else if link.prev != prev {
                findings.push(finding(
                    ChainProblem::BrokenLink,
                    "its `prev` is not the hash of the link before it (inserted)",
                ));
            }
            if !hash_ok(n) {
                findings.push(finding(
                    ChainProblem::LinkAltered,
                    "the link's hash does not match its fields (altered)",
                ));
            }
            let clean = findings.len() == before;
            if let Some(previous) = last_clean.take() {
                sound[previous] = clean;
            }
            last_clean = clean.then_some(n);
            latest.insert((link.kind, link.key.as_str()), n);
            prev = &link.hash;
            expected = link.seq.saturating_add(1);
        }
        ChainCheck {
            findings,
            latest,
            links,
            seen: vec![false; links.len()],
            sound,
            scope,
        }
    }

    /// Each decision's latest link (the one [`ChainCheck::record`] compares the decision
    /// with), by the decision's `seq`, where the walk found nothing wrong with that link.
    pub(crate) fn sound_decision_links(&self) -> HashMap<u64, &'a Link> {
        self.latest
            .iter()
            .filter(|&(&(kind, _), &n)| kind == RecordKind::Decision && self.sound[n])
            .filter_map(|(&(_, key), &n)| {
                // Only a key as a record's `seq` names it ("7", never "07"): the link must be
                // the one `record` looks up for that decision.
                let seq: u64 = key.parse().ok()?;
                (seq.to_string() == key).then_some((seq, &self.links[n]))
            })
            .collect()
    }

    /// Compares one record with its latest link.
    pub(crate) fn record(&mut self, kind: RecordKind, key: &str, session_id: &str, digest: &str) {
        let finding = |problem, seq, detail: &str| ChainFinding {
            problem,
            seq,
            kind: Some(kind),
            key: key.to_owned(),
            session_id: session_id.to_owned(),
            detail: detail.to_owned(),
        };
        let Some(&n) = self.latest.get(&(kind, key)) else {
            self.findings.push(finding(
                ChainProblem::Unlinked,
                None,
                "no link covers this record (inserted, or written before the ledger was chained)",
            ));
            return;
        };
        self.seen[n] = true;
        let link = &self.links[n];
        if link.digest != digest || link.session_id != session_id {
            self.findings.push(finding(
                ChainProblem::Altered,
                Some(link.seq),
                "the record differs from the version its latest link covers (altered)",
            ));
        }
    }

    /// The findings, ending with the links (of the scope) whose records never came.
    pub(crate) fn finish(mut self) -> Vec<ChainFinding> {
        let mut missing: Vec<&Link> = self
            .latest
            .values()
            .filter(|&&n| !self.seen[n])
            .map(|&n| &self.links[n])
            .filter(|link| self.scope.is_none_or(|session| link.session_id == session))
            .collect();
        missing.sort_by_key(|l| l.seq);
        for link in missing {
            self.findings.push(ChainFinding {
                problem: ChainProblem::Missing,
                seq: Some(link.seq),
                kind: Some(link.kind),
                key: link.key.clone(),
                session_id: link.session_id.clone(),
                detail: "the link's record is missing (removed)".to_owned(),
            });
        }
        self.findings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn the_digest_ignores_key_order_and_null_members_but_nothing_else()
    -> Result<(), Box<dyn std::error::Error>> {
        let a = digest(&json!({"b": 1, "a": {"y": [1, null], "x": "s"}, "c": null}))?;
        let b = digest(&json!({"a": {"x": "s", "y": [1, null]}, "b": 1}))?;
        assert_eq!(a, b);
        assert_ne!(a, digest(&json!({"a": {"x": "s", "y": [1]}, "b": 1}))?);
        assert_ne!(
            a,
            digest(&json!({"a": {"x": "s", "y": [1, null]}, "b": 2}))?
        );
        Ok(())
    }

    fn chain(n: usize) -> (Vec<Link>, Vec<Stored>) {
        let mut tail = Tail::default();
        let mut links = Vec::new();
        let mut records = Vec::new();
        for i in 0..n {
            let key = format!("g{i}");
            let digest = format!("d{i}");
            links.push(tail.link(RecordKind::Grant, &key, "s1", &digest, None));
            records.push(Stored {
                kind: RecordKind::Grant,
                key,
                session_id: "s1".to_owned(),
                digest,
            });
        }
        (links, records)
    }

    fn problems(findings: &[ChainFinding]) -> Vec<(ChainProblem, Option<u64>)> {
        findings.iter().map(|f| (f.problem, f.seq)).collect()
    }

    #[test]
    fn an_untouched_chain_verifies_clean() {
        let (links, records) = chain(5);
        assert_eq!(verify(&links, &records, None), Vec::new());
    }

    #[test]
    fn a_removed_middle_link_is_a_gap_and_a_removed_record_is_missing() {
        let (mut links, mut records) = chain(5);
        links.remove(2);
        records.remove(2);
        assert_eq!(
            problems(&verify(&links, &records, None)),
            vec![(ChainProblem::Gap, Some(3))]
        );
        let (links, mut records) = chain(5);
        records.remove(1);
        assert_eq!(
            problems(&verify(&links, &records, None)),
            vec![(ChainProblem::Missing, Some(2))]
        );
    }

    #[test]
    fn a_forged_link_in_the_middle_breaks_the_chain() {
        let (mut links, records) = chain(4);
        let mut forged = Tail::default().link(RecordKind::Grant, "g9", "s1", "d9", None);
        forged.seq = 3;
        links.insert(2, forged);
        let found = problems(&verify(&links, &records, None));
        assert!(
            found.contains(&(ChainProblem::DuplicateSeq, Some(3))),
            "{found:?}"
        );
        assert!(
            found.contains(&(ChainProblem::LinkAltered, Some(3))),
            "{found:?}"
        );
    }

    #[test]
    fn an_altered_record_and_an_altered_link_are_reported() {
        let (mut links, mut records) = chain(3);
        records[0].digest = "other".to_owned();
        links[2].digest = "other".to_owned();
        records[2].digest = "other".to_owned();
        assert_eq!(
            problems(&verify(&links, &records, None)),
            vec![
                (ChainProblem::LinkAltered, Some(3)),
                (ChainProblem::Altered, Some(1))
            ]
        );
    }

    #[test]
    fn a_session_scope_expects_other_sessions_records_to_be_absent() {
        let (links, _) = chain(2);
        assert_eq!(verify(&links, &[], Some("s2")), Vec::new());
        assert_eq!(verify(&links, &[], Some("s1")).len(), 2);
    }
}
