//! `[ncbi]`: where the literature and archive searches (`search_pubmed`, `search_geo_sra`,
//! `web_research`'s PubMed) send their requests, with the email NCBI asks for and the API key.
//!
//! ```toml
//! [ncbi]
//! base_url = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"   # the default
//! email = "me@lab.org"            # sent with every request, as NCBI asks
//! api_key = "…"                   # or NCBI_API_KEY; 10 requests a second instead of 3
//! ```
//!
//! The key comes from the file or the environment (the environment wins, as for the model
//! providers' keys), is sent only to its own endpoint, and is never printed.

use serde::{Deserialize, Serialize};

use super::values::{http_url, secret};
use crate::error::ConfigError;

/// NCBI's API key, when not in `[ncbi] api_key`.
pub const NCBI_API_KEY_VAR: &str = "NCBI_API_KEY";

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

/// Reads `[ncbi]`; `env_key` is `NCBI_API_KEY` from the environment, which wins over the file.
pub fn resolve_ncbi(
    toml: Option<NcbiToml>,
    env_key: Option<String>,
    origin: &dyn Fn(&str) -> String,
) -> Result<NcbiConfig, ConfigError> {
    let toml = toml.unwrap_or_default();
    let base_url = match toml.base_url {
        None => DEFAULT_EUTILS_URL.to_owned(),
        Some(url) => http_url(&origin("ncbi.base_url"), &url)?,
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
}
