//! The real binaries for the end-to-end tests: find the built `codarisd` and `codaris`, run a
//! daemon on a private state directory, run the CLI against it, and clean up whatever happens.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The directory holding `codaris` and `codarisd`: `$CODARIS_BIN_DIR`, else the Cargo target
/// directory this test binary was built into.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CODARIS_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/e2e-<hash> → target/<profile>
    exe.parent()
        .and_then(Path::parent)
        .expect("test executable lives in target/<profile>/deps")
        .to_path_buf()
}

pub fn binary(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.is_file(),
        "{} is missing: build the binaries first (`cargo test --workspace` does)",
        path.display()
    );
    path
}

/// A private state directory and the environment every command of a test runs with.
#[derive(Debug)]
pub struct Sandbox {
    pub root: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        Self {
            root: tempfile::Builder::new()
                .prefix("codaris-e2e-")
                .tempdir()
                .expect("temp dir"),
        }
    }

    pub fn state_dir(&self) -> PathBuf {
        self.root.path().join("state")
    }

    pub fn socket(&self) -> PathBuf {
        self.state_dir().join("codaris.sock")
    }

    pub fn pid_file(&self) -> PathBuf {
        self.state_dir().join("codarisd.pid")
    }

    /// A command with an environment that cannot reach the user's real state or config.
    pub fn command(&self, name: &str) -> Command {
        let mut command = Command::new(binary(name));
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.path().join("home"))
            .env("CODARIS_STATE_DIR", self.state_dir())
            .env("CODARIS_CONFIG", self.root.path().join("config.toml"))
            .current_dir(self.root.path())
            .stdin(Stdio::null());
        command
    }

    /// Writes the configuration file the sandbox points at.
    pub fn write_config(&self, text: &str) {
        std::fs::write(self.root.path().join("config.toml"), text).expect("write config");
    }

    pub fn cli(&self, args: &[&str]) -> Output {
        self.command("codaris")
            .args(args)
            .output()
            .expect("run codaris")
    }

    /// Starts `codarisd` in the foreground of this test and waits until its socket answers.
    pub fn start_daemon(&self, extra_args: &[&str]) -> Daemon {
        self.start_daemon_in(self.root.path(), &[], extra_args)
    }

    /// Starts `codarisd` in working directory `dir` with more environment variables, and waits
    /// until its socket answers.
    pub fn start_daemon_in(&self, dir: &Path, env: &[(&str, &str)], extra_args: &[&str]) -> Daemon {
        if !self.root.path().join("config.toml").exists() {
            self.write_config("");
        }
        let child = self
            .command("codarisd")
            .current_dir(dir)
            .envs(env.iter().copied())
            .args(extra_args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn codarisd");
        let mut daemon = Daemon {
            child: Some(child),
            said: None,
        };
        wait_for(Duration::from_secs(20), || {
            if let Some(status) = daemon.try_exit() {
                let mut said = String::new();
                if let Some(stderr) = daemon.child.as_mut().and_then(|c| c.stderr.as_mut()) {
                    let _ = std::io::Read::read_to_string(stderr, &mut said);
                }
                panic!("codarisd exited while starting: {status}; it said: {said}");
            }
            std::os::unix::net::UnixStream::connect(self.socket()).is_ok()
        });
        // Read from now on, so a daemon that writes more than a pipe holds never blocks on it;
        // `wait_said` returns it.
        let stderr = daemon.child.as_mut().and_then(|c| c.stderr.take());
        daemon.said = stderr.map(|mut stderr| {
            std::thread::spawn(move || {
                let mut said = String::new();
                let _ = std::io::Read::read_to_string(&mut stderr, &mut said);
                said
            })
        });
        daemon
    }

    /// The arguments of `codaris run --json` in `cwd` with the scripted model playing `script`
    /// (written to `<root>/script.json`), then `flags` (`--approve once`, …), then `prompt`.
    pub fn run_args(
        &self,
        cwd: &Path,
        script: &serde_json::Value,
        flags: &[&str],
        prompt: &str,
    ) -> Vec<String> {
        let path = self.root.path().join("script.json");
        std::fs::write(&path, script.to_string()).expect("write script");
        let mut args: Vec<String> = ["run", "--json", "--script"].map(str::to_owned).to_vec();
        args.push(path.display().to_string());
        args.push("--cwd".to_owned());
        args.push(cwd.display().to_string());
        args.extend(flags.iter().map(|f| (*f).to_owned()));
        args.push(prompt.to_owned());
        args
    }

    /// Runs what [`Sandbox::run_args`] builds.
    pub fn run_script(
        &self,
        cwd: &Path,
        script: &serde_json::Value,
        flags: &[&str],
        prompt: &str,
    ) -> Output {
        self.command("codaris")
            .args(self.run_args(cwd, script, flags, prompt))
            .output()
            .expect("run codaris")
    }

    /// `codaris chat` in `cwd` (default: the sandbox's root) with the scripted model playing
    /// `script` (written to `<root>/chat.json`), standard input, output and error piped.
    pub fn spawn_chat(&self, script: &serde_json::Value, cwd: Option<&Path>) -> Child {
        let path = self.root.path().join("chat.json");
        std::fs::write(&path, script.to_string()).expect("write chat script");
        let mut command = self.command("codaris");
        command.arg("chat").arg("--script").arg(&path);
        if let Some(cwd) = cwd {
            command.arg("--cwd").arg(cwd);
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn codaris chat")
    }

    /// `codaris chat` as `spawn_chat` starts it, sent `message`, once the card's prompt is on
    /// screen: the chat, its input (while it is open, the card waits for its answer) and the
    /// rest of its screen.
    pub fn chat_at_a_card(
        &self,
        script: &serde_json::Value,
        cwd: Option<&Path>,
        message: &str,
    ) -> (
        Child,
        std::process::ChildStdin,
        BufReader<std::process::ChildStdout>,
    ) {
        let mut chat = self.spawn_chat(script, cwd);
        let mut input = chat.stdin.take().expect("the chat's input");
        writeln!(input, "{message}").expect("send the message");
        let mut screen = BufReader::new(chat.stdout.take().expect("the chat's screen"));
        let mut seen = String::new();
        while !seen.contains("the model asks for") {
            let mut line = String::new();
            let read = screen.read_line(&mut line).expect("read the chat's screen");
            assert!(read > 0, "no card: {seen}");
            seen.push_str(&line);
        }
        (chat, input, screen)
    }

    /// `codaris daemon stop`, then waits until the daemon has let go of the state directory.
    pub fn stop_daemon(&self) {
        let output = self.cli(&["daemon", "stop"]);
        assert!(output.status.success(), "{}", stderr(&output));
        wait_for(Duration::from_secs(10), || !self.pid_file().exists());
    }

    /// `codaris audit replay` on the stopped daemon's ledger, which must verify: every
    /// decision replays, every grant is backed, the chain is whole.
    pub fn replay_clean(&self) -> Output {
        let output = self.cli(&["audit", "replay"]);
        assert!(
            output.status.success(),
            "{}{}",
            stdout(&output),
            stderr(&output)
        );
        output
    }

    pub fn mode(path: &Path) -> u32 {
        std::fs::metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

/// How long a daemon of a finished test has to stop in order after `SIGTERM` before it is
/// killed: a daemon with a turn in flight (a card waiting for its answer) may never stop by
/// itself, and one left running outlives the test and its deleted state directory.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// When the test is over, nothing it started through the sandbox is left running: not a CLI
/// it spawned and did not wait for (which could still start a daemon), not a daemon the CLI
/// started in the background (autostart), whether or not it has written its pid file yet.
impl Drop for Sandbox {
    fn drop(&mut self) {
        let root = self.root.path().to_path_buf();
        for (pid, program) in programs_under(&root) {
            if program == Program::Cli {
                signal_if(pid, Program::Cli, rustix::process::Signal::KILL);
            }
        }
        let mut daemons: Vec<rustix::process::Pid> = programs_under(&root)
            .into_iter()
            .filter(|(_, program)| *program == Program::Daemon)
            .map(|(pid, _)| pid)
            .collect();
        if let Some(pid) = self.pid_file_names() {
            daemons.push(pid);
        }
        daemons.sort_by_key(|pid| pid.as_raw_nonzero());
        daemons.dedup();
        for pid in &daemons {
            signal_if(*pid, Program::Daemon, rustix::process::Signal::TERM);
        }
        let stopped = |daemons: &[rustix::process::Pid]| daemons.iter().all(|pid| !running(*pid));
        let deadline = Instant::now() + STOP_GRACE;
        while !stopped(&daemons) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        for pid in &daemons {
            if running(*pid) {
                eprintln!(
                    "codarisd {} of {} did not stop within {STOP_GRACE:?} of SIGTERM; killed",
                    pid.as_raw_nonzero(),
                    root.display()
                );
                signal_if(*pid, Program::Daemon, rustix::process::Signal::KILL);
            }
        }
        let deadline = Instant::now() + STOP_GRACE;
        while !stopped(&daemons) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if !std::thread::panicking() {
            let left = programs_under(&root);
            assert!(
                left.is_empty() && stopped(&daemons),
                "processes of the sandbox {} outlived it: {left:?}",
                root.display()
            );
        }
    }
}

impl Sandbox {
    /// The daemon this sandbox's pid file names, if that process is a `codarisd` (a pid file
    /// left by a killed daemon names nobody, or a stranger).
    fn pid_file_names(&self) -> Option<rustix::process::Pid> {
        let text = std::fs::read_to_string(self.pid_file()).ok()?;
        let pid = rustix::process::Pid::from_raw(text.trim().parse().ok()?)?;
        (program_of(pid) == Some(Program::Daemon)).then_some(pid)
    }
}

/// Which of the two binaries a process runs, by its name (its `/proc/<pid>/comm`: readable for
/// every process, unlike `exe` and `environ` of a daemon, which makes itself non-dumpable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Program {
    Cli,
    Daemon,
}

fn program_of(pid: rustix::process::Pid) -> Option<Program> {
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", pid.as_raw_nonzero())).ok()?;
    match comm.trim() {
        "codaris" => Some(Program::Cli),
        "codarisd" => Some(Program::Daemon),
        _ => None,
    }
}

/// Sends `signal` to `pid` if it still runs `program` (so a reused pid is left alone).
fn signal_if(pid: rustix::process::Pid, program: Program, signal: rustix::process::Signal) {
    if program_of(pid) == Some(program) {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

/// The live `codaris` and `codarisd` processes that name a path under `root` in their command
/// line (the autostarted daemon's `--state-dir`) or their environment (every command of the
/// sandbox has `CODARIS_STATE_DIR`, `CODARIS_CONFIG` and `HOME` there).
fn programs_under(root: &Path) -> Vec<(rustix::process::Pid, Program)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let root = root.as_os_str().as_encoded_bytes();
    let under = |item: &[u8]| {
        // `NAME=value` in the environment, the bare value on the command line.
        let value = match item.iter().position(|b| *b == b'=') {
            Some(at) if !item.starts_with(b"/") => &item[at + 1..],
            _ => item,
        };
        value.starts_with(root) && matches!(value.get(root.len()), None | Some(b'/'))
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = rustix::process::Pid::from_raw(entry.file_name().to_str()?.parse().ok()?)?;
            let program = program_of(pid)?;
            if !running(pid) {
                return None;
            }
            let named = ["cmdline", "environ"].iter().any(|file| {
                std::fs::read(entry.path().join(file))
                    .map(|block| block.split(|b| *b == 0).any(under))
                    .unwrap_or(false)
            });
            named.then_some((pid, program))
        })
        .collect()
}

/// A daemon started by a test; killed on drop if the test did not stop it.
#[derive(Debug)]
pub struct Daemon {
    child: Option<Child>,
    /// What the daemon writes on stderr once it has started, read as it comes.
    said: Option<std::thread::JoinHandle<String>>,
}

impl Daemon {
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    pub fn try_exit(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Waits for the daemon to exit by itself.
    pub fn wait(mut self, timeout: Duration) -> std::process::ExitStatus {
        let mut status = None;
        wait_for(timeout, || {
            status = self.try_exit();
            status.is_some()
        });
        self.child = None;
        status.expect("exit status")
    }

    /// Waits for the daemon to exit by itself, and returns what it wrote on stderr.
    pub fn wait_said(mut self, timeout: Duration) -> (std::process::ExitStatus, String) {
        let mut status = None;
        wait_for(timeout, || {
            status = self.try_exit();
            status.is_some()
        });
        let said = self
            .said
            .take()
            .and_then(|reader| reader.join().ok())
            .unwrap_or_default();
        self.child = None;
        (status.expect("exit status"), said)
    }

    pub fn kill_hard(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn signal(&self, signal: rustix::process::Signal) {
        if let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(self.pid()).unwrap_or(0)) {
            rustix::process::kill_process(pid, signal).expect("send signal");
        }
    }
}

/// Stops the daemon as a user would (SIGTERM), and kills it only if it is still running
/// [`STOP_GRACE`] later. A killed daemon leaves its sessions' temp dirs (`codaris-shell-*`)
/// for its next start on the same state directory to remove, and a test's state directory has
/// no next start: every daemon a test dropped was leaving them in the temp dir for good. A
/// test that means to crash the daemon says so with [`Daemon::kill_hard`].
impl Drop for Daemon {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap_or(0)) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let deadline = Instant::now() + STOP_GRACE;
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if matches!(child.try_wait(), Ok(None)) {
            eprintln!(
                "codarisd {} did not stop within {STOP_GRACE:?} of SIGTERM; killed",
                child.id()
            );
            let _ = child.kill();
        }
        let _ = child.wait();
    }
}

/// A loopback port free a moment ago, for `codarisd --listen`.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("its address").port()
}

/// The pid a process wrote to `path` (a line), once it is there; panics after a minute.
pub fn pid_in(path: &Path) -> u32 {
    let mut pid = 0;
    wait_for(Duration::from_secs(60), || {
        pid = std::fs::read_to_string(path)
            .ok()
            .filter(|text| text.ends_with('\n'))
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0);
        pid != 0
    });
    pid
}

/// Polls `done` every few milliseconds until it holds, or panics after `timeout`.
pub fn wait_for(timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out after {timeout:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a process with this pid still exists (a zombie does not count).
pub fn alive(pid: u32) -> bool {
    i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .is_some_and(running)
}

fn running(pid: rustix::process::Pid) -> bool {
    rustix::process::test_kill_process(pid).is_ok()
        && !std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()))
            .unwrap_or_default()
            .contains(") Z ")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The stdout of a command that must have succeeded (its output shown when it did not).
pub fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}{}",
        stdout(output),
        stderr(output)
    );
    stdout(output)
}

/// A scripted model's one turn that makes `calls` (a tool name and its arguments), one per
/// round, then answers "done".
pub fn calls_script(calls: &[(&str, serde_json::Value)]) -> serde_json::Value {
    let mut rounds: Vec<serde_json::Value> = calls
        .iter()
        .map(|(tool, args)| serde_json::json!({"tool_calls": [{"name": tool, "args": args}]}))
        .collect();
    rounds.push(serde_json::json!({"text": "done"}));
    serde_json::json!({"turns": [{"rounds": rounds}]})
}

/// Parses stdout as one JSON value.
/// The JSON lines of `codaris run --json`, one event each.
pub fn events(output: &Output) -> Vec<serde_json::Value> {
    stdout(output)
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("not a JSON event ({err}): {line}"))
        })
        .collect()
}

pub fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("stdout is not JSON ({err}): {}", stdout(output)))
}

/// Whether a test's kernel mechanism is there (`found`); under CI (`CI=true`) its absence fails
/// the test, elsewhere the test is skipped, printing `SKIPPED`, the test and what was `seen`.
pub fn required_or_skip(test: &str, found: bool, what: &str, seen: &str) -> bool {
    if found {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test}: {what} is required under CI, the daemon says `{seen}`"
    );
    eprintln!("SKIPPED {test}: {seen}");
    false
}

impl Sandbox {
    /// `codaris status --json`'s `sandbox` sentence.
    fn confinement(&self) -> String {
        json(&self.cli(&["status", "--json"]))["sandbox"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Whether commands run under Landlock ([`required_or_skip`]).
    pub fn landlock_or_skip(&self, test: &str) -> bool {
        let seen = self.confinement();
        required_or_skip(test, seen.starts_with("landlock active"), "Landlock", &seen)
    }

    /// Whether commands get a mount namespace of their own ([`required_or_skip`]).
    pub fn mount_namespace_or_skip(&self, test: &str) -> bool {
        let seen = self.confinement();
        let found = seen.contains("; mount namespace") && !seen.contains("refused");
        required_or_skip(test, found, "a mount namespace", &seen)
    }
}
