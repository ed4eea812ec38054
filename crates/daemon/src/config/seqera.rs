//! `[seqera]`: where the built-in MCP server `seqera` sends its requests (Wave, Seqera
//! Platform), the token, and the only registries a built image may be pushed to.
//!
//! ```toml
//! [seqera]
//! wave_url = "https://wave.seqera.io"
//! platform_url = "https://api.cloud.seqera.io"
//! token = "…"                     # or TOWER_ACCESS_TOKEN
//! registries = ["quay.io/lab"]    # the only registries a built image may be pushed to
//! compute_envs = ["hjE97A8TvD9PklUb0hwEJ"]  # the only compute environments a launch may use
//! ```
//!
//! The token comes from the file or the environment (the environment wins), is sent only to
//! its own endpoint, and is never printed.

use serde::{Deserialize, Serialize};

use super::values::{http_url, secret};
use crate::error::ConfigError;

/// The Seqera access token, when not in `[seqera] token` (the name Nextflow and tw use).
pub const TOWER_TOKEN_VAR: &str = "TOWER_ACCESS_TOKEN";

/// `[seqera]`.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SeqeraToml {
    pub wave_url: Option<String>,
    pub platform_url: Option<String>,
    pub token: Option<String>,
    pub registries: Option<Vec<String>>,
    pub compute_envs: Option<Vec<String>>,
}

/// `[seqera]`, resolved (the token is redacted in `Debug` by `SeqeraSetup`).
pub type SeqeraConfig = codaris_seqera::SeqeraSetup;

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
        setup.wave_url = http_url(&origin("seqera.wave_url"), &url)?
            .trim_end_matches('/')
            .to_owned();
    }
    if let Some(url) = toml.platform_url {
        setup.platform_url = http_url(&origin("seqera.platform_url"), &url)?
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
    for ce in toml.compute_envs.unwrap_or_default() {
        let ce = ce.trim().to_owned();
        // Compared with the launch's `compute_env` exactly, which is an id of letters and
        // digits: anything else could never match, so it is a mistake worth saying.
        if ce.is_empty() || ce.len() > 64 || !ce.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(ConfigError::Invalid {
                key: origin("seqera.compute_envs"),
                reason: format!(
                    "`{ce}` is not a compute environment id; write the id Platform shows (letters and digits)"
                ),
            });
        }
        if !setup.compute_envs.contains(&ce) {
            setup.compute_envs.push(ce);
        }
    }
    setup.nextflow = std::path::PathBuf::from(nextflow_bin);
    Ok(setup)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(key: &str) -> String {
        format!("`{key}`")
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
    fn compute_envs_are_ids_kept_once() {
        let toml = SeqeraToml {
            compute_envs: Some(vec!["ce1".into(), " ce1 ".into(), "Ab2".into()]),
            ..SeqeraToml::default()
        };
        let setup = resolve_seqera(Some(toml), None, "nextflow", &origin).ok();
        assert_eq!(
            setup.map(|s| s.compute_envs),
            Some(vec!["ce1".to_owned(), "Ab2".to_owned()])
        );
        for bad in ["", "ce 1", "../ce", "ce,2"] {
            let toml = SeqeraToml {
                compute_envs: Some(vec![bad.into()]),
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
}
