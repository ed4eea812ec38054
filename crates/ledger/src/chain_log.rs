//! The chain's links in a file of their own, `<ledger>.chain`: appended to, never rewritten.
//!
//! Until 2026-12 the links lived in a sled tree. Every commit inserted one entry per link into
//! it (a third of the apply's sled inserts for a decision), and an audit read 101,300 of them
//! back through sled at 1.4–2.1 µs an entry, rebuilding pages its cache had dropped. Links
//! are only ever appended and only ever read in order, which is what a plain file does best:
//! a batch's links are one `write`, an audit reads the file sequentially.
//!
//! **Format.** A [`log_file`](crate::log_file) whose magic is [`MAGIC`]; each payload is
//!
//! ```text
//! 1  seq:u64 kind:u8 has_stored:u8 digest[32] stored[32]? prev[32] hash[32]
//!    key_len:u32 key  session_len:u32 session          (a link, digests as bytes; LE numbers)
//! 2  key_len:u32 key  json                             (a link as JSON, kept as is)
//! ```
//!
//! A link whose digests are not 64 lowercase hex digits (only a forged one) cannot be laid out
//! as bytes; it is kept as its JSON (payload 2), as are the entries of an older ledger's
//! `chain` tree that do not decode, with the key they were stored under. Reading gives back
//! exactly the link that was written, or, for JSON that does not decode, the same report the
//! tree gave. Durability is the log file's: cut back to its durable length at open, refilled
//! from the journal.

use std::path::Path;

use crate::chain::{CompactLink, HexDigest, Link, RecordKind, unhex};
use crate::error::{Corrupt, LedgerError};
use crate::log_file::{LogFile, framed};

/// The first 16 bytes of a chain file: its format, version 1.
pub const MAGIC: &[u8; 16] = b"codaris-chain-1\n";

/// Payload tags.
const LINK: u8 = 1;
const JSON: u8 = 2;

/// One record of the chain file, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredLink {
    /// A link.
    Link(Link),
    /// Bytes kept as they were stored (an older ledger's tree entry, or a link that cannot be
    /// laid out as bytes), under the key they were stored with (the link's number, 8 bytes
    /// big-endian, in a tree).
    Json { key: Vec<u8>, bytes: Vec<u8> },
}

impl StoredLink {
    /// The link, or the report of JSON that does not decode as one (as the tree's was).
    pub fn decode(&self) -> Result<Link, Corrupt> {
        match self {
            StoredLink::Link(link) => Ok(link.clone()),
            StoredLink::Json { key, bytes } => {
                serde_json::from_slice(bytes).map_err(|err| Corrupt {
                    place: "chain".to_owned(),
                    key: crate::store::key_text(key),
                    reason: err.to_string(),
                })
            }
        }
    }
}

/// The chain file, open for appending.
#[derive(Debug)]
pub(crate) struct ChainLog {
    log: LogFile,
}

/// Syncing, cutting back and reading are the log file's own.
impl std::ops::Deref for ChainLog {
    type Target = LogFile;

    fn deref(&self) -> &LogFile {
        &self.log
    }
}

impl std::ops::DerefMut for ChainLog {
    fn deref_mut(&mut self) -> &mut LogFile {
        &mut self.log
    }
}

impl ChainLog {
    /// Opens (creating if needed) the chain file at `path`, last made durable at `durable`
    /// bytes (see [`LogFile::open`]).
    pub(crate) fn open(path: &Path, durable: Option<u64>) -> Result<Self, LedgerError> {
        Ok(ChainLog {
            log: LogFile::open(path, MAGIC, "chain", durable)?,
        })
    }

    /// Appends `links` with one `write`. Not synced: the journal holds them.
    pub(crate) fn append_links(&mut self, links: &[Link]) -> Result<(), LedgerError> {
        let mut buffer = Vec::with_capacity(links.len() * 256);
        for link in links {
            frame_link(link, &mut buffer);
        }
        self.log.append(&buffer).map(drop)
    }

    /// Appends records as they are (an older tree's entries) with one `write`.
    pub(crate) fn append(&mut self, records: &[StoredLink]) -> Result<(), LedgerError> {
        let mut buffer = Vec::with_capacity(records.len() * 256);
        for record in records {
            frame(record, &mut buffer);
        }
        self.log.append(&buffer).map(drop)
    }

    /// The last record, if the file has one whose framing holds.
    pub(crate) fn last(&self) -> Result<Option<StoredLink>, LedgerError> {
        let mut first = true;
        Ok(self
            .log
            .reader()
            .newest(|_, _| std::mem::take(&mut first))?
            .pop()
            .and_then(|(_, payload)| parse(&payload).ok()))
    }

    /// The records from the end back, as long as `more` says so.
    pub(crate) fn newest(
        &self,
        mut more: impl FnMut(&StoredLink) -> bool,
    ) -> Result<Vec<StoredLink>, LedgerError> {
        let mut found = Vec::new();
        self.log
            .reader()
            .newest(|_, payload| match parse(payload) {
                Ok(record) if more(&record) => {
                    found.push(record);
                    true
                }
                _ => false,
            })?;
        Ok(found)
    }
}

/// Appends a record (framed) to `out`.
fn frame(record: &StoredLink, out: &mut Vec<u8>) {
    match record {
        StoredLink::Link(link) => frame_link(link, out),
        StoredLink::Json { key, bytes } => framed(out, |out| {
            out.push(JSON);
            put_text(out, key);
            out.extend_from_slice(bytes);
        }),
    }
}

/// Appends a link's record (framed) to `out`: its digests as bytes, or, when they are not
/// digests, its JSON.
fn frame_link(link: &Link, out: &mut Vec<u8>) {
    framed(out, |out| match laid_out(link) {
        Some(digests) => {
            out.push(LINK);
            out.extend_from_slice(&link.seq.to_le_bytes());
            out.push(kind_byte(link.kind));
            out.push(u8::from(digests.stored.is_some()));
            out.extend_from_slice(&digests.digest);
            if let Some(stored) = &digests.stored {
                out.extend_from_slice(stored);
            }
            out.extend_from_slice(&digests.prev);
            out.extend_from_slice(&digests.hash);
            put_text(out, link.key.as_bytes());
            put_text(out, link.session_id.as_bytes());
        }
        None => {
            out.push(JSON);
            put_text(out, &link.seq.to_be_bytes());
            // A `Link` always encodes.
            let _ = serde_json::to_writer(&mut *out, link);
        }
    });
}

fn put_text(out: &mut Vec<u8>, text: &[u8]) {
    out.extend_from_slice(&u32::try_from(text.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(text);
}

/// A link's digests as bytes.
struct Digests {
    digest: [u8; 32],
    stored: Option<[u8; 32]>,
    prev: [u8; 32],
    hash: [u8; 32],
}

/// `None` when a digest is not 64 lowercase hex digits: such a link is kept as JSON, so that
/// it reads back exactly as it was written.
fn laid_out(link: &Link) -> Option<Digests> {
    Some(Digests {
        digest: unhex(&link.digest)?,
        stored: match &link.stored {
            Some(stored) => Some(unhex(stored)?),
            None => None,
        },
        prev: unhex(&link.prev)?,
        hash: unhex(&link.hash)?,
    })
}

fn kind_byte(kind: RecordKind) -> u8 {
    match kind {
        RecordKind::Grant => 0,
        RecordKind::Card => 1,
        RecordKind::Decision => 2,
        RecordKind::GrantSet => 3,
        RecordKind::Undo => 4,
        RecordKind::ConfigChange => 5,
        RecordKind::JobApproval => 6,
    }
}

fn kind_of(byte: u8) -> Option<RecordKind> {
    match byte {
        0 => Some(RecordKind::Grant),
        1 => Some(RecordKind::Card),
        2 => Some(RecordKind::Decision),
        3 => Some(RecordKind::GrantSet),
        4 => Some(RecordKind::Undo),
        5 => Some(RecordKind::ConfigChange),
        6 => Some(RecordKind::JobApproval),
        _ => None,
    }
}

/// A payload read back, or why its bytes are not a record of this format.
pub(crate) fn parse(payload: &[u8]) -> Result<StoredLink, &'static str> {
    match laid_out_payload(payload)? {
        Payload::Link(link) => Ok(StoredLink::Link(Link {
            seq: link.seq,
            kind: link.kind,
            key: link.key.to_owned(),
            session_id: link.session_id.to_owned(),
            digest: crate::chain::hex(&link.digest),
            stored: link.stored.map(|s| crate::chain::hex(&s)),
            prev: crate::chain::hex(&link.prev),
            hash: crate::chain::hex(&link.hash),
        })),
        Payload::Json { key, bytes } => Ok(StoredLink::Json {
            key: key.to_vec(),
            bytes: bytes.to_vec(),
        }),
    }
}

/// A payload as its parts, borrowed from it.
enum Payload<'a> {
    Link(LaidOut<'a>),
    Json { key: &'a [u8], bytes: &'a [u8] },
}

/// A link laid out with its digests as bytes.
struct LaidOut<'a> {
    seq: u64,
    kind: RecordKind,
    digest: [u8; 32],
    stored: Option<[u8; 32]>,
    prev: [u8; 32],
    hash: [u8; 32],
    key: &'a str,
    session_id: &'a str,
}

fn laid_out_payload(payload: &[u8]) -> Result<Payload<'_>, &'static str> {
    let mut cursor = Cursor(payload);
    match cursor.byte()? {
        LINK => {
            let seq = u64::from_le_bytes(cursor.array()?);
            let kind = kind_of(cursor.byte()?).ok_or("an unknown record kind")?;
            let has_stored = cursor.byte()? == 1;
            let digest = cursor.array::<32>()?;
            let stored = if has_stored {
                Some(cursor.array::<32>()?)
            } else {
                None
            };
            let prev = cursor.array::<32>()?;
            let hash = cursor.array::<32>()?;
            let key = cursor.text()?;
            let session_id = cursor.text()?;
            if !cursor.0.is_empty() {
                return Err("bytes after the link");
            }
            let text = |bytes| std::str::from_utf8(bytes).map_err(|_| "text that is not UTF-8");
            Ok(Payload::Link(LaidOut {
                seq,
                kind,
                digest,
                stored,
                prev,
                hash,
                key: text(key)?,
                session_id: text(session_id)?,
            }))
        }
        JSON => {
            let key = cursor.text()?;
            Ok(Payload::Json {
                key,
                bytes: cursor.0,
            })
        }
        _ => Err("an unknown record tag"),
    }
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> Result<u8, &'static str> {
        Ok(self.array::<1>()?[0])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], &'static str> {
        let (head, rest) = self.0.split_at_checked(N).ok_or("a record cut short")?;
        self.0 = rest;
        head.try_into().map_err(|_| "a record cut short")
    }

    fn text(&mut self) -> Result<&'a [u8], &'static str> {
        let len = u32::from_le_bytes(self.array()?) as usize;
        let (head, rest) = self.0.split_at_checked(len).ok_or("a record cut short")?;
        self.0 = rest;
        Ok(head)
    }
}

/// A payload read from the file, as its link or the report of why it is not one.
pub(crate) fn decode_payload(at: u64, payload: &[u8]) -> Result<Link, Corrupt> {
    match parse(payload) {
        Ok(StoredLink::Link(link)) => Ok(link),
        Ok(stored) => stored.decode(),
        Err(reason) => Err(unreadable(at, reason)),
    }
}

/// The report of a payload at byte `at` that is not a record of this format.
fn unreadable(at: u64, reason: &str) -> Corrupt {
    Corrupt {
        place: "chain".to_owned(),
        key: format!("byte {at}"),
        reason: reason.to_owned(),
    }
}

/// A payload read from the file, as a check holds its link (its digests never written out as
/// hex), or the report of why it is not one.
pub(crate) fn decode_compact(at: u64, payload: &[u8]) -> Result<CompactLink, Corrupt> {
    match laid_out_payload(payload) {
        Ok(Payload::Link(link)) => Ok(CompactLink {
            seq: link.seq,
            kind: link.kind,
            key: link.key.into(),
            session_id: link.session_id.into(),
            digest: HexDigest::Bytes(link.digest),
            stored: link.stored.map(HexDigest::Bytes),
            prev: HexDigest::Bytes(link.prev),
            hash: HexDigest::Bytes(link.hash),
        }),
        Ok(Payload::Json { .. }) => decode_payload(at, payload).map(|link| CompactLink::of(&link)),
        Err(reason) => Err(unreadable(at, reason)),
    }
}

/// Every record of the chain file at `path`, in order (a framing that does not hold ends the
/// read, with its report). For tools and tests that read the file without a ledger.
pub fn read_chain_file(path: &Path) -> Result<Vec<Result<StoredLink, Corrupt>>, LedgerError> {
    Ok(crate::log_file::read_file(path, MAGIC, "chain")?
        .into_iter()
        .map(|record| {
            record.and_then(|(at, payload)| {
                parse(&payload).map_err(|reason| Corrupt {
                    place: "chain".to_owned(),
                    key: format!("byte {at}"),
                    reason: reason.to_owned(),
                })
            })
        })
        .collect())
}

/// Writes a whole chain file at `path` holding `records`, in order: for tests that stand in for
/// someone rewriting the file behind the ledger's back (the ledger itself only appends).
pub fn write_chain_file(path: &Path, records: &[StoredLink]) -> Result<(), LedgerError> {
    let mut bytes = MAGIC.to_vec();
    for record in records {
        frame(record, &mut bytes);
    }
    std::fs::write(path, bytes).map_err(|source| LedgerError::File {
        action: "write",
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::{ChainLog, MAGIC, StoredLink, parse};
    use crate::chain::{Link, RecordKind, Tail};

    fn links(n: u64) -> Vec<Link> {
        let mut tail = Tail::default();
        (1..=n)
            .map(|k| {
                let digest = crate::chain::bytes_digest(&k.to_be_bytes());
                let stored = (k % 2 == 0).then(|| crate::chain::bytes_digest(b"bytes"));
                tail.link(
                    RecordKind::Decision,
                    &k.to_string(),
                    "s1",
                    &digest,
                    stored.as_deref(),
                )
            })
            .collect()
    }

    fn read(log: &ChainLog) -> Vec<Link> {
        log.reader()
            .records()
            .map(|r| {
                let (at, payload) = r.unwrap();
                super::decode_payload(at, &payload).unwrap()
            })
            .collect()
    }

    #[test]
    fn links_read_back_exactly_as_appended_with_and_without_a_stored_digest() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("ledger.chain");
        let mut log = ChainLog::open(&path, None).unwrap();
        let written = links(5);
        log.append_links(&written[..2]).unwrap();
        log.append_links(&written[2..]).unwrap();
        assert_eq!(read(&log), written);
        assert_eq!(&std::fs::read(&path).unwrap()[..16], MAGIC);

        // The newest first, as far as asked.
        let newest = log.newest(|r| r.decode().unwrap().seq > 3).unwrap();
        assert_eq!(
            newest,
            vec![
                StoredLink::Link(written[4].clone()),
                StoredLink::Link(written[3].clone())
            ]
        );
        assert_eq!(
            log.last().unwrap(),
            Some(StoredLink::Link(written[4].clone()))
        );
    }

    #[test]
    fn a_link_whose_digests_are_not_hex_is_kept_as_its_json_and_reads_back_the_same() {
        let temp = tempfile::tempdir().unwrap();
        let mut log = ChainLog::open(&temp.path().join("c"), None).unwrap();
        let mut forged = links(1).remove(0);
        forged.digest = "NOT HEX".to_owned();
        forged.key = "ключ".to_owned();
        log.append_links(std::slice::from_ref(&forged)).unwrap();
        assert_eq!(read(&log), vec![forged]);
    }

    #[test]
    fn a_cut_back_drops_what_lies_past_the_durable_length_and_nothing_else_does() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("c");
        let mut log = ChainLog::open(&path, None).unwrap();
        let written = links(4);
        log.append_links(&written[..3]).unwrap();
        let durable = log.sync().unwrap();
        log.append_links(&written[3..]).unwrap();
        drop(log);

        let mut log = ChainLog::open(&path, Some(durable)).unwrap();
        assert_eq!(read(&log), written, "opening alone keeps everything");
        log.cut_back().unwrap();
        assert_eq!(read(&log), written[..3]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), durable);
    }

    #[test]
    fn a_file_shorter_than_its_durable_length_keeps_its_whole_records() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("c");
        let mut log = ChainLog::open(&path, None).unwrap();
        log.append_links(&links(3)).unwrap();
        let durable = log.sync().unwrap();
        drop(log);
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(durable - 10).unwrap();

        let log = ChainLog::open(&path, Some(durable)).unwrap();
        assert_eq!(read(&log), links(2));
    }

    #[test]
    fn payloads_cut_short_or_of_an_unknown_tag_are_refused_with_a_reason() {
        let mut framed = Vec::new();
        super::frame_link(&links(1)[0], &mut framed);
        let payload = &framed[4..framed.len() - 4];
        assert!(parse(payload).is_ok());
        for cut in [1, 10, 40, payload.len() - 1] {
            assert_eq!(parse(&payload[..cut]), Err("a record cut short"), "{cut}");
        }
        let mut longer = payload.to_vec();
        longer.push(0);
        assert_eq!(parse(&longer), Err("bytes after the link"));
        assert_eq!(parse(&[9]), Err("an unknown record tag"));
        let mut kind = payload.to_vec();
        kind[9] = 77;
        assert_eq!(parse(&kind), Err("an unknown record kind"));
    }

    #[test]
    fn a_broken_framing_is_reported_once_with_its_place_and_ends_the_read() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("c");
        let mut log = ChainLog::open(&path, None).unwrap();
        log.append_links(&links(2)).unwrap();
        drop(log);
        let mut bytes = std::fs::read(&path).unwrap();
        let first_len = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
        let second = 16 + first_len + 8;
        bytes[second] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();

        let log = ChainLog::open(&path, Some(bytes.len() as u64)).unwrap();
        let read: Vec<_> = log.reader().records().collect();
        assert_eq!(read.len(), 2, "{read:?}");
        assert!(read[0].is_ok());
        let bad = read[1].as_ref().unwrap_err();
        assert_eq!(bad.key, format!("byte {second}"));
        assert!(
            bad.reason
                .contains("the rest of the chain file is not read"),
            "{bad:?}"
        );
    }
}
