//! Where nf-core and the fake nextflow are, and the environment the live tests run them in.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::Duration;

use codaris_nextflow::nfcore::NfCoreEnv;

pub type TestResult = Result<(), Box<dyn Error>>;

/// The repository's root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn fake_nextflow_dir() -> PathBuf {
    repo_root().join("tests/fixtures/nextflow")
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The cache `.ci/nfcore.sh` installs into: `CODARIS_NFCORE`, else its default.
fn nfcore_dir() -> PathBuf {
    match std::env::var_os("CODARIS_NFCORE") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(&std::env::var_os("HOME").unwrap_or_default()).join(".cache/codaris-nfcore"),
    }
}

/// The venv's `bin` when nf-core is installed. Missing: an error under CI, `None` (with the
/// reason printed) elsewhere.
pub fn nfcore_bin() -> Result<Option<PathBuf>, Box<dyn Error>> {
    let bin = nfcore_dir().join("venv/bin");
    if bin.join("nf-core").is_file() {
        return Ok(Some(bin));
    }
    let message = format!(
        "nf-core is not installed in {} (run .ci/nfcore.sh)",
        bin.display()
    );
    if std::env::var_os("CI").is_some_and(|ci| !ci.is_empty()) {
        return Err(message.into());
    }
    eprintln!("skipped: {message}");
    Ok(None)
}

/// An nf-core environment: the fake nextflow first on PATH, then the venv, then the
/// system's; HOME and NXF_HOME in `home`, so nothing of the machine's home is read or written.
pub fn nfcore_env(bin: &Path, home: &Path) -> Result<NfCoreEnv, Box<dyn Error>> {
    let nxf = home.join("nxf");
    std::fs::create_dir_all(&nxf)?;
    let path = format!(
        "{}:{}:{}",
        fake_nextflow_dir().display(),
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Ok(NfCoreEnv {
        program: bin.join("nf-core").to_string_lossy().into_owned(),
        env: vec![
            ("PATH".into(), path),
            ("HOME".into(), home.to_string_lossy().into_owned()),
            ("NXF_HOME".into(), nxf.to_string_lossy().into_owned()),
        ],
        timeout: Duration::from_secs(300),
    })
}

/// Copies a directory tree (files, directories and symlinks as they are).
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
