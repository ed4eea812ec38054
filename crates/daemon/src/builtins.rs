//! The built-in tools this daemon runs: their specs for the model, their index entries, and
//! running one inside the fence the policy checked.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use codaris_agent::{ToolRun, ToolSpec, ToolTier};
use codaris_index::{Entry, Kind};
use codaris_policy::Task;
use codaris_tools::shell::{PoolConfig, ShellPools, TaskNotice};
use codaris_tools::{Content, Fence, OutputLimits, Tool, ToolContext, ToolError, apply_limits};
use serde_json::Value;
use tokio::sync::mpsc;

/// Every built-in tool with a real implementation, by name.
#[derive(Clone)]
pub struct Builtins {
    tools: Vec<Arc<dyn Tool>>,
    /// The shell tools' per-session task pools, closed when a session ends.
    pools: Option<Arc<ShellPools>>,
    by_name: HashMap<&'static str, Arc<dyn Tool>>,
    limits: OutputLimits,
}

impl std::fmt::Debug for Builtins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.name()))
            .finish()
    }
}

impl Builtins {
    /// Cuts every result to `limits` before the model sees it.
    #[must_use]
    pub fn with_limits(mut self, limits: OutputLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The file, shell and web tools; `websearch` asks Brave then Bing, the catalogue's default.
    /// Commands may also write to `sandbox_writable` under Landlock.
    pub fn new(sandbox_writable: Vec<PathBuf>) -> (Self, mpsc::UnboundedReceiver<TaskNotice>) {
        let (pools, notices) = ShellPools::new(PoolConfig::default());
        let pools = pools.with_extra_writable(sandbox_writable);
        let pools = Arc::new(pools);
        let mut tools = codaris_tools::files::file_tools();
        tools.push(Arc::new(codaris_tools::Planner));
        tools.extend(codaris_tools::shell::tools(&pools));
        tools.extend(codaris_tools::web_tools(vec![
            codaris_tools::Engine::brave(),
            codaris_tools::Engine::bing(),
        ]));
        let mut builtins = Self::from_tools(tools);
        builtins.pools = Some(pools);
        (builtins, notices)
    }

    pub fn from_tools(tools: Vec<Arc<dyn Tool>>) -> Self {
        let by_name = tools.iter().map(|t| (t.name(), t.clone())).collect();
        Self {
            tools,
            pools: None,
            by_name,
            limits: OutputLimits::default(),
        }
    }

    /// Stops the session's background commands and removes its temporary directory.
    pub fn close_session(&self, session_id: &str) {
        if let Some(pools) = &self.pools {
            pools.close(session_id);
        }
    }

    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.tools.iter().map(|t| t.name())
    }

    /// The index entries of the built-in tools (kind `core`).
    pub fn entries(&self) -> Vec<Entry> {
        self.tools
            .iter()
            .map(|tool| {
                let mut entry = Entry::new(tool.name(), Kind::Core, tool.description());
                entry.args = tool
                    .schema()
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|props| props.keys().cloned().collect())
                    .unwrap_or_default();
                entry.slash = codaris_policy::builtin(tool.name())
                    .map(|spec| spec.slash.iter().map(|s| (*s).to_owned()).collect())
                    .unwrap_or_default();
                entry
            })
            .collect()
    }

    pub fn spec(&self, name: &str) -> Option<ToolSpec> {
        let tool = self.by_name.get(name)?;
        Some(ToolSpec {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            input_schema: tool.schema(),
            tier: if codaris_policy::ALWAYS_ON.contains(&tool.name()) {
                ToolTier::AlwaysOn
            } else {
                ToolTier::Added
            },
        })
    }

    /// Runs an allowed call inside the task's fence (its paths already resolved by the
    /// dispatcher's contract), cutting the result to the output limits.
    /// Runs an allowed call inside the task's fence (its paths already resolved by the
    /// dispatcher's contract) widened by exactly the paths a grant opened for this call,
    /// cutting the result to the output limits.
    pub async fn run(
        &self,
        session_id: &str,
        task: &Task,
        granted: &[String],
        name: &str,
        args: &Value,
    ) -> Option<ToolRun> {
        let tool = self.by_name.get(name)?;
        let resolve =
            |p: &String| PathBuf::from(crate::resolve::resolve_path(std::path::Path::new("/"), p));
        let workspace = task.workspace.as_ref().map(resolve).unwrap_or_default();
        let mut roots: Vec<PathBuf> = task.allowed_roots.iter().map(resolve).collect();
        roots.push(workspace.clone());
        // The fence opens roots as directories; a grant for one file opens its directory, and
        // the call's own path arguments are still exactly the ones the policy checked.
        roots.extend(granted.iter().map(resolve).map(|path| {
            if path.is_dir() {
                path
            } else {
                path.parent().map(PathBuf::from).unwrap_or(path)
            }
        }));
        let ctx = ToolContext {
            session_id: session_id.to_owned(),
            cwd: resolve(&task.cwd),
            fence: Fence::new(roots),
            workspace,
        };
        Some(match tool.call(&ctx, args).await {
            Ok(output) => ToolRun {
                output: text_of(apply_limits(output, self.limits)),
                is_error: false,
                bound: Vec::new(),
            },
            Err(ToolError::Model { message }) => ToolRun {
                output: message,
                is_error: true,
                bound: Vec::new(),
            },
            Err(err @ ToolError::Fatal { .. }) => {
                tracing::error!(tool = name, %err, "a tool failed");
                ToolRun {
                    output: format!("{name} failed inside Codaris: {err}"),
                    is_error: true,
                    bound: Vec::new(),
                }
            }
        })
    }
}

/// The text the model reads; pictures wait for multimodal providers.
fn text_of(output: codaris_tools::ToolOutput) -> String {
    output
        .content
        .into_iter()
        .map(|content| match content {
            Content::Text(text) => text,
            Content::Image { media_type, data } => {
                format!("[a {media_type} picture of {} bytes; this model route does not show pictures yet]", data.len())
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
