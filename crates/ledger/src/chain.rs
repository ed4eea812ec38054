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

mod check;

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
    /// An undo of a turn (see `undo.rs`).
    Undo,
    /// A change of the configuration file (see `config_change.rs`).
    ConfigChange,
    /// The operator's approval of a scheduled project job (see `job_approval.rs`).
    JobApproval,
}

impl RecordKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Grant => "grant",
            RecordKind::Card => "card",
            RecordKind::Decision => "decision",
            RecordKind::GrantSet => "grant_set",
            RecordKind::Undo => "undo",
            RecordKind::ConfigChange => "config_change",
            RecordKind::JobApproval => "job_approval",
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
    hex(&link_hash_bytes(
        seq, kind, key, session_id, digest, stored, prev,
    ))
}

/// [`link_hash`] as its 32 bytes.
pub(crate) fn link_hash_bytes(
    seq: u64,
    kind: RecordKind,
    key: &str,
    session_id: &str,
    digest: &str,
    stored: Option<&str>,
    prev: &str,
) -> [u8; 32] {
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
    hasher.finalize().into()
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
    let mut text = vec![0u8; bytes.len() * 2];
    write_hex(bytes, &mut text);
    String::from_utf8(text).unwrap_or_default()
}

/// [`hex`] of a digest, into `out` rather than onto the heap.
pub(crate) fn hex_into<'b>(bytes: &[u8; 32], out: &'b mut [u8; 64]) -> &'b str {
    write_hex(bytes, out);
    std::str::from_utf8(out).unwrap_or_default()
}

fn write_hex(bytes: &[u8], out: &mut [u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (pair, byte) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0xf)];
    }
}

/// The 32 bytes whose [`hex`] `text` is; `None` for any other text (upper case included).
pub(crate) fn unhex(text: &str) -> Option<[u8; 32]> {
    fn digit(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    let text = text.as_bytes();
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (n, pair) in text.chunks_exact(2).enumerate() {
        out[n] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
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
    /// The chain ends before the head the daemon published: links cut off its end.
    Truncated,
    /// The link at the published head's number is not the one published: the chain was
    /// recomputed (without the key) after a change.
    HeadMismatch,
    /// The published head's HMAC does not verify with the key: someone else wrote it.
    HeadForged,
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

pub use check::verify;
pub(crate) use check::{ChainWalk, CompactLink, DecisionLink, HexDigest};

/// A record as verification sees it.
#[derive(Debug, Clone)]
pub struct Stored {
    pub kind: RecordKind,
    pub key: String,
    pub session_id: String,
    pub digest: String,
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
