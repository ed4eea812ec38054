//! A daemon whose state directory disappears stops.
//!
//! The state directory is what a daemon serves: its socket, its pid file (and the lock on it),
//! its ledger. When the directory is deleted (a test's temp dir cleaned up, `rm -rf` by a
//! person) or replaced (moved away and made again, so another daemon may claim the new one), the
//! daemon has nothing left to serve, and nobody can reach it to stop it: its socket is gone.
//! So every few seconds the watcher looks at the directory and the pid file (two `lstat`s) and
//! compares their device and inode with what they were when the directory was claimed. When
//! either is gone or replaced it logs one warning and fires the normal shutdown.
//!
//! A normal shutdown waits for the calls in flight, and a turn waiting for a card's answer may
//! wait forever. With the directory gone nothing is left to keep durable, so a daemon still
//! running [`GRACE`] after the loss exits at once.

use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use codaris_paths::StateLayout;

use crate::server::shutdown::Shutdown;

/// How often the directory and the pid file are looked at.
pub const INTERVAL: Duration = Duration::from_secs(2);

/// How long a daemon whose directory is lost may take to stop in order before it exits.
pub const GRACE: Duration = Duration::from_secs(5);

/// What a file was when the directory was claimed: replacing it changes one of the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
}

/// Why the state directory no longer is this daemon's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lost {
    /// `path` no longer exists.
    Gone { path: PathBuf },
    /// `path` exists but is another file than the one claimed.
    Replaced { path: PathBuf },
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Gone { path } => write!(f, "`{}` is gone", path.display()),
            Self::Replaced { path } => write!(f, "`{}` was replaced", path.display()),
        }
    }
}

/// The state directory and its pid file as they were when claimed.
///
/// Both are held open: a file that is deleted but still open keeps its inode, so whatever is
/// made in its place later has another one (a freed inode number is often handed out again at
/// once).
#[derive(Debug)]
pub struct StateWatch {
    watched: [(PathBuf, FileId); 2],
    _held: [std::fs::File; 2],
}

impl StateWatch {
    /// Records the directory and pid file of `layout` as they are now; call it right after the
    /// claim, while they are this daemon's.
    pub fn new(layout: &StateLayout) -> std::io::Result<Self> {
        let dir = layout.dir().to_path_buf();
        let pid_file = layout.pid_file();
        let (dir_held, dir_id) = hold(&dir)?;
        let (pid_held, pid_id) = hold(&pid_file)?;
        Ok(Self {
            watched: [(dir, dir_id), (pid_file, pid_id)],
            _held: [dir_held, pid_held],
        })
    }

    /// Whether the directory and the pid file are still the ones claimed. A look that fails
    /// for another reason than absence (a permission changed) proves nothing and is not a loss.
    pub fn check(&self) -> Result<(), Lost> {
        for (path, claimed) in &self.watched {
            match file_id(path) {
                Ok(id) if id == *claimed => {}
                Ok(_) => return Err(Lost::Replaced { path: path.clone() }),
                Err(err)
                    if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) =>
                {
                    return Err(Lost::Gone { path: path.clone() });
                }
                Err(_) => {}
            }
        }
        Ok(())
    }

    /// Watches every `every` until the directory is lost, then fires `shutdown` (with one
    /// warning, unless a shutdown was already under way). Resolves `grace` later with the loss:
    /// a daemon that gets there did not stop in order in time.
    pub async fn lost(self, shutdown: Shutdown, every: Duration, grace: Duration) -> Lost {
        let lost = loop {
            tokio::time::sleep(every).await;
            if let Err(lost) = self.check() {
                break lost;
            }
        };
        // A normal stop removes the pid file itself as its last step: no warning for that.
        let stopping = tokio::select! {
            biased;
            () = shutdown.wait() => true,
            () = std::future::ready(()) => false,
        };
        if !stopping {
            tracing::warn!(%lost, "the state directory is no longer this daemon's; stopping");
            shutdown.trigger("state directory lost");
        }
        tokio::time::sleep(grace).await;
        lost
    }
}

/// Spawns the watcher for the daemon of `layout`: on a loss the daemon stops in order, and
/// exits [`GRACE`] later if it is still running.
pub fn spawn(watch: StateWatch, shutdown: Shutdown) {
    tokio::spawn(async move {
        let lost = watch.lost(shutdown, INTERVAL, GRACE).await;
        tracing::error!(%lost, grace = ?GRACE, "still running after the state directory was lost; exiting");
        std::process::exit(1);
    });
}

/// Opens `path` (read only, without following a symlink) and names the file it opened.
fn hold(path: &Path) -> std::io::Result<(std::fs::File, FileId)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(path)?;
    let meta = file.metadata()?;
    let id = FileId {
        dev: meta.dev(),
        ino: meta.ino(),
    };
    Ok((file, id))
}

fn file_id(path: &Path) -> std::io::Result<FileId> {
    // Not `metadata`: a symlink put in the directory's place is a replacement, not the same
    // directory.
    let meta = std::fs::symlink_metadata(path)?;
    Ok(FileId {
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

#[cfg(test)]
mod tests {
    use std::fs;

    use pretty_assertions::assert_eq;

    use super::*;

    fn claimed() -> (tempfile::TempDir, StateLayout, StateWatch) {
        let temp = tempfile::tempdir().unwrap();
        let layout = StateLayout::new(temp.path().join("state"));
        fs::create_dir(layout.dir()).unwrap();
        fs::write(layout.pid_file(), "1\n").unwrap();
        let watch = StateWatch::new(&layout).unwrap();
        (temp, layout, watch)
    }

    #[test]
    fn an_untouched_directory_is_kept_even_as_its_files_change() {
        let (_temp, layout, watch) = claimed();
        fs::write(layout.pid_file(), "2\n").unwrap();
        fs::write(layout.log(), "a line\n").unwrap();
        assert_eq!(watch.check(), Ok(()));
    }

    #[test]
    fn a_removed_directory_is_gone() {
        let (_temp, layout, watch) = claimed();
        fs::remove_dir_all(layout.dir()).unwrap();
        assert_eq!(
            watch.check(),
            Err(Lost::Gone {
                path: layout.dir().to_path_buf()
            })
        );
    }

    #[test]
    fn a_directory_moved_away_and_made_again_is_replaced() {
        let (temp, layout, watch) = claimed();
        fs::rename(layout.dir(), temp.path().join("old")).unwrap();
        fs::create_dir(layout.dir()).unwrap();
        fs::write(layout.pid_file(), "1\n").unwrap();
        assert_eq!(
            watch.check(),
            Err(Lost::Replaced {
                path: layout.dir().to_path_buf()
            })
        );
    }

    #[test]
    fn a_symlink_in_the_directorys_place_is_replaced() {
        let (temp, layout, watch) = claimed();
        fs::rename(layout.dir(), temp.path().join("old")).unwrap();
        std::os::unix::fs::symlink(temp.path().join("old"), layout.dir()).unwrap();
        assert_eq!(
            watch.check(),
            Err(Lost::Replaced {
                path: layout.dir().to_path_buf()
            })
        );
    }

    #[test]
    fn a_removed_or_replaced_pid_file_is_lost() {
        let (_temp, layout, watch) = claimed();
        fs::remove_file(layout.pid_file()).unwrap();
        assert_eq!(
            watch.check(),
            Err(Lost::Gone {
                path: layout.pid_file()
            })
        );
        fs::write(layout.pid_file(), "1\n").unwrap();
        assert_eq!(
            watch.check(),
            Err(Lost::Replaced {
                path: layout.pid_file()
            })
        );
    }

    #[tokio::test]
    async fn a_lost_directory_fires_the_shutdown() {
        let (_temp, layout, watch) = claimed();
        let shutdown = Shutdown::new();
        let every = Duration::from_millis(10);
        let watcher = tokio::spawn(watch.lost(shutdown.clone(), every, Duration::ZERO));
        fs::remove_dir_all(layout.dir()).unwrap();
        tokio::time::timeout(Duration::from_secs(30), shutdown.wait())
            .await
            .unwrap();
        let lost = tokio::time::timeout(Duration::from_secs(30), watcher)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            lost,
            Lost::Gone {
                path: layout.dir().to_path_buf()
            }
        );
    }
}
