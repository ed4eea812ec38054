//! `codaris doctor`'s checks: for each configured provider, one cheap request
//! ([`codaris_agent::check_provider`]), all at once, each naming what is missing.

use std::time::Duration;

use codaris_agent::{ProviderChoice, ProviderKind, Secret};

use crate::providers::ProviderSettings;

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
    let checks = configured(settings).into_iter().map(|kind| {
        let api = settings.api(kind).clone();
        let model = (settings.provider == Some(ProviderChoice::Api(kind)))
            .then(|| settings.model.clone())
            .flatten();
        async move {
            let key = api.api_key.clone().map(Secret::new);
            let result =
                codaris_agent::check_provider(kind, api.base_url.as_deref(), key.as_ref(), timeout)
                    .await;
            Check {
                provider: kind,
                model,
                base_url: api
                    .base_url
                    .clone()
                    .unwrap_or_else(|| kind.default_base_url().to_owned()),
                problem: result.err().map(|problem| problem.to_string()),
            }
        }
    });
    futures_join(checks).await
}

/// Runs the futures together and keeps their order.
async fn futures_join<F: std::future::Future<Output = Check> + Send + 'static>(
    futures: impl Iterator<Item = F>,
) -> Vec<Check> {
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for handle in handles {
        if let Ok(check) = handle.await {
            out.push(check);
        }
    }
    out
}
