//! Launch directories built in a temp dir from the verbatim fixtures.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

pub type TestResult = Result<(), Box<dyn Error>>;

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs")
        .join(name)
}

pub fn fixture_text(name: &str) -> Result<String, Box<dyn Error>> {
    Ok(fs::read_to_string(fixture(name))?)
}

pub fn template() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nfcore-template")
}

/// A launch directory: `.nextflow/history` with `history`, `trace.txt` with `trace`.
pub struct Launch {
    pub dir: tempfile::TempDir,
}

impl Launch {
    pub fn new(history: &str, trace: Option<&str>) -> Result<Launch, Box<dyn Error>> {
        let dir = tempfile::tempdir()?;
        fs::create_dir_all(dir.path().join(".nextflow"))?;
        fs::write(dir.path().join(".nextflow/history"), history)?;
        if let Some(t) = trace {
            fs::write(dir.path().join("trace.txt"), t)?;
        }
        Ok(Launch { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `work/ab/cdef…` for a short hash `ab/cdef12`, with the given files.
    pub fn task(&self, hash: &str, files: &[(&str, &[u8])]) -> Result<PathBuf, Box<dyn Error>> {
        let (prefix, rest) = hash.split_once('/').ok_or("hash without /")?;
        let dir = self
            .path()
            .join("work")
            .join(prefix)
            .join(format!("{rest}{}", "0".repeat(30 - rest.len())));
        fs::create_dir_all(&dir)?;
        for (name, bytes) in files {
            fs::write(dir.join(name), bytes)?;
        }
        Ok(dir)
    }
}

/// One history row as Nextflow writes it (`Record.toList` joined by tabs).
pub fn history_row(name: &str, status: &str, duration: &str, session: &str) -> String {
    format!(
        "2026-12-01 10:00:00\t{duration}\t{name}\t{status}\t6b9515aba6\t{session}\tnextflow run main.nf -with-trace\n"
    )
}

pub const SESSION: &str = "e710da1b-ce06-482f-bbcf-987a507f85d1";
