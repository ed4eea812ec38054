//! An append-only file of framed records beside the sled directory: what the chain's links
//! (`<ledger>.chain`, see `chain_log.rs`) and the decisions (`<ledger>.decisions`, see
//! `decision_log.rs`) are kept in. Both are only ever appended to and read in order or from
//! the newest back, which a plain file does with one `write` a batch and sequential reads,
//! where a sled tree took an insert per record and rebuilt its pages to read them back.
//!
//! **Format.** A file starts with 16 bytes naming its format and version (its *magic*).
//! Records follow, each payload framed by its length before and after it (`u32`,
//! little-endian), so records can be read from the end back without reading the file:
//! `len:u32 payload[len] len:u32`. What a payload holds is its user's.
//!
//! **Durability.** The file is not synced on each commit: the journal, whose lines carry every
//! record, is what a crash is recovered from. Whenever the journal is emptied, the file is
//! synced first and its length recorded in sled (then synced) as its *durable length*. When an
//! open finds lines in the journal, the file is cut back to its durable length
//! ([`LogFile::cut_back`]) before they are replayed, so a tail a crash left half-written, or
//! never made durable, is dropped and the journal's records are appended again. With the
//! journal empty, nothing past the durable length was written by the ledger: it is kept, and
//! reported by the audit, as evidence.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read as _};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Corrupt, LedgerError};

/// A payload longer than this is not a record of ours (a link is about 200 bytes, a decision
/// a few kilobytes): the framing is broken.
const MAX_PAYLOAD: u32 = 64 * 1024 * 1024;

/// A record read from a log file: its offset and payload, or why none could be read there.
pub(crate) type Read = Result<(u64, Vec<u8>), Corrupt>;

/// The length of the magic that starts every file.
pub(crate) const MAGIC_LEN: u64 = 16;

/// An append-only file of framed records, open for appending.
#[derive(Debug)]
pub(crate) struct LogFile {
    path: PathBuf,
    /// Shared with readers, which read by offset and never move the file's position.
    file: Arc<File>,
    /// The end of the last whole record: where the next append writes.
    len: u64,
    /// The length last made durable, as given at open.
    durable: u64,
    magic: &'static [u8; 16],
    /// What reports name it (`chain`, `decisions`).
    place: &'static str,
}

impl LogFile {
    /// Opens (creating if needed) the file at `path`, whose length was last made durable at
    /// `durable` bytes; appends go after all of it (see [`LogFile::cut_back`] for a crash's
    /// tail). `None`: the file is emptied (a new ledger, or one whose records are about to be
    /// moved in from a sled tree).
    pub(crate) fn open(
        path: &Path,
        magic: &'static [u8; 16],
        place: &'static str,
        durable: Option<u64>,
    ) -> Result<Self, LedgerError> {
        let file = open_private(path).map_err(|source| sync_error(path, source))?;
        let mut log = LogFile {
            path: path.to_path_buf(),
            file: Arc::new(file),
            len: 0,
            durable: 0,
            magic,
            place,
        };
        let size = log
            .file
            .metadata()
            .map_err(|source| log.error(source))?
            .len();
        let keep = match durable {
            Some(durable) if size >= durable && durable >= MAGIC_LEN => size,
            // Shorter than its durable length: the file lost records (they are reported as
            // missing); keep what is there, cut to its last whole record.
            Some(_) if size >= MAGIC_LEN => log.whole_prefix(size),
            _ => 0,
        };
        if keep == 0 {
            log.file.set_len(0).map_err(|source| log.error(source))?;
            log.file
                .write_all_at(magic, 0)
                .map_err(|source| log.error(source))?;
            log.len = MAGIC_LEN;
        } else {
            if size > keep {
                log.file.set_len(keep).map_err(|source| log.error(source))?;
            }
            log.len = keep;
        }
        log.durable = durable.unwrap_or(MAGIC_LEN).min(log.len);
        Ok(log)
    }

    /// Cuts the file back to its durable length, before the journal's lines are replayed:
    /// everything written since is in those lines, and what a crash left of it may be torn.
    pub(crate) fn cut_back(&mut self) -> Result<(), LedgerError> {
        if self.len > self.durable {
            self.file
                .set_len(self.durable)
                .map_err(|source| self.error(source))?;
            self.len = self.durable;
        }
        Ok(())
    }

    /// Where the whole records of a file of `size` bytes end, read from the start; all of it
    /// when it is not a file of this format (it is reported, and kept as evidence).
    fn whole_prefix(&self, size: u64) -> u64 {
        let mut end = MAGIC_LEN;
        let reader = LogReader {
            file: self.file.clone(),
            end: size,
            magic: self.magic,
            place: self.place,
        };
        for record in reader.records() {
            match record {
                Ok((at, payload)) => end = at + frame_len(payload.len()),
                Err(bad) if bad.key == "byte 0" => return size,
                Err(_) => break,
            }
        }
        end
    }

    /// Appends framed records (made with [`framed`]) with one `write`; returns where they
    /// start. Not synced: see the module's header.
    pub(crate) fn append(&mut self, framed: &[u8]) -> Result<u64, LedgerError> {
        let at = self.len;
        if framed.is_empty() {
            return Ok(at);
        }
        self.file
            .write_all_at(framed, at)
            .map_err(|source| self.error(source))?;
        self.len += framed.len() as u64;
        Ok(at)
    }

    /// Makes every record appended so far durable; returns the durable length.
    pub(crate) fn sync(&mut self) -> Result<u64, LedgerError> {
        self.file.sync_data().map_err(|source| self.error(source))?;
        self.durable = self.len;
        Ok(self.len)
    }

    /// A reader of the records written so far (appended meanwhile, they are not read).
    pub(crate) fn reader(&self) -> LogReader {
        LogReader {
            file: self.file.clone(),
            end: self.len,
            magic: self.magic,
            place: self.place,
        }
    }

    fn error(&self, source: std::io::Error) -> LedgerError {
        sync_error(&self.path, source)
    }
}

/// A log file's records up to a length.
pub(crate) struct LogReader {
    file: Arc<File>,
    end: u64,
    magic: &'static [u8; 16],
    place: &'static str,
}

impl LogReader {
    /// Every whole record, in order, each payload with its byte offset.
    pub(crate) fn records(&self) -> Records<'_> {
        Records::new(self)
    }

    /// The payload of the record at `at`, or why none whole starts there.
    pub(crate) fn read_at(&self, at: u64) -> Result<Vec<u8>, Corrupt> {
        /// Read with the head in one `pread`: most records are shorter.
        const GUESS: u64 = 2048;
        let broken = |reason: &str| self.broken(at, reason);
        if at < MAGIC_LEN || at + 8 > self.end {
            return Err(broken("no record starts there"));
        }
        let first = (self.end - at).min(GUESS + 8);
        let mut framed = vec![0u8; usize::try_from(first).unwrap_or(0)];
        self.file
            .read_exact_at(&mut framed, at)
            .map_err(|err| broken(&err.to_string()))?;
        let head = [framed[0], framed[1], framed[2], framed[3]];
        let len = u32::from_le_bytes(head);
        let whole = frame_len(len as usize);
        if len > MAX_PAYLOAD || at + whole > self.end {
            return Err(broken("a record's length runs past the file"));
        }
        let whole = usize::try_from(whole).unwrap_or(usize::MAX);
        if framed.len() < whole {
            let read = framed.len();
            framed.resize(whole, 0);
            self.file
                .read_exact_at(&mut framed[read..], at + read as u64)
                .map_err(|err| broken(&err.to_string()))?;
        }
        framed.truncate(whole);
        if framed[whole - 4..] != head {
            return Err(broken("a record whose two lengths differ"));
        }
        framed.truncate(whole - 4);
        framed.drain(..4);
        Ok(framed)
    }

    /// Payloads from the end back, each with its offset, as long as `more` says so; stops
    /// quietly at a framing that does not hold (a damaged file is reported by a full read).
    /// The file is read backwards in growing chunks: the newest 20 decisions are one `pread`,
    /// where three a record (trailer, head, payload) made `ledger decisions -n 20` 3× slower
    /// than it was from sled.
    pub(crate) fn newest(
        &self,
        mut more: impl FnMut(u64, &[u8]) -> bool,
    ) -> Result<Vec<(u64, Vec<u8>)>, LedgerError> {
        let mut found = Vec::new();
        let mut behind = Behind {
            file: &self.file,
            start: self.end,
            bytes: Vec::new(),
        };
        let mut end = self.end;
        while end >= MAGIC_LEN + 8 {
            let trailer = behind.range(end - 4, end)?;
            let len = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
            let Some(start) = end
                .checked_sub(u64::from(len) + 8)
                .filter(|s| *s >= MAGIC_LEN && len <= MAX_PAYLOAD)
            else {
                break;
            };
            let framed = behind.range(start, end)?;
            let payload = &framed[4..framed.len() - 4];
            if framed[..4] != framed[framed.len() - 4..] || !more(start, payload) {
                break;
            }
            found.push((start, payload.to_vec()));
            end = start;
        }
        Ok(found)
    }

    fn broken(&self, at: u64, reason: &str) -> Corrupt {
        Corrupt {
            place: self.place.to_owned(),
            key: format!("byte {at}"),
            reason: reason.to_owned(),
        }
    }
}

/// Opens (creating if needed, `0600`) a file of the ledger's for reading and writing, without
/// truncating it or `O_APPEND`: appends write at an offset the ledger keeps.
pub(crate) fn open_private(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// A file's bytes from `start` to a fixed end, read backwards in chunks that grow with what is
/// held, so reading far back costs linear time.
struct Behind<'a> {
    file: &'a File,
    start: u64,
    bytes: Vec<u8>,
}

impl Behind<'_> {
    /// The first read's size: about twenty decisions.
    const CHUNK: u64 = 16 * 1024;

    /// The bytes from `from` to `to` (no further than the end).
    fn range(&mut self, from: u64, to: u64) -> Result<&[u8], LedgerError> {
        if from < self.start {
            let want = (self.start - from)
                .max(self.bytes.len() as u64)
                .max(Self::CHUNK);
            let new_start = self.start.saturating_sub(want);
            let mut bytes = vec![0u8; usize::try_from(self.start - new_start).unwrap_or(0)];
            self.file
                .read_exact_at(&mut bytes, new_start)
                .map_err(LedgerError::Read)?;
            bytes.extend_from_slice(&self.bytes);
            self.bytes = bytes;
            self.start = new_start;
        }
        let at = |offset: u64| usize::try_from(offset - self.start).unwrap_or(usize::MAX);
        self.bytes
            .get(at(from)..at(to))
            .ok_or_else(|| LedgerError::Read(std::io::ErrorKind::UnexpectedEof.into()))
    }
}

fn sync_error(path: &Path, source: std::io::Error) -> LedgerError {
    LedgerError::Sync {
        path: path.to_path_buf(),
        source,
    }
}

/// The bytes a payload of `len` takes in the file.
fn frame_len(len: usize) -> u64 {
    len as u64 + 8
}

/// Appends the payload `write` makes to `out`, framed by its length before and after.
pub(crate) fn framed(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    write(out);
    let len = u32::try_from(out.len() - at - 4).unwrap_or(u32::MAX);
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
}

/// The records of a log file in order, each payload with its offset, read through one buffer.
/// A framing that does not hold ends the read with one report naming where: nothing after it
/// can be told apart.
pub(crate) struct Records<'a> {
    reader: BufReader<ReadAt<'a>>,
    at: u64,
    end: u64,
    place: &'static str,
    /// Nothing more is read: the end, or a framing that did not hold.
    done: bool,
    /// Reported before anything else: the file is not of this format.
    foreign: Option<Corrupt>,
}

impl<'a> Records<'a> {
    fn new(log: &'a LogReader) -> Self {
        let (file, end) = (&*log.file, log.end);
        let mut magic = [0u8; 16];
        let foreign = end > 0
            && (end < MAGIC_LEN
                || file.read_exact_at(&mut magic, 0).is_err()
                || &magic != log.magic);
        let name = String::from_utf8_lossy(log.magic.trim_ascii_end()).into_owned();
        Records {
            // By offset, not through the file's own position, which the appender shares.
            reader: BufReader::with_capacity(
                1 << 20,
                ReadAt {
                    file,
                    at: MAGIC_LEN,
                    end,
                },
            ),
            at: MAGIC_LEN,
            end,
            place: log.place,
            done: foreign,
            foreign: foreign.then(|| Corrupt {
                place: log.place.to_owned(),
                key: "byte 0".to_owned(),
                reason: format!(
                    "not a {} file (no `{name}` header); nothing of it is read",
                    log.place
                ),
            }),
        }
    }

    fn broken(&mut self, reason: &str) -> Option<Read> {
        self.done = true;
        Some(Err(Corrupt {
            place: self.place.to_owned(),
            key: format!("byte {}", self.at),
            reason: format!("{reason}; the rest of the {} file is not read", self.place),
        }))
    }
}

impl Iterator for Records<'_> {
    type Item = Read;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(foreign) = self.foreign.take() {
            return Some(Err(foreign));
        }
        if self.done || self.at >= self.end {
            return None;
        }
        let mut head = [0u8; 4];
        if self.reader.read_exact(&mut head).is_err() {
            return self.broken("a record cut short");
        }
        let len = u32::from_le_bytes(head);
        if len > MAX_PAYLOAD || self.at + frame_len(len as usize) > self.end {
            return self.broken("a record's length runs past the file");
        }
        // Not zeroed first: the read fills it (zeroing fresh memory was a tenth of an audit).
        let mut payload = Vec::with_capacity(len as usize);
        let mut tail = [0u8; 4];
        let read = (&mut self.reader)
            .take(u64::from(len))
            .read_to_end(&mut payload);
        if !read.is_ok_and(|n| n == len as usize) || self.reader.read_exact(&mut tail).is_err() {
            return self.broken("a record cut short");
        }
        if tail != head {
            return self.broken("a record whose two lengths differ");
        }
        let at = self.at;
        self.at += frame_len(payload.len());
        Some(Ok((at, payload)))
    }
}

/// Reads a file by offset up to `end`.
struct ReadAt<'a> {
    file: &'a File,
    at: u64,
    end: u64,
}

impl std::io::Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.at)).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let read = self.file.read_at(&mut buf[..want], self.at)?;
        self.at += read as u64;
        Ok(read)
    }
}

/// Every record of the log file at `path` (of format `magic`), in order; a framing that does
/// not hold ends the read, with its report.
pub(crate) fn read_file(
    path: &Path,
    magic: &'static [u8; 16],
    place: &'static str,
) -> Result<Vec<Read>, LedgerError> {
    let file = File::open(path).map_err(|source| sync_error(path, source))?;
    let end = file
        .metadata()
        .map_err(|source| sync_error(path, source))?
        .len();
    let reader = LogReader {
        file: Arc::new(file),
        end,
        magic,
        place,
    };
    Ok(reader.records().collect())
}
