//! `switch_model {model?, reasoning?, scope?}`: what the model asked to switch to, read and
//! checked here; the daemon owns sessions and their models, so it carries the switch out
//! (resolving the name against the configured models) and writes the answer.

use codaris_catalogue::Reasoning;
use serde_json::Value;

use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

const TOOL: &str = "switch_model";

/// The longest model name read: longer is no configured model, and the refusal echoes it.
pub const MODEL_MAX_BYTES: usize = 200;

/// How long a switch lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchScope {
    /// From the next request on, for the session: kept in its record, so a resumed session
    /// keeps it.
    Session,
    /// From the next request to the end of this turn; the next turn asks the session's model.
    Turn,
}

impl SwitchScope {
    pub const fn as_str(self) -> &'static str {
        match self {
            SwitchScope::Session => "session",
            SwitchScope::Turn => "turn",
        }
    }
}

/// A switch the model asked for, its arguments checked: at least one of `model` and
/// `reasoning`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSwitch {
    /// The name as the model gave it: a configured id, its name without the provider, or a
    /// unique part of one; the daemon resolves it.
    pub model: Option<String>,
    pub reasoning: Option<Reasoning>,
    pub scope: SwitchScope,
}

impl ModelSwitch {
    /// Reads the arguments; a sentence for the model when they do not name a switch.
    pub fn read(args: &Value) -> Result<ModelSwitch, ToolError> {
        let text = |name: &str| -> Result<Option<&str>, ToolError> {
            match args.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.as_str())),
                Some(_) => Err(ToolError::model(format!(
                    "{TOOL}: `{name}` must be a string"
                ))),
            }
        };
        let model = match text("model")?.map(str::trim) {
            None | Some("") => None,
            Some(model) if model.len() > MODEL_MAX_BYTES => {
                return Err(ToolError::model(format!(
                    "{TOOL}: `model` is {} bytes; no configured model is longer than {MODEL_MAX_BYTES}",
                    model.len()
                )));
            }
            Some(model) if model.chars().any(|c| c.is_control() || c.is_whitespace()) => {
                return Err(ToolError::model(format!(
                    "{TOOL}: `model` contains a space or a control character; give a configured model id"
                )));
            }
            Some(model) => Some(model.to_owned()),
        };
        let reasoning = match text("reasoning")? {
            None => None,
            Some(name) => Some(Reasoning::parse(name).ok_or_else(|| {
                ToolError::model(format!(
                    "{TOOL}: `reasoning` is one of {}",
                    Reasoning::NAMES.join(", ")
                ))
            })?),
        };
        let scope = match text("scope")? {
            None | Some("session") => SwitchScope::Session,
            Some("turn") => SwitchScope::Turn,
            Some(_) => {
                return Err(ToolError::model(format!(
                    "{TOOL}: `scope` is `session` (the default) or `turn`"
                )));
            }
        };
        if model.is_none() && reasoning.is_none() {
            return Err(ToolError::model(format!(
                "{TOOL}: name a `model`, a `reasoning` level, or both"
            )));
        }
        Ok(ModelSwitch {
            model,
            reasoning,
            scope,
        })
    }
}

/// `switch_model`: hands the checked switch to the daemon, which answers with what it did.
#[derive(Debug, Default)]
pub struct SwitchModel;

#[async_trait::async_trait]
impl Tool for SwitchModel {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::SWITCH_MODEL
    }

    async fn call(&self, _ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let switch = ModelSwitch::read(args)?;
        // The daemon replaces this text with what it did; a host that carries no switch out
        // says so rather than pretending.
        let mut output = ToolOutput::text(format!(
            "{TOOL}: this host cannot switch the session's model"
        ));
        output.switch_model = Some(switch);
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(args: Value) -> Result<ModelSwitch, String> {
        ModelSwitch::read(&args).map_err(|e| e.to_string())
    }

    #[test]
    fn a_switch_names_a_model_or_a_level_and_lasts_for_the_session_unless_told() {
        assert_eq!(
            read(json!({"model": " gpt-5 "})).unwrap(),
            ModelSwitch {
                model: Some("gpt-5".to_owned()),
                reasoning: None,
                scope: SwitchScope::Session
            }
        );
        let turn = read(json!({"reasoning": "high", "scope": "turn"})).unwrap();
        assert_eq!(turn.reasoning, Some(Reasoning::High));
        assert_eq!(turn.scope, SwitchScope::Turn);
        assert!(read(json!({})).unwrap_err().contains("name a `model`"));
        assert!(
            read(json!({"model": ""}))
                .unwrap_err()
                .contains("name a `model`")
        );
        assert!(
            read(json!({"model": 5}))
                .unwrap_err()
                .contains("must be a string")
        );
        assert!(
            read(json!({"reasoning": "max"}))
                .unwrap_err()
                .contains("low, medium, high")
        );
        assert!(
            read(json!({"model": "x", "scope": "forever"}))
                .unwrap_err()
                .contains("`session` (the default) or `turn`")
        );
    }

    #[test]
    fn a_name_that_no_configuration_could_hold_is_refused_before_it_is_echoed() {
        let long = "m".repeat(MODEL_MAX_BYTES + 1);
        assert!(read(json!({"model": long})).unwrap_err().contains("bytes"));
        for bad in ["gpt 5", "gpt-5\u{1b}[2J", "a\nb"] {
            assert!(
                read(json!({"model": bad})).unwrap_err().contains("control"),
                "{bad:?}"
            );
        }
    }
}
