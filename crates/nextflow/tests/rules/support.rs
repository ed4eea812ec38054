//! Helpers shared by the rules tests: the fixtures, copies of them, and writing edits.

use std::error::Error;
use std::path::{Path, PathBuf};

use codaris_nextflow::audit::FileEdit;

pub type TestResult = Result<(), Box<dyn Error>>;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn template() -> PathBuf {
    fixtures().join("nfcore-template")
}

/// A copy of `src` in a fresh temporary directory (the fixtures are never edited in place).
pub fn copy_tree(src: &Path) -> Result<tempfile::TempDir, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    copy_dir(src, dir.path())?;
    Ok(dir)
}

fn copy_dir(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let to = dst.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &to)?;
        } else {
            std::fs::copy(entry.path(), to)?;
        }
    }
    Ok(())
}

/// What the daemon does with a fix: check every file still holds `old`, then write them all.
pub fn write_edits(root: &Path, edits: &[FileEdit]) -> TestResult {
    for e in edits {
        let current = std::fs::read(root.join(&e.path)).ok();
        if current != e.old {
            return Err(format!("`{}` changed since the fix was computed", e.path).into());
        }
    }
    for e in edits {
        let path = root.join(&e.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, &e.new)?;
    }
    Ok(())
}

pub fn write(root: &Path, rel: &str, text: &str) -> TestResult {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)?;
    Ok(())
}
