//! The ledger's journal: an append-only file of JSON lines that makes every record durable with
//! one `write` and one `fdatasync` per group commit.
//!
//! sled holds the records for reading; the journal is what a crash is recovered from. Each line
//! is a whole record (an [`ExportLine`](crate::ExportLine) with its chain link); a later line for
//! the same key replaces an earlier one. At open, the journal is replayed into sled, sled is
//! flushed and its data file synced, and the journal starts empty again. While the daemon runs,
//! the journal is compacted the same way once it outgrows [`COMPACT_AT`].
//!
//! The lines only ever end with a whole line; after them the file holds zeros written ahead
//! ([`AHEAD`]), so that most appends overwrite space the file already has. An append that fails
//! part-way (a full disk, an I/O error from `write` or from `fdatasync`) is cut back to the
//! length before it, durably, before anything else is written; a journal whose cut failed
//! refuses every append until the cut succeeds. A crash mid-append leaves a torn last line,
//! which [`Journal::lines`] cuts off before the first new append: otherwise the next line would
//! be glued to it, and both would be unreadable for ever.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::LedgerError;

/// A journal larger than this is folded into sled and emptied at the next commit.
pub const COMPACT_AT: u64 = 64 * 1024 * 1024;

/// What the journal writes to: the file, or a stand-in that fails on purpose in tests.
pub trait Sink: std::fmt::Debug {
    /// Writes `bytes` at `offset`, growing the file when they reach past its end.
    fn write_at(&mut self, bytes: &[u8], offset: u64) -> std::io::Result<()>;
    fn sync_data(&self) -> std::io::Result<()>;
    fn set_len(&self, len: u64) -> std::io::Result<()>;
    /// Everything written so far.
    fn read_all(&mut self) -> std::io::Result<Vec<u8>>;
    fn len(&self) -> std::io::Result<u64>;
}

impl Sink for File {
    fn write_at(&mut self, bytes: &[u8], offset: u64) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(self, bytes, offset)
    }

    fn sync_data(&self) -> std::io::Result<()> {
        File::sync_data(self)
    }

    fn set_len(&self, len: u64) -> std::io::Result<()> {
        File::set_len(self, len)
    }

    fn read_all(&mut self) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.seek(SeekFrom::Start(0))?;
        self.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn len(&self) -> std::io::Result<u64> {
        self.metadata().map(|m| m.len())
    }
}

#[derive(Debug)]
pub struct Journal<S: Sink = File> {
    path: PathBuf,
    sink: S,
    /// The length of the whole lines written so far: where the next append writes, and where a
    /// failed one is cut back to.
    len: u64,
    /// The file's length: `len` and the zeros written ahead of it ([`AHEAD`]).
    size: u64,
    /// `len` has been found by reading the file ([`Journal::lines`]): before that the file may
    /// end in zeros written ahead, or in a torn line.
    scanned: bool,
    /// A failed append could not be cut back; nothing is written until it is.
    uncut: bool,
}

/// Zeros written past the last line whenever an append reaches the end of the file. An append
/// into space already written changes only data, so its `fdatasync` does not also write the
/// file's inode for a new length: measured with 700-byte writes, p50 197–224 µs against
/// 226–258 µs for an append that grows the file, on a two-core VM with ext4. The append that
/// writes the zeros costs one write of this size more, once every few hundred records. The
/// zeros are never read as lines (a line ends with a newline), and [`Journal::lines`] cuts them
/// off at open like a torn line.
pub const AHEAD: usize = 512 * 1024;

impl Journal<File> {
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        // Not `O_APPEND`: appends write at the end of the lines, into zeros written ahead.
        let file = crate::log_file::open_private(path).map_err(|source| LedgerError::Sync {
            path: path.to_path_buf(),
            source,
        })?;
        Journal::with_sink(path, file)
    }
}

impl<S: Sink> Journal<S> {
    pub fn with_sink(path: &Path, sink: S) -> Result<Self, LedgerError> {
        let len = sink.len().map_err(|source| LedgerError::Sync {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            sink,
            len,
            size: len,
            scanned: false,
            uncut: false,
        })
    }

    /// Every complete line with its byte offset. A last line without its newline was torn by a
    /// crash before it was acknowledged: it is cut off the file, durably, and not returned, and
    /// so are the zeros written ahead of the last line.
    pub fn lines(&mut self) -> Result<Vec<(u64, Vec<u8>)>, LedgerError> {
        let bytes = self.sink.read_all().map_err(|source| self.error(source))?;
        let mut lines = Vec::new();
        let mut whole = 0u64;
        for chunk in bytes.split_inclusive(|b| *b == b'\n') {
            if !chunk.ends_with(b"\n") {
                break;
            }
            // Zeros before a line are zeros written ahead that another writer appended after
            // (the ledger's own lines always start where its last one ended): not a part of it.
            let body = &chunk[..chunk.len() - 1];
            let zeros = body.iter().take_while(|b| **b == 0).count();
            if zeros < body.len() {
                lines.push((whole + zeros as u64, body[zeros..].to_vec()));
            }
            whole += chunk.len() as u64;
        }
        self.len = whole;
        self.size = bytes.len() as u64;
        if whole < self.size {
            self.cut()?;
        }
        self.scanned = true;
        Ok(lines)
    }

    /// Appends the lines and waits until they are on the device. On failure the journal is cut
    /// back to what it held before, and nothing of these lines remains.
    pub fn append(&mut self, lines: &[&[u8]]) -> Result<(), LedgerError> {
        if !self.scanned {
            // Where the lines end is known only once the file is read.
            self.lines()?;
        }
        if self.uncut {
            self.cut()?;
        }
        let written: usize = lines.iter().map(|l| l.len() + 1).sum();
        let ahead = if self.len + written as u64 > self.size {
            AHEAD
        } else {
            0
        };
        let mut buffer = Vec::with_capacity(written + ahead);
        for line in lines {
            buffer.extend_from_slice(line);
            buffer.push(b'\n');
        }
        buffer.resize(written + ahead, 0);
        let mut stored = self.write_synced(&buffer);
        if ahead > 0
            && let Err(error) = &stored
            && error.kind() == std::io::ErrorKind::StorageFull
        {
            // A disk too full for the zeros may still hold the lines: they go alone. (A cut
            // that fails keeps this error, and is tried again below.)
            if self.cut().is_ok() {
                buffer.truncate(written);
                stored = self.write_synced(&buffer);
            }
        }
        match stored {
            Ok(()) => {
                self.size = self.size.max(self.len + buffer.len() as u64);
                self.len += written as u64;
                Ok(())
            }
            Err(source) => {
                // Whatever part of the buffer reached the file must not stay: the writers are
                // told the append failed, and a torn line would swallow the next one. A failed
                // cut is retried before the next append.
                let _ = self.cut();
                Err(self.error(source))
            }
        }
    }

    /// Writes `buffer` where the lines end and waits until it is on the device.
    fn write_synced(&mut self, buffer: &[u8]) -> std::io::Result<()> {
        self.sink
            .write_at(buffer, self.len)
            .and_then(|()| self.sink.sync_data())
    }

    /// The length of the whole lines in the journal.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Empties the journal, durably. Only after what it held is durable elsewhere.
    pub fn truncate(&mut self) -> Result<(), LedgerError> {
        self.len = 0;
        self.cut()
    }

    /// Cuts the file back to `len`, durably (the zeros ahead go too; the next append writes
    /// them again).
    fn cut(&mut self) -> Result<(), LedgerError> {
        let cut = self
            .sink
            .set_len(self.len)
            .and_then(|()| self.sink.sync_data());
        self.uncut = cut.is_err();
        if !self.uncut {
            self.size = self.len;
        }
        cut.map_err(|source| self.error(source))
    }

    fn error(&self, source: std::io::Error) -> LedgerError {
        LedgerError::Sync {
            path: self.path.clone(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{AHEAD, Journal, Sink};
    use pretty_assertions::assert_eq;
    use std::cell::{Cell, RefCell};
    use std::io::{Error, ErrorKind};
    use std::path::Path;
    use std::rc::Rc;

    /// A file in memory whose writes and syncs fail on demand, as a full disk or a failing
    /// device makes them fail: a write stores what fits, then errors.
    #[derive(Debug, Default, Clone)]
    struct FakeFile {
        bytes: Rc<RefCell<Vec<u8>>>,
        /// Bytes a write may still store before the "disk" is full.
        room: Rc<Cell<Option<usize>>>,
        fail_sync: Rc<Cell<bool>>,
        fail_set_len: Rc<Cell<bool>>,
    }

    impl Sink for FakeFile {
        fn write_at(&mut self, bytes: &[u8], offset: u64) -> std::io::Result<()> {
            let offset = usize::try_from(offset).map_err(Error::other)?;
            let mut file = self.bytes.borrow_mut();
            // Room counts only the bytes that grow the file, as a full disk does.
            let growth = (offset + bytes.len()).saturating_sub(file.len().max(offset));
            let fits = self
                .room
                .get()
                .map_or(bytes.len(), |room| bytes.len() - growth + room.min(growth));
            if file.len() < offset + fits {
                file.resize(offset + fits, 0);
            }
            file[offset..offset + fits].copy_from_slice(&bytes[..fits]);
            if let Some(room) = self.room.get() {
                self.room.set(Some(room - room.min(growth)));
            }
            if fits < bytes.len() {
                return Err(Error::from(ErrorKind::StorageFull));
            }
            Ok(())
        }

        fn sync_data(&self) -> std::io::Result<()> {
            if self.fail_sync.get() {
                return Err(Error::other("EIO"));
            }
            Ok(())
        }

        fn set_len(&self, len: u64) -> std::io::Result<()> {
            if self.fail_set_len.get() {
                return Err(Error::other("EIO"));
            }
            let mut bytes = self.bytes.borrow_mut();
            let len = usize::try_from(len).map_err(Error::other)?;
            if let Some(room) = self.room.get() {
                self.room.set(Some(room + bytes.len().saturating_sub(len)));
            }
            bytes.resize(len, 0);
            Ok(())
        }

        fn read_all(&mut self) -> std::io::Result<Vec<u8>> {
            Ok(self.bytes.borrow().clone())
        }

        fn len(&self) -> std::io::Result<u64> {
            Ok(self.bytes.borrow().len() as u64)
        }
    }

    fn journal(file: &FakeFile) -> Result<Journal<FakeFile>, Box<dyn std::error::Error>> {
        Ok(Journal::with_sink(Path::new("fake.journal"), file.clone())?)
    }

    /// The file's text up to the zeros written ahead of its lines.
    fn text(file: &FakeFile) -> String {
        String::from_utf8_lossy(codaris_test_support::journal_lines(&file.bytes.borrow()))
            .into_owned()
    }

    /// A line longer than the zeros written ahead of the last one: its append grows the file.
    fn longer_than_ahead() -> Vec<u8> {
        vec![b'x'; 2 * AHEAD]
    }

    #[test]
    fn a_write_that_runs_out_of_space_is_cut_back_and_the_retry_is_whole()
    -> Result<(), Box<dyn std::error::Error>> {
        let file = FakeFile::default();
        let mut journal = journal(&file)?;
        journal.append(&[b"{\"a\":1}"])?;
        file.room.set(Some(4));
        assert!(
            journal
                .append(&[&longer_than_ahead(), b"{\"c\":3}"])
                .is_err()
        );
        assert_eq!(text(&file), "{\"a\":1}\n", "the torn bytes are gone");
        file.room.set(None);
        journal.append(&[b"{\"d\":4}"])?;
        assert_eq!(text(&file), "{\"a\":1}\n{\"d\":4}\n");
        assert_eq!(journal.len(), 16);
        Ok(())
    }

    #[test]
    fn appends_overwrite_the_zeros_written_ahead_and_only_a_longer_one_grows_the_file()
    -> Result<(), Box<dyn std::error::Error>> {
        let file = FakeFile::default();
        let mut journal = journal(&file)?;
        journal.append(&[b"{\"a\":1}"])?;
        let size = file.bytes.borrow().len();
        assert_eq!(size, 8 + AHEAD, "the zeros are written with the first line");
        for n in 0..100 {
            journal.append(&[format!("{{\"n\":{n}}}").as_bytes()])?;
        }
        assert_eq!(
            file.bytes.borrow().len(),
            size,
            "appends fill the space ahead"
        );
        journal.append(&[&longer_than_ahead()])?;
        assert_eq!(
            file.bytes.borrow().len() as u64,
            journal.len() + AHEAD as u64,
            "a line past the end writes new zeros after itself"
        );
        // Read again at the next open: the lines, and not the zeros.
        let mut reopened = Journal::with_sink(Path::new("fake.journal"), file.clone())?;
        let lines = reopened.lines()?;
        assert_eq!(lines.len(), 102);
        assert_eq!(lines[1].1, b"{\"n\":0}".to_vec());
        assert_eq!(
            file.bytes.borrow().len() as u64,
            reopened.len(),
            "zeros cut"
        );
        Ok(())
    }

    #[test]
    fn a_disk_too_full_for_the_zeros_ahead_still_takes_the_lines()
    -> Result<(), Box<dyn std::error::Error>> {
        let file = FakeFile::default();
        let mut journal = journal(&file)?;
        file.room.set(Some(100));
        journal.append(&[b"{\"a\":1}"])?;
        assert_eq!(text(&file), "{\"a\":1}\n");
        assert_eq!(
            file.bytes.borrow().len(),
            8,
            "no zeros ahead: there was no room"
        );
        journal.append(&[b"{\"b\":2}"])?;
        assert_eq!(text(&file), "{\"a\":1}\n{\"b\":2}\n");
        assert_eq!(journal.len(), 16);
        Ok(())
    }

    #[test]
    fn an_append_to_a_journal_not_yet_read_goes_after_its_lines_not_after_its_zeros()
    -> Result<(), Box<dyn std::error::Error>> {
        let file = FakeFile::default();
        journal(&file)?.append(&[b"{\"a\":1}"])?;
        // Opened again, and appended to without reading it first.
        journal(&file)?.append(&[b"{\"b\":2}"])?;
        let lines = journal(&file)?.lines()?;
        assert_eq!(
            lines,
            vec![(0, b"{\"a\":1}".to_vec()), (8, b"{\"b\":2}".to_vec())]
        );
        Ok(())
    }

    #[test]
    fn a_failed_sync_is_cut_back_too() -> Result<(), Box<dyn std::error::Error>> {
        let file = FakeFile::default();
        let mut journal = journal(&file)?;
        journal.append(&[b"{\"a\":1}"])?;
        file.fail_sync.set(true);
        assert!(journal.append(&[b"{\"b\":2}"]).is_err());
        // The cut's own sync fails as well: nothing more is written until it succeeds.
        assert!(journal.append(&[b"{\"c\":3}"]).is_err());
        file.fail_sync.set(false);
        journal.append(&[b"{\"e\":5}"])?;
        assert_eq!(text(&file), "{\"a\":1}\n{\"e\":5}\n");
        Ok(())
    }

    #[test]
    fn a_cut_that_fails_blocks_appends_until_it_succeeds() -> Result<(), Box<dyn std::error::Error>>
    {
        let file = FakeFile::default();
        let mut journal = journal(&file)?;
        journal.append(&[b"{\"a\":1}"])?;
        file.room.set(Some(3));
        file.fail_set_len.set(true);
        assert!(journal.append(&[&longer_than_ahead()]).is_err());
        file.room.set(None);
        assert!(journal.append(&[b"{\"c\":3}"]).is_err());
        assert_eq!(
            text(&file),
            format!("{{\"a\":1}}\n{}", "x".repeat(AHEAD + 3)),
            "nothing was glued to the torn bytes"
        );
        file.fail_set_len.set(false);
        journal.append(&[b"{\"d\":4}"])?;
        assert_eq!(text(&file), "{\"a\":1}\n{\"d\":4}\n");
        Ok(())
    }

    #[test]
    fn a_torn_tail_left_by_a_crash_is_cut_at_open() -> Result<(), Box<dyn std::error::Error>> {
        let file = FakeFile::default();
        file.bytes
            .borrow_mut()
            .extend_from_slice(b"{\"a\":1}\n\n{\"b\":2}\n{\"c\"");
        let mut journal = journal(&file)?;
        let lines = journal.lines()?;
        assert_eq!(
            lines,
            vec![(0, b"{\"a\":1}".to_vec()), (9, b"{\"b\":2}".to_vec())]
        );
        assert_eq!(text(&file), "{\"a\":1}\n\n{\"b\":2}\n");
        journal.append(&[b"{\"d\":4}"])?;
        assert_eq!(journal.lines()?.len(), 3, "the next line stands alone");
        Ok(())
    }
}
