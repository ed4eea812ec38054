//! What the tests of outside programs share: where `.ci/mcp-peers.sh` installed them, and the
//! rule for when they are missing (a failure under CI, a note and a pass elsewhere).

use std::path::{Path, PathBuf};

/// The cache `.ci/mcp-peers.sh` installs into: `CODARIS_MCP_PEERS`, else its default.
pub fn peers_dir() -> PathBuf {
    match std::env::var_os("CODARIS_MCP_PEERS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let home = std::env::var_os("HOME").unwrap_or_default();
            Path::new(&home).join(".cache/codaris-mcp-peers")
        }
    }
}

/// The peers' directory when every one of `needed` (paths inside it) is there. When one is
/// missing: under CI (`CI` set) the test fails; elsewhere it says so and the caller returns.
pub fn installed(needed: &[&str]) -> Option<PathBuf> {
    let dir = peers_dir();
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|path| !dir.join(path).exists())
        .collect();
    if missing.is_empty() {
        return Some(dir);
    }
    let message = format!(
        "the MCP peers are not installed in {} (missing {}): run .ci/mcp-peers.sh",
        dir.display(),
        missing.join(", ")
    );
    if std::env::var_os("CI").is_some_and(|ci| !ci.is_empty()) {
        panic!("{message}");
    }
    eprintln!("skipped: {message}");
    None
}
