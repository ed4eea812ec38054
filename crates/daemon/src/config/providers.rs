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
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use codaris_agent::{ProviderChoice, ProviderKind};
use serde::{Deserialize, Serialize};

use super::values::Source;
use crate::error::ConfigError;

/// Credentials, endpoint and output cap of one HTTP model API. The key is never printed by
/// `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiConfig {
    pub api_key: Option<String>,
    pub base_url: Option<String>,
    /// The output cap of every answer ([`codaris_agent::DEFAULT_MAX_OUTPUT_TOKENS`] unless
    /// `max_output_tokens` is set), at least 1.
    pub max_output_tokens: u32,
    /// `context_window`: the model's context window in tokens, when configured.
    pub context_window: Option<u64>,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            api_key: None,
            base_url: None,
            max_output_tokens: codaris_agent::DEFAULT_MAX_OUTPUT_TOKENS,
            context_window: None,
        }
    }
}

impl std::fmt::Debug for ApiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiConfig")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("context_window", &self.context_window)
            .finish()
    }
}

#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderToml {
    pub name: Option<String>,
    pub model: Option<String>,
}

#[derive(Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApiToml {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The most tokens one answer may have (`[openai] max_output_tokens`); read signed so that
    /// a negative value is named as such rather than as a type error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<i64>,
    /// The model's context window in tokens (`[openai] context_window`), when the table of
    /// known models does not know it or knows it wrong; read signed like the cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<i64>,
}

impl std::fmt::Debug for ApiToml {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiToml")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("context_window", &self.context_window)
            .finish()
    }
}

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
    pub(crate) fn api_mut(&mut self, kind: ProviderKind) -> &mut ApiToml {
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
                Some(super::values::http_url(&key, &url)?)
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
        let window_key = format!("{section}.context_window");
        if stored.is_some_and(|t| t.context_window.is_some()) {
            return Err(ConfigError::Invalid {
                key: origin(Source::Login, &window_key, ""),
                reason: "belongs in the configuration file, not the credentials file".to_owned(),
            });
        }
        let context_window = match table.context_window {
            Some(tokens) => {
                sources.insert(window_key.clone(), Source::File);
                Some(context_window(
                    &origin(Source::File, &window_key, ""),
                    tokens,
                )?)
            }
            None => None,
        };
        Ok(ApiConfig {
            api_key,
            base_url,
            max_output_tokens,
            context_window,
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

/// The smallest context window accepted: less would leave no room for the system prompt and
/// the always-on tools.
const MIN_CONTEXT_WINDOW: i64 = 4_096;

/// `tokens` as a context window: a whole number of at least [`MIN_CONTEXT_WINDOW`], else why
/// not, under `key`.
fn context_window(key: &str, tokens: i64) -> Result<u64, ConfigError> {
    u64::try_from(tokens)
        .ok()
        .filter(|_| tokens >= MIN_CONTEXT_WINDOW)
        .ok_or_else(|| ConfigError::Invalid {
            key: key.to_owned(),
            reason: format!(
                "must be a number of tokens of at least {MIN_CONTEXT_WINDOW}, such as 200000, not `{tokens}`"
            ),
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    pub(crate) fn inputs(env: &[(&str, &str)]) -> ProviderInputs {
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
                context_window: None,
            },
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..ProviderInputs::default()
        }
    }

    pub(crate) fn login() -> CredentialsToml {
        CredentialsToml {
            provider: Some("openai".to_owned()),
            model: Some("login-model".to_owned()),
            openai: Some(ApiToml {
                api_key: Some("sk-login".to_owned()),
                base_url: None,
                max_output_tokens: None,
                context_window: None,
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
}
