//! Provider keys out of the daemon's environment.
//!
//! A process's environment stays readable at `/proc/<pid>/environ` for its whole life: removing a
//! variable only edits the `environ` array, not the block the kernel shows. So when a key is in
//! the environment at start, `codarisd` hands the keys to a fresh image of itself through a pipe
//! and `exec`s without them; the new image reads the pipe and keeps the keys in memory only. It
//! also marks itself non-dumpable, so a process of the same user (a command the model wrote, run
//! without capabilities) can neither read its `/proc` files nor attach to it.
//!
//! This runs first in `main`, before any thread exists.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;

use codaris_agent::ProviderKind;

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

/// Names the descriptor the keys arrive on in the re-executed image.
pub const KEYS_FD_VAR: &str = "CODARIS_KEYS_FD";

/// Provider keys taken out of the environment; configuration reads them as if they were there.
#[derive(Default)]
pub struct HeldKeys(BTreeMap<String, OsString>);

impl std::fmt::Debug for HeldKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The names only: a key is never printed.
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl HeldKeys {
    pub fn get(&self, name: &str) -> Option<&OsString> {
        self.0.get(name)
    }
}

/// Makes sure no key is in this process's environment block, and returns the keys.
///
/// In the first image with a key present this does not return: it `exec`s the same program
/// without the keys. It returns an error only when that cannot be done; the caller decides
/// whether to go on.
pub fn withdraw() -> Result<HeldKeys, io::Error> {
    deny_inspection();
    if let Some(fd) = std::env::var_os(KEYS_FD_VAR) {
        return receive(&fd);
    }
    let present: Vec<(String, OsString)> = key_vars()
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|value| ((*name).to_owned(), value)))
        .collect();
    if present.is_empty() {
        return Ok(HeldKeys::default());
    }
    Err(reexec_without(&present))
}

/// No core dump and no `/proc/<pid>/{environ,mem,maps}` or ptrace for processes of the same
/// user without `CAP_SYS_PTRACE`.
fn deny_inspection() {
    if let Err(err) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        eprintln!("codarisd: warning: could not mark the daemon non-dumpable: {err}");
    }
}

/// Writes the keys to a pipe and replaces this image with the same program, keys removed and
/// the pipe's read end inherited. Returns only the error that stopped it.
fn reexec_without(keys: &[(String, OsString)]) -> io::Error {
    let (reader, writer) = match rustix::pipe::pipe() {
        Ok(ends) => ends,
        Err(err) => return err.into(),
    };
    let mut payload = Vec::new();
    for (name, value) in keys {
        payload.extend_from_slice(name.as_bytes());
        payload.push(b'=');
        payload.extend_from_slice(value.as_bytes());
        payload.push(0);
    }
    // A pipe holds at least 64 KiB, far more than two keys; past that the write would block.
    if payload.len() > 60 * 1024 {
        return io::Error::new(io::ErrorKind::InvalidInput, "provider keys too long");
    }
    let mut writer = std::fs::File::from(writer);
    if let Err(err) = writer.write_all(&payload) {
        return err;
    }
    drop(writer);
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| OsString::from("codarisd"));
    // The program's own path, so the new image keeps its name (`ps`, `pkill codarisd`): an
    // exec of `/proc/self/exe` would be named `exe`. That link is the fallback when the file
    // was replaced since this process started.
    let program = std::env::current_exe()
        .ok()
        .filter(|path| path.is_file())
        .unwrap_or_else(|| std::path::PathBuf::from("/proc/self/exe"));
    let mut command = std::process::Command::new(program);
    command.arg0(arg0).args(args);
    for (name, _) in keys {
        command.env_remove(name);
    }
    command.env(
        KEYS_FD_VAR,
        rustix::fd::AsRawFd::as_raw_fd(&reader).to_string(),
    );
    // `pipe` made both ends without close-on-exec, so the read end crosses the exec.
    command.exec()
}

/// Reads the keys the first image left on the descriptor `fd` names, then closes it.
fn receive(fd: &std::ffi::OsStr) -> Result<HeldKeys, io::Error> {
    let number: i32 = fd
        .to_str()
        .and_then(|text| text.parse().ok())
        .filter(|n| *n > 2)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "bad CODARIS_KEYS_FD"))?;
    let mut file = take_fd(number);
    let mut payload = Vec::new();
    file.read_to_end(&mut payload)?;
    drop(file);
    let mut keys = BTreeMap::new();
    for entry in payload.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let Some(split) = entry.iter().position(|b| *b == b'=') else {
            continue;
        };
        let name = String::from_utf8_lossy(&entry[..split]).into_owned();
        if key_vars().contains(&name.as_str()) {
            keys.insert(name, OsString::from_vec(entry[split + 1..].to_vec()));
        }
    }
    Ok(HeldKeys(keys))
}

#[expect(
    unsafe_code,
    reason = "the descriptor number arrives in the environment; only taking ownership of it is unsafe"
)]
fn take_fd(number: i32) -> std::fs::File {
    use std::os::fd::FromRawFd;
    // SAFETY: the previous image of this process created this pipe's read end for us, left it
    // open across `exec` and named it in `CODARIS_KEYS_FD`; nothing else in this process owns
    // it, and this runs once, before any thread, so nobody else can close or reuse the number.
    unsafe { std::fs::File::from_raw_fd(number) }
}
