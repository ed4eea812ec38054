//! Verifying the chain: its links walked in sequence order, then each record compared with its
//! latest link as the record comes, then the links whose records never came.
//!
//! A check holds every link of the ledger at once: 101,300 of them for a ledger of 100,000
//! decisions. As [`Link`]s, with their four digests as 64 hex digits in a `String` each, they
//! took about 45 MB, six allocations each, and a fifth of a whole audit's time went to the
//! kernel handing it zeroed pages for them. A [`CompactLink`] holds each digest as its 32
//! bytes, and hashes the link without writing its digests out on the heap.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::{ChainFinding, ChainProblem, GENESIS, Link, RecordKind, Stored, hex_into, unhex};

/// A SHA-256 digest as a link holds it, in hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HexDigest {
    /// 64 lowercase hex digits, as every digest the ledger writes: their 32 bytes.
    Bytes([u8; 32]),
    /// Any other text, as found: only a forged link holds one. Never equal to a `Bytes`, since
    /// no other text is the hex of 32 bytes, just as the texts compared unequal.
    Text(Box<str>),
}

impl HexDigest {
    pub(crate) fn from_text(text: &str) -> HexDigest {
        match unhex(text) {
            Some(bytes) => HexDigest::Bytes(bytes),
            None => HexDigest::Text(text.into()),
        }
    }

    /// The digest as the text it was read from, written into `buffer` when held as bytes.
    pub(crate) fn text<'b>(&'b self, buffer: &'b mut [u8; 64]) -> &'b str {
        match self {
            HexDigest::Bytes(bytes) => hex_into(bytes, buffer),
            HexDigest::Text(text) => text,
        }
    }

    /// Whether this is the SHA-256 of `bytes` (what [`super::bytes_digest`] would write).
    pub(crate) fn is_digest_of(&self, bytes: &[u8]) -> bool {
        match self {
            HexDigest::Bytes(digest) => Sha256::digest(bytes).as_slice() == digest,
            HexDigest::Text(_) => false,
        }
    }
}

/// A link as a check holds it: the same fields as a [`Link`], its digests as [`HexDigest`]s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompactLink {
    pub seq: u64,
    pub kind: RecordKind,
    pub key: Box<str>,
    pub session_id: Box<str>,
    pub digest: HexDigest,
    pub stored: Option<HexDigest>,
    pub prev: HexDigest,
    pub hash: HexDigest,
}

impl CompactLink {
    pub(crate) fn of(link: &Link) -> CompactLink {
        CompactLink {
            seq: link.seq,
            kind: link.kind,
            key: link.key.as_str().into(),
            session_id: link.session_id.as_str().into(),
            digest: HexDigest::from_text(&link.digest),
            stored: link.stored.as_deref().map(HexDigest::from_text),
            prev: HexDigest::from_text(&link.prev),
            hash: HexDigest::from_text(&link.hash),
        }
    }

    /// Whether the link's hash is the hash of its own fields ([`super::link_hash`]).
    pub(crate) fn hash_matches(&self) -> bool {
        // A hash that is not hex never matches one computed.
        let HexDigest::Bytes(hash) = &self.hash else {
            return false;
        };
        let (mut digest, mut stored, mut prev) = ([0; 64], [0; 64], [0; 64]);
        let computed = super::link_hash_bytes(
            self.seq,
            self.kind,
            &self.key,
            &self.session_id,
            self.digest.text(&mut digest),
            self.stored.as_ref().map(|s| s.text(&mut stored)),
            self.prev.text(&mut prev),
        );
        &computed == hash
    }
}

/// Walks the chain and compares every record with its latest link. `scope` is the session an
/// export was limited to: links of other sessions then have no record, and that is expected.
pub fn verify(links: &[Link], records: &[Stored], scope: Option<&str>) -> Vec<ChainFinding> {
    let links: Vec<CompactLink> = links.iter().map(CompactLink::of).collect();
    let walk = ChainWalk::new(&links, |n| links[n].hash_matches());
    let mut check = walk.check(scope);
    for record in records {
        check.record(
            record.kind,
            &record.key,
            &record.session_id,
            &HexDigest::from_text(&record.digest),
        );
    }
    check.finish()
}

/// The chain walked in sequence order: what it found wrong with the links, and each record's
/// latest link. Read-only once made, so the threads of an audit share it while one
/// [`ChainCheck`] tallies the records.
pub(crate) struct ChainWalk<'a> {
    links: &'a [CompactLink],
    findings: Vec<ChainFinding>,
    /// Each record's latest link, by its index in `links`; the decisions whose key is their
    /// number as a record names it are in `decisions` instead.
    latest: HashMap<(RecordKind, &'a str), usize>,
    /// Each decision's latest link, by the decision's number.
    decisions: HashMap<u64, usize>,
    /// Whether the walk found nothing wrong with the link at that index.
    sound: Vec<bool>,
}

impl<'a> ChainWalk<'a> {
    /// Walks `links` in sequence order; `hash_ok` says whether the hash of the link at an index
    /// matches its fields (the caller may have hashed them ahead of time, in parallel).
    pub(crate) fn new(links: &'a [CompactLink], hash_ok: impl Fn(usize) -> bool) -> ChainWalk<'a> {
        let mut findings = Vec::new();
        let mut sorted: Vec<usize> = (0..links.len()).collect();
        sorted.sort_by_key(|&n| links[n].seq);
        let mut expected = 1u64;
        let genesis = HexDigest::from_text(GENESIS);
        let mut prev = &genesis;
        let mut latest = HashMap::new();
        let mut decisions = HashMap::with_capacity(links.len());
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
                key: link.key.to_string(),
                session_id: link.session_id.to_string(),
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
            } else if link.prev != *prev {
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
            match decision_number(link.kind, &link.key) {
                Some(seq) => decisions.insert(seq, n),
                None => latest.insert((link.kind, &*link.key), n),
            };
            prev = &link.hash;
            expected = link.seq.saturating_add(1);
        }
        ChainWalk {
            links,
            findings,
            latest,
            decisions,
            sound,
        }
    }

    /// The latest link of the record `kind` `key`, by its index.
    fn latest(&self, kind: RecordKind, key: &str) -> Option<usize> {
        match decision_number(kind, key) {
            Some(seq) => self.decisions.get(&seq),
            None => self.latest.get(&(kind, key)),
        }
        .copied()
    }

    /// Decision `seq`'s latest link, the one [`ChainCheck::record_decision`] compares it with.
    pub(crate) fn decision_link(&self, seq: u64) -> Option<DecisionLink<'a>> {
        let &n = self.decisions.get(&seq)?;
        Some(DecisionLink {
            at: n,
            link: &self.links[n],
            sound: self.sound[n],
        })
    }

    /// A check of the records against this walk. `scope`: see [`verify`].
    pub(crate) fn check<'w>(&'w self, scope: Option<&'w str>) -> ChainCheck<'w> {
        ChainCheck {
            walk: self,
            findings: Vec::new(),
            seen: vec![false; self.links.len()],
            scope,
        }
    }
}

/// A decision's latest link, as [`ChainWalk::decision_link`] finds it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DecisionLink<'a> {
    /// Its index in the walk's links.
    at: usize,
    pub link: &'a CompactLink,
    /// Whether the walk found nothing wrong with it.
    pub sound: bool,
}

/// `key`'s number when `kind` is a decision and `key` is its number as a record names it
/// ("7", never "07" or "+7"): a decision record's key is always its `seq` in decimal, so a
/// link keyed any other way is one no record can match.
fn decision_number(kind: RecordKind, key: &str) -> Option<u64> {
    let canonical = kind == RecordKind::Decision
        && key.bytes().all(|b| b.is_ascii_digit())
        && (key.len() == 1 || !key.starts_with('0'));
    if canonical { key.parse().ok() } else { None }
}

/// The records compared with a [`ChainWalk`], one at a time as they come: a caller that reads
/// them in batches (a ledger's whole audit) never holds them all.
pub(crate) struct ChainCheck<'w> {
    walk: &'w ChainWalk<'w>,
    /// What the records' comparisons found.
    findings: Vec<ChainFinding>,
    /// Whether a record came for the link at that index.
    seen: Vec<bool>,
    scope: Option<&'w str>,
}

impl ChainCheck<'_> {
    /// Compares one record with its latest link.
    pub(crate) fn record(
        &mut self,
        kind: RecordKind,
        key: &str,
        session_id: &str,
        digest: &HexDigest,
    ) {
        let latest = self.walk.latest(kind, key);
        self.compare(latest, kind, || key.to_owned(), session_id, digest);
    }

    /// [`ChainCheck::record`] for decision `seq`, given its latest link as the walk found it
    /// ([`ChainWalk::decision_link`], looked up by a thread that shared the walk), and whose
    /// key is not written out unless it is reported.
    pub(crate) fn record_decision(
        &mut self,
        seq: u64,
        latest: Option<DecisionLink<'_>>,
        session_id: &str,
        digest: &HexDigest,
    ) {
        let latest = latest.map(|found| found.at);
        self.compare(
            latest,
            RecordKind::Decision,
            || seq.to_string(),
            session_id,
            digest,
        );
    }

    fn compare(
        &mut self,
        latest: Option<usize>,
        kind: RecordKind,
        key: impl Fn() -> String,
        session_id: &str,
        digest: &HexDigest,
    ) {
        let finding = |problem, seq, detail: &str| ChainFinding {
            problem,
            seq,
            kind: Some(kind),
            key: key(),
            session_id: session_id.to_owned(),
            detail: detail.to_owned(),
        };
        let Some(n) = latest else {
            self.findings.push(finding(
                ChainProblem::Unlinked,
                None,
                "no link covers this record (inserted, or written before the ledger was chained)",
            ));
            return;
        };
        self.seen[n] = true;
        let link = &self.walk.links[n];
        if link.digest != *digest || *link.session_id != *session_id {
            self.findings.push(finding(
                ChainProblem::Altered,
                Some(link.seq),
                "the record differs from the version its latest link covers (altered)",
            ));
        }
    }

    /// The findings: the walk's, the records', then the links (of the scope) whose records
    /// never came.
    pub(crate) fn finish(self) -> Vec<ChainFinding> {
        let walk = self.walk;
        let mut missing: Vec<&CompactLink> = walk
            .latest
            .values()
            .chain(walk.decisions.values())
            .filter(|&&n| !self.seen[n])
            .map(|&n| &walk.links[n])
            .filter(|link| {
                self.scope
                    .is_none_or(|session| *link.session_id == *session)
            })
            .collect();
        missing.sort_by_key(|l| l.seq);
        let mut findings = walk.findings.clone();
        findings.extend(self.findings);
        findings.extend(missing.into_iter().map(|link| ChainFinding {
            problem: ChainProblem::Missing,
            seq: Some(link.seq),
            kind: Some(link.kind),
            key: link.key.to_string(),
            session_id: link.session_id.to_string(),
            detail: "the link's record is missing (removed)".to_owned(),
        }));
        findings
    }
}

#[cfg(test)]
mod tests {
    use super::{CompactLink, HexDigest, decision_number};
    use crate::chain::{RecordKind, Tail, bytes_digest, link_hash};

    #[test]
    fn a_digest_is_held_as_bytes_only_when_it_is_lowercase_hex_and_reads_back_as_written() {
        let lower = bytes_digest(b"x");
        let mut buffer = [0; 64];
        assert!(matches!(HexDigest::from_text(&lower), HexDigest::Bytes(_)));
        assert_eq!(HexDigest::from_text(&lower).text(&mut buffer), lower);
        for other in [
            lower.to_uppercase(),
            lower[1..].to_owned(),
            "NOT HEX".to_owned(),
        ] {
            let held = HexDigest::from_text(&other);
            assert!(matches!(held, HexDigest::Text(_)), "{other}");
            assert_eq!(held.text(&mut buffer), other);
            assert_ne!(held, HexDigest::from_text(&lower));
        }
        assert!(HexDigest::from_text(&lower).is_digest_of(b"x"));
        assert!(!HexDigest::from_text(&lower).is_digest_of(b"y"));
        assert!(!HexDigest::from_text(&lower.to_uppercase()).is_digest_of(b"x"));
    }

    #[test]
    fn a_compact_link_hashes_as_its_link_does_whatever_its_digests_hold() {
        let mut tail = Tail::default();
        let stored = bytes_digest(b"bytes");
        let link = tail.link(
            RecordKind::Decision,
            "7",
            "s1",
            &bytes_digest(b"7"),
            Some(&stored),
        );
        assert!(CompactLink::of(&link).hash_matches());
        // A forged link whose digest is not hex, with a hash made to match its fields.
        let mut forged = link.clone();
        forged.digest = "ABC".to_owned();
        forged.hash = link_hash(
            forged.seq,
            forged.kind,
            &forged.key,
            &forged.session_id,
            &forged.digest,
            forged.stored.as_deref(),
            &forged.prev,
        );
        assert!(CompactLink::of(&forged).hash_matches());
        let mut altered = link;
        altered.session_id = "s2".to_owned();
        assert!(!CompactLink::of(&altered).hash_matches());
        altered.hash = altered.hash.to_uppercase();
        assert!(!CompactLink::of(&altered).hash_matches());
    }

    #[test]
    fn only_a_decision_keyed_by_its_number_as_written_is_looked_up_by_number() {
        let decision = RecordKind::Decision;
        assert_eq!(decision_number(decision, "7"), Some(7));
        assert_eq!(decision_number(decision, "0"), Some(0));
        assert_eq!(decision_number(decision, "120"), Some(120));
        for other in ["07", "+7", "", "7a", "-1", "99999999999999999999"] {
            assert_eq!(decision_number(decision, other), None, "{other}");
        }
        assert_eq!(decision_number(RecordKind::Grant, "7"), None);
    }
}
