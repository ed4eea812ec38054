//! `spawn_agent {agent, prompt, description, model?, reasoning?, background?, expected_seconds?,
//! timeout_seconds?, notify_on_finish?, resume?}`: what the model asked a subagent to do, read
//! and checked here; the daemon owns sessions, so it starts (or resumes) the child, runs its
//! turn and answers with its report.

use codaris_catalogue::Reasoning;
use codaris_catalogue::subagents::{
    DESCRIPTION_MAX_CHARS, PROMPT_MAX_BYTES, TIMEOUT_DEFAULT_SECONDS, TIMEOUT_MAX_SECONDS,
};
use serde_json::Value;

use crate::context::ToolContext;
use crate::switch_model::MODEL_MAX_BYTES;
use crate::tool::{Tool, ToolError, ToolOutput};

const TOOL: &str = "spawn_agent";

/// The definition a call that names none runs under.
pub const DEFAULT_AGENT: &str = "general";

/// A child the model asked for, its arguments checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnRequest {
    /// The agent definition's name.
    pub agent: String,
    /// The whole task: the child sees nothing else of the parent's conversation.
    pub prompt: String,
    /// A few words shown while it works, on one line.
    pub description: String,
    /// A model as `switch_model` names one; `None`: the definition's, else the parent's.
    pub model: Option<String>,
    pub reasoning: Option<Reasoning>,
    /// Return at once; the child's end wakes the parent (unless `notify_on_finish` is false).
    pub background: bool,
    /// How long the model expects it to take; shown, never enforced.
    pub expected_seconds: Option<u64>,
    /// How long the child may run before it is cancelled.
    pub timeout_seconds: u64,
    pub notify_on_finish: bool,
    /// A finished child's session id, to continue it with `prompt`.
    pub resume: Option<String>,
}

impl SpawnRequest {
    /// Reads the arguments; a sentence for the model when they do not name a task.
    pub fn read(args: &Value) -> Result<SpawnRequest, ToolError> {
        let wrong = |what: String| ToolError::model(format!("{TOOL}: {what}"));
        let text = |name: &str| -> Result<Option<&str>, ToolError> {
            match args.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.as_str())),
                Some(_) => Err(wrong(format!("`{name}` must be a string"))),
            }
        };
        let flag = |name: &str, default: bool| -> Result<bool, ToolError> {
            match args.get(name) {
                None | Some(Value::Null) => Ok(default),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => Err(wrong(format!("`{name}` must be true or false"))),
            }
        };
        let seconds = |name: &str| -> Result<Option<u64>, ToolError> {
            match args.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(value) => match value.as_u64() {
                    Some(n @ 1..=TIMEOUT_MAX_SECONDS) => Ok(Some(n)),
                    _ => Err(wrong(format!(
                        "`{name}` is a whole number of seconds from 1 to {TIMEOUT_MAX_SECONDS}"
                    ))),
                },
            }
        };
        let agent = text("agent")?.map(str::trim).unwrap_or_default();
        let agent = if agent.is_empty() {
            DEFAULT_AGENT.to_owned()
        } else if codaris_config::agents::is_agent_name(agent) {
            agent.to_owned()
        } else {
            return Err(wrong(format!(
                "`agent` is an agent definition's name (a-z, 0-9, `-`, `_`); `{}` is not one",
                agent.chars().take(64).collect::<String>().escape_debug()
            )));
        };
        let prompt = text("prompt")?.map(str::trim).unwrap_or_default();
        if prompt.is_empty() {
            return Err(wrong(
                "give the child its whole task in `prompt`; it sees nothing else of this conversation"
                    .to_owned(),
            ));
        }
        if prompt.len() > PROMPT_MAX_BYTES {
            return Err(wrong(format!(
                "`prompt` is {} bytes, more than {PROMPT_MAX_BYTES}; name the files the child should read instead of pasting them",
                prompt.len()
            )));
        }
        let description: String = text("description")?
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .filter(|c| !c.is_control())
            .collect();
        if description.is_empty() {
            return Err(wrong(
                "say in a few words what the child does in `description`".to_owned(),
            ));
        }
        if description.chars().count() > DESCRIPTION_MAX_CHARS {
            return Err(wrong(format!(
                "`description` is a few words, at most {DESCRIPTION_MAX_CHARS} characters"
            )));
        }
        let model = match text("model")?.map(str::trim) {
            None | Some("") => None,
            Some(model)
                if model.len() > MODEL_MAX_BYTES
                    || model.chars().any(|c| c.is_control() || c.is_whitespace()) =>
            {
                return Err(wrong(
                    "`model` is a configured model id (no spaces or control characters)".to_owned(),
                ));
            }
            Some(model) => Some(model.to_owned()),
        };
        let reasoning = match text("reasoning")? {
            None => None,
            Some(name) => Some(Reasoning::parse(name).ok_or_else(|| {
                wrong(format!(
                    "`reasoning` is one of {}",
                    Reasoning::NAMES.join(", ")
                ))
            })?),
        };
        let resume = match text("resume")?.map(str::trim) {
            None | Some("") => None,
            Some(id) if is_session_id(id) => Some(id.to_owned()),
            Some(id) => {
                return Err(wrong(format!(
                    "`resume` is a child's session id like `s000042`; `{}` is not one",
                    id.chars().take(40).collect::<String>().escape_debug()
                )));
            }
        };
        Ok(SpawnRequest {
            agent,
            prompt: prompt.to_owned(),
            description,
            model,
            reasoning,
            background: flag("background", false)?,
            expected_seconds: seconds("expected_seconds")?,
            timeout_seconds: seconds("timeout_seconds")?.unwrap_or(TIMEOUT_DEFAULT_SECONDS),
            notify_on_finish: flag("notify_on_finish", true)?,
            resume,
        })
    }
}

/// `s` and digits, as the daemon mints session ids.
fn is_session_id(id: &str) -> bool {
    id.len() <= 20
        && id
            .strip_prefix('s')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `spawn_agent`: hands the checked request to the daemon, which answers with the child's
/// report (or, in the background, how to follow it).
#[derive(Debug, Default)]
pub struct SpawnAgent;

#[async_trait::async_trait]
impl Tool for SpawnAgent {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::SPAWN_AGENT
    }

    async fn call(&self, _ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let request = SpawnRequest::read(args)?;
        // The daemon replaces this with the child's report; a host that runs no children
        // says so rather than pretending.
        let mut output = ToolOutput::text(format!("{TOOL}: this host cannot run subagents"));
        output.spawn = Some(request);
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(args: Value) -> Result<SpawnRequest, String> {
        SpawnRequest::read(&args).map_err(|e| e.to_string())
    }

    #[test]
    fn a_task_runs_under_general_in_the_foreground_and_wakes_by_default() {
        let request =
            read(json!({"prompt": " lint it ", "description": "lint\nthe  pipeline"})).unwrap();
        assert_eq!(
            request,
            SpawnRequest {
                agent: "general".to_owned(),
                prompt: "lint it".to_owned(),
                description: "lint the pipeline".to_owned(),
                model: None,
                reasoning: None,
                background: false,
                expected_seconds: None,
                timeout_seconds: TIMEOUT_DEFAULT_SECONDS,
                notify_on_finish: true,
                resume: None,
            }
        );
        let full = read(
            json!({"agent": "reviewer", "prompt": "p", "description": "d",
            "background": true, "notify_on_finish": false, "timeout_seconds": 60,
            "expected_seconds": 30, "resume": "s000004", "reasoning": "high", "model": "gpt-5"}),
        )
        .unwrap();
        assert!(full.background && !full.notify_on_finish);
        assert_eq!(full.timeout_seconds, 60);
        assert_eq!(full.resume.as_deref(), Some("s000004"));
        assert_eq!(full.reasoning, Some(Reasoning::High));
    }

    #[test]
    fn arguments_that_name_no_task_are_refused_with_what_to_give() {
        let err = |args: Value| read(args).unwrap_err();
        assert!(err(json!({"description": "d"})).contains("whole task"));
        assert!(err(json!({"prompt": "p"})).contains("few words"));
        assert!(
            err(json!({"prompt": "p", "description": "d", "agent": "../x"})).contains("not one")
        );
        assert!(
            err(json!({"prompt": "p", "description": "d", "resume": "../../s1"}))
                .contains("session id")
        );
        assert!(
            err(json!({"prompt": "p", "description": "d", "timeout_seconds": 0}))
                .contains("from 1")
        );
        assert!(
            err(json!({"prompt": "p", "description": "d", "background": "yes"}))
                .contains("true or false")
        );
        let long = "x".repeat(PROMPT_MAX_BYTES + 1);
        assert!(err(json!({"prompt": long, "description": "d"})).contains("bytes"));
    }
}
