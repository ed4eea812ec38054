//! The chain's head, published where a command cannot write, so that cutting records off the
//! chain's end, or recomputing the chain after changing a record, no longer goes unseen.
//!
//! The chain alone cannot show either: its hash has no key, so whoever can write the state
//! directory can cut its last links (with their records) or rewrite every link after a record
//! they changed, and the chain still verifies. So, whenever the journal is folded (while the
//! daemon runs, and at every orderly stop), the ledger writes the chain's end — the last
//! link's number and hash — to a head file outside the state directory (the configuration
//! directory, which the command sandbox hides as it hides the state directory), with an
//! HMAC-SHA256 over both under a key kept beside it (`ledger.key`, 32 random bytes, `0600`,
//! created at the first start). An audit that has the head reports a chain that ends before
//! it ([`ChainProblem::Truncated`], naming the missing links), a link at the head's number
//! that is not the one published ([`ChainProblem::HeadMismatch`]: the chain was recomputed
//! without the key), and a head whose HMAC does not verify ([`ChainProblem::HeadForged`]).
//!
//! Links after the last published head (written since the last fold, before a crash) are
//! covered only by the chain itself. A ledger that never had a head (older, or audited
//! without its configuration directory) verifies as before.
//!
//! Non-goals: clocks (the head carries no time), logging (the daemon logs each head it is
//! given back).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::chain::{ChainFinding, ChainProblem, Tail, hex, unhex};
use crate::error::LedgerError;

/// The key's file in the configuration directory.
pub const KEY_FILE: &str = "ledger.key";
/// The head's file in the configuration directory.
pub const HEAD_FILE: &str = "ledger.head";
/// The head file's `format`.
pub const HEAD_FORMAT: &str = "codaris-chain-head-1";

/// The key the head's HMAC is made with.
#[derive(Clone, PartialEq, Eq)]
pub struct ChainKey([u8; 32]);

impl std::fmt::Debug for ChainKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key itself, not even in a debug print.
        f.write_str("ChainKey(..)")
    }
}

impl ChainKey {
    /// The key in `dir`, created (32 random bytes as hex, `0600`, synced) when there is none.
    pub fn load_or_create(dir: &Path) -> Result<ChainKey, LedgerError> {
        if let Some(key) = ChainKey::load(dir)? {
            return Ok(key);
        }
        let path = dir.join(KEY_FILE);
        let mut bytes = [0u8; 32];
        let mut filled = 0;
        while let Some(rest) = bytes.get_mut(filled..).filter(|rest| !rest.is_empty()) {
            filled += rustix::rand::getrandom(rest, rustix::rand::GetRandomFlags::empty())
                .map_err(|err| LedgerError::File {
                    action: "make a key for",
                    path: path.clone(),
                    source: err.into(),
                })?;
        }
        write_durably(&path, hex(&bytes).as_bytes(), "write")?;
        Ok(ChainKey(bytes))
    }

    /// The key in `dir`, `None` when there is none; a file that holds no key is an error.
    pub fn load(dir: &Path) -> Result<Option<ChainKey>, LedgerError> {
        let path = dir.join(KEY_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(LedgerError::File {
                    action: "read",
                    path,
                    source,
                });
            }
        };
        match unhex(text.trim()) {
            Some(bytes) => Ok(Some(ChainKey(bytes))),
            None => Err(LedgerError::File {
                action: "read",
                path,
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "it does not hold 64 hex digits",
                ),
            }),
        }
    }

    /// HMAC-SHA256 (RFC 2104) of `message`.
    fn mac(&self, message: &[u8]) -> [u8; 32] {
        const BLOCK: usize = 64;
        let mut inner_pad = [0x36u8; BLOCK];
        let mut outer_pad = [0x5cu8; BLOCK];
        for (n, byte) in self.0.iter().enumerate() {
            inner_pad[n] ^= byte;
            outer_pad[n] ^= byte;
        }
        let inner = Sha256::new()
            .chain_update(inner_pad)
            .chain_update(message)
            .finalize();
        Sha256::new()
            .chain_update(outer_pad)
            .chain_update(inner)
            .finalize()
            .into()
    }
}

/// The chain's end as the daemon published it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainHead {
    pub format: String,
    /// The last link's number (0: an empty chain).
    pub seq: u64,
    /// The last link's hash.
    pub hash: String,
    /// HMAC-SHA256 (hex) of the format, `seq` and `hash` under the [`ChainKey`].
    pub mac: String,
}

impl ChainHead {
    /// The head of a chain ending at `tail`, signed with `key`.
    pub fn of(tail: &Tail, key: &ChainKey) -> ChainHead {
        ChainHead {
            format: HEAD_FORMAT.to_owned(),
            seq: tail.seq,
            hash: tail.hash.clone(),
            mac: hex(&key.mac(&head_message(tail.seq, &tail.hash))),
        }
    }

    /// Whether `mac` is the HMAC of this head's fields under `key`.
    pub fn is_signed_by(&self, key: &ChainKey) -> bool {
        self.format == HEAD_FORMAT
            && unhex(&self.mac).is_some_and(|mac| {
                // Without stopping at the first different byte: timing tells nothing.
                let expected = key.mac(&head_message(self.seq, &self.hash));
                mac.iter()
                    .zip(expected)
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
            })
    }

    /// The head in `dir`, `None` when none was published.
    pub fn load(dir: &Path) -> Result<Option<ChainHead>, LedgerError> {
        let path = dir.join(HEAD_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(LedgerError::File {
                    action: "read",
                    path,
                    source,
                });
            }
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|err| LedgerError::File {
                action: "read",
                path,
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, err),
            })
    }

    /// What an audit finds comparing the chain with this head: `key` is the head's key when
    /// the auditor has it, `last` the chain's last link (number and hash), and `hash_at` the
    /// hash of the chain's link with the head's number, if it has one.
    pub fn check(
        &self,
        key: Option<&ChainKey>,
        last: Option<(u64, &str)>,
        hash_at: Option<&str>,
    ) -> Vec<ChainFinding> {
        let finding = |problem, seq, detail: String| ChainFinding {
            problem,
            seq: Some(seq),
            kind: None,
            key: String::new(),
            session_id: String::new(),
            detail,
        };
        let mut findings = Vec::new();
        if let Some(key) = key
            && !self.is_signed_by(key)
        {
            findings.push(finding(
                ChainProblem::HeadForged,
                self.seq,
                "the published head's HMAC does not verify with the ledger's key: the head file \
                 was written by someone else"
                    .to_owned(),
            ));
        }
        let last_seq = last.map_or(0, |(seq, _)| seq);
        if last_seq < self.seq {
            findings.push(finding(
                ChainProblem::Truncated,
                last_seq + 1,
                format!(
                    "links {} to {} are missing from the chain's end: the daemon published link \
                     {} as the chain's head, and the chain ends at link {last_seq} (records cut \
                     off its tail)",
                    last_seq + 1,
                    self.seq,
                    self.seq
                ),
            ));
        } else if self.seq > 0 && hash_at != Some(self.hash.as_str()) {
            findings.push(finding(
                ChainProblem::HeadMismatch,
                self.seq,
                format!(
                    "link {} is not the link the daemon published as the chain's head: the chain \
                     up to it was rewritten (recomputed without the key)",
                    self.seq
                ),
            ));
        }
        findings
    }
}

/// Publishes the chain's head into a directory ([`crate::Ledger::publish_head_to`]).
#[derive(Debug)]
pub(crate) struct HeadPublisher {
    pub dir: PathBuf,
    pub key: ChainKey,
}

impl HeadPublisher {
    /// Writes the head of a chain ending at `tail`: a new file, synced, renamed over the old
    /// one, the directory synced, so a crash leaves the old head or the new one.
    pub(crate) fn publish(&self, tail: &Tail) -> Result<ChainHead, LedgerError> {
        let head = ChainHead::of(tail, &self.key);
        let bytes = serde_json::to_vec(&head).map_err(LedgerError::Encode)?;
        write_durably(
            &self.dir.join(HEAD_FILE),
            &bytes,
            "publish the chain's head in",
        )?;
        Ok(head)
    }
}

/// What the HMAC covers: the format, the number and the hash, each text after its length.
fn head_message(seq: u64, hash: &str) -> Vec<u8> {
    let mut message = Vec::with_capacity(96);
    for text in [HEAD_FORMAT, hash] {
        message.extend_from_slice(&(text.len() as u64).to_be_bytes());
        message.extend_from_slice(text.as_bytes());
    }
    message.extend_from_slice(&seq.to_be_bytes());
    message
}

/// Writes `bytes` to `path` (`0600`) through a synced temporary file renamed over it.
fn write_durably(path: &Path, bytes: &[u8], action: &'static str) -> Result<(), LedgerError> {
    use std::os::unix::fs::OpenOptionsExt;
    let error = |source| LedgerError::File {
        action,
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(error)?;
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .map_err(error)?;
    file.write_all(bytes).map_err(error)?;
    file.sync_data().map_err(error)?;
    std::fs::rename(&partial, path).map_err(error)?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::RecordKind;

    fn chain_of(n: usize) -> (Tail, Vec<crate::Link>) {
        let mut tail = Tail::default();
        let links = (0..n)
            .map(|i| {
                tail.link(
                    RecordKind::Card,
                    &format!("c{i}"),
                    "s1",
                    &"a".repeat(64),
                    None,
                )
            })
            .collect();
        (tail, links)
    }

    #[test]
    fn hmac_sha256_matches_rfc_4231_test_case_1() {
        // RFC 4231 test case 1 uses a 20-byte key; ours is 32 bytes, padded the same way.
        let mut key = [0u8; 32];
        key[..20].copy_from_slice(&[0x0b; 20]);
        assert_eq!(
            hex(&ChainKey(key).mac(b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
    }

    #[test]
    fn the_key_is_created_once_0600_and_read_back() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        assert!(ChainKey::load(dir.path()).unwrap().is_none());
        let key = ChainKey::load_or_create(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(ChainKey::load_or_create(dir.path()).unwrap(), key);
        assert!(!format!("{key:?}").contains(&hex(&key.0)));
    }

    #[test]
    fn a_published_head_finds_a_cut_tail_a_rewritten_chain_and_a_forged_head() {
        let dir = tempfile::tempdir().unwrap();
        let key = ChainKey::load_or_create(dir.path()).unwrap();
        let (tail, links) = chain_of(5);
        let publisher = HeadPublisher {
            dir: dir.path().to_path_buf(),
            key: key.clone(),
        };
        publisher.publish(&tail).unwrap();
        let head = ChainHead::load(dir.path()).unwrap().unwrap();
        let last = |n: usize| Some((links[n - 1].seq, links[n - 1].hash.as_str()));

        // The chain as published: nothing to say.
        assert!(
            head.check(Some(&key), last(5), Some(&links[4].hash))
                .is_empty()
        );

        // Two links cut off the end: named by their numbers.
        let cut = head.check(Some(&key), last(3), None);
        assert_eq!(cut.len(), 1, "{cut:?}");
        assert_eq!(cut[0].problem, ChainProblem::Truncated);
        assert!(
            cut[0].detail.starts_with("links 4 to 5 are missing"),
            "{}",
            cut[0]
        );

        // Every link recomputed after a change (no key needed for that): link 5's hash differs.
        let mut forged = Tail::default();
        let rewritten: Vec<_> = (0..5)
            .map(|i| {
                forged.link(
                    RecordKind::Card,
                    &format!("c{i}"),
                    "s1",
                    &"b".repeat(64),
                    None,
                )
            })
            .collect();
        let found = head.check(
            Some(&key),
            Some((5, &rewritten[4].hash)),
            Some(&rewritten[4].hash),
        );
        assert_eq!(found[0].problem, ChainProblem::HeadMismatch, "{found:?}");

        // A head written to match the forged chain, without the key, does not verify.
        let other = ChainKey([7; 32]);
        let fake = ChainHead::of(&forged, &other);
        let found = fake.check(
            Some(&key),
            Some((5, &rewritten[4].hash)),
            Some(&rewritten[4].hash),
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].problem, ChainProblem::HeadForged);
    }
}
