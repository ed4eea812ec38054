//! The provider settings a new session is made with: which provider answers a session that
//! names none, its model, and each API's key and base URL, resolved from the configuration
//! file, the credentials `codaris login` stored and the environment, and swapped whole while
//! the daemon runs (a login takes effect at the next session, without a restart).
//!
//! Precedence, lowest first: the default (nothing), `[provider]`/`[anthropic]`/`[openai]` in
//! the configuration file, `<state>/credentials.toml` (written by `codaris login`), the
//! daemon's environment (`CODARIS_PROVIDER`, `CODARIS_MODEL`, `*_API_KEY`, `*_BASE_URL`). The
//! environment wins as it does for other programs' stored logins (`GH_TOKEN` over `gh auth
//! login`): it is what the person who started the daemon asked for on purpose.
//!
//! The credentials file lives in the state directory, which every command a session runs is
//! denied (Landlock) and every file tool refuses; the socket that could change it is refused to
//! the daemon's own commands (`peer`). It is written 0600 through a temporary 0600 file renamed
//! over it, so it is never readable by others, not even for an instant.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use codaris_agent::{ProviderChoice, ProviderKind};
use serde::{Deserialize, Serialize};

use crate::config::{ApiConfig, ApiToml, ProviderToml};
use crate::config_sources::Source;
use crate::error::{ConfigError, DaemonError};

/// The credentials file's name in the state directory.
pub const CREDENTIALS_FILE: &str = "credentials.toml";

/// The environment variables provider settings read.
fn provider_vars() -> Vec<&'static str> {
    let mut vars = vec!["CODARIS_PROVIDER", "CODARIS_MODEL"];
    for kind in ProviderKind::ALL {
        vars.extend([kind.api_key_env(), kind.base_url_env()]);
    }
    vars
}

/// `<state>/credentials.toml` as `codaris login` writes it.
#[derive(Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialsToml {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anthropic: Option<ApiToml>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openai: Option<ApiToml>,
}

impl std::fmt::Debug for CredentialsToml {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialsToml")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("anthropic", &self.anthropic)
            .field("openai", &self.openai)
            .finish()
    }
}

impl CredentialsToml {
    fn api_mut(&mut self, kind: ProviderKind) -> &mut ApiToml {
        match kind {
            ProviderKind::Anthropic => self.anthropic.get_or_insert_with(ApiToml::default),
            ProviderKind::OpenAi => self.openai.get_or_insert_with(ApiToml::default),
        }
    }

    fn api(&self, kind: ProviderKind) -> Option<&ApiToml> {
        match kind {
            ProviderKind::Anthropic => self.anthropic.as_ref(),
            ProviderKind::OpenAi => self.openai.as_ref(),
        }
    }
}

/// What provider settings are resolved from, besides a login: the file's tables and the
/// provider variables of the environment. Kept by the daemon so a login resolves again.
#[derive(Clone, PartialEq, Default)]
pub struct ProviderInputs {
    /// The configuration file, for naming a bad value's origin.
    pub file: Option<PathBuf>,
    pub provider: ProviderToml,
    pub anthropic: ApiToml,
    pub openai: ApiToml,
    /// The provider variables that were set (non-empty), by name.
    pub env: BTreeMap<String, String>,
}

impl std::fmt::Debug for ProviderInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names only: the environment holds keys.
        f.debug_struct("ProviderInputs")
            .field("file", &self.file)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl ProviderInputs {
    /// The inputs from the file's tables and the environment; `env_str` reads one variable.
    pub fn gather(
        file: Option<PathBuf>,
        provider: ProviderToml,
        anthropic: ApiToml,
        openai: ApiToml,
        env_str: &dyn Fn(&str) -> Result<Option<String>, ConfigError>,
    ) -> Result<Self, ConfigError> {
        let mut env = BTreeMap::new();
        for name in provider_vars() {
            if let Some(value) = env_str(name)? {
                env.insert(name.to_owned(), value);
            }
        }
        Ok(Self {
            file,
            provider,
            anthropic,
            openai,
            env,
        })
    }

    fn api(&self, kind: ProviderKind) -> &ApiToml {
        match kind {
            ProviderKind::Anthropic => &self.anthropic,
            ProviderKind::OpenAi => &self.openai,
        }
    }
}

/// The resolved settings, with where each came from (keys as in the file: `provider.name`,
/// `openai.api_key`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProviderSettings {
    /// `None`: nothing is set up; a session must name its provider (or a script).
    pub provider: Option<ProviderChoice>,
    pub model: Option<String>,
    pub anthropic: ApiConfig,
    pub openai: ApiConfig,
    pub sources: BTreeMap<String, Source>,
}

impl ProviderSettings {
    pub fn api(&self, kind: ProviderKind) -> &ApiConfig {
        match kind {
            ProviderKind::Anthropic => &self.anthropic,
            ProviderKind::OpenAi => &self.openai,
        }
    }

    pub fn source(&self, key: &str) -> Source {
        self.sources.get(key).copied().unwrap_or(Source::Default)
    }
}

/// The first of environment, login and file that sets a value, and which it was.
fn pick(
    env: Option<&String>,
    login: Option<&String>,
    file: Option<&String>,
) -> Option<(String, Source)> {
    env.map(|v| (v.clone(), Source::Environment))
        .or_else(|| login.map(|v| (v.clone(), Source::Login)))
        .or_else(|| file.map(|v| (v.clone(), Source::File)))
}

/// Resolves the settings: file, then login (`<state>/credentials.toml`), then environment.
/// Pure; every bad value is named with where it came from.
pub fn resolve(
    inputs: &ProviderInputs,
    login: Option<(&Path, &CredentialsToml)>,
) -> Result<ProviderSettings, ConfigError> {
    let origin = |source: Source, key: &str, var: &str| match source {
        Source::Environment => format!("environment variable `{var}`"),
        Source::Login => match login {
            Some((path, _)) => format!("`{key}` in {}", path.display()),
            None => format!("`{key}`"),
        },
        _ => match &inputs.file {
            Some(path) => format!("`{key}` in {}", path.display()),
            None => format!("`{key}`"),
        },
    };
    let creds = login.map(|(_, creds)| creds);
    let mut sources = BTreeMap::new();
    let provider = match pick(
        inputs.env.get("CODARIS_PROVIDER"),
        creds.and_then(|c| c.provider.as_ref()),
        inputs.provider.name.as_ref(),
    ) {
        Some((name, source)) => {
            sources.insert("provider.name".to_owned(), source);
            Some(
                ProviderChoice::parse(&name).ok_or_else(|| ConfigError::Invalid {
                    key: origin(source, "provider.name", "CODARIS_PROVIDER"),
                    reason: format!("must be one of {}, not `{name}`", ProviderChoice::NAMES),
                })?,
            )
        }
        None => None,
    };
    let model = pick(
        inputs.env.get("CODARIS_MODEL"),
        creds.and_then(|c| c.model.as_ref()),
        inputs.provider.model.as_ref(),
    )
    .map(|(model, source)| {
        sources.insert("provider.model".to_owned(), source);
        model
    });
    let mut api = |kind: ProviderKind| -> Result<ApiConfig, ConfigError> {
        let section = kind.as_str();
        let table = inputs.api(kind);
        let stored = creds.and_then(|c| c.api(kind));
        let url_key = format!("{section}.base_url");
        let base_url = match pick(
            inputs.env.get(kind.base_url_env()),
            stored.and_then(|t| t.base_url.as_ref()),
            table.base_url.as_ref(),
        ) {
            Some((url, source)) => {
                sources.insert(url_key.clone(), source);
                let key = origin(source, &url_key, kind.base_url_env());
                Some(crate::config::http_url(&key, &url)?)
            }
            None => None,
        };
        let api_key = pick(
            inputs.env.get(kind.api_key_env()),
            stored.and_then(|t| t.api_key.as_ref()),
            table.api_key.as_ref(),
        )
        .map(|(key, source)| {
            sources.insert(format!("{section}.api_key"), source);
            key
        });
        let cap_key = format!("{section}.max_output_tokens");
        // A login stores what reaches a provider, not how it is used: a cap written into the
        // credentials file by hand would be ignored, so it is refused instead.
        if stored.is_some_and(|t| t.max_output_tokens.is_some()) {
            return Err(ConfigError::Invalid {
                key: origin(Source::Login, &cap_key, ""),
                reason: "belongs in the configuration file, not the credentials file".to_owned(),
            });
        }
        let max_output_tokens = match table.max_output_tokens {
            Some(tokens) => {
                sources.insert(cap_key.clone(), Source::File);
                output_cap(&origin(Source::File, &cap_key, ""), tokens)?
            }
            None => codaris_agent::DEFAULT_MAX_OUTPUT_TOKENS,
        };
        Ok(ApiConfig {
            api_key,
            base_url,
            max_output_tokens,
        })
    };
    let anthropic = api(ProviderKind::Anthropic)?;
    let openai = api(ProviderKind::OpenAi)?;
    Ok(ProviderSettings {
        provider,
        model,
        anthropic,
        openai,
        sources,
    })
}

/// `tokens` as an output cap: a whole number from 1 to `u32::MAX`, else why not, under `key`.
fn output_cap(key: &str, tokens: i64) -> Result<u32, ConfigError> {
    u32::try_from(tokens)
        .ok()
        .filter(|tokens| *tokens > 0)
        .ok_or_else(|| ConfigError::Invalid {
            key: key.to_owned(),
            reason: format!(
                "must be a positive number of tokens such as {}, not `{tokens}`",
                codaris_agent::DEFAULT_MAX_OUTPUT_TOKENS
            ),
        })
}

/// Reads `path`: `None` when it does not exist. A file others may read is refused (as ssh
/// refuses a private key others can read): its keys may already be known.
pub fn read_credentials(path: &Path) -> Result<Option<CredentialsToml>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Unreadable {
                file: path.to_path_buf(),
                source,
            });
        }
    };
    let mode = std::fs::metadata(path)
        .map_err(|source| ConfigError::Unreadable {
            file: path.to_path_buf(),
            source,
        })?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(ConfigError::Invalid {
            key: format!("credentials file {}", path.display()),
            reason: format!(
                "is open to other users (mode {:o}); `chmod 600` it, or remove it and run `codaris login` again",
                mode & 0o777
            ),
        });
    }
    toml::from_str(&text)
        .map(Some)
        .map_err(|err| ConfigError::Parse {
            file: path.to_path_buf(),
            line: err
                .span()
                .map(|span| text.get(..span.start).unwrap_or("").matches('\n').count() + 1),
            message: err
                .message()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        })
}

/// Writes `creds` to `path` as a new 0600 file renamed over the old one, so a reader sees the
/// old file or the new one, and no one else ever sees either.
fn write_credentials(path: &Path, creds: &CredentialsToml) -> Result<(), DaemonError> {
    let io = |source| DaemonError::Io {
        path: path.to_path_buf(),
        source,
    };
    let text = toml::to_string(creds).map_err(|err| DaemonError::InvalidArgument {
        field: "credentials",
        reason: format!("cannot be encoded: {err}"),
    })?;
    let dir = path.parent().unwrap_or(Path::new("/"));
    let suffix = crate::secret::random_hex(8).map_err(io)?;
    let temp = dir.join(format!(".{CREDENTIALS_FILE}.{suffix}"));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        // The mode above is masked by the umask; this makes it exact whatever the umask.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.map_err(io)
}

/// What a login does with the stored key.
#[derive(Clone, PartialEq, Eq)]
pub enum KeyChange {
    /// Keep the stored one (or none).
    Keep,
    /// Store this one.
    Set(String),
    /// Store none: the server is on this machine and needs none. Refused for any other.
    Remove,
}

impl std::fmt::Debug for KeyChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Keep => "Keep",
            Self::Set(_) => "Set(<redacted>)",
            Self::Remove => "Remove",
        })
    }
}

/// What `codaris login` asks to store; empty fields keep what is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    pub provider: ProviderKind,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key: KeyChange,
}

/// The daemon's provider settings, swapped whole by a login.
#[derive(Debug)]
pub struct LiveProviders {
    inputs: ProviderInputs,
    file: PathBuf,
    current: RwLock<Arc<ProviderSettings>>,
    /// One login at a time reads, changes and writes the file.
    writing: Mutex<()>,
}

impl LiveProviders {
    /// The settings the daemon started with, and the file logins write to.
    pub fn new(inputs: ProviderInputs, settings: ProviderSettings, file: PathBuf) -> Self {
        Self {
            inputs,
            file,
            current: RwLock::new(Arc::new(settings)),
            writing: Mutex::new(()),
        }
    }

    pub fn current(&self) -> Arc<ProviderSettings> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Stores `login` in the credentials file and makes the result the live settings. A bad
    /// value changes nothing: it is checked before anything is written.
    pub fn login(&self, login: Login) -> Result<Arc<ProviderSettings>, DaemonError> {
        let invalid = |field: &'static str, err: ConfigError| DaemonError::InvalidArgument {
            field,
            reason: err.to_string(),
        };
        let _writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut creds = read_credentials(&self.file)
            .map_err(|err| invalid("credentials", err))?
            .unwrap_or_default();
        creds.provider = Some(login.provider.as_str().to_owned());
        if let Some(model) = login.model {
            creds.model = Some(model);
        }
        let api = creds.api_mut(login.provider);
        if let Some(url) = login.base_url {
            api.base_url = Some(
                crate::config::http_url("base_url", &url)
                    .map_err(|err| invalid("base_url", err))?,
            );
        }
        match &login.api_key {
            KeyChange::Keep => {}
            KeyChange::Set(key) => api.api_key = Some(key.clone()),
            KeyChange::Remove => api.api_key = None,
        }
        let settings = resolve(&self.inputs, Some((&self.file, &creds)))
            .map_err(|err| invalid("login", err))?;
        if login.api_key == KeyChange::Remove {
            // A key is what keeps a remote server's door shut: only this machine's may go
            // without one, judged on the base URL in force after the login (the environment's
            // included), parsed, so `http://localhost@evil.example` is not this machine.
            let base_url = settings
                .api(login.provider)
                .base_url
                .clone()
                .unwrap_or_else(|| login.provider.default_base_url().to_owned());
            if !codaris_agent::is_loopback_url(&base_url) {
                return Err(DaemonError::InvalidArgument {
                    field: "api_key",
                    reason: format!(
                        "none was given, and `{base_url}` is not on this machine; only a server on 127.0.0.1, ::1 or localhost may go without a key"
                    ),
                });
            }
        }
        write_credentials(&self.file, &creds)?;
        let settings = Arc::new(settings);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = settings.clone();
        tracing::info!(
            provider = login.provider.as_str(),
            file = %self.file.display(),
            "provider settings stored and in force"
        );
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn inputs(env: &[(&str, &str)]) -> ProviderInputs {
        ProviderInputs {
            file: Some(PathBuf::from("/etc/codaris/config.toml")),
            provider: ProviderToml {
                name: Some("anthropic".to_owned()),
                model: Some("file-model".to_owned()),
            },
            openai: ApiToml {
                api_key: Some("sk-file".to_owned()),
                base_url: Some("http://file.example/v1".to_owned()),
                max_output_tokens: None,
            },
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..ProviderInputs::default()
        }
    }

    fn login() -> CredentialsToml {
        CredentialsToml {
            provider: Some("openai".to_owned()),
            model: Some("login-model".to_owned()),
            openai: Some(ApiToml {
                api_key: Some("sk-login".to_owned()),
                base_url: None,
                max_output_tokens: None,
            }),
            anthropic: None,
        }
    }

    #[test]
    fn login_wins_over_the_file_and_the_environment_over_both() -> Result<(), ConfigError> {
        let creds = login();
        let path = PathBuf::from("/state/credentials.toml");
        let stored = resolve(&inputs(&[]), Some((&path, &creds)))?;
        assert_eq!(
            stored.provider,
            Some(ProviderChoice::Api(ProviderKind::OpenAi))
        );
        assert_eq!(stored.model.as_deref(), Some("login-model"));
        assert_eq!(stored.openai.api_key.as_deref(), Some("sk-login"));
        assert_eq!(
            stored.openai.base_url.as_deref(),
            Some("http://file.example/v1")
        );
        assert_eq!(stored.source("openai.api_key"), Source::Login);
        assert_eq!(stored.source("openai.base_url"), Source::File);
        assert_eq!(stored.source("anthropic.api_key"), Source::Default);

        let env = inputs(&[("CODARIS_MODEL", "env-model"), ("OPENAI_API_KEY", "sk-env")]);
        let overridden = resolve(&env, Some((&path, &creds)))?;
        assert_eq!(overridden.model.as_deref(), Some("env-model"));
        assert_eq!(overridden.openai.api_key.as_deref(), Some("sk-env"));
        assert_eq!(overridden.source("provider.model"), Source::Environment);
        Ok(())
    }

    #[test]
    fn nothing_configured_is_no_provider_not_the_scripted_one() -> Result<(), ConfigError> {
        let settings = resolve(&ProviderInputs::default(), None)?;
        assert_eq!(settings.provider, None);
        Ok(())
    }

    #[test]
    fn a_bad_base_url_names_where_it_came_from() {
        let err = resolve(&inputs(&[("OPENAI_BASE_URL", "ftp://x")]), None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("OPENAI_BASE_URL"), "{err}");
        let err = resolve(&inputs(&[("OPENAI_BASE_URL", "http://")]), None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("OPENAI_BASE_URL"), "{err}");
    }

    #[test]
    fn a_login_is_stored_0600_and_keeps_the_other_provider_s_key()
    -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let file = temp.path().join(CREDENTIALS_FILE);
        let live = LiveProviders::new(
            ProviderInputs::default(),
            ProviderSettings::default(),
            file.clone(),
        );
        live.login(Login {
            provider: ProviderKind::Anthropic,
            model: Some("claude-x".to_owned()),
            base_url: None,
            api_key: KeyChange::Set("sk-ant-1".to_owned()),
        })?;
        let settings = live.login(Login {
            provider: ProviderKind::OpenAi,
            model: Some("gpt-x".to_owned()),
            base_url: Some("http://127.0.0.1:9/v1".to_owned()),
            api_key: KeyChange::Set("sk-oa-1".to_owned()),
        })?;
        assert_eq!(
            std::fs::metadata(&file)?.permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            settings.provider,
            Some(ProviderChoice::Api(ProviderKind::OpenAi))
        );
        assert_eq!(settings.anthropic.api_key.as_deref(), Some("sk-ant-1"));
        assert_eq!(settings.openai.api_key.as_deref(), Some("sk-oa-1"));
        assert_eq!(live.current().model.as_deref(), Some("gpt-x"));
        // Nothing else is left in the directory: the temporary file was renamed.
        assert_eq!(std::fs::read_dir(temp.path())?.count(), 1);
        assert!(!format!("{:?}", read_credentials(&file)?).contains("sk-"));

        let refused = live.login(Login {
            provider: ProviderKind::OpenAi,
            model: None,
            base_url: Some("not a url".to_owned()),
            api_key: KeyChange::Set("sk-oa-2".to_owned()),
        });
        assert!(refused.is_err());
        assert_eq!(live.current().openai.api_key.as_deref(), Some("sk-oa-1"));

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644))?;
        let open = read_credentials(&file).err().map(|e| e.to_string());
        assert!(open.unwrap_or_default().contains("chmod 600"));
        Ok(())
    }

    #[test]
    fn a_login_without_a_key_is_kept_for_a_server_on_this_machine_only()
    -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let file = temp.path().join(CREDENTIALS_FILE);
        let live = LiveProviders::new(
            ProviderInputs::default(),
            ProviderSettings::default(),
            file.clone(),
        );
        live.login(Login {
            provider: ProviderKind::OpenAi,
            model: Some("gpt-x".to_owned()),
            base_url: None,
            api_key: KeyChange::Set("sk-oa-1".to_owned()),
        })?;
        let remote = |base_url: Option<&str>| Login {
            provider: ProviderKind::OpenAi,
            model: None,
            base_url: base_url.map(str::to_owned),
            api_key: KeyChange::Remove,
        };
        // The public endpoint, and look-alikes of this machine: refused, nothing changed.
        for base_url in [
            None,
            Some("http://127.0.0.1.evil.example/v1"),
            Some("http://localhost@evil.example/v1"),
        ] {
            let refused = live.login(remote(base_url)).err().map(|e| e.to_string());
            assert!(
                refused
                    .as_deref()
                    .is_some_and(|e| e.contains("not on this machine")),
                "{base_url:?}: {refused:?}"
            );
            assert_eq!(live.current().openai.api_key.as_deref(), Some("sk-oa-1"));
        }
        let settings = live.login(remote(Some("http://127.0.0.1:8080/v1")))?;
        assert_eq!(settings.openai.api_key, None);
        assert_eq!(
            settings.openai.base_url.as_deref(),
            Some("http://127.0.0.1:8080/v1")
        );
        let stored = read_credentials(&file)?.unwrap_or_default();
        assert_eq!(stored.openai.and_then(|api| api.api_key), None);

        let mut by_hand = login();
        by_hand
            .openai
            .get_or_insert_with(ApiToml::default)
            .max_output_tokens = Some(10);
        let refused = resolve(&inputs(&[]), Some((&file, &by_hand)))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            refused.contains("`openai.max_output_tokens` in"),
            "{refused}"
        );
        Ok(())
    }
}
