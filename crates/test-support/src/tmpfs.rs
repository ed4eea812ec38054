//! A small tmpfs, for the tests of what happens when the disk fills up.
//!
//! Mounting one needs root. Without it a test fails under CI (`CI=true`), where it must run,
//! and is skipped elsewhere, saying why.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted on a directory, unmounted when dropped.
#[derive(Debug)]
pub struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount` reads it: `8m`) on `dir`, creating `dir`; `Err` says
    /// why it could not.
    pub fn mount(dir: &Path, size: &str) -> Result<Tmpfs, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("mounting a tmpfs needs root".to_owned());
        }
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let output = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(Tmpfs {
            path: dir.to_path_buf(),
        })
    }

    /// [`Tmpfs::mount`], or `None` after saying why `test` is skipped; under CI a tmpfs that
    /// cannot be mounted fails the test instead.
    pub fn mount_or_skip(dir: &Path, size: &str, test: &str) -> Option<Tmpfs> {
        match Tmpfs::mount(dir, size) {
            Ok(tmpfs) => Some(tmpfs),
            Err(reason) if std::env::var("CI").as_deref() == Ok("true") => {
                panic!("CI must run {test}, but {reason}")
            }
            Err(reason) => {
                eprintln!("SKIPPED {test}: {reason}");
                None
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// Writes `path` until the file system has no room left, down to the last byte it takes, and
/// returns the file (truncating it gives the room back).
pub fn fill(path: &Path) -> std::fs::File {
    let mut file = std::fs::File::create(path).expect("create the filler");
    let mut chunk = vec![0u8; 64 * 1024];
    while !chunk.is_empty() {
        match file.write(&chunk) {
            Ok(0) | Err(_) => {
                let half = chunk.len() / 2;
                chunk.truncate(half);
            }
            Ok(_) => {}
        }
    }
    let _ = file.sync_all();
    file
}
