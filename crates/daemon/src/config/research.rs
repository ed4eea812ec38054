//! `[ncbi]`, `[research]` and `[seqera]` in the configuration file: where the literature and
//! archive searches, `web_research`, and the built-in MCP server `seqera` send their requests.
//!
//! ```toml
//! [ncbi]
//! base_url = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"   # the default
//! email = "me@lab.org"            # sent with every request, as NCBI asks
//! api_key = "…"                   # or NCBI_API_KEY; 10 requests a second instead of 3
//!
//! [research]
//! engines = ["brave", "bing"]     # what web_research asks; default: tools.websearch_engines
//!
//! [seqera]
//! wave_url = "https://wave.seqera.io"
//! platform_url = "https://api.cloud.seqera.io"
//! token = "…"                     # or TOWER_ACCESS_TOKEN
//! registries = ["quay.io/lab"]    # the only registries a built image may be pushed to
//! ```
//!
//! Keys and tokens come from the file or the environment (the environment wins, as for the
//! model providers' keys), are sent only to their own endpoint, and are never printed.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// NCBI's API key, when not in `[ncbi] api_key`.
pub const NCBI_API_KEY_VAR: &str = "NCBI_API_KEY";
/// The Seqera access token, when not in `[seqera] token` (the name Nextflow and tw use).
pub const TOWER_TOKEN_VAR: &str = "TOWER_ACCESS_TOKEN";

/// NCBI E-utilities' public endpoint.
pub const DEFAULT_EUTILS_URL: &str = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/";

/// `[ncbi]`.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NcbiToml {
    pub base_url: Option<String>,
    pub email: Option<String>,
    pub api_key: Option<String>,
}

/// `[research]`.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ResearchToml {
    pub engines: Option<Vec<String>>,
}

/// `[seqera]`.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SeqeraToml {
    pub wave_url: Option<String>,
    pub platform_url: Option<String>,
    pub token: Option<String>,
    pub registries: Option<Vec<String>>,
}

/// `[ncbi]`, resolved. The key is never printed by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct NcbiConfig {
    pub base_url: String,
    pub email: Option<String>,
    pub api_key: Option<String>,
}

impl Default for NcbiConfig {
    /// NCBI's public endpoint, no email, no key.
    fn default() -> Self {
        Self {
            base_url: DEFAULT_EUTILS_URL.to_owned(),
            email: None,
            api_key: None,
        }
    }
}

impl NcbiConfig {
    /// The client the research tools share: built once, so its throttle holds for the daemon.
    pub fn client(&self) -> Result<codaris_ncbi::Eutils, codaris_ncbi::NcbiError> {
        codaris_ncbi::Eutils::new(codaris_ncbi::EutilsConfig {
            base_url: self.base_url.clone(),
            email: self.email.clone(),
            api_key: self.api_key.clone(),
            ..codaris_ncbi::EutilsConfig::default()
        })
    }
}

impl std::fmt::Debug for NcbiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcbiConfig")
            .field("base_url", &self.base_url)
            .field("email", &self.email)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// `[seqera]`, resolved (the token is redacted in `Debug` by `SeqeraSetup`).
pub type SeqeraConfig = codaris_seqera::SeqeraSetup;

/// Reads `[ncbi]`; `env_key` is `NCBI_API_KEY` from the environment, which wins over the file.
pub fn resolve_ncbi(
    toml: Option<NcbiToml>,
    env_key: Option<String>,
    origin: &dyn Fn(&str) -> String,
) -> Result<NcbiConfig, ConfigError> {
    let toml = toml.unwrap_or_default();
    let base_url = match toml.base_url {
        None => DEFAULT_EUTILS_URL.to_owned(),
        Some(url) => super::values::http_url(&origin("ncbi.base_url"), &url)?,
    };
    let email = match toml.email.map(|email| email.trim().to_owned()) {
        None => None,
        Some(email) if email.contains('@') && !email.contains(char::is_whitespace) => Some(email),
        Some(email) => {
            return Err(ConfigError::Invalid {
                key: origin("ncbi.email"),
                reason: format!("`{email}` is not an email address"),
            });
        }
    };
    let api_key = secret(&origin("ncbi.api_key"), env_key.or(toml.api_key))?;
    Ok(NcbiConfig {
        base_url,
        email,
        api_key,
    })
}

/// Reads `[seqera]`; `env_token` is `TOWER_ACCESS_TOKEN` from the environment, which wins.
pub fn resolve_seqera(
    toml: Option<SeqeraToml>,
    env_token: Option<String>,
    nextflow_bin: &str,
    origin: &dyn Fn(&str) -> String,
) -> Result<SeqeraConfig, ConfigError> {
    let toml = toml.unwrap_or_default();
    let mut setup = codaris_seqera::SeqeraSetup::default();
    if let Some(url) = toml.wave_url {
        setup.wave_url = super::values::http_url(&origin("seqera.wave_url"), &url)?
            .trim_end_matches('/')
            .to_owned();
    }
    if let Some(url) = toml.platform_url {
        setup.platform_url = super::values::http_url(&origin("seqera.platform_url"), &url)?
            .trim_end_matches('/')
            .to_owned();
    }
    setup.token = secret(&origin("seqera.token"), env_token.or(toml.token))?;
    for registry in toml.registries.unwrap_or_default() {
        let registry = registry.trim().trim_end_matches('/').to_owned();
        // A registry is a host with an optional repository path: `quay.io/lab`. Anything with
        // a scheme, a space or a comma would not compare as the policy compares it.
        if registry.is_empty()
            || registry.contains("://")
            || registry.contains([' ', ',', '\0', '\n'])
        {
            return Err(ConfigError::Invalid {
                key: origin("seqera.registries"),
                reason: format!(
                    "`{registry}` is not a registry; write a host and repository such as quay.io/lab"
                ),
            });
        }
        if !setup.registries.contains(&registry) {
            setup.registries.push(registry);
        }
    }
    setup.nextflow = std::path::PathBuf::from(nextflow_bin);
    Ok(setup)
}

/// `[research] engines`, or `None` to use `tools.websearch_engines`.
pub fn resolve_research_engines(
    toml: Option<ResearchToml>,
    origin: &dyn Fn(&str) -> String,
) -> Result<Option<Vec<codaris_tools::Engine>>, ConfigError> {
    let Some(names) = toml.and_then(|t| t.engines) else {
        return Ok(None);
    };
    if names.is_empty() {
        return Err(ConfigError::Invalid {
            key: origin("research.engines"),
            reason: "names no engine; leave it out to use tools.websearch_engines".to_owned(),
        });
    }
    names
        .iter()
        .map(|name| {
            codaris_tools::Engine::from_name(name).ok_or_else(|| ConfigError::Invalid {
                key: origin("research.engines"),
                reason: format!(
                    "`{name}` is not an engine: use brave, bing, duckduckgo or searxng:<http(s) URL>"
                ),
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// A key or token: blank means none; control characters are refused without echoing it.
fn secret(key: &str, value: Option<String>) -> Result<Option<String>, ConfigError> {
    match value.map(|value| value.trim().to_owned()) {
        None => Ok(None),
        Some(value) if value.is_empty() => Ok(None),
        Some(value) if value.chars().any(char::is_control) => Err(ConfigError::Invalid {
            key: key.to_owned(),
            reason: "holds a control character (the value is not shown)".to_owned(),
        }),
        Some(value) => Ok(Some(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(key: &str) -> String {
        format!("`{key}`")
    }

    #[test]
    fn ncbi_defaults_to_the_public_endpoint_and_the_environment_key_wins() {
        let toml = NcbiToml {
            api_key: Some("file-key".into()),
            email: Some("me@lab.org".into()),
            ..NcbiToml::default()
        };
        let config = resolve_ncbi(Some(toml), Some("env-key".into()), &origin);
        let config = config.ok();
        assert_eq!(
            config.as_ref().map(|c| c.base_url.as_str()),
            Some(DEFAULT_EUTILS_URL)
        );
        assert_eq!(
            config.as_ref().and_then(|c| c.api_key.as_deref()),
            Some("env-key")
        );
        assert!(!format!("{config:?}").contains("env-key"));
    }

    #[test]
    fn bad_ncbi_values_name_their_key_and_never_echo_a_key() {
        let bad_url = NcbiToml {
            base_url: Some("ftp://x".into()),
            ..NcbiToml::default()
        };
        let err = resolve_ncbi(Some(bad_url), None, &origin).err();
        assert!(err.is_some_and(|e| e.to_string().contains("ncbi.base_url")));
        let bad_email = NcbiToml {
            email: Some("not an email".into()),
            ..NcbiToml::default()
        };
        assert!(resolve_ncbi(Some(bad_email), None, &origin).is_err());
        let err = resolve_ncbi(None, Some("sec\u{7}ret".into()), &origin).err();
        assert!(err.is_some_and(|e| !e.to_string().contains("sec")));
    }

    #[test]
    fn registries_are_hosts_with_repositories_kept_once() {
        let toml = SeqeraToml {
            registries: Some(vec![
                "quay.io/lab/".into(),
                "quay.io/lab".into(),
                "ghcr.io/me".into(),
            ]),
            ..SeqeraToml::default()
        };
        let setup = resolve_seqera(Some(toml), None, "nextflow", &origin).ok();
        assert_eq!(
            setup.map(|s| s.registries),
            Some(vec!["quay.io/lab".to_owned(), "ghcr.io/me".to_owned()])
        );
        for bad in ["https://quay.io/lab", "a b", ""] {
            let toml = SeqeraToml {
                registries: Some(vec![bad.into()]),
                ..SeqeraToml::default()
            };
            assert!(
                resolve_seqera(Some(toml), None, "nextflow", &origin).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_seqera_token_comes_from_the_environment_first_and_is_redacted() {
        let toml = SeqeraToml {
            token: Some("file-token".into()),
            wave_url: Some("http://127.0.0.1:9/".into()),
            ..SeqeraToml::default()
        };
        let setup = resolve_seqera(Some(toml), Some("env-token".into()), "nf", &origin).ok();
        assert_eq!(
            setup.as_ref().and_then(|s| s.token.as_deref()),
            Some("env-token")
        );
        assert_eq!(
            setup.as_ref().map(|s| s.wave_url.as_str()),
            Some("http://127.0.0.1:9")
        );
        assert!(!format!("{setup:?}").contains("token\""));
        assert!(!format!("{setup:?}").contains("env-token"));
    }

    #[test]
    fn research_engines_default_to_none_and_refuse_an_empty_list() {
        assert!(matches!(resolve_research_engines(None, &origin), Ok(None)));
        let empty = ResearchToml {
            engines: Some(vec![]),
        };
        assert!(resolve_research_engines(Some(empty), &origin).is_err());
        let one = ResearchToml {
            engines: Some(vec!["duckduckgo".into()]),
        };
        assert!(matches!(
            resolve_research_engines(Some(one), &origin),
            Ok(Some(engines)) if engines.len() == 1
        ));
    }
}
