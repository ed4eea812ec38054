//! `codaris doctor`'s checks: first what a new session asking what the client would ask (its
//! flags and environment) would use, resolved as `CreateSession` resolves it
//! ([`ModelChoice`]); then each other configured provider. One cheap request each
//! ([`codaris_agent::check_provider`]), all at once, each naming what is missing. And for
//! each runtime commands start through (the `nextflow` launcher's Java, `python3`), whether
//! the sandbox lets them read it, or the key that would.

use std::time::Duration;

use codaris_agent::{ProviderChoice, ProviderKind, Secret};

use crate::config::providers::ProviderSettings;
use crate::error::DaemonError;
use crate::sessions::model_choice::{Asked, ModelChoice, Origin};

/// How long one check may take, connection included.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// One provider's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// `anthropic`, `openai`, `scripted` (a new session's choice may name it), or the name a
    /// request gave that names no provider.
    pub provider: String,
    pub model: Option<String>,
    pub base_url: String,
    /// `None` when it can be used.
    pub problem: Option<String>,
    /// Whether this is the check of what a new session would use.
    pub for_new_session: bool,
    /// Where its provider, model and base URL came from, when they could be resolved.
    pub origins: Option<[Origin; 3]>,
}

/// The check of what a new session asking `asked` would use: `None` when it would have no
/// provider at all (nothing set up, nothing asked), which the caller reports as such.
pub async fn check_new_session(
    settings: &ProviderSettings,
    asked: Asked<'_>,
    timeout: Duration,
) -> Option<Check> {
    let choice = match ModelChoice::resolve(settings, asked) {
        Ok(choice) => choice,
        Err(DaemonError::NoProvider) => return None,
        // A request no session could be made from (a provider name no provider has, a
        // malformed URL): the check fails with what creating the session would say.
        Err(err) => {
            return Some(Check {
                provider: match (asked.provider, settings.provider) {
                    ("", Some(daemon)) => daemon.as_str().to_owned(),
                    (asked, _) => asked.to_owned(),
                },
                model: (!asked.model.is_empty()).then(|| asked.model.to_owned()),
                base_url: asked.base_url.to_owned(),
                problem: Some(err.to_string()),
                for_new_session: true,
                origins: None,
            });
        }
    };
    let mut check = Check {
        provider: choice.provider.as_str().to_owned(),
        model: choice.model.clone(),
        base_url: choice.endpoint(),
        problem: choice.missing_model().map(|err| err.to_string()),
        for_new_session: true,
        origins: Some([
            choice.provider_origin,
            choice.model_origin,
            choice.base_url_origin,
        ]),
    };
    if let (None, Some(kind)) = (&check.problem, choice.kind()) {
        let key = settings.api(kind).api_key.clone().map(Secret::new);
        check.problem =
            codaris_agent::check_provider(kind, choice.base_url.as_deref(), key.as_ref(), timeout)
                .await
                .err()
                .map(|problem| problem.to_string());
    }
    Some(check)
}

/// One runtime as commands would meet it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeCheck {
    pub program: &'static str,
    pub path: std::path::PathBuf,
    /// `None` when commands can read it.
    pub problem: Option<String>,
}

/// Each runtime the daemon's environment finds, against what commands may read (`paths`).
pub fn check_runtimes(paths: &codaris_tools::shell::SandboxPaths) -> Vec<RuntimeCheck> {
    codaris_tools::shell::daemon_runtimes()
        .into_iter()
        .map(|runtime| {
            let readable = codaris_tools::shell::readable_by_commands(paths, &runtime.resolved);
            RuntimeCheck {
                program: runtime.program,
                problem: (!readable).then(|| {
                    format!(
                        "commands cannot read `{}`: add `{}` to `tools.sandbox_readable`",
                        runtime.resolved.display(),
                        runtime.home.display()
                    )
                }),
                path: runtime.resolved,
            }
        })
        .collect()
}

/// The providers worth checking: the default one first, then any other with a key or a base
/// URL configured.
pub fn configured(settings: &ProviderSettings) -> Vec<ProviderKind> {
    let mut kinds: Vec<ProviderKind> = match settings.provider {
        Some(ProviderChoice::Api(kind)) => vec![kind],
        _ => Vec::new(),
    };
    for kind in ProviderKind::ALL {
        let api = settings.api(kind);
        if !kinds.contains(&kind) && (api.api_key.is_some() || api.base_url.is_some()) {
            kinds.push(kind);
        }
    }
    kinds
}

/// Checks every configured provider, concurrently, in [`configured`]'s order, but the one
/// `skip` names by provider and base URL (checked already as a new session's).
pub async fn check_all(
    settings: &ProviderSettings,
    timeout: Duration,
    skip: Option<(&str, &str)>,
) -> Vec<Check> {
    let handles: Vec<_> = configured(settings)
        .into_iter()
        .filter(|kind| {
            let url = settings
                .api(*kind)
                .base_url
                .clone()
                .unwrap_or_else(|| kind.default_base_url().to_owned());
            skip != Some((kind.as_str(), url.as_str()))
        })
        .map(|kind| {
            let api = settings.api(kind).clone();
            let model = (settings.provider == Some(ProviderChoice::Api(kind)))
                .then(|| settings.model.clone())
                .flatten();
            let base_url = api
                .base_url
                .clone()
                .unwrap_or_else(|| kind.default_base_url().to_owned());
            let check = tokio::spawn(async move {
                let key = api.api_key.map(Secret::new);
                codaris_agent::check_provider(kind, api.base_url.as_deref(), key.as_ref(), timeout)
                    .await
                    .err()
                    .map(|problem| problem.to_string())
            });
            (kind, model, base_url, check)
        })
        .collect();
    let mut checks = Vec::with_capacity(handles.len());
    for (provider, model, base_url, check) in handles {
        let problem = match check.await {
            Ok(problem) => problem,
            // A check that did not finish is a failed check, never a silent pass.
            Err(err) => Some(format!("the check did not finish: {err}")),
        };
        checks.push(Check {
            provider: provider.as_str().to_owned(),
            model,
            base_url,
            problem,
            for_new_session: false,
            origins: None,
        });
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApiConfig;
    use pretty_assertions::assert_eq;

    /// What no session could be made from fails the new session's check with what creating
    /// the session would say, before anything is asked; nothing set up and nothing asked is
    /// no check at all.
    #[tokio::test]
    async fn a_new_session_that_could_not_be_made_fails_its_check_without_a_request() {
        let settings = ProviderSettings::default();
        assert_eq!(
            check_new_session(&settings, Asked::default(), CHECK_TIMEOUT).await,
            None
        );
        let unknown = Asked {
            provider: "nonsense",
            ..Asked::default()
        };
        let check = check_new_session(&settings, unknown, CHECK_TIMEOUT).await;
        let check = check.as_ref();
        assert_eq!(check.map(|c| c.provider.as_str()), Some("nonsense"));
        assert!(check.is_some_and(|c| c.for_new_session));
        assert!(
            check
                .and_then(|c| c.problem.as_deref())
                .is_some_and(|p| p.contains("must be one of")),
            "{check:?}"
        );
        // An API provider with no model: named, and its server is never asked.
        let no_model = Asked {
            provider: "openai",
            base_url: "http://127.0.0.1:9/v1",
            ..Asked::default()
        };
        let check = check_new_session(&settings, no_model, CHECK_TIMEOUT).await;
        assert!(
            check
                .as_ref()
                .and_then(|c| c.problem.as_deref())
                .is_some_and(|p| p.contains("needs a model")),
            "{check:?}"
        );
    }

    #[test]
    fn the_default_provider_comes_first_then_any_other_with_a_key_or_url() {
        let mut settings = ProviderSettings {
            provider: Some(ProviderChoice::Api(ProviderKind::OpenAi)),
            ..ProviderSettings::default()
        };
        assert_eq!(configured(&settings), vec![ProviderKind::OpenAi]);
        settings.anthropic = ApiConfig {
            api_key: Some("sk-ant".to_owned()),
            ..ApiConfig::default()
        };
        assert_eq!(
            configured(&settings),
            vec![ProviderKind::OpenAi, ProviderKind::Anthropic]
        );
        settings.provider = Some(ProviderChoice::Scripted);
        assert_eq!(configured(&settings), vec![ProviderKind::Anthropic]);
        assert!(configured(&ProviderSettings::default()).is_empty());
    }
}
