//! One cheap request to a provider's API — its model list, no retries, a short timeout — to
//! say whether a configured provider can be used, and if not exactly why: the key that is
//! missing, the key that was refused, the URL that cannot be reached.

use std::time::Duration;

use reqwest::StatusCode;

use super::config::{ProviderKind, Secret};
use super::transport::{is_loopback_url, sensitive};

/// Why a provider cannot be used. The key is never part of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckProblem {
    #[error(
        "no key: set {var} in the daemon's environment or run `codaris login --provider {provider}`"
    )]
    MissingKey {
        provider: &'static str,
        var: &'static str,
    },
    #[error(
        "the key was refused (HTTP {status} from {url}); set a valid {var} or run `codaris login` again"
    )]
    KeyRefused {
        status: u16,
        url: String,
        var: &'static str,
    },
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} did not answer a model list (`data` of `id`s)")]
    NotAList { url: String },
}

/// The model-list URL of `kind` at `base_url` (the public endpoint when `None`).
pub fn models_url(kind: ProviderKind, base_url: Option<&str>) -> String {
    let base = base_url
        .unwrap_or(kind.default_base_url())
        .trim_end_matches('/');
    match kind {
        ProviderKind::Anthropic => format!("{base}/v1/models"),
        ProviderKind::OpenAi => format!("{base}/models"),
    }
}

/// Asks `kind`'s model list once. No key is a problem without a request, unless the server is
/// on this machine (local servers often need none).
pub async fn check_provider(
    kind: ProviderKind,
    base_url: Option<&str>,
    api_key: Option<&Secret>,
    timeout: Duration,
) -> Result<(), CheckProblem> {
    ask_models(kind, base_url, api_key, timeout).await.map(drop)
}

/// The ids of the models `kind`'s API lists (`GET …/models`, `data[].id`), in its order, for a
/// person choosing one; the same request and problems as [`check_provider`].
pub async fn list_models(
    kind: ProviderKind,
    base_url: Option<&str>,
    api_key: Option<&Secret>,
    timeout: Duration,
) -> Result<Vec<String>, CheckProblem> {
    let response = ask_models(kind, base_url, api_key, timeout).await?;
    let url = response.url().to_string();
    let list: serde_json::Value = response
        .json()
        .await
        .map_err(|_| CheckProblem::NotAList { url: url.clone() })?;
    let ids = list
        .get("data")
        .and_then(serde_json::Value::as_array)
        .ok_or(CheckProblem::NotAList { url })?
        .iter()
        .filter_map(|model| model.get("id").and_then(serde_json::Value::as_str))
        .filter(|id| !id.is_empty() && !id.chars().any(char::is_control))
        .map(str::to_owned)
        .collect();
    Ok(ids)
}

/// The model list's successful response, or why there is none.
async fn ask_models(
    kind: ProviderKind,
    base_url: Option<&str>,
    api_key: Option<&Secret>,
    timeout: Duration,
) -> Result<reqwest::Response, CheckProblem> {
    let url = models_url(kind, base_url);
    let missing = CheckProblem::MissingKey {
        provider: kind.as_str(),
        var: kind.api_key_env(),
    };
    let local = is_loopback_url(&url);
    let key = api_key.filter(|key| !key.expose().is_empty());
    if key.is_none() && !local {
        return Err(missing);
    }
    let unreachable = |reason: String| CheckProblem::Unreachable {
        url: url.clone(),
        reason,
    };
    let mut builder = crate::tls::client_builder()
        .connect_timeout(timeout)
        .timeout(timeout);
    if local {
        builder = builder.no_proxy();
    }
    let client = builder
        .build()
        .map_err(|err| unreachable(format!("no HTTP client: {err}")))?;
    let mut request = client.get(&url);
    match (kind, key) {
        (ProviderKind::Anthropic, key) => {
            request = request.header("anthropic-version", super::anthropic::API_VERSION);
            if let Some(value) = key.and_then(|key| sensitive(key.expose())) {
                request = request.header("x-api-key", value);
            }
        }
        (ProviderKind::OpenAi, Some(key)) => {
            if let Some(value) = sensitive(&format!("Bearer {}", key.expose())) {
                request = request.header(reqwest::header::AUTHORIZATION, value);
            }
        }
        (ProviderKind::OpenAi, None) => {}
    }
    let response = request
        .send()
        .await
        .map_err(|err| unreachable(reason(&err)))?;
    match response.status() {
        status if status.is_success() => Ok(response),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN if key.is_none() => Err(missing),
        status @ (StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) => {
            Err(CheckProblem::KeyRefused {
                status: status.as_u16(),
                url,
                var: kind.api_key_env(),
            })
        }
        status => Err(CheckProblem::Status {
            url,
            status: status.as_u16(),
        }),
    }
}

/// The deepest cause of a request's failure, in words (`connection refused`, `timed out`).
fn reason(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        return "no answer in time".to_owned();
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(err);
    let mut deepest = None;
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
                _ => io.to_string(),
            };
        }
        deepest = Some(cause.to_string());
        source = cause.source();
    }
    deepest.unwrap_or_else(|| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn each_api_s_model_list_is_where_its_sdks_look() {
        assert_eq!(
            models_url(ProviderKind::Anthropic, None),
            "https://api.anthropic.com/v1/models"
        );
        assert_eq!(
            models_url(ProviderKind::OpenAi, None),
            "https://api.openai.com/v1/models"
        );
        assert_eq!(
            models_url(ProviderKind::OpenAi, Some("http://127.0.0.1:8080/v1/")),
            "http://127.0.0.1:8080/v1/models"
        );
    }

    #[tokio::test]
    async fn no_key_for_a_remote_api_is_named_without_a_request() {
        let problem = check_provider(ProviderKind::OpenAi, None, None, Duration::from_secs(1))
            .await
            .err();
        assert_eq!(
            problem,
            Some(CheckProblem::MissingKey {
                provider: "openai",
                var: "OPENAI_API_KEY"
            })
        );
    }
}
