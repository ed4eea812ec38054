//! `codaris daemon install [--systemd|--launchd]`: writes the service definition for this user,
//! with this installation's real `codarisd` path, and says what to run next.
//!
//! The systemd unit is the repository's `deploy/systemd/codarisd.service` with its `ExecStart=`
//! pointed at the `codarisd` beside this `codaris`; the launchd agent is [`launchd_plist`], the
//! same text as `deploy/launchd/dev.codaris.codarisd.plist` but for this user's paths. The unit
//! also carries the configuration and state locations this `codaris` resolves
//! ([`UnitEnvironment`]). Neither holds a secret: keys go in the `env` file beside the
//! configuration file (`~/.config/codaris/env` by default; the unit reads it) or the config file.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::Outcome;
use crate::error::CliError;
use crate::output;

/// The repository's unit, the template of what is installed.
pub const SYSTEMD_UNIT: &str = include_str!("../../../../deploy/systemd/codarisd.service");
/// The operations guide the unit's `Documentation=` points at, written beside it.
pub const OPERATIONS_DOC: &str = include_str!("../../../../docs/operations.md");
/// Where the repository's unit says the guide is (a package's place for it).
const PACKAGED_DOC: &str = "file:///usr/share/doc/codaris/operations.md";
/// The launchd agent's label and file name.
pub const LAUNCHD_LABEL: &str = "dev.codaris.codarisd";

/// Which service manager to write for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    Systemd,
    Launchd,
}

impl Manager {
    /// What `--systemd`/`--launchd` said, else this system's own.
    pub fn chosen(systemd: bool, launchd: bool) -> Self {
        match (systemd, launchd) {
            (true, _) => Self::Systemd,
            (false, true) => Self::Launchd,
            (false, false) if cfg!(target_os = "macos") => Self::Launchd,
            (false, false) => Self::Systemd,
        }
    }
}

/// What the unit sets so its daemon reads the configuration file and serves the state directory
/// this `codaris` resolves (`codaris config path`; the unit's state directory as
/// `crate::service` expects it): a systemd user manager does not have the shell's environment,
/// so a `$XDG_CONFIG_HOME` or `$XDG_STATE_HOME` set there would otherwise leave the daemon on
/// `~/.config/codaris` and `~/.local/state/codaris`. `CODARIS_STATE_DIR` is not carried: a CLI
/// aimed there spawns its own daemon rather than start the unit (`crate::service`), and the
/// two would then fight over one directory's lock.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UnitEnvironment {
    /// `NAME=value` pairs for `Environment=`, each value absolute.
    pub variables: Vec<(&'static str, PathBuf)>,
    /// The `env` file beside the configuration file (provider keys), for `EnvironmentFile=`;
    /// `None` for the default file, whose `%h/.config/codaris/env` the unit names already.
    pub env_file: Option<PathBuf>,
}

impl UnitEnvironment {
    /// From this environment, as the CLI resolves it: `CODARIS_CONFIG` (a file that must
    /// exist, for the daemon as for `config path`) else `XDG_CONFIG_HOME`, and
    /// `XDG_STATE_HOME`; each only when set, so a plain setup keeps the unit's defaults.
    pub fn resolve(env: &impl codaris_paths::Env) -> Result<Self, CliError> {
        let (config, _) = codaris_paths::resolve_config_file(env)?;
        let mut variables = Vec::new();
        for group in [
            &["CODARIS_CONFIG", "XDG_CONFIG_HOME"][..],
            &["XDG_STATE_HOME"],
        ] {
            if let Some((name, value)) = group
                .iter()
                .find_map(|name| env.var(name).map(|value| (*name, PathBuf::from(value))))
            {
                // A relative value means nothing to a daemon started in another directory.
                if !value.is_absolute() {
                    return Err(codaris_paths::PathsError::NotAbsolute {
                        variable: name,
                        value,
                    }
                    .into());
                }
                // A newline would end the `Environment=` line and start a directive of the
                // value's choosing; no real directory name holds a control character.
                if value.to_string_lossy().chars().any(char::is_control) {
                    return Err(CliError::UnitValue {
                        variable: name,
                        value,
                    });
                }
                variables.push((name, value));
            }
        }
        // Moved only when the configuration file was.
        let env_file = match variables.first() {
            Some((name, _)) if ["CODARIS_CONFIG", "XDG_CONFIG_HOME"].contains(name) => {
                config.parent().map(|dir| dir.join("env"))
            }
            _ => None,
        };
        Ok(Self {
            variables,
            env_file,
        })
    }
}

pub fn run(manager: Manager, json: bool) -> Result<Outcome, CliError> {
    let program = crate::client::daemon_binary()?;
    let lookup = |name: &str| std::env::var_os(name);
    let unit_env = UnitEnvironment::resolve(&lookup)?;
    let program = std::fs::canonicalize(&program).unwrap_or(program);
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|home| home.is_absolute())
        .ok_or(CliError::InvalidFlag {
            flag: "HOME",
            reason: "is unset or not absolute; the service definition goes beneath it".to_owned(),
        })?;
    let (path, text, next) = match manager {
        Manager::Systemd => {
            let dir = std::env::var_os("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .filter(|dir| dir.is_absolute())
                .unwrap_or_else(|| home.join(".config"))
                .join("systemd/user");
            // The guide the unit's `Documentation=` names, for `systemctl --user help codarisd`.
            let data = std::env::var_os("XDG_DATA_HOME")
                .map(PathBuf::from)
                .filter(|dir| dir.is_absolute())
                .unwrap_or_else(|| home.join(".local/share"));
            let doc = data.join("doc/codaris/operations.md");
            write_file(&doc, OPERATIONS_DOC)?;
            let next = vec![
                "systemctl --user daemon-reload".to_owned(),
                "systemctl --user enable --now codarisd".to_owned(),
                "journalctl --user -u codarisd -f".to_owned(),
            ];
            (
                dir.join(crate::service::UNIT),
                systemd_unit(&program, Some(&doc), &unit_env),
                next,
            )
        }
        Manager::Launchd => {
            let dir = home.join("Library/LaunchAgents");
            let path = dir.join(format!("{LAUNCHD_LABEL}.plist"));
            let stderr_log = home.join("Library/Logs/codarisd.stderr.log");
            let next = vec![
                format!("launchctl bootstrap gui/$(id -u) {}", path.display()),
                format!("launchctl kickstart gui/$(id -u)/{LAUNCHD_LABEL}"),
            ];
            let text = launchd_plist(&program, Some(&stderr_log));
            (path, text, next)
        }
    };
    let replaced = path.exists();
    write_file(&path, &text)?;
    if json {
        output::json(&json!({
            "manager": match manager { Manager::Systemd => "systemd", Manager::Launchd => "launchd" },
            "path": path.display().to_string(),
            "program": program.display().to_string(),
            "replaced": replaced,
            "next": next,
        }))?;
    } else {
        output::line(&format!(
            "{} {} (codarisd: {})",
            if replaced { "replaced" } else { "wrote" },
            path.display(),
            program.display()
        ))?;
        output::line("next:")?;
        for step in &next {
            output::line(&format!("  {step}"))?;
        }
        if manager == Manager::Systemd {
            let env_file = unit_env.env_file.as_ref().map_or_else(
                || "~/.config/codaris/env".to_owned(),
                |f| f.display().to_string(),
            );
            output::line(&format!(
                "provider keys for the unit go in {env_file} (KEY=value lines, chmod 600)"
            ))?;
        }
    }
    Ok(Outcome::Success)
}

/// `text` as a systemd value: `%` doubled (a specifier otherwise), and, `quote`d, in double
/// quotes with `\` and `"` escaped.
fn systemd_value(text: &str, quote: bool) -> String {
    let text = text.replace('%', "%%");
    if quote {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        text
    }
}

/// The repository's unit with `ExecStart=` naming `program` (quoted, `%` doubled, as systemd
/// reads a command line), given `doc`, `Documentation=` naming that copy of the guide (a
/// path a `file:` URI cannot carry plainly keeps the packaged one), and `env`'s variables and
/// env file.
pub fn systemd_unit(program: &Path, doc: Option<&Path>, env: &UnitEnvironment) -> String {
    let doc_uri = doc
        .map(|path| path.display().to_string())
        .filter(|path| {
            !path
                .chars()
                .any(|c| c == '%' || c.is_whitespace() || c.is_control())
        })
        .map(|path| format!("file://{path}"));
    let quoted = format!(
        "\"{}\"",
        program
            .display()
            .to_string()
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('%', "%%")
    );
    SYSTEMD_UNIT
        .lines()
        .map(|line| {
            if line.starts_with("ExecStart=") {
                format!("ExecStart={quoted}")
            } else if line.starts_with("EnvironmentFile=") {
                let mut lines = vec![match &env.env_file {
                    Some(file) => format!(
                        "EnvironmentFile=-{}",
                        systemd_value(&file.display().to_string(), false)
                    ),
                    None => line.to_owned(),
                }];
                lines.extend(env.variables.iter().map(|(name, value)| {
                    format!(
                        "Environment={}",
                        systemd_value(&format!("{name}={}", value.display()), true)
                    )
                }));
                lines.join("\n")
            } else if let Some(uri) = doc_uri
                .as_ref()
                .filter(|_| line == format!("Documentation={PACKAGED_DOC}"))
            {
                format!("Documentation={uri}")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The launchd agent for `program`; `stderr_log` receives what the daemon prints before its own
/// log is open (it logs to `<state>/codarisd.log` after).
pub fn launchd_plist(program: &Path, stderr_log: Option<&Path>) -> String {
    let stderr = stderr_log
        .map(|path| {
            format!(
                "  <key>StandardErrorPath</key>\n  <string>{}</string>\n",
                xml_text(&path.display().to_string())
            )
        })
        .unwrap_or_default();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!--
  launchd agent for codarisd (macOS); `codaris daemon install --launchd` writes this for your
  own paths to ~/Library/LaunchAgents/{LAUNCHD_LABEL}.plist. Then:
    launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/{LAUNCHD_LABEL}.plist
  Stop with: launchctl bootout gui/$(id -u)/{LAUNCHD_LABEL}
  launchd starts the daemon in `/`, which opens nothing: each session's fence is its own project
  directory (its cwd) and its workspace. KeepAlive restarts a daemon that crashed, not one that
  exited: a bad configuration (status 1) or another codarisd holding the state directory
  (status 75) would fail the same way again.
-->
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>{LAUNCHD_LABEL}</string>
  <key>ProgramArguments</key>
  <array>
    <string>{program}</string>
  </array>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>Crashed</key>
    <true/>
  </dict>
  <key>ExitTimeOut</key>
  <integer>15</integer>
  <key>Umask</key>
  <integer>63</integer>
{stderr}</dict>
</plist>
"#,
        program = xml_text(&program.display().to_string()),
    )
}

fn xml_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Writes `text` to `path` whole or not at all: a temporary file beside it, renamed over it.
fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    let write_err = |source| CliError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir).map_err(write_err)?;
    let temp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(&temp)
        .map_err(write_err)?;
    file.write_all(text.as_bytes()).map_err(write_err)?;
    file.sync_all().map_err(write_err)?;
    std::fs::rename(&temp, path).map_err(write_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_installed_unit_names_the_real_program_and_nothing_else_changes() {
        let lookup = |name: &str| (name == "HOME").then(|| "/home/me".into());
        let unit = systemd_unit(
            Path::new("/opt/my tools/100%/codarisd"),
            Some(Path::new("/home/me/.local/share/doc/codaris/operations.md")),
            &UnitEnvironment::resolve(&lookup).unwrap(),
        );
        assert!(unit.contains("EnvironmentFile=-%h/.config/codaris/env\n"));
        assert!(!unit.contains("Environment=\""), "{unit}");
        assert!(unit.contains("ExecStart=\"/opt/my tools/100%%/codarisd\"\n"));
        assert!(
            unit.contains("Documentation=file:///home/me/.local/share/doc/codaris/operations.md\n")
        );
        assert!(!unit.contains("example.invalid"));
        assert_eq!(unit.matches("ExecStart=").count(), 1);
        let others = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|line| {
                    !line.starts_with("ExecStart=") && !line.starts_with("Documentation=file:")
                })
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(others(&unit), others(SYSTEMD_UNIT));
    }

    #[test]
    fn the_repository_plist_is_the_generated_one_without_placeholders() {
        let shipped = include_str!("../../../../deploy/launchd/dev.codaris.codarisd.plist");
        assert_eq!(
            shipped,
            launchd_plist(Path::new("/usr/local/bin/codarisd"), None)
        );
        assert!(!shipped.contains("YOU"));
        let mine = launchd_plist(
            Path::new("/Users/a&b/.cargo/bin/codarisd"),
            Some(Path::new("/Users/a&b/Library/Logs/codarisd.stderr.log")),
        );
        assert!(mine.contains("<string>/Users/a&amp;b/.cargo/bin/codarisd</string>"));
        assert!(mine.contains("<key>StandardErrorPath</key>"));
    }

    #[test]
    fn the_choice_follows_the_flags_then_the_system() {
        assert_eq!(Manager::chosen(true, false), Manager::Systemd);
        assert_eq!(Manager::chosen(false, true), Manager::Launchd);
        let native = if cfg!(target_os = "macos") {
            Manager::Launchd
        } else {
            Manager::Systemd
        };
        assert_eq!(Manager::chosen(false, false), native);
    }

    /// `codaris config path` follows `$XDG_CONFIG_HOME` (and `CODARIS_CONFIG`), `codaris status`
    /// the state directory's variables: the unit carries them, so its daemon reads the same
    /// file and listens where this `codaris` looks.
    #[test]
    fn a_variable_with_a_newline_cannot_add_a_directive_to_the_unit() {
        let env = |name: &str| match name {
            "HOME" => Some(std::ffi::OsString::from("/home/me")),
            "XDG_STATE_HOME" => Some(std::ffi::OsString::from(
                "/srv/state\"\nExecStartPre=/bin/sh -c evil\n#",
            )),
            _ => None,
        };
        let err = UnitEnvironment::resolve(&env).unwrap_err();
        assert!(matches!(
            err,
            CliError::UnitValue {
                variable: "XDG_STATE_HOME",
                ..
            }
        ));
        assert!(!err.to_string().contains('\n'), "{err}");
    }

    #[test]
    fn the_unit_carries_the_config_and_state_the_cli_resolves() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        let xdg = env(&[
            ("HOME", "/home/me"),
            ("XDG_CONFIG_HOME", "/home/me/cfg 100%"),
            ("XDG_STATE_HOME", "/srv/state"),
        ]);
        let unit_env = UnitEnvironment::resolve(&xdg).unwrap();
        let (config, _) = codaris_paths::resolve_config_file(&xdg).unwrap();
        assert_eq!(config, Path::new("/home/me/cfg 100%/codaris/config.toml"));
        let unit = systemd_unit(Path::new("/bin/codarisd"), None, &unit_env);
        assert!(
            unit.contains("EnvironmentFile=-/home/me/cfg 100%%/codaris/env\n"),
            "{unit}"
        );
        assert!(
            unit.contains("Environment=\"XDG_CONFIG_HOME=/home/me/cfg 100%%\"\n"),
            "{unit}"
        );
        assert!(
            unit.contains("Environment=\"XDG_STATE_HOME=/srv/state\"\n"),
            "{unit}"
        );

        let explicit = env(&[
            ("HOME", "/home/me"),
            ("XDG_CONFIG_HOME", "/ignored"),
            ("CODARIS_CONFIG", "/etc/codaris/main.toml"),
            ("CODARIS_STATE_DIR", "/var/lib/codaris"),
            ("XDG_STATE_HOME", "/srv/state"),
        ]);
        let unit = systemd_unit(
            Path::new("/bin/codarisd"),
            None,
            &UnitEnvironment::resolve(&explicit).unwrap(),
        );
        assert!(
            unit.contains("EnvironmentFile=-/etc/codaris/env\n"),
            "{unit}"
        );
        assert!(
            unit.contains("Environment=\"CODARIS_CONFIG=/etc/codaris/main.toml\"\n"),
            "{unit}"
        );
        // The unit serves the default state directory, never `CODARIS_STATE_DIR`'s.
        assert!(!unit.contains("CODARIS_STATE_DIR"), "{unit}");
        assert!(
            unit.contains("Environment=\"XDG_STATE_HOME=/srv/state\"\n"),
            "{unit}"
        );
        assert!(!unit.contains("/ignored"), "{unit}");

        // Only the state directory moved: the default file's env file stays `%h`'s.
        let state = env(&[("HOME", "/home/me"), ("XDG_STATE_HOME", "/srv/state")]);
        let unit = systemd_unit(
            Path::new("/bin/codarisd"),
            None,
            &UnitEnvironment::resolve(&state).unwrap(),
        );
        assert!(
            unit.contains("EnvironmentFile=-%h/.config/codaris/env\n"),
            "{unit}"
        );
        assert!(
            unit.contains("Environment=\"XDG_STATE_HOME=/srv/state\"\n"),
            "{unit}"
        );

        let relative = env(&[("HOME", "/home/me"), ("XDG_CONFIG_HOME", "cfg")]);
        assert!(UnitEnvironment::resolve(&relative).is_err());
    }
}
