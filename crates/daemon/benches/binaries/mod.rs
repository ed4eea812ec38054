//! The release binaries for the benches that exec them: where they are, `codarisd` started on a
//! state directory of its own (a clean environment, stdio discarded) and stopped, and what
//! `/proc` says of a process. Run `cargo build --release --bins` first so that `codaris` sits
//! beside the benchmarked `codarisd`.

#![allow(dead_code, reason = "each bench uses a part of it")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A binary beside the benchmarked `codarisd`.
pub fn bin(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_codarisd"))
        .parent()
        .unwrap()
        .join(name)
}

/// `codarisd` on `state_dir`, with `config` as its configuration file and `env` besides; it is
/// not waited for (see [`wait_serving`]).
pub fn spawn(state_dir: &Path, config: &Path, env: &[(&str, &str)]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_codarisd"))
        .env_clear()
        .envs(env.iter().copied())
        .env("CODARIS_STATE_DIR", state_dir)
        .env("CODARIS_CONFIG", config)
        .env("HOME", state_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Returns once the daemon on `state_dir` answers a connection, polling every `poll` (which
/// bounds the error of a start-up time measured around it); a daemon that does not start
/// within 30 s fails the bench rather than hanging it.
pub fn wait_serving(state_dir: &Path, poll: Duration) {
    let socket = state_dir.join("codaris.sock");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "codarisd did not start on {}",
            state_dir.display()
        );
        std::thread::sleep(poll);
    }
}

/// Stops a daemon as the service manager would (SIGTERM) and reaps it.
pub fn stop(mut child: Child) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    child.wait().unwrap();
}

/// A `/proc/<pid>/status` figure in KiB: `VmRSS` (resident now) or `VmHWM` (its peak).
pub fn proc_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}
