//! A session's model as its record names it: the provider built from the provider settings in
//! force now, what it does with pictures, and how its requests share the model's context window.
//! Used where a session is opened or resumed (`live`, `resume`) and where a turn asks for another
//! model (`host`, `compact_context`'s `model`, named as [`model_named`] reads the name).

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
        .with_max_output_tokens(api.max_output_tokens)
        .with_reasoning(record.reasoning);
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
            // A subagent plays its entry of the family's script: a script without one leaves
            // it nothing to say, and its turn ends `script_exhausted` like any other.
            let path_in_script = record
                .child
                .as_ref()
                .map(|child| child.script_path.as_slice())
                .unwrap_or_default();
            // A memory subagent plays the `memory` entry of its parent's turn.
            let script = match record.child.as_ref().filter(|c| c.memory.is_some()) {
                Some(child) => child
                    .script_path
                    .first()
                    .and_then(|turn| script.memory.get(*turn)),
                None => script.child(path_in_script),
            };
            let script = script.cloned().unwrap_or_default();
            Ok(Box::new(ScriptedProvider::new(script)))
        }
        codaris_agent::ProviderChoice::Api(kind) => api_provider(record, kind, settings.api(kind)),
    }
}

/// The configured model `wanted` names: a configured id (`[[models]]`, or the session's own
/// model), the same without its `provider/` prefix, or a part of exactly one of them.
pub(crate) fn model_named(
    wanted: &str,
    session_model: Option<&str>,
    config: &Config,
) -> Result<String, String> {
    let mut known: Vec<&str> = config.models.iter().map(|m| m.name.as_str()).collect();
    known.extend(session_model);
    known.sort_unstable();
    known.dedup();
    let bare = |name: &str| name.rsplit('/').next().unwrap_or(name).to_owned();
    if let Some(exact) = known
        .iter()
        .find(|name| **name == wanted || bare(name) == wanted)
    {
        return Ok((*exact).to_owned());
    }
    let lower = wanted.to_ascii_lowercase();
    let parts: Vec<&&str> = known
        .iter()
        .filter(|name| name.to_ascii_lowercase().contains(&lower))
        .collect();
    match parts.as_slice() {
        [one] => Ok((**one).to_owned()),
        [] => Err(format!(
            "no configured model matches `{wanted}`; configured: {}",
            listed(&known)
        )),
        many => Err(format!(
            "`{wanted}` matches {} configured models ({}); name one",
            many.len(),
            listed(&many.iter().map(|n| **n).collect::<Vec<_>>())
        )),
    }
}

fn listed(names: &[&str]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(models: &[&str]) -> Config {
        let mut config = crate::config::resolve(crate::config::Sources {
            state_dir: "/state".into(),
            home: None,
            file: None,
            config_dir: None,
            env: Default::default(),
            flags: Default::default(),
        })
        .unwrap();
        config.models = models
            .iter()
            .map(|name| crate::config::ModelConfig {
                name: (*name).to_owned(),
                multimodal: false,
            })
            .collect();
        config
    }

    #[test]
    fn a_model_is_named_by_its_id_its_bare_name_or_a_unique_part() {
        let config = config(&["anthropic/claude-haiku-4-5", "gpt-5-mini", "gpt-5"]);
        let named = |w: &str| model_named(w, Some("claude-sonnet-4-5"), &config);
        assert_eq!(named("gpt-5").unwrap(), "gpt-5");
        assert_eq!(
            named("claude-haiku-4-5").unwrap(),
            "anthropic/claude-haiku-4-5"
        );
        assert_eq!(named("haiku").unwrap(), "anthropic/claude-haiku-4-5");
        assert_eq!(named("sonnet").unwrap(), "claude-sonnet-4-5");
        let many = named("claude").unwrap_err();
        assert!(many.contains("matches 2 configured models"), "{many}");
        let none = named("llama").unwrap_err();
        assert!(
            none.starts_with("no configured model matches `llama`"),
            "{none}"
        );
    }
}
