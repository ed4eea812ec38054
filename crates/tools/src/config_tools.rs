//! The self-configuration tools: `config_get`, `config_changes`, `config_set`, `config_revert`,
//! `config_commit` and `config_rollback`. They only speak to a [`ConfigEditor`], which the
//! daemon provides: it owns the file, the staged commands, the ledger and the reload. With no
//! editor only `config_get` would make sense, and the daemon always wires one.
//!
//! The card of a commit or a rollback is worked out by [`Tool::card_check`]: a batch that does
//! not validate is answered at once, with every problem, and raises no card; one that does
//! shows the diff and what the change would have done to the decisions already recorded.

use std::sync::Arc;

use codaris_catalogue::config::{COMMAND_MAX_BYTES, COMMANDS_MAX};
use serde_json::Value;

use crate::context::ToolContext;
use crate::preview::CallPreview;
use crate::tool::{Tool, ToolError, ToolOutput};

/// The daemon's side of the configuration tools. Every answer is the model's text (or its
/// refusal, [`ToolError::Model`]); nothing secret is ever in it.
#[async_trait::async_trait]
pub trait ConfigEditor: Send + Sync + std::fmt::Debug {
    /// The value at a dotted path of the file, redacted (`.`: the whole file).
    fn get(&self, path: &str) -> Result<String, ToolError>;
    /// The staged commands and the diff they make.
    fn changes(&self) -> Result<String, ToolError>;
    /// Checks and stages `commands` (all or none), for `session`.
    fn stage(&self, session: &str, commands: &[String]) -> Result<String, ToolError>;
    /// Discards the staged commands at or under `path` (all of them: `None`).
    fn revert(&self, path: Option<&str>) -> Result<String, ToolError>;
    /// What a commit would do (the diff and the replay summary), or why it cannot: nothing
    /// staged, or the problems of the file it would write. Reads the ledger: blocking.
    fn check_commit(&self) -> Result<CallPreview, ToolError>;
    /// What a rollback would do, or why it cannot (no snapshot). Blocking.
    fn check_rollback(&self) -> Result<CallPreview, ToolError>;
    /// Commits the staged commands for `session`: validated again, written, recorded, reloaded.
    async fn commit(&self, session: &str) -> Result<String, ToolError>;
    /// Puts the last commit's snapshot back for `session`: written, recorded, reloaded.
    async fn rollback(&self, session: &str) -> Result<String, ToolError>;
}

/// The six tools, each speaking to `editor`.
pub fn config_tools(editor: &Arc<dyn ConfigEditor>) -> Vec<Arc<dyn Tool>> {
    [
        Which::Get,
        Which::Changes,
        Which::Set,
        Which::Revert,
        Which::Commit,
        Which::Rollback,
    ]
    .into_iter()
    .map(|which| {
        Arc::new(ConfigTool {
            which,
            editor: editor.clone(),
        }) as Arc<dyn Tool>
    })
    .collect()
}

#[derive(Debug, Clone, Copy)]
enum Which {
    Get,
    Changes,
    Set,
    Revert,
    Commit,
    Rollback,
}

struct ConfigTool {
    which: Which,
    editor: Arc<dyn ConfigEditor>,
}

/// Runs a blocking call of the editor off the async runtime.
async fn blocking<T: Send + 'static>(
    editor: &Arc<dyn ConfigEditor>,
    work: impl FnOnce(&dyn ConfigEditor) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let editor = editor.clone();
    tokio::task::spawn_blocking(move || work(editor.as_ref()))
        .await
        .map_err(|err| ToolError::model(format!("the configuration tool did not finish: {err}")))?
}

/// The `commands` argument: one to [`COMMANDS_MAX`] lines of text.
fn commands(args: &Value) -> Result<Vec<String>, ToolError> {
    let Some(list) = args.get("commands").and_then(Value::as_array) else {
        return Err(ToolError::model(
            "config_set: `commands` is a list of commands such as `set tools.background=false`",
        ));
    };
    if list.is_empty() || list.len() > COMMANDS_MAX {
        return Err(ToolError::model(format!(
            "config_set: give 1 to {COMMANDS_MAX} commands, not {}",
            list.len()
        )));
    }
    list.iter()
        .map(|item| match item.as_str() {
            Some(line) if line.len() <= COMMAND_MAX_BYTES => Ok(line.to_owned()),
            Some(_) => Err(ToolError::model(format!(
                "config_set: a command is at most {COMMAND_MAX_BYTES} bytes"
            ))),
            None => Err(ToolError::model("config_set: each command is text")),
        })
        .collect()
}

fn optional_path(args: &Value) -> Result<Option<String>, ToolError> {
    match args.get("path") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(path)) => Ok(Some(path.clone())),
        Some(_) => Err(ToolError::model(
            "`path` is a dotted path such as `tools.http_allowlist`",
        )),
    }
}

#[async_trait::async_trait]
impl Tool for ConfigTool {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        match self.which {
            Which::Get => &codaris_catalogue::config::CONFIG_GET,
            Which::Changes => &codaris_catalogue::config::CONFIG_CHANGES,
            Which::Set => &codaris_catalogue::config::CONFIG_SET,
            Which::Revert => &codaris_catalogue::config::CONFIG_REVERT,
            Which::Commit => &codaris_catalogue::config::CONFIG_COMMIT,
            Which::Rollback => &codaris_catalogue::config::CONFIG_ROLLBACK,
        }
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let session = ctx.session_id.clone();
        let text = match self.which {
            Which::Get => {
                let path = optional_path(args)?.unwrap_or_else(|| ".".to_owned());
                blocking(&self.editor, move |e| e.get(&path)).await?
            }
            Which::Changes => blocking(&self.editor, |e| e.changes()).await?,
            Which::Set => {
                let commands = commands(args)?;
                blocking(&self.editor, move |e| e.stage(&session, &commands)).await?
            }
            Which::Revert => {
                let path = optional_path(args)?;
                blocking(&self.editor, move |e| e.revert(path.as_deref())).await?
            }
            Which::Commit => self.editor.commit(&session).await?,
            Which::Rollback => self.editor.rollback(&session).await?,
        };
        Ok(ToolOutput::text(text))
    }

    fn card_check(
        &self,
        _ctx: &ToolContext,
        _args: &Value,
    ) -> Option<Result<CallPreview, ToolError>> {
        match self.which {
            Which::Commit => Some(self.editor.check_commit()),
            Which::Rollback => Some(self.editor.check_rollback()),
            _ => None,
        }
    }
}
