//! The service manager's daemon comes first: when a `codarisd.service` systemd user unit is
//! installed, a CLI that finds no daemon starts the unit (`systemctl --user start codarisd`)
//! instead of spawning a daemon of its own, so the unit's daemon and an autostarted one never
//! fight over the state directory's lock (which left the unit failed for good).
//!
//! Only for the default state directory (`$XDG_STATE_HOME/codaris`, else
//! `~/.local/state/codaris`), the one the unit's daemon serves; a CLI aimed elsewhere
//! (`--state-dir`, `$CODARIS_STATE_DIR`) spawns its own daemon as before.
//!
//! Non-goals: managing the unit (`systemctl` does), launchd (its agent starts at login and is
//! kept alive by launchd itself).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The unit this module looks for and starts.
pub const UNIT: &str = "codarisd.service";

/// How a missing daemon is brought up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartPlan {
    /// Spawn `codarisd` detached from this terminal.
    Spawn,
    /// Start the installed unit, found at `unit`.
    Unit { unit: PathBuf },
}

/// What the plan needs from the machine: a seam, so the decision is tested without systemd.
pub trait ServiceManager {
    /// The installed unit file, if there is one and the manager can be reached.
    fn installed_unit(&self) -> Option<PathBuf>;
    /// Starts the unit; the error is the manager's own words.
    fn start(&self) -> Result<(), String>;
}

/// Decides how to bring up the daemon of `state_dir`; `default_dir` is the directory a unit's
/// daemon serves (`None`: this user has none, so no unit can serve them).
pub fn plan(
    state_dir: &Path,
    default_dir: Option<&Path>,
    manager: &dyn ServiceManager,
) -> StartPlan {
    if default_dir != Some(state_dir) {
        return StartPlan::Spawn;
    }
    match manager.installed_unit() {
        Some(unit) => StartPlan::Unit { unit },
        None => StartPlan::Spawn,
    }
}

/// The state directory a unit's daemon serves: the default one, ignoring `$CODARIS_STATE_DIR`
/// (the unit's environment does not see the shell's).
pub fn default_state_dir() -> Option<PathBuf> {
    codaris_paths::resolve_state_dir(&|name: &str| {
        (name != "CODARIS_STATE_DIR")
            .then(|| std::env::var_os(name))
            .flatten()
    })
    .ok()
}

/// The directories the systemd user manager loads units from that a person or a package
/// installs to, in its order of precedence.
pub fn user_unit_dirs(get: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let home = get("HOME").map(PathBuf::from).filter(|h| h.is_absolute());
    let config = get("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|c| c.is_absolute())
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    dirs.extend(config.map(|c| c.join("systemd/user")));
    let data = get("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .or_else(|| home.as_ref().map(|h| h.join(".local/share")));
    dirs.extend(data.map(|d| d.join("systemd/user")));
    dirs.extend(
        [
            "/etc/systemd/user",
            "/usr/local/lib/systemd/user",
            "/usr/lib/systemd/user",
        ]
        .map(PathBuf::from),
    );
    dirs
}

/// The real systemd user manager, through `systemctl --user`.
#[derive(Debug, Default)]
pub struct SystemdUser;

impl ServiceManager for SystemdUser {
    fn installed_unit(&self) -> Option<PathBuf> {
        // No user manager to ask (a container, a machine without systemd): nothing to start.
        if !Path::new("/run/systemd/system").is_dir()
            || crate::client::on_path("systemctl").is_none()
        {
            return None;
        }
        user_unit_dirs(&|name| std::env::var_os(name))
            .into_iter()
            .map(|dir| dir.join(UNIT))
            .find(|unit| unit.is_file())
    }

    fn start(&self) -> Result<(), String> {
        let output = Command::new("systemctl")
            .args(["--user", "start", UNIT])
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|err| format!("cannot run `systemctl --user start {UNIT}`: {err}"))?;
        if output.status.success() {
            return Ok(());
        }
        let said = String::from_utf8_lossy(&output.stderr);
        let said = said
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .unwrap_or("no message");
        Err(format!(
            "`systemctl --user start {UNIT}` failed ({}): {}; see `journalctl --user -u codarisd`",
            output.status,
            said.chars().filter(|c| !c.is_control()).collect::<String>()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    struct Fake {
        unit: Option<PathBuf>,
        asked: Cell<bool>,
    }

    impl ServiceManager for Fake {
        fn installed_unit(&self) -> Option<PathBuf> {
            self.asked.set(true);
            self.unit.clone()
        }
        fn start(&self) -> Result<(), String> {
            Ok(())
        }
    }

    fn fake(unit: Option<&str>) -> Fake {
        Fake {
            unit: unit.map(PathBuf::from),
            asked: Cell::new(false),
        }
    }

    #[test]
    fn an_installed_unit_serves_the_default_state_directory() {
        let default = Path::new("/home/me/.local/state/codaris");
        let manager = fake(Some("/home/me/.config/systemd/user/codarisd.service"));
        assert_eq!(
            plan(default, Some(default), &manager),
            StartPlan::Unit {
                unit: PathBuf::from("/home/me/.config/systemd/user/codarisd.service")
            }
        );
    }

    #[test]
    fn without_a_unit_or_for_another_directory_the_cli_spawns_its_own() {
        let default = Path::new("/home/me/.local/state/codaris");
        assert_eq!(plan(default, Some(default), &fake(None)), StartPlan::Spawn);
        let elsewhere = fake(Some("/etc/systemd/user/codarisd.service"));
        assert_eq!(
            plan(Path::new("/tmp/test-state"), Some(default), &elsewhere),
            StartPlan::Spawn
        );
        assert!(
            !elsewhere.asked.get(),
            "a private state directory never consults the service manager"
        );
        assert_eq!(
            plan(
                default,
                None,
                &fake(Some("/etc/systemd/user/codarisd.service"))
            ),
            StartPlan::Spawn
        );
    }

    #[test]
    fn unit_dirs_follow_xdg_and_skip_relative_values() {
        let env = |name: &str| match name {
            "HOME" => Some("/home/me".into()),
            "XDG_CONFIG_HOME" => Some("relative/config".into()),
            _ => None,
        };
        let dirs = user_unit_dirs(&env);
        assert_eq!(dirs[0], PathBuf::from("/home/me/.config/systemd/user"));
        assert_eq!(dirs[1], PathBuf::from("/home/me/.local/share/systemd/user"));
        assert!(dirs.contains(&PathBuf::from("/etc/systemd/user")));
    }
}
