//! A session's model as its record names it: the provider built from the provider settings in
//! force now, what it does with pictures, and how its requests share the model's context window.
//! Used where a session is opened or resumed (`live`, `resume`) and where a turn asks for another
//! model (`host`, `compact_context`'s `model`).

use std::sync::Arc;

use codaris_agent::{
    ModelProvider, ProviderConfig, ProviderKind, ScriptedProvider, Secret, build_provider,
    parse_script,
};

use crate::calls::builtins::Pictures;
use crate::config::{ApiConfig, Config};
use crate::error::DaemonError;
use crate::sessions::store::SessionRecord;

/// The session's model: its provider built from the provider settings in force now (a login
/// since the daemon started counts), and whether it takes pictures.
pub(super) fn model_for(
    record: &SessionRecord,
    settings: &crate::config::providers::ProviderSettings,
    config: &Config,
) -> Result<super::session::Model, DaemonError> {
    Ok(super::session::Model {
        provider: Arc::from(provider_for(record, settings)?),
        pictures: pictures_for(record, config),
        context: context_for(record, settings, config),
    })
}

/// The window the scripted provider is taken to have: it reads nothing it is sent, so only
/// what the turn stream shows depends on it, and a large one keeps scripts' streams as they
/// were written.
const SCRIPTED_CONTEXT_WINDOW: u64 = 200_000;

/// The session's context budget: its model's window (`context_window` in the provider's
/// section, else the table of known models, else the default) less its output cap, shared as
/// `[compaction]` says.
fn context_for(
    record: &SessionRecord,
    settings: &crate::config::providers::ProviderSettings,
    config: &Config,
) -> codaris_agent::ContextBudget {
    match record.provider {
        codaris_agent::ProviderChoice::Scripted => {
            config.compaction.budget(SCRIPTED_CONTEXT_WINDOW, 0, false)
        }
        codaris_agent::ProviderChoice::Api(kind) => {
            let api = settings.api(kind);
            let model = record.model.as_deref().unwrap_or_default();
            let window = codaris_agent::ContextBudget::for_model(
                model,
                api.context_window,
                u64::from(api.max_output_tokens),
            )
            .window;
            config.compaction.budget(
                window,
                u64::from(api.max_output_tokens),
                kind == ProviderKind::Anthropic,
            )
        }
    }
}

/// Whether the session's model takes pictures: the scripted provider does (it ignores them),
/// an API model as its `[[models]]` entry says or as its name suggests.
fn pictures_for(record: &SessionRecord, config: &Config) -> Pictures {
    let model = record.model.as_deref().unwrap_or_default();
    if record.provider == codaris_agent::ProviderChoice::Scripted || config.multimodal(model) {
        Pictures::Shown
    } else {
        Pictures::Refused {
            model: model.to_owned(),
        }
    }
}

/// An HTTP model API for the session: its model and base URL from its record, the key from the
/// provider settings in force. The key is never logged; a missing one is said at once.
fn api_provider(
    record: &SessionRecord,
    kind: ProviderKind,
    api: &ApiConfig,
) -> Result<Box<dyn ModelProvider>, DaemonError> {
    let Some(model) = record.model.clone() else {
        return Err(DaemonError::InvalidArgument {
            field: "model",
            reason: format!(
                "provider `{}` needs a model: set CODARIS_MODEL, `[provider] model` or --model",
                kind.as_str()
            ),
        });
    };
    // A record from before sessions kept their base URL follows the configured one.
    let base_url = record.base_url.as_ref().or(api.base_url.as_ref());
    let local = base_url
        .map(String::as_str)
        .is_some_and(codaris_agent::is_loopback_url);
    if api.api_key.is_none() && !local {
        return Err(DaemonError::MissingKey {
            provider: kind.as_str(),
            var: kind.api_key_env(),
        });
    }
    let mut provider = ProviderConfig::new(kind, model, api.api_key.clone().map(Secret::new))
        .with_max_output_tokens(api.max_output_tokens);
    if let Some(base_url) = base_url {
        provider = provider.with_base_url(base_url.clone());
    }
    build_provider(&provider).map_err(|err| DaemonError::InvalidArgument {
        field: "provider",
        reason: err.to_string(),
    })
}

pub(super) fn provider_for(
    record: &SessionRecord,
    settings: &crate::config::providers::ProviderSettings,
) -> Result<Box<dyn ModelProvider>, DaemonError> {
    match record.provider {
        codaris_agent::ProviderChoice::Scripted => {
            let Some(path) = &record.script else {
                return Err(DaemonError::InvalidArgument {
                    field: "script",
                    reason:
                        "the scripted provider needs a script file (`codaris run --script FILE`)"
                            .to_owned(),
                });
            };
            // The person named this file: say which and why, not an internal error.
            let text =
                std::fs::read_to_string(path).map_err(|err| DaemonError::InvalidArgument {
                    field: "script",
                    reason: format!(
                        "cannot read {}: {}",
                        path.display(),
                        crate::error::io_reason(&err)
                    ),
                })?;
            let script = parse_script(&text).map_err(|err| DaemonError::InvalidArgument {
                field: "script",
                reason: format!("{}: {err}", path.display()),
            })?;
            Ok(Box::new(ScriptedProvider::new(script)))
        }
        codaris_agent::ProviderChoice::Api(kind) => api_provider(record, kind, settings.api(kind)),
    }
}
