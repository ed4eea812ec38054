//! `git` as `worktree_create` runs it: nothing the repository says can make it execute a
//! program, and, but for the fetch, confined like the session's commands.
//!
//! A command can write the repository's configuration and hooks (or a cloned pipeline can
//! ship `.gitattributes`), and git runs what they name: hooks (`post-checkout`,
//! `reference-transaction`, …), `core.fsmonitor`, `core.sshCommand`, filter drivers, a
//! remote's `uploadpack`, transport helpers, askpass and credential helpers. So every call:
//! - for the fetch, names `git-upload-pack` itself (`--upload-pack`), whatever the remote says;
//! - runs with [`SWITCHED_OFF`] as command-line configuration (which wins over every file),
//!   and with every filter driver and protocol the configuration names at that moment switched
//!   off too ([`named_in_config`]): drivers cannot be listed ahead, so the configuration is
//!   read first, from the same directory with the same environment, and each one named is
//!   emptied;
//! - never checks files out with `worktree add` itself: the worktree is added with
//!   `--no-checkout` and filled by `reset --hard` inside it, after its own configuration (an
//!   `includeIf "onbranch:"` sees the new branch) was read and neutralised;
//! - gets a clean environment ([`PASSED_ENV`], no `GIT_*` of the daemon's, no system
//!   configuration);
//! - starts as one of the session's processes (its cgroup, no capabilities, dying with the
//!   daemon), and, for everything but the fetch, under the session's Landlock plan with the
//!   roots writable: what slips past the switches above still reads and writes only what a
//!   command could. The fetch needs the remote's credentials (`~/.ssh`, an agent) and an
//!   origin that may lie anywhere, so it runs outside Landlock, neutralised as above.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::process::Command;

use super::NAME;
use crate::shell::pool::TaskPool;
use crate::tool::ToolError;

/// Fetching from a slow remote may take a while; nothing else here should.
const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// The only ssh git may start (it ignores `core.sshCommand` for `GIT_SSH_COMMAND`); batch
/// mode, since nobody can answer a prompt.
const SSH: &str = "ssh -o BatchMode=yes";

/// Configuration given on every call, read after (and so winning over) the system, global,
/// repository and worktree files.
pub(super) const SWITCHED_OFF: [(&str, &str); 15] = [
    // No hook runs: git looks for `/dev/null/<hook>`, which cannot exist.
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.sshCommand", SSH),
    // An empty askpass or helper list means none (the list is reset by an empty value).
    ("core.askPass", ""),
    ("credential.helper", ""),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    // The user's attributes file is not the repository's to name; the tree's own
    // `.gitattributes` can only name drivers, and those are emptied below.
    ("core.attributesFile", "/dev/null"),
    // Run, with the shell, when fetching from a repository with alternates.
    ("core.alternateRefsCommand", "true"),
    ("protocol.ext.allow", "never"),
    ("diff.external", ""),
    // No background `gc`/`maintenance` (they would outlive the call) nor submodules, whose
    // own repositories are not looked at here.
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
];

/// The protocols a remote may use; any other the configuration allows is set to `never`
/// (`ext::` runs a command; an unknown one starts a `git-remote-<name>` helper).
const PROTOCOLS: [&str; 5] = ["file", "git", "http", "https", "ssh"];

/// The daemon's variables a git call keeps; everything else (its `GIT_*`, the providers' keys,
/// whatever secret the service manager put there) is dropped.
const PASSED_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TERM"];

/// Kept for the fetch alone: the ssh agent and the proxies a remote may be reached through.
const REMOTE_ENV: [&str; 9] = [
    "SSH_AUTH_SOCK",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
];

/// What a call may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// The repository only: confined to the session's sandbox, the roots writable.
    Repository,
    /// The remote too (the fetch): outside Landlock, with the ssh agent and proxies.
    Remote,
}

/// Runs git for one session.
#[derive(Debug, Clone)]
pub(super) struct Git {
    /// The session's pool: its cgroup, mark, temp dir and sandbox plan. Without one (a caller
    /// with no pools) git is a plain child of the daemon, neutralised all the same.
    pub(super) pool: Option<Arc<TaskPool>>,
    /// The allowed roots, writable for [`Reach::Repository`] calls.
    pub(super) roots: Vec<PathBuf>,
}

impl Git {
    /// Runs `git -C dir <args>` with everything above; stdout on success, else a model error
    /// quoting git's own complaint (the switches are not shown: they are not the model's).
    pub(super) async fn run(
        &self,
        dir: &Path,
        args: &[&str],
        reach: Reach,
    ) -> Result<String, ToolError> {
        self.run_shown(dir, args, args, reach).await
    }

    /// `git fetch --quiet <remote>`, outside Landlock (see the module's notes). The
    /// repository's `remote.<name>.uploadpack` is a command the fetch runs (locally, for a
    /// remote on this machine), and the first value configured wins over `-c`; the option
    /// wins over all of them.
    pub(super) async fn fetch(&self, dir: &Path, remote: &str) -> Result<String, ToolError> {
        let args = [
            "fetch",
            "--quiet",
            "--no-recurse-submodules",
            "--upload-pack=git-upload-pack",
            remote,
        ];
        self.run_shown(dir, &args, &["fetch", "--quiet", remote], Reach::Remote)
            .await
    }

    /// Runs `args`, naming the call `shown` in an error.
    async fn run_shown(
        &self,
        dir: &Path,
        args: &[&str],
        shown: &[&str],
        reach: Reach,
    ) -> Result<String, ToolError> {
        let listing = self
            .output(
                dir,
                &[
                    "config",
                    "--null",
                    "--name-only",
                    "--get-regexp",
                    CONFIG_KEYS,
                ],
                &[],
                reach,
            )
            .await?;
        let overrides = match listing.code {
            Some(0) => named_in_config(&listing.stdout),
            // Nothing matched.
            Some(1) => Vec::new(),
            _ => return Err(failed(&["config", "--get-regexp", CONFIG_KEYS], &listing)),
        };
        let ran = self.output(dir, args, &overrides, reach).await?;
        if ran.code == Some(0) {
            return Ok(ran.stdout.trim().to_owned());
        }
        Err(failed(shown, &ran))
    }

    async fn output(
        &self,
        dir: &Path,
        args: &[&str],
        overrides: &[(String, String)],
        reach: Reach,
    ) -> Result<Ran, ToolError> {
        let mut command = Command::new("git");
        command
            .arg("--no-pager")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so a timeout reaches the ssh it started too.
            .process_group(0)
            .kill_on_drop(true);
        let temp = self.pool.as_ref().map(|pool| pool.temp_dir().to_path_buf());
        environment(&mut command, reach, temp.as_deref(), overrides);
        let fatal = |source| ToolError::Fatal { tool: NAME, source };
        let child = match (&self.pool, reach) {
            (Some(pool), Reach::Repository) => {
                pool.spawn_confined_program(command, &self.roots, &global_config())
                    .map_err(fatal)?
                    .child
            }
            (Some(pool), Reach::Remote) => pool.spawn_program(command).map_err(fatal)?,
            (None, _) => crate::shell::reaper::spawn_registered(&mut command).map_err(fatal)?,
        };
        let group = child
            .id()
            .and_then(|pid| rustix::process::Pid::from_raw(pid.cast_signed()));
        match tokio::time::timeout(GIT_TIMEOUT, child.wait_with_output()).await {
            Ok(Ok(output)) => Ok(Ran {
                code: output.status.code(),
                stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            }),
            Ok(Err(source)) => Err(fatal(source)),
            Err(_) => {
                if let Some(group) = group {
                    // Already gone is fine.
                    let _ =
                        rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                }
                Err(ToolError::model(format!(
                    "`git {}` took longer than {}s",
                    args.join(" "),
                    GIT_TIMEOUT.as_secs()
                )))
            }
        }
    }
}

/// How a git call ended.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn failed(args: &[&str], ran: &Ran) -> ToolError {
    ToolError::model(format!(
        "`git {}` failed: {}",
        args.join(" "),
        ran.stderr.trim()
    ))
}

/// The configuration keys read before each call: those whose names cannot be known ahead.
const CONFIG_KEYS: &str = r"^(filter|protocol)\.";

/// From `git config --null --name-only --get-regexp` output (names, each ended by NUL):
/// every filter driver emptied and not required, every protocol but [`PROTOCOLS`] refused.
pub(super) fn named_in_config(listing: &str) -> Vec<(String, String)> {
    let mut overrides: Vec<(String, String)> = Vec::new();
    for name in listing.split('\0').filter(|name| !name.is_empty()) {
        // `section.sub.section.key`: the section and key never hold a dot, the subsection may.
        let Some((section, rest)) = name.split_once('.') else {
            continue;
        };
        let Some((sub, _key)) = rest.rsplit_once('.') else {
            continue;
        };
        let wanted: Vec<(String, &str)> = match section.to_ascii_lowercase().as_str() {
            "filter" => ["smudge", "clean", "process"]
                .iter()
                .map(|key| (format!("filter.{sub}.{key}"), ""))
                .chain([(format!("filter.{sub}.required"), "false")])
                .collect(),
            "protocol" if !PROTOCOLS.contains(&sub) => {
                vec![(format!("protocol.{sub}.allow"), "never")]
            }
            _ => Vec::new(),
        };
        for (key, value) in wanted {
            if !overrides.iter().any(|(known, _)| *known == key) {
                overrides.push((key, value.to_owned()));
            }
        }
    }
    overrides
}

/// A clean environment: [`PASSED_ENV`], `LC_*`, the remote's for a fetch, a private TMPDIR,
/// no system configuration, no prompt, the ssh pinned, and the configuration given as
/// `GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` (which, unlike `-c`, cannot be misread whatever
/// a driver's name holds: `=` and all).
fn environment(
    command: &mut Command,
    reach: Reach,
    temp: Option<&Path>,
    overrides: &[(String, String)],
) {
    command.env_clear();
    let remote: &[&str] = match reach {
        Reach::Remote => &REMOTE_ENV,
        Reach::Repository => &[],
    };
    for (key, value) in std::env::vars_os() {
        let name = key.to_string_lossy();
        let kept = PASSED_ENV.contains(&name.as_ref())
            || remote.contains(&name.as_ref())
            || name.starts_with("LC_");
        if kept {
            command.env(&key, &value);
        }
    }
    match temp {
        Some(temp) => command.env("TMPDIR", temp),
        None => match std::env::var_os("TMPDIR") {
            Some(temp) => command.env("TMPDIR", temp),
            None => command,
        },
    };
    if global_config().is_empty() {
        // Under Landlock a missing `~/.gitconfig` in an unreadable home reads as "permission
        // denied", which git takes for a broken configuration; there is nothing to read.
        command.env("GIT_CONFIG_GLOBAL", "/dev/null");
    }
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_SSH_COMMAND", SSH)
        // Set but empty: git then ignores `core.gitProxy`, whose first match would win.
        .env("GIT_PROXY_COMMAND", "")
        .env("GIT_PAGER", "cat");
    let all = SWITCHED_OFF
        .iter()
        .map(|(key, value)| (*key, *value))
        .chain(
            overrides
                .iter()
                .map(|(key, value)| (key.as_str(), value.as_str())),
        );
    let mut count = 0usize;
    for (index, (key, value)) in all.enumerate() {
        command.env(format!("GIT_CONFIG_KEY_{index}"), key);
        command.env(format!("GIT_CONFIG_VALUE_{index}"), OsStr::new(value));
        count = index + 1;
    }
    command.env("GIT_CONFIG_COUNT", count.to_string());
}

/// The user's global git configuration files that exist (`~/.gitconfig`, `~/.config/git/config`):
/// git stops at one it may not read, so a confined git may read them whatever the sandbox's
/// configured readable set says.
fn global_config() -> Vec<PathBuf> {
    // git is not given `XDG_CONFIG_HOME` (see `environment`), so looks under `~/.config`.
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Vec::new();
    };
    [home.join(".gitconfig"), home.join(".config/git/config")]
        .into_iter()
        .filter(|path| path.exists())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_driver_is_emptied_and_unknown_protocols_refused() {
        let listing = "filter.lfs.process\0filter.lfs.required\0filter.y=z.a.smudge\0\
                       protocol.ext.allow\0protocol.https.allow\0protocol.evil.allow\0";
        let overrides = named_in_config(listing);
        let has = |key: &str, value: &str| overrides.iter().any(|(k, v)| k == key && v == value);
        for sub in ["lfs", "y=z.a"] {
            for key in ["smudge", "clean", "process"] {
                assert!(has(&format!("filter.{sub}.{key}"), ""), "{sub}.{key}");
            }
            assert!(has(&format!("filter.{sub}.required"), "false"));
        }
        assert!(has("protocol.ext.allow", "never"));
        assert!(has("protocol.evil.allow", "never"));
        assert!(!overrides.iter().any(|(k, _)| k == "protocol.https.allow"));
        assert_eq!(overrides.len(), 10, "{overrides:?}");
    }

    #[test]
    fn the_environment_is_an_allowlist() {
        let mut command = Command::new("git");
        environment(
            &mut command,
            Reach::Repository,
            Some(Path::new("/t")),
            &[("filter.x.smudge".to_owned(), String::new())],
        );
        let envs: Vec<(String, Option<String>)> = command
            .as_std()
            .get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        let value = |key: &str| {
            envs.iter()
                .find(|(k, _)| k == key)
                .and_then(|(_, v)| v.clone())
        };
        assert_eq!(value("TMPDIR").as_deref(), Some("/t"));
        assert_eq!(value("GIT_CONFIG_NOSYSTEM").as_deref(), Some("1"));
        assert_eq!(value("GIT_SSH_COMMAND").as_deref(), Some(SSH));
        let count = SWITCHED_OFF.len() + 1;
        assert_eq!(value("GIT_CONFIG_COUNT"), Some(count.to_string()));
        assert_eq!(
            value(&format!("GIT_CONFIG_KEY_{}", count - 1)).as_deref(),
            Some("filter.x.smudge")
        );
        for (key, _) in &envs {
            let allowed = PASSED_ENV.contains(&key.as_str())
                || key.starts_with("LC_")
                || key.starts_with("GIT_")
                || key == "TMPDIR";
            assert!(allowed, "`{key}` reaches git");
        }
    }
}
