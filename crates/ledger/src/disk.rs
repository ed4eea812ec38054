//! How a write into sled outside the journal becomes durable: sled flushed, then its data file
//! `fdatasync`ed.
//!
//! sled 0.34 can wait for ever in `flush` after one of its writes failed (a full disk): a write
//! done on its thread pool from `exit_reservation` stores the error but never wakes the
//! threads waiting for the data to be written (`logger.rs`; its other paths do wake them). A
//! daemon whose disk filled hung there, its runtime's workers blocked. So a flush runs on a
//! thread of its own, and while it lasts the waiter writes a tiny probe record every
//! [`PROBE_EVERY`]: a write finds the error sled stored, refuses, and wakes the waiting flush
//! as it does, which then returns the error. sled can also strand a flush with no error at all:
//! a value large enough for a blob file of its own, whose write fails, leaves its reservation
//! in the log buffer open, and that buffer is never written (seen with a full tmpfs). A flush
//! that outlasts [`FLUSH_DEADLINE`] is therefore reported as failed, and every later one
//! refused at once, until a restart opens the ledger again (and replays the journal); such a
//! sled would also wait for ever when dropped, so the ledger then keeps it open until the
//! process ends ([`Disk::is_stuck`]).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use crate::error::LedgerError;

#[derive(Debug)]
pub(crate) struct Disk {
    /// sled's data file inside the ledger directory, named in errors.
    data_path: PathBuf,
    data_file: File,
    /// Where the probe record is written while a flush is waited for.
    probe: sled::Tree,
    /// A flush outlived [`FLUSH_DEADLINE`]: sled is stuck, and no flush is waited for again.
    stuck: AtomicBool,
    /// A flush returned an error: sled keeps it, and refuses every write after it.
    failed: AtomicBool,
}

/// How long a flush of sled with no error is waited for. A healthy flush writes a few
/// megabytes of log at most and takes milliseconds, a slow disk's a second or two.
pub(crate) const FLUSH_DEADLINE: Duration = Duration::from_secs(10);

/// How often a flush that has not returned is probed with a write.
pub(crate) const PROBE_EVERY: Duration = Duration::from_millis(200);

/// The tree and key of the probe record (an empty value, written again and again).
const PROBE_TREE: &str = "flush_probe";
const PROBE_KEY: &[u8] = b"probe";

impl Disk {
    /// Opens sled's data file in the ledger directory `path` of `db` (sled must have created
    /// it).
    pub(crate) fn open(path: &Path, db: &sled::Db) -> Result<Self, LedgerError> {
        let data_path = path.join("db");
        let data_file = File::open(&data_path).map_err(|source| LedgerError::Sync {
            path: data_path.clone(),
            source,
        })?;
        Ok(Self {
            data_path,
            data_file,
            probe: db.open_tree(PROBE_TREE)?,
            stuck: AtomicBool::new(false),
            failed: AtomicBool::new(false),
        })
    }

    /// Flushes sled (every tree: a tree's flush is the whole database's) and syncs its data
    /// file: when this returns, everything written to sled before it is on the device.
    pub(crate) fn sync(&self, tree: &sled::Tree) -> Result<(), LedgerError> {
        self.flush(tree)?;
        self.sync_data_file()
    }

    /// Flushes sled (see the module's header for why on a thread of its own, probed).
    pub(crate) fn flush(&self, tree: &sled::Tree) -> Result<(), LedgerError> {
        let tree = tree.clone();
        self.wait_for(move || tree.flush().map(drop), FLUSH_DEADLINE)
    }

    /// Runs `flush` on a thread of its own and waits for it, probing sled while it lasts, up
    /// to `deadline` while sled reports no error.
    fn wait_for(
        &self,
        flush: impl FnOnce() -> sled::Result<()> + Send + 'static,
        deadline: Duration,
    ) -> Result<(), LedgerError> {
        if self.stuck.load(Ordering::SeqCst) {
            return Err(self.stuck_error());
        }
        let (done, flushed) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("ledger-flush".to_owned())
            .spawn(move || {
                // The waiter may have given up: then nobody reads the result.
                let _ = done.send(flush());
            })
            .map_err(|source| LedgerError::Sync {
                path: self.data_path.clone(),
                source,
            })?;
        let started = Instant::now();
        let failed = |error: sled::Error| {
            self.failed.store(true, Ordering::SeqCst);
            LedgerError::from(error)
        };
        loop {
            match flushed.recv_timeout(PROBE_EVERY) {
                Ok(result) => return result.map_err(failed),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
            // Refused, the probe has woken the flush, which now returns sled's error.
            if let Err(error) = self.probe.insert(PROBE_KEY, &[] as &[u8]) {
                return match flushed.recv_timeout(PROBE_EVERY) {
                    Ok(result) => result.map_err(failed),
                    Err(_) => Err(failed(error)),
                };
            }
            if started.elapsed() >= deadline {
                break;
            }
        }
        self.stuck.store(true, Ordering::SeqCst);
        Err(self.stuck_error())
    }

    /// A flush was given up on: sled would also wait for ever to flush when dropped.
    pub(crate) fn is_stuck(&self) -> bool {
        self.stuck.load(Ordering::SeqCst)
    }

    /// A flush failed: sled keeps the error, and refuses every write of this handle after it.
    pub(crate) fn has_failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    fn stuck_error(&self) -> LedgerError {
        LedgerError::Sync {
            path: self.data_path.clone(),
            source: std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "sled did not finish writing its log within {} s; nothing more is written \
                     until codarisd is restarted",
                    FLUSH_DEADLINE.as_secs()
                ),
            ),
        }
    }

    pub(crate) fn sync_data_file(&self) -> Result<(), LedgerError> {
        self.data_file
            .sync_data()
            .map_err(|source| LedgerError::Sync {
                path: self.data_path.clone(),
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Disk;
    use crate::error::LedgerError;

    #[test]
    fn a_flush_that_never_ends_on_a_healthy_sled_fails_after_its_deadline_and_every_later_one_at_once()
     {
        let temp = tempfile::tempdir().unwrap();
        let db = sled::open(temp.path().join("ledger")).unwrap();
        let disk = Disk::open(&temp.path().join("ledger"), &db).unwrap();
        assert!(disk.sync(&db).is_ok(), "a healthy flush");

        // sled's flush after a failed write: it waits for a wake-up that never comes.
        let (_never, hang) = std::sync::mpsc::channel::<()>();
        let stuck = disk.wait_for(
            move || {
                let _ = hang.recv();
                Ok(())
            },
            Duration::from_millis(500),
        );
        let message = match stuck {
            Err(LedgerError::Sync { source, .. }) => source.to_string(),
            other => panic!("{other:?}"),
        };
        assert!(message.contains("restarted"), "{message}");
        assert!(disk.is_stuck());

        let started = std::time::Instant::now();
        assert!(disk.sync(&db).is_err(), "refused at once, sled is stuck");
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
