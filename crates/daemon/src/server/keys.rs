//! Provider keys out of the daemon's environment.
//!
//! A process's environment stays readable at `/proc/<pid>/environ` for its whole life: removing a
//! variable only edits the `environ` array, not the block the kernel shows. So when a key is in
//! the environment at start, `codarisd` hands the keys to a fresh image of itself through a pipe
//! and `exec`s without them; the new image reads the pipe and keeps the keys in memory only. It
//! also marks itself non-dumpable, so a process of the same user (a command the model wrote, run
//! without capabilities) can neither read its `/proc` files nor attach to it. The mechanism is
//! `codaris-keys`, shared with the built-in MCP server's program.
//!
//! This runs first in `main`, before any thread exists.

use std::io;

use codaris_agent::ProviderKind;
pub use codaris_keys::{HeldKeys, KEYS_FD_VAR};

/// The variables that hold secrets: each wire format's provider key, as the agent names them,
/// then NCBI's API key and the Seqera access token (`[ncbi]`, `[seqera]`).
pub fn key_vars() -> [&'static str; ProviderKind::ALL.len() + 2] {
    let mut vars = [""; ProviderKind::ALL.len() + 2];
    for (slot, kind) in vars.iter_mut().zip(ProviderKind::ALL) {
        *slot = kind.api_key_env();
    }
    vars[ProviderKind::ALL.len()] = crate::config::ncbi::NCBI_API_KEY_VAR;
    vars[ProviderKind::ALL.len() + 1] = crate::config::seqera::TOWER_TOKEN_VAR;
    vars
}

/// Makes sure no key is in this process's environment block, and returns the keys.
///
/// In the first image with a key present this does not return: it `exec`s the same program
/// without the keys. It returns an error only when that cannot be done; the caller decides
/// whether to go on.
pub fn withdraw() -> Result<HeldKeys, io::Error> {
    if let Err(err) = codaris_keys::deny_inspection() {
        eprintln!("codarisd: warning: could not mark the daemon non-dumpable: {err}");
    }
    codaris_keys::withdraw(&key_vars())
}
