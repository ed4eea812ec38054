//! The contract every built-in tool implements.

use std::path::PathBuf;

use codaris_catalogue::{BuiltinTool, CatalogueEntry};
use serde_json::Value;

use crate::context::ToolContext;

/// One piece of what a tool returns to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    Text(String),
    /// A picture for a multimodal model: its media type (`image/png`, …) and bytes.
    Image {
        media_type: String,
        data: Vec<u8>,
    },
}

/// What a tool returns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolOutput {
    pub content: Vec<Content>,
    /// A new working directory for the session (`worktree_create` moves it into the
    /// worktree); the daemon owns sessions and carries the move out.
    pub session_cwd: Option<PathBuf>,
    /// The call asks the daemon to take the session out of plan mode (`plan_exit`, once the
    /// person agreed on its card); the daemon owns sessions and carries the switch out.
    pub leaves_plan_mode: bool,
    /// The call asks the daemon to switch the session's model (`switch_model`); the daemon
    /// owns sessions and their models, carries the switch out and answers with what it did.
    pub switch_model: Option<crate::switch_model::ModelSwitch>,
    /// The call asks the person questions (`question`); the daemon owns the turn's stream,
    /// asks them, waits for the answers and answers the model in place of this output.
    pub question: Option<crate::question::Questions>,
    /// The call asks for a subagent (`spawn_agent`); the daemon owns sessions, starts the
    /// child, runs it and answers the model in place of this output.
    pub spawn: Option<crate::spawn_agent::SpawnRequest>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::Text(text.into())],
            session_cwd: None,
            leaves_plan_mode: false,
            switch_model: None,
            question: None,
            spawn: None,
        }
    }

    /// The same output, asking the daemon to move the session to `cwd`.
    #[must_use]
    pub fn moving_session_to(mut self, cwd: PathBuf) -> Self {
        self.session_cwd = Some(cwd);
        self
    }
}

/// A tool failure, split by who must act on it.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The model called it wrongly or the world said no (missing file, no match, a path that
    /// escapes its root): the sentence goes back to the model as the result.
    #[error("{message}")]
    Model { message: String },
    /// Codaris itself failed (an I/O error it cannot explain to the model); the turn reports it.
    #[error("{tool} failed: {source}")]
    Fatal {
        tool: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl ToolError {
    pub fn model(message: impl Into<String>) -> Self {
        Self::Model {
            message: message.into(),
        }
    }
}

/// A built-in tool. Arguments arrive as the model sent them, already checked by the policy to
/// be a JSON object; each tool validates their shape itself.
///
/// A tool names its catalogue entry and nothing else of what the model is shown: its id, name,
/// description and schema are the entry's, so a tool cannot be registered under one name and
/// described under another.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// What the model is shown of it: `codaris_catalogue::READ_FILE`, …
    fn entry(&self) -> &'static CatalogueEntry;
    /// Which built-in it is.
    fn id(&self) -> BuiltinTool {
        self.entry().id
    }
    /// The name the model calls, e.g. `read_file`.
    fn name(&self) -> &'static str {
        self.entry().name
    }
    /// The one-paragraph description the model reads: tight and precise.
    fn description(&self) -> &'static str {
        self.entry().description
    }
    /// The JSON schema of the arguments.
    fn schema(&self) -> Value {
        self.entry().schema()
    }
    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError>;
    /// For a tool whose permission card should only be shown for a call that can run (a
    /// pipeline launch): every check `call` makes, with no side effect, and the card's preview;
    /// the error the call would fail with, so the daemon answers it and shows no card. `None`
    /// for a tool with no such check. Reads files: call it off the async runtime.
    fn card_check(
        &self,
        _ctx: &ToolContext,
        _args: &Value,
    ) -> Option<Result<crate::preview::CallPreview, ToolError>> {
        None
    }
    /// The paths a call changes beyond its path arguments (a patch's files, a `.git` inside a
    /// removed tree), found before the policy decides and judged by it as `Task::implied`;
    /// empty for a tool that changes only what its arguments name. Reads the file system.
    fn implied_paths(
        &self,
        _cwd: &std::path::Path,
        _args: &Value,
        _read: &crate::context::ReadArgs,
    ) -> Vec<codaris_policy::Implied> {
        Vec::new()
    }
    /// Reads what of the arguments is read again by [`Tool::implied_paths`], the run and the
    /// preview (`apply_patch`'s patch), once, when the call is prepared; it travels with the
    /// call as [`ToolContext::read`].
    fn read_args(&self, _args: &Value) -> crate::context::ReadArgs {
        crate::context::ReadArgs::Nothing
    }
    /// What a call waiting on a card would do, for the person to judge it by (a diff, a
    /// command line, a request; see [`crate::preview`]); `None` for a tool with no preview.
    /// Reads files: call it off the async runtime.
    fn preview(&self, _ctx: &ToolContext, _args: &Value) -> Option<crate::preview::CallPreview> {
        None
    }
}
