//! Carrying out a `switch_model` call: the model named is resolved against the configured
//! models (the tool read and checked the arguments), the provider is built for the session's
//! own provider and base URL, and the switch lasts for the session (its record, so a resumed
//! session keeps it, and its live model) or for the rest of the turn.
//!
//! The turn's next request goes to the new model either way: the turn's host hands it to the
//! loop ([`codaris_agent::TurnHost::switched_model`]).

use codaris_agent::{ProviderChoice, ProviderKind, ToolRun};
use codaris_catalogue::Reasoning;
use codaris_tools::{ModelSwitch, SwitchScope};

use super::model::{model_for, model_named};
use super::services::Services;
use super::session::{Model, Session};
use crate::sessions::store::SessionRecord;

const TOOL: &str = "switch_model";

/// What a switch did: the model's answer, and the model the turn's next request goes to
/// (`None`: the turn keeps the one it has).
pub(super) struct Switched {
    pub run: ToolRun,
    pub model: Option<Model>,
}

impl Switched {
    fn refused(why: impl std::fmt::Display) -> Self {
        Switched {
            run: ToolRun::error(format!("{TOOL}: {why}")),
            model: None,
        }
    }
}

/// Why the session's provider cannot take a reasoning level, or `None` when it can.
fn no_reasoning(provider: ProviderChoice) -> Option<String> {
    match provider {
        ProviderChoice::Api(ProviderKind::OpenAi) => None,
        // Extended thinking would have to be kept and sent back with every tool call; Codaris
        // does not send it yet, so a level would change nothing.
        ProviderChoice::Api(ProviderKind::Anthropic) => Some(
            "the `anthropic` provider has no reasoning setting in Codaris (extended thinking is not sent)"
                .to_owned(),
        ),
        ProviderChoice::Scripted => {
            Some("the `scripted` provider has no reasoning setting".to_owned())
        }
    }
}

/// Carries out `switch` for `session`.
pub(super) fn switch_model(
    services: &Services,
    session: &Session,
    switch: &ModelSwitch,
) -> Switched {
    let record = match services.sessions.get(session.id().as_str()) {
        Ok(record) => record,
        Err(err) => return Switched::refused(err),
    };
    let model = match &switch.model {
        Some(wanted) => {
            match model_named(wanted, record.model.as_deref(), &services.config.get()) {
                Ok(name) => Some(name),
                Err(why) => return Switched::refused(why),
            }
        }
        None => None,
    };
    let unsupported = switch.reasoning.and_then(|_| no_reasoning(record.provider));
    if model.is_none()
        && let Some(why) = &unsupported
    {
        return Switched::refused(format!("{why}; nothing changed"));
    }
    let reasoning = match (switch.reasoning, &unsupported) {
        (Some(_), Some(_)) | (None, _) => record.reasoning,
        (Some(Reasoning::Default), None) => None,
        (Some(level), None) => Some(level),
    };
    let target = SessionRecord {
        model: model.clone().or_else(|| record.model.clone()),
        reasoning,
        ..record.clone()
    };
    // The scripted provider plays its script whatever the model is called: rebuilding it
    // would start the script over, so it is kept and only the record names the new model.
    let built = match record.provider {
        ProviderChoice::Scripted => None,
        ProviderChoice::Api(_) => {
            match model_for(
                &target,
                &services.providers.current(),
                &services.config.get(),
            ) {
                Ok(built) => Some(built),
                Err(err) => return Switched::refused(err),
            }
        }
    };
    if switch.scope == SwitchScope::Session {
        let changed = services
            .sessions
            .change_active(&record.id, |now| SessionRecord {
                model: target.model.clone(),
                reasoning: target.reasoning,
                ..now.clone()
            });
        if let Err(err) = changed {
            return Switched::refused(err);
        }
        if let Some(built) = &built {
            session.set_model(built.clone());
        }
    }
    let mut answer = format!(
        "{TOOL}: switched to {} from the next request, {}",
        described(&target),
        match switch.scope {
            SwitchScope::Session => "for the rest of the session".to_owned(),
            SwitchScope::Turn => format!(
                "to the end of this turn; the next turn asks {} again",
                described(&record)
            ),
        }
    );
    if let Some(why) = unsupported {
        answer.push_str(&format!("; the reasoning level was not changed: {why}"));
    }
    if record.provider == ProviderChoice::Scripted {
        answer.push_str("; the scripted provider plays its script whatever the model is called");
    }
    tracing::info!(session = %record.id, model = ?target.model, reasoning = ?target.reasoning, scope = switch.scope.as_str(), "switched the model");
    Switched {
        run: ToolRun {
            output: answer,
            ..ToolRun::default()
        },
        model: built,
    }
}

/// `` `gpt-5` (reasoning high) ``, as an answer names a session's model.
fn described(record: &SessionRecord) -> String {
    let model = record
        .model
        .as_deref()
        .unwrap_or("the provider's default model");
    match record.reasoning {
        Some(level) => format!("`{model}` (reasoning {level})"),
        None => format!("`{model}`"),
    }
}
