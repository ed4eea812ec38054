//! The provider, model and base URL a new session gets: what its request names (the client's
//! flags and environment), else the daemon's settings in force. One resolution for both
//! `CreateSession` and `codaris doctor`, so doctor checks exactly what a run from the same
//! shell would ask.

use std::path::Path;

use codaris_agent::{ProviderChoice, ProviderKind};

use crate::config::Source;
use crate::config::providers::ProviderSettings;
use crate::error::DaemonError;

/// Where one setting of a [`ModelChoice`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The request named it (the client's flag or environment; the client knows which).
    Request,
    /// The daemon's settings: its file, its environment, its flags, `codaris login`.
    Daemon(Source),
    /// Nothing set it: the provider's public endpoint, or a script naming the scripted model.
    Default,
}

impl Origin {
    /// How doctor names it: `request`, `daemon file`, `daemon environment`, `daemon flag`,
    /// `codaris login`, `default`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Request => "request",
            Self::Daemon(Source::File) => "daemon file",
            Self::Daemon(Source::Environment) => "daemon environment",
            Self::Daemon(Source::Flag) => "daemon flag",
            Self::Daemon(Source::Login) => "codaris login",
            Self::Daemon(Source::Default) | Self::Default => "default",
        }
    }
}

/// A new session's provider, model and base URL, each with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    pub provider: ProviderChoice,
    pub provider_origin: Origin,
    /// `None` for an API provider is refused by [`ModelChoice::missing_model`].
    pub model: Option<String>,
    pub model_origin: Origin,
    /// `None`: the provider's public endpoint (or no server, for the scripted model).
    pub base_url: Option<String>,
    pub base_url_origin: Origin,
}

/// What a request asks for; an empty field leaves it to the daemon.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asked<'a> {
    pub provider: &'a str,
    pub model: &'a str,
    pub base_url: &'a str,
    pub script: Option<&'a Path>,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> DaemonError {
    DaemonError::InvalidArgument {
        field,
        reason: reason.into(),
    }
}

impl ModelChoice {
    /// Resolves `asked` against `settings`. The scripted model only when asked for, by name or
    /// by giving it a script: nothing set up is an error, not a test double answering.
    pub fn resolve(settings: &ProviderSettings, asked: Asked<'_>) -> Result<Self, DaemonError> {
        let (provider, provider_origin) = if !asked.provider.is_empty() {
            let provider = ProviderChoice::parse(asked.provider).ok_or_else(|| {
                invalid(
                    "provider",
                    format!(
                        "must be one of {}, not `{}`",
                        ProviderChoice::NAMES,
                        asked.provider
                    ),
                )
            })?;
            (provider, Origin::Request)
        } else if asked.script.is_some() {
            (ProviderChoice::Scripted, Origin::Default)
        } else {
            let provider = settings.provider.ok_or(DaemonError::NoProvider)?;
            (provider, Origin::Daemon(settings.source("provider.name")))
        };
        let (base_url, base_url_origin) = match provider {
            ProviderChoice::Scripted if asked.script.is_none() => {
                return Err(invalid(
                    "script",
                    "the scripted provider plays a script file: give `--script FILE`",
                ));
            }
            ProviderChoice::Scripted if !asked.base_url.is_empty() => {
                return Err(invalid(
                    "base_url",
                    "the scripted provider asks no server; leave the base URL out",
                ));
            }
            ProviderChoice::Scripted => (None, Origin::Default),
            ProviderChoice::Api(kind) if asked.base_url.is_empty() => {
                let key = format!("{}.base_url", kind.as_str());
                match settings.api(kind).base_url.clone() {
                    Some(url) => (Some(url), Origin::Daemon(settings.source(&key))),
                    None => (None, Origin::Default),
                }
            }
            ProviderChoice::Api(_) => (
                Some(
                    crate::config::http_url("base_url", asked.base_url)
                        .map_err(|err| invalid("base_url", err.to_string()))?,
                ),
                Origin::Request,
            ),
        };
        let (model, model_origin) = if !asked.model.is_empty() {
            (Some(asked.model.to_owned()), Origin::Request)
        } else {
            (
                settings.model.clone(),
                match settings.model {
                    Some(_) => Origin::Daemon(settings.source("provider.model")),
                    None => Origin::Default,
                },
            )
        };
        Ok(Self {
            provider,
            provider_origin,
            model,
            model_origin,
            base_url,
            base_url_origin,
        })
    }

    /// The API provider, when it is one.
    pub fn kind(&self) -> Option<ProviderKind> {
        match self.provider {
            ProviderChoice::Api(kind) => Some(kind),
            ProviderChoice::Scripted => None,
        }
    }

    /// The base URL asked: the chosen one, else the provider's public endpoint.
    pub fn endpoint(&self) -> String {
        match (&self.base_url, self.kind()) {
            (Some(url), _) => url.clone(),
            (None, Some(kind)) => kind.default_base_url().to_owned(),
            (None, None) => String::new(),
        }
    }

    /// An API provider with no model cannot answer a turn.
    pub fn missing_model(&self) -> Option<DaemonError> {
        let kind = self.kind().filter(|_| self.model.is_none())?;
        Some(invalid(
            "model",
            format!(
                "provider `{}` needs a model: give --model, set CODARIS_MODEL, or run `codaris login --model M`",
                kind.as_str()
            ),
        ))
    }

    /// An API provider with no key in `settings`, asked anywhere but this machine (llama.cpp,
    /// Ollama may need none): said now rather than after the retries.
    pub fn missing_key(&self, settings: &ProviderSettings) -> Option<DaemonError> {
        let kind = self.kind()?;
        let local = self
            .base_url
            .as_deref()
            .is_some_and(codaris_agent::is_loopback_url);
        (settings.api(kind).api_key.is_none() && !local).then(|| DaemonError::MissingKey {
            provider: kind.as_str(),
            var: kind.api_key_env(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApiConfig;
    use pretty_assertions::assert_eq;

    fn settings() -> ProviderSettings {
        let mut settings = ProviderSettings {
            provider: Some(ProviderChoice::Api(ProviderKind::Anthropic)),
            model: Some("claude-x".to_owned()),
            anthropic: ApiConfig {
                api_key: Some("sk-ant".to_owned()),
                ..ApiConfig::default()
            },
            ..ProviderSettings::default()
        };
        settings
            .sources
            .insert("provider.name".to_owned(), Source::Login);
        settings
            .sources
            .insert("provider.model".to_owned(), Source::File);
        settings
    }

    #[test]
    fn the_request_wins_and_each_setting_names_where_it_came_from() -> Result<(), DaemonError> {
        let daemon = ModelChoice::resolve(&settings(), Asked::default())?;
        assert_eq!(daemon.provider.as_str(), "anthropic");
        assert_eq!(
            [
                daemon.provider_origin.as_str(),
                daemon.model_origin.as_str(),
                daemon.base_url_origin.as_str()
            ],
            ["codaris login", "daemon file", "default"]
        );
        assert_eq!(
            daemon.endpoint(),
            ProviderKind::Anthropic.default_base_url()
        );

        let asked = ModelChoice::resolve(
            &settings(),
            Asked {
                provider: "openai",
                model: "local-model",
                base_url: "http://127.0.0.1:8080/v1",
                script: None,
            },
        )?;
        assert_eq!(asked.provider.as_str(), "openai");
        assert_eq!(asked.model.as_deref(), Some("local-model"));
        assert_eq!(asked.endpoint(), "http://127.0.0.1:8080/v1");
        assert_eq!(
            [
                asked.provider_origin,
                asked.model_origin,
                asked.base_url_origin
            ],
            [Origin::Request; 3]
        );
        // On loopback no key is needed; elsewhere the missing key is named.
        assert!(asked.missing_key(&settings()).is_none());
        let remote = ModelChoice::resolve(
            &settings(),
            Asked {
                provider: "openai",
                ..Asked::default()
            },
        )?;
        assert!(matches!(
            remote.missing_key(&settings()),
            Some(DaemonError::MissingKey { .. })
        ));
        Ok(())
    }

    #[test]
    fn nothing_set_up_or_a_scripted_model_without_a_script_is_refused() {
        assert!(matches!(
            ModelChoice::resolve(&ProviderSettings::default(), Asked::default()),
            Err(DaemonError::NoProvider)
        ));
        assert!(
            ModelChoice::resolve(
                &settings(),
                Asked {
                    provider: "scripted",
                    ..Asked::default()
                }
            )
            .is_err()
        );
        let no_model = ModelChoice::resolve(
            &ProviderSettings {
                model: None,
                ..settings()
            },
            Asked::default(),
        );
        assert!(no_model.is_ok_and(|c| c.missing_model().is_some()));
    }
}
