//! `codaris doctor`'s checks: for each configured provider, one cheap request
//! ([`codaris_agent::check_provider`]), all at once, each naming what is missing; and for
//! each runtime commands start through (the `nextflow` launcher's Java, `python3`), whether
//! the sandbox lets them read it, or the key that would.

use std::time::Duration;

use codaris_agent::{ProviderChoice, ProviderKind, Secret};

use crate::config::providers::ProviderSettings;

/// How long one check may take, connection included.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// One provider's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub provider: ProviderKind,
    pub model: Option<String>,
    pub base_url: String,
    /// `None` when it can be used.
    pub problem: Option<String>,
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

/// Checks every configured provider, concurrently, in [`configured`]'s order.
pub async fn check_all(settings: &ProviderSettings, timeout: Duration) -> Vec<Check> {
    let handles: Vec<_> = configured(settings)
        .into_iter()
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
            provider,
            model,
            base_url,
            problem,
        });
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApiConfig;
    use pretty_assertions::assert_eq;

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
