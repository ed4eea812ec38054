//! Running an external program (`nf-core`, `nextflow`, `git`) behind one small trait.
//!
//! The domain tools never spawn a process themselves: they build an [`Invocation`] and hand
//! it to a [`Runner`]. The daemon provides the runner (later through its sandbox); tests and
//! simple hosts use [`ProcessRunner`], which runs the program with `std::process` in a
//! process group of its own, bounds what it keeps of stdout and stderr, and kills the whole
//! group on timeout and once the program has exited (nf-core starts git and prek, and
//! nothing it leaves behind may outlive the call).
//!
//! The trait is synchronous on purpose: an nf-core run takes seconds and the daemon calls it
//! from a blocking task, so the crate needs no async runtime.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// What the runner keeps of each stream by default: nf-core's lint output on the template is
/// about 20 KiB; a pathological run should not fill the daemon's memory.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1024 * 1024;

/// The nf-core release the tools are built and tested against.
pub const NFCORE_VERSION: &str = "4.2.1";

/// One program to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The program's name (looked up on `PATH`) or a path to it.
    pub program: String,
    pub args: Vec<String>,
    /// The working directory; it must exist.
    pub cwd: PathBuf,
    /// Variables added to (or replacing those of) the runner's environment.
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
}

impl Invocation {
    /// An invocation with no extra environment and a timeout of five minutes.
    pub fn new(program: &str, args: Vec<String>, cwd: &Path) -> Self {
        Self {
            program: program.to_owned(),
            args,
            cwd: cwd.to_path_buf(),
            env: Vec::new(),
            timeout: Duration::from_secs(300),
        }
    }

    /// The same invocation with `key=value` added to its environment.
    #[must_use]
    pub fn with_env(mut self, key: &str, value: &str) -> Self {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

impl Exit {
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "exit code {code}"),
            Exit::Signal(signal) => write!(f, "signal {signal}"),
        }
    }
}

/// One captured stream: its text (invalid UTF-8 replaced) and whether it was cut at the limit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    pub text: String,
    pub truncated: bool,
}

/// What a finished program left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub exit: Exit,
    pub stdout: Captured,
    pub stderr: Captured,
    /// Wall-clock time from spawn to exit.
    pub elapsed: Duration,
}

/// Why a program could not be run to its end.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("`{program}` is not installed or not on PATH: {install}")]
    NotFound {
        program: String,
        install: &'static str,
    },
    #[error("the working directory `{}` does not exist", cwd.display())]
    NoCwd { cwd: PathBuf },
    #[error("could not start `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{program}` did not finish within {} s and was stopped", timeout.as_secs())]
    TimedOut {
        program: String,
        timeout: Duration,
        /// What it had written to stderr by then.
        stderr: Captured,
    },
    #[error("waiting for `{program}` failed: {source}")]
    Wait {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

/// What to tell a person who lacks `program`.
pub fn install_hint(program: &str) -> &'static str {
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    match name {
        "nf-core" => "install `nf-core` from PyPI: `pip install nf-core==4.2.1`",
        "nextflow" => "install Nextflow (https://www.nextflow.io/docs/latest/install.html)",
        "nf-test" => {
            "install nf-test (https://www.nf-test.com/docs/getting-started/; it needs Java 11 or later and Nextflow)"
        }
        "git" => "install git from your system's packages",
        _ => "install it and make sure it is on PATH",
    }
}

/// Runs programs for the domain tools. Implementations decide where and how (sandboxed or
/// not); they must honour the timeout and bound the captured output.
pub trait Runner: Send + Sync {
    fn run(&self, invocation: &Invocation) -> Result<Outcome, RunError>;

    /// Where the files a run reads or writes beside its arguments go (the lint report, the
    /// template settings): a directory the program can reach. A sandboxed runner names its
    /// own temporary directory, since the program may touch nothing else outside the roots.
    fn scratch(&self) -> PathBuf {
        std::env::temp_dir()
    }
}

/// A [`Runner`] on `std::process`, with the caller's environment plus the invocation's.
#[derive(Debug, Clone)]
pub struct ProcessRunner {
    /// Bytes kept of each of stdout and stderr; the rest is read and dropped.
    pub output_limit: usize,
}

impl Default for ProcessRunner {
    fn default() -> Self {
        Self {
            output_limit: DEFAULT_OUTPUT_LIMIT,
        }
    }
}

impl Runner for ProcessRunner {
    fn run(&self, invocation: &Invocation) -> Result<Outcome, RunError> {
        run_process(invocation, self.output_limit)
    }
}

fn run_process(inv: &Invocation, limit: usize) -> Result<Outcome, RunError> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};

    if !inv.cwd.is_dir() {
        return Err(RunError::NoCwd {
            cwd: inv.cwd.clone(),
        });
    }
    let path_var = inv
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| OsString::from(v))
        .or_else(|| std::env::var_os("PATH"));
    // Resolved here rather than left to spawn: spawn's NotFound cannot tell a missing
    // program from a missing interpreter, and the answer must name what to install.
    let Some(program) = find_program(&inv.program, path_var.as_deref()) else {
        return Err(not_found(&inv.program));
    };
    let mut command = Command::new(&program);
    command
        .args(&inv.args)
        .current_dir(&inv.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for (key, value) in &inv.env {
        command.env(key, value);
    }
    let started = Instant::now();
    let mut child = command.spawn().map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => not_found(&inv.program),
        _ => RunError::Spawn {
            program: inv.program.clone(),
            source,
        },
    })?;
    let group = i32::try_from(child.id()).ok();
    let stdout = child.stdout.take().map(|s| drain(s, limit));
    let stderr = child.stderr.take().map(|s| drain(s, limit));

    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= inv.timeout => {
                kill_group(group);
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::TimedOut {
                    program: inv.program.clone(),
                    timeout: inv.timeout,
                    stderr: join(stderr),
                });
            }
            Ok(None) => thread::sleep(Duration::from_millis(10)),
            Err(source) => {
                kill_group(group);
                return Err(RunError::Wait {
                    program: inv.program.clone(),
                    source,
                });
            }
        }
    };
    let elapsed = started.elapsed();
    // Whatever the program left running in its group (a hook, a git daemon) would hold the
    // pipes open and outlive the call.
    kill_group(group);
    let exit = match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(signal)) => Exit::Signal(signal),
        (None, None) => Exit::Code(-1),
    };
    Ok(Outcome {
        exit,
        stdout: join(stdout),
        stderr: join(stderr),
        elapsed,
    })
}

fn not_found(program: &str) -> RunError {
    RunError::NotFound {
        program: program.to_owned(),
        install: install_hint(program),
    }
}

fn kill_group(group: Option<i32>) {
    if let Some(pid) = group.and_then(rustix::process::Pid::from_raw) {
        // A group that is already gone is the normal case.
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Reads a stream to its end on a thread, keeping the first `limit` bytes.
fn drain<R: Read + Send + 'static>(mut stream: R, limit: usize) -> thread::JoinHandle<Captured> {
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut truncated = false;
        let mut buf = [0u8; 8192];
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = limit.saturating_sub(kept.len());
                    if n > room {
                        truncated = true;
                    }
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        Captured {
            text: String::from_utf8_lossy(&kept).into_owned(),
            truncated,
        }
    })
}

fn join(handle: Option<thread::JoinHandle<Captured>>) -> Captured {
    handle.and_then(|h| h.join().ok()).unwrap_or_default()
}

/// Where `program` is: itself when it names a path, else the first executable file of that
/// name in `path_var`'s directories.
pub fn find_program(program: &str, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    std::env::split_paths(path_var?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// One domain program as `codaris status` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramInfo {
    pub name: &'static str,
    /// Where it was found on PATH, if it was.
    pub path: Option<PathBuf>,
    /// Its version, when it answered the version question.
    pub version: Option<String>,
    /// Why there is no version, or what to install.
    pub note: Option<String>,
}

impl ProgramInfo {
    /// One line: `nf-core 4.2.1 (/path/to/nf-core)`, or `nf-core: not found (install …)`.
    pub fn render(&self) -> String {
        match (&self.path, &self.version) {
            (Some(path), Some(version)) => {
                // Test machines put a stand-in first on PATH; it must never pass for the real one.
                let stand_in = if version.contains("fake") {
                    ", a stand-in, not the real program"
                } else {
                    ""
                };
                format!("{} {version} ({}{stand_in})", self.name, path.display())
            }
            (Some(path), None) => format!(
                "{}: found at {} but {}",
                self.name,
                path.display(),
                self.note.as_deref().unwrap_or("its version is unknown")
            ),
            (None, _) => format!("{}: not found ({})", self.name, install_hint(self.name)),
        }
    }
}

/// Finds nf-core, nextflow and git on `path_var` and asks each for its version through
/// `runner` (ten seconds each at most).
pub fn probe(
    runner: &dyn Runner,
    path_var: Option<&std::ffi::OsStr>,
    cwd: &Path,
) -> Vec<ProgramInfo> {
    const PROGRAMS: [(&str, &[&str]); 3] = [
        ("nf-core", &["--version"]),
        ("nextflow", &["-v"]),
        ("git", &["--version"]),
    ];
    PROGRAMS
        .iter()
        .map(|&(name, args)| {
            let Some(path) = find_program(name, path_var) else {
                return ProgramInfo {
                    name,
                    path: None,
                    version: None,
                    note: Some(install_hint(name).to_owned()),
                };
            };
            let invocation = Invocation::new(
                &path.to_string_lossy(),
                args.iter().map(|a| (*a).to_owned()).collect(),
                cwd,
            )
            .with_env("NO_COLOR", "1")
            .with_timeout(Duration::from_secs(10));
            let (version, note) = match runner.run(&invocation) {
                Ok(out) if out.exit.success() => match version_of(name, &out.stdout.text) {
                    Some(v) => (Some(v), None),
                    None => (
                        None,
                        Some("its version answer was not understood".to_owned()),
                    ),
                },
                Ok(out) => (
                    None,
                    Some(format!(
                        "`{name} {}` ended with {}",
                        args.join(" "),
                        out.exit
                    )),
                ),
                Err(err) => (None, Some(err.to_string())),
            };
            ProgramInfo {
                name,
                path: Some(path),
                version,
                note,
            }
        })
        .collect()
}

/// The version in a program's answer: `nf-core, version 4.2.1`, `nextflow version 25.10.4.fake`,
/// `git version 2.47.3`.
pub fn version_of(program: &str, stdout: &str) -> Option<String> {
    let marker = match program {
        "nf-core" => "nf-core, version ",
        "nextflow" => "nextflow version ",
        "git" => "git version ",
        _ => "version ",
    };
    stdout.lines().find_map(|line| {
        let rest = line.trim().strip_prefix(marker)?;
        let version = rest.split_whitespace().next()?;
        Some(version.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_three_version_answers() {
        assert_eq!(
            version_of("nf-core", "nf-core, version 4.2.1\n"),
            Some("4.2.1".into())
        );
        assert_eq!(
            version_of("nextflow", "nextflow version 25.10.4.fake\n"),
            Some("25.10.4.fake".into())
        );
        assert_eq!(
            version_of("git", "git version 2.47.3"),
            Some("2.47.3".into())
        );
        assert_eq!(version_of("git", "something else"), None);
    }

    #[test]
    fn the_install_hint_names_the_pinned_pypi_package() {
        assert!(install_hint("/opt/venv/bin/nf-core").contains("pip install nf-core==4.2.1"));
    }
}
