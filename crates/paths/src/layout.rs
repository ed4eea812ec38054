use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A lookup of environment variables, so resolution stays a pure function of its inputs.
pub trait Env {
    /// The value of `name`, or `None` when unset. An empty value counts as unset.
    fn var(&self, name: &str) -> Option<OsString>;
}

impl<F> Env for F
where
    F: Fn(&str) -> Option<OsString>,
{
    fn var(&self, name: &str) -> Option<OsString> {
        self(name).filter(|value| !value.is_empty())
    }
}

/// Why a state or configuration path could not be resolved.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathsError {
    #[error("`{variable}` must be an absolute path, not `{}`", value.display())]
    NotAbsolute {
        variable: &'static str,
        value: PathBuf,
    },
    #[error("cannot find a home for the {what}: set `{variable}` (neither it nor `HOME` is set)")]
    NoHome {
        what: &'static str,
        variable: &'static str,
    },
}

/// Every file and directory the daemon owns, derived from the state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateLayout {
    dir: PathBuf,
}

impl StateLayout {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The gRPC Unix socket, created 0600.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("codaris.sock")
    }

    /// The sled database of sessions, grants and decisions.
    pub fn ledger(&self) -> PathBuf {
        self.dir.join("ledger")
    }

    /// The parent of every session's own workspace.
    pub fn sessions(&self) -> PathBuf {
        self.dir.join("sessions")
    }

    pub fn log(&self) -> PathBuf {
        self.dir.join("codarisd.log")
    }

    /// Bearer token for the loopback TCP listener, written only when TCP is on.
    pub fn token(&self) -> PathBuf {
        self.dir.join("token")
    }

    /// Holds the running daemon's pid; the daemon keeps an exclusive lock on it while it lives.
    pub fn pid_file(&self) -> PathBuf {
        self.dir.join("codarisd.pid")
    }
}

/// `$CODARIS_STATE_DIR`, else `$XDG_STATE_HOME/codaris`, else `$HOME/.local/state/codaris`.
pub fn resolve_state_dir(env: &impl Env) -> Result<PathBuf, PathsError> {
    if let Some(dir) = env.var("CODARIS_STATE_DIR") {
        return absolute("CODARIS_STATE_DIR", dir);
    }
    if let Some(xdg) = env.var("XDG_STATE_HOME") {
        return Ok(absolute("XDG_STATE_HOME", xdg)?.join("codaris"));
    }
    match env.var("HOME") {
        Some(home) => Ok(absolute("HOME", home)?.join(".local/state/codaris")),
        None => Err(PathsError::NoHome {
            what: "state directory",
            variable: "CODARIS_STATE_DIR",
        }),
    }
}

/// The configuration file to read and whether the user named it explicitly.
///
/// `$CODARIS_CONFIG` (explicit: it must exist), else `$XDG_CONFIG_HOME/codaris/config.toml`, else
/// `$HOME/.config/codaris/config.toml` (implicit: a missing file means defaults).
pub fn resolve_config_file(env: &impl Env) -> Result<(PathBuf, bool), PathsError> {
    if let Some(file) = env.var("CODARIS_CONFIG") {
        return Ok((absolute("CODARIS_CONFIG", file)?, true));
    }
    if let Some(xdg) = env.var("XDG_CONFIG_HOME") {
        return Ok((
            absolute("XDG_CONFIG_HOME", xdg)?.join("codaris/config.toml"),
            false,
        ));
    }
    match env.var("HOME") {
        Some(home) => Ok((
            absolute("HOME", home)?.join(".config/codaris/config.toml"),
            false,
        )),
        None => Err(PathsError::NoHome {
            what: "configuration file",
            variable: "CODARIS_CONFIG",
        }),
    }
}

fn absolute(variable: &'static str, value: OsString) -> Result<PathBuf, PathsError> {
    let path = PathBuf::from(value);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(PathsError::NotAbsolute {
            variable,
            value: path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Env {
        move |name: &str| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        }
    }

    #[test]
    fn state_dir_prefers_codaris_then_xdg_then_home() {
        let all = env(&[
            ("CODARIS_STATE_DIR", "/s"),
            ("XDG_STATE_HOME", "/x"),
            ("HOME", "/h"),
        ]);
        assert_eq!(resolve_state_dir(&all), Ok(PathBuf::from("/s")));
        let xdg = env(&[("XDG_STATE_HOME", "/x"), ("HOME", "/h")]);
        assert_eq!(resolve_state_dir(&xdg), Ok(PathBuf::from("/x/codaris")));
        let home = env(&[("HOME", "/h")]);
        assert_eq!(
            resolve_state_dir(&home),
            Ok(PathBuf::from("/h/.local/state/codaris"))
        );
    }

    #[test]
    fn empty_values_count_as_unset() {
        let blank = env(&[("CODARIS_STATE_DIR", ""), ("HOME", "/h")]);
        assert_eq!(
            resolve_state_dir(&blank),
            Ok(PathBuf::from("/h/.local/state/codaris"))
        );
    }

    #[test]
    fn relative_values_are_refused_with_the_variable_named() {
        let relative = env(&[("CODARIS_STATE_DIR", "state")]);
        assert_eq!(
            resolve_state_dir(&relative),
            Err(PathsError::NotAbsolute {
                variable: "CODARIS_STATE_DIR",
                value: PathBuf::from("state"),
            })
        );
        assert_eq!(
            resolve_state_dir(&relative).map_err(|e| e.to_string()),
            Err("`CODARIS_STATE_DIR` must be an absolute path, not `state`".to_owned())
        );
    }

    #[test]
    fn no_home_is_a_clear_error() {
        let none = env(&[]);
        assert!(matches!(
            resolve_state_dir(&none),
            Err(PathsError::NoHome { .. })
        ));
    }

    #[test]
    fn config_file_is_explicit_only_from_codaris_config() {
        let explicit = env(&[("CODARIS_CONFIG", "/c.toml"), ("HOME", "/h")]);
        assert_eq!(
            resolve_config_file(&explicit),
            Ok((PathBuf::from("/c.toml"), true))
        );
        let implicit = env(&[("XDG_CONFIG_HOME", "/x")]);
        assert_eq!(
            resolve_config_file(&implicit),
            Ok((PathBuf::from("/x/codaris/config.toml"), false))
        );
    }

    #[test]
    fn layout_names_every_file() {
        let layout = StateLayout::new("/s");
        assert_eq!(layout.socket(), PathBuf::from("/s/codaris.sock"));
        assert_eq!(layout.ledger(), PathBuf::from("/s/ledger"));
        assert_eq!(layout.sessions(), PathBuf::from("/s/sessions"));
        assert_eq!(layout.log(), PathBuf::from("/s/codarisd.log"));
        assert_eq!(layout.token(), PathBuf::from("/s/token"));
        assert_eq!(layout.pid_file(), PathBuf::from("/s/codarisd.pid"));
    }
}
