//! The only I/O of configuration: reading the file and the environment, then resolving.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::file::parse_file;
use super::inputs::{Flags, Sources};
use super::resolve::{Config, env_vars, resolve};
use crate::error::ConfigError;

/// Reads the file (if any) and the environment, then [`resolve`]s. The only I/O of configuration.
///
/// `state_dir` and `config_file` are the command line's; they win over the environment. `keys` are
/// the provider keys `main` took out of the environment block; they count as environment.
pub fn load(
    state_dir: Option<PathBuf>,
    config_file: Option<PathBuf>,
    flags: Flags,
    keys: &crate::server::keys::HeldKeys,
) -> Result<Config, ConfigError> {
    LoadInputs::gather(state_dir, config_file, flags, keys)?.load()
}

/// Everything [`load`] reads besides the file's text: kept by the running daemon, so that a
/// committed configuration (`config_commit`) is resolved exactly as the daemon's start resolved
/// its own, environment and flags included, and a staged one is judged so before it is written.
#[derive(Clone)]
pub struct LoadInputs {
    state_dir: PathBuf,
    /// The file as named (the command line's, the environment's or the default).
    path: PathBuf,
    /// Named on the command line or by `CODARIS_CONFIG`: its absence is an error.
    explicit: bool,
    env: BTreeMap<String, std::ffi::OsString>,
    cwd: PathBuf,
    home: Option<PathBuf>,
    flags: Flags,
}

/// Names only: the environment holds provider keys.
impl std::fmt::Debug for LoadInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadInputs")
            .field("state_dir", &self.state_dir)
            .field("path", &self.path)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl LoadInputs {
    /// Reads the environment and works out which state directory and file are meant.
    pub fn gather(
        state_dir: Option<PathBuf>,
        config_file: Option<PathBuf>,
        flags: Flags,
        keys: &crate::server::keys::HeldKeys,
    ) -> Result<Self, ConfigError> {
        let lookup = |name: &str| std::env::var_os(name);
        let state_dir = match state_dir {
            Some(dir) if dir.is_absolute() => dir,
            Some(dir) => std::env::current_dir()
                .map(|cwd| cwd.join(&dir))
                .map_err(|source| ConfigError::Unreadable { file: dir, source })?,
            None => codaris_paths::resolve_state_dir(&lookup)?,
        };
        let (path, explicit) = match config_file {
            Some(file) => (file, true),
            None => codaris_paths::resolve_config_file(&lookup)?,
        };
        let env = env_vars()
            .iter()
            .filter_map(|name| {
                std::env::var_os(name)
                    .or_else(|| keys.get(name).cloned())
                    .map(|value| ((*name).to_owned(), value))
            })
            .collect();
        Ok(Self {
            state_dir,
            path,
            explicit,
            env,
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|home| home.is_absolute()),
            flags,
        })
    }

    /// The inputs of a daemon started in-process with a ready `config` (tests, benches): its
    /// state directory and file, no environment.
    pub fn of(config: &Config) -> Self {
        Self {
            state_dir: config.state_dir.clone(),
            path: config
                .config_path
                .clone()
                .or_else(|| config.config_file.clone())
                .unwrap_or_else(|| config.state_dir.join("config.toml")),
            explicit: false,
            env: BTreeMap::new(),
            cwd: PathBuf::from("/"),
            home: config.home.clone(),
            flags: Flags::default(),
        }
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The file the daemon reads, absolute.
    pub fn file(&self) -> PathBuf {
        self.cwd.join(&self.path)
    }

    /// Reads the file and resolves it.
    pub fn load(&self) -> Result<Config, ConfigError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => Some(text),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && !self.explicit => None,
            Err(source) => {
                return Err(ConfigError::Unreadable {
                    file: self.path.clone(),
                    source,
                });
            }
        };
        self.load_text(text.as_deref())
    }

    /// Resolves `text` as if the file held it (`None`: no file), with this daemon's
    /// environment and flags. Reads the shadow configuration and the stored login.
    pub fn load_text(&self, text: Option<&str>) -> Result<Config, ConfigError> {
        let path = &self.path;
        let (file, lines) = match text {
            Some(text) => (
                Some((path.clone(), parse_file(path, text)?)),
                codaris_config::key_lines(text),
            ),
            None => (None, BTreeMap::new()),
        };
        let config_dir = path.parent().map(|dir| self.cwd.join(dir));
        let credentials = self.state_dir.join(super::providers::CREDENTIALS_FILE);
        let mut config = resolve(Sources {
            state_dir: self.state_dir.clone(),
            home: self.home.clone(),
            file,
            config_dir,
            env: self.env.clone(),
            flags: self.flags.clone(),
        })?;
        config.config_path = Some(self.file());
        // The shadow is judged now, so a daemon never starts with one it cannot read.
        if let Some(shadow) = &config.shadow_path {
            config.shadow = Some(load_shadow(shadow)?);
        }
        config.recorded.set_lines(lines);
        // What `codaris login` stored: above the file, below the environment.
        if let Some(stored) = super::providers::read_credentials(&credentials)? {
            config.providers =
                super::providers::resolve(&config.provider_inputs, Some((&credentials, &stored)))?;
        }
        Ok(config)
    }
}

/// `codarisd check-config [FILE]`: parses and resolves `file` (default: the one the daemon
/// would read) on its own, with no environment, so the file alone is judged. First every
/// problem [`codaris_config::check`] finds, one line each, `file:line: message` (as `codaris
/// config check` prints them); with none, the daemon's own resolution, whose error is one line.
pub fn check_file(file: Option<PathBuf>) -> Result<PathBuf, String> {
    let path = match file {
        Some(path) => path,
        None => {
            let lookup = |name: &str| std::env::var_os(name);
            codaris_paths::resolve_config_file(&lookup)
                .map_err(|err| err.to_string())?
                .0
        }
    };
    let config = resolve_file(&path).map_err(|problems| problems.join("\n"))?;
    // A shadow the daemon would refuse at start is refused here too (its own shadow, if it
    // names one, is not followed: only the running file's is used).
    if let Some(shadow) = &config.shadow_path {
        load_shadow(shadow).map_err(|err| err.to_string())?;
    }
    Ok(path)
}

/// The configuration the file at `path` resolves to on its own (no environment, no state
/// directory), as `check-config` judges it; else every problem, one line each, `file:line:
/// message` where a line is known. A shadow configuration and a candidate are read so.
pub fn resolve_file(path: &Path) -> Result<Config, Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|err| {
        vec![format!(
            "{}: cannot read: {}",
            path.display(),
            crate::error::io_reason(&err)
        )]
    })?;
    let problems = codaris_config::check(&text);
    if !problems.is_empty() {
        return Err(problems
            .iter()
            .map(|p| format!("{}:{}: {}", path.display(), p.line, p.message))
            .collect());
    }
    let parsed = parse_file(path, &text).map_err(|err| match err {
        crate::ConfigError::Parse {
            file,
            line: Some(line),
            message,
        } => {
            vec![format!("{}:{line}: {message}", file.display())]
        }
        other => vec![other.to_string()],
    })?;
    let sources = Sources {
        state_dir: PathBuf::from("/nonexistent-state"),
        home: None,
        config_dir: path.parent().map(Path::to_path_buf),
        file: Some((path.to_path_buf(), parsed)),
        env: BTreeMap::new(),
        flags: Flags::default(),
    };
    resolve(sources).map_err(|err| vec![err.to_string()])
}

/// Reads the shadow file at `path` and judges it: its operator inputs, or why it cannot be
/// one, as one sentence under `policy.shadow`.
pub fn load_shadow(path: &Path) -> Result<super::policy::Shadow, ConfigError> {
    let config = resolve_file(path).map_err(|problems| ConfigError::Invalid {
        key: "policy.shadow".to_owned(),
        reason: format!(
            "`{}` is not a configuration the daemon would start with: {}",
            path.display(),
            problems.join("; ")
        ),
    })?;
    Ok(super::policy::Shadow {
        path: path.to_path_buf(),
        inputs: operator_inputs(&config),
    })
}

/// `codarisd check-config --operator-inputs [FILE]`: the operator inputs of `file` (default:
/// the one the daemon would read), judged as `check-config` judges it, as one line of JSON;
/// else every problem, one line each.
pub fn candidate_inputs(file: Option<PathBuf>) -> Result<String, String> {
    let path = match file {
        Some(path) => path,
        None => {
            let lookup = |name: &str| std::env::var_os(name);
            codaris_paths::resolve_config_file(&lookup)
                .map_err(|err| err.to_string())?
                .0
        }
    };
    let config = resolve_file(&path).map_err(|problems| problems.join("\n"))?;
    serde_json::to_string(&operator_inputs(&config)).map_err(|err| err.to_string())
}

/// The operator inputs of a resolved configuration, its roots resolved through symlinks as
/// the daemon resolves every task's roots, so that they compare with recorded ones.
pub fn operator_inputs(config: &Config) -> codaris_ledger::OperatorInputs {
    codaris_ledger::OperatorInputs {
        allowed_dirs: config
            .allowed_dirs
            .iter()
            .map(|dir| codaris_tools::resolve_existing(dir).display().to_string())
            .collect(),
        http_allowlist: config.http_allowlist.clone(),
        command_allowlist: config.command_allowlist.clone(),
        push_registries: config.seqera.registries.clone(),
        hooks: config
            .pre_tool_use
            .iter()
            .map(|hook| codaris_ledger::CandidateHook {
                matcher: hook.matcher.clone(),
                command: hook.command.clone(),
            })
            .collect(),
    }
}
