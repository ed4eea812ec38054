//! Secrets out of a process's environment block.
//!
//! A process's environment stays readable at `/proc/<pid>/environ` for its whole life: removing a
//! variable only edits the `environ` array, not the block the kernel shows. So when a secret is in
//! the environment at start, the program hands the secrets to a fresh image of itself through a
//! pipe and `exec`s without them; the new image reads the pipe and keeps them in memory only.
//! [`deny_inspection`] also marks the process non-dumpable, so a process of the same user (a
//! command the model wrote, run without capabilities) can neither read its `/proc` files nor
//! attach to it.
//!
//! Shared by `codarisd` (the provider keys, NCBI's key, the Seqera token) and the built-in MCP
//! server's own program `codaris-seqera-mcp` (the Seqera token the daemon hands it), so neither
//! links the other.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;

/// Names the descriptor the keys arrive on in the re-executed image.
pub const KEYS_FD_VAR: &str = "CODARIS_KEYS_FD";

/// Secrets taken out of the environment; configuration reads them as if they were there.
#[derive(Default)]
pub struct HeldKeys(BTreeMap<String, OsString>);

impl std::fmt::Debug for HeldKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The names only: a secret is never printed.
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl HeldKeys {
    pub fn get(&self, name: &str) -> Option<&OsString> {
        self.0.get(name)
    }
}

/// Makes sure none of `vars` is in this process's environment block, and returns their values.
///
/// In the first image with one of them present this does not return: it `exec`s the same
/// program without them. It returns an error only when that cannot be done; the caller decides
/// whether to go on. Call it first in `main`, before any thread exists, after
/// [`deny_inspection`].
pub fn withdraw(vars: &[&str]) -> Result<HeldKeys, io::Error> {
    if let Some(fd) = std::env::var_os(KEYS_FD_VAR) {
        return receive(&fd, vars);
    }
    let present: Vec<(String, OsString)> = vars
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|value| ((*name).to_owned(), value)))
        .collect();
    if present.is_empty() {
        return Ok(HeldKeys::default());
    }
    Err(reexec_without(&present))
}

/// No core dump and no `/proc/<pid>/{environ,mem,maps}` or ptrace for processes of the same
/// user without `CAP_SYS_PTRACE`. The caller words the warning when this fails.
pub fn deny_inspection() -> Result<(), io::Error> {
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        .map_err(io::Error::from)
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
        return io::Error::new(io::ErrorKind::InvalidInput, "keys too long");
    }
    let mut writer = std::fs::File::from(writer);
    if let Err(err) = writer.write_all(&payload) {
        return err;
    }
    drop(writer);
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_default();
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
fn receive(fd: &std::ffi::OsStr, vars: &[&str]) -> Result<HeldKeys, io::Error> {
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
        if vars.contains(&name.as_str()) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_none_of_the_variables_set_nothing_is_held_and_nothing_is_printed() {
        let held = withdraw(&["CODARIS_KEYS_TEST_NEVER_SET_4b1f"]);
        let Ok(held) = held else {
            panic!("nothing to withdraw is no error");
        };
        assert!(held.get("CODARIS_KEYS_TEST_NEVER_SET_4b1f").is_none());
        assert_eq!(format!("{held:?}"), "{}");
    }
}
