//! What the daemon makes of one MCP tool, the same for its own servers and a session's own
//! (`session.rs`): its index entry, the schema the model is shown, what the policy is told,
//! what its arguments name, and a permitted call's run.

use std::collections::BTreeMap;

use codaris_agent::ToolRun;
use codaris_index::{Entry, Kind};
use codaris_mcp::names::McpTool;
use codaris_mcp::{Approval, ServerName, ServerRegistry, ServerSpec, ServerView, ToolDef};
use codaris_policy::{Access, ExternalSpec, PathArg, PathDefault, PermissionClass};
use serde_json::Value;

use super::builtin;
use super::paths::{self, PATH_ARGS};
use crate::calls::builtins::Pictures;

/// What deciding a call of an MCP tool of a known server takes, from one lookup of its name.
#[derive(Debug, Clone)]
pub struct McpDecisionInput {
    /// The name it is decided and recorded under: `server__tool`.
    pub tool: McpTool,
    pub spec: ExternalSpec,
    pub marks: paths::ArgumentMarks,
    /// Its server is switched off: the tool is withheld.
    pub switched_off: bool,
}

/// What the daemon reads of an MCP tool's arguments: its input schema, whether its server is
/// trusted, and the variables its server's environment expands (`~` and `$HOME` are the
/// server's home, as its process would read them).
pub(super) fn marks_of(view: &ServerView, tool: &ToolDef) -> paths::ArgumentMarks {
    let named = match &view.spec.transport {
        codaris_mcp::Transport::Stdio { env, .. } => env.clone(),
        codaris_mcp::Transport::Http { .. } => BTreeMap::new(),
    };
    let mut marks = paths::ArgumentMarks::new(
        view.spec.trust,
        tool.input_schema.clone(),
        codaris_mcp::server_env(std::env::vars_os(), &named),
    );
    // A Platform launch opens nothing here but its params file (declared in its spec, read
    // only); its work dir and params are paths on the compute environment's side.
    if builtin::is_builtin(&view.spec.name) && tool.name == builtin::LAUNCH_PIPELINE {
        marks.only = Some(&[]);
    }
    marks
}

/// What the policy is told about `tool` of the server `view`, held back for `held` (from its
/// server's approval): the same for a daemon's server and a session's own.
pub(super) fn external_spec(
    view: &ServerView,
    tool: &ToolDef,
    held: Option<String>,
) -> ExternalSpec {
    let read_only = view.spec.trust && tool.claims_read_only();
    let access = if read_only {
        Access::Read
    } else {
        Access::Mutate
    };
    let builtin = builtin::is_builtin(&view.spec.name);
    ExternalSpec {
        read_only,
        paths: if builtin && tool.name == builtin::LAUNCH_PIPELINE {
            // The daemon reads it before the decision, beneath the fence (see
            // `sessions::turns::host::launching`); nothing else of a launch is a local path.
            vec![PathArg {
                name: "params_file".into(),
                access: Access::Read,
                default: PathDefault::Optional,
            }]
        } else {
            tool.argument_names()
                .into_iter()
                .filter(|name| PATH_ARGS.contains(&name.as_str()))
                .map(|name| PathArg {
                    name: name.into(),
                    access,
                    default: PathDefault::Optional,
                })
                .collect()
        },
        permission: match view.spec.approval {
            _ if builtin && tool.name == builtin::BUILD_CONTAINER_IMAGE => PermissionClass::Push,
            _ if builtin && tool.name == builtin::LAUNCH_PIPELINE => PermissionClass::Launch,
            Approval::Ask => PermissionClass::Always,
            Approval::Never => PermissionClass::None,
        },
        modes: None,
        definition: Some(tool.definition_digest()),
        held,
    }
}

/// Runs a permitted call of `called` on its server in `registry` and renders the result.
pub(super) async fn run_on(
    registry: &ServerRegistry,
    called: &McpTool,
    args: &Value,
    cwd: &str,
    pictures: &Pictures,
) -> ToolRun {
    let sent = if builtin::is_builtin(&ServerName::of(called)) {
        builtin::absolute_paths(args, cwd)
    } else {
        args.clone()
    };
    match registry.call_tool(called, sent).await {
        Ok(rendered) => {
            let images = rendered
                .pictures
                .into_iter()
                .filter_map(|p| {
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD
                        .decode(p.data.as_bytes())
                        .ok()
                        .map(|bytes| (p.mime_type, bytes))
                })
                .collect();
            let mut run = crate::calls::builtins::picture_run(
                called.called(),
                args,
                rendered.text,
                images,
                pictures,
            );
            run.is_error |= rendered.is_error;
            run
        }
        Err(err) => ToolRun::error(err.to_string()),
    }
}

/// The index entry of one MCP tool: `[server]` before its description, the server's keywords
/// beside its own name.
pub(super) fn entry(spec: &ServerSpec, tool: &ToolDef) -> Entry {
    let mut entry = Entry::new(tool.prefixed(&spec.name), Kind::Mcp, described(spec, tool));
    entry.server = Some(spec.name.to_string());
    entry.keywords = spec.keywords.clone();
    entry.args = tool.argument_names();
    entry.title = tool.annotated_title();
    entry.arg_descriptions = tool.argument_descriptions();
    entry
}

pub(super) fn described(spec: &ServerSpec, tool: &ToolDef) -> String {
    let description = tool.shown_description();
    let description = description.trim();
    if description.is_empty() {
        format!("[{}] {}", spec.name, tool.name)
    } else {
        format!("[{}] {description}", spec.name)
    }
}
