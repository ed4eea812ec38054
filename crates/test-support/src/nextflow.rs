//! What the Nextflow tools' tests run against: the real nf-core template committed under
//! `crates/nextflow/tests/fixtures`, the stand-in `nextflow` of `tests/fixtures` (it says it is
//! one), and nf-core from `.ci/nfcore.sh`'s virtual environment.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The nf-core pipeline template, as nf-core 4.2.1 made it (never edited: copy it).
pub fn nfcore_template() -> PathBuf {
    repo().join("crates/nextflow/tests/fixtures/nfcore-template")
}

/// The stand-in `nextflow` (absolute, symlinks resolved).
pub fn stand_in_nextflow() -> PathBuf {
    std::fs::canonicalize(repo().join("tests/fixtures/nextflow/nextflow"))
        .expect("tests/fixtures/nextflow/nextflow")
}

/// The `nf-core` program `.ci/nfcore.sh` installed (`CODARIS_NFCORE`, else its default). Not
/// installed, it fails the test under CI and is `None` (said on stderr) elsewhere.
pub fn nfcore_program() -> Option<PathBuf> {
    let dir = match std::env::var_os("CODARIS_NFCORE") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(&std::env::var_os("HOME").unwrap_or_default()).join(".cache/codaris-nfcore"),
    };
    let program = dir.join("venv/bin/nf-core");
    if program.is_file() {
        return Some(program);
    }
    assert!(
        std::env::var_os("CI").is_none_or(|ci| ci.is_empty()),
        "nf-core is not installed at {} (run .ci/nfcore.sh)",
        program.display()
    );
    eprintln!("skipped: nf-core is not installed at {}", program.display());
    None
}

/// Copies the directory tree `from` to `to` (files and directories).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The stand-in `nf-test` (absolute, symlinks resolved).
pub fn stand_in_nftest() -> PathBuf {
    std::fs::canonicalize(repo().join("tests/fixtures/nextflow/nf-test"))
        .expect("tests/fixtures/nextflow/nf-test")
}

/// A scenario file of the stand-ins (`tests/fixtures/nextflow/scenarios/NAME`).
pub fn stand_in_scenario(name: &str) -> PathBuf {
    repo().join("tests/fixtures/nextflow/scenarios").join(name)
}
