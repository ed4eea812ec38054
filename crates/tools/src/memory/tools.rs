//! The six tools, each a thin reading of its arguments over [`Roots`]. The user scope's base is
//! the daemon's configuration directory; the project scope's is the session's directory.

use std::path::PathBuf;
use std::sync::Arc;

use codaris_catalogue::CatalogueEntry;
use codaris_catalogue::memory::MEMORY_SEARCH_LIMIT;
use serde_json::Value;

use super::path::{NotePath, Scope};
use super::store::{MemoryError, Roots};
use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

/// The memory tools' names, in the catalogue's order: the first three read.
pub const MEMORY_TOOLS: [&str; 6] = [
    "codaris_memory_search",
    "codaris_memory_list",
    "codaris_memory_read",
    "codaris_memory_mkdir",
    "codaris_memory_save",
    "codaris_memory_delete",
];

/// The six tools, the user scope kept under `config_dir` (none: that scope has no notes).
pub fn memory_tools(config_dir: Option<PathBuf>) -> Vec<Arc<dyn Tool>> {
    Op::ALL
        .into_iter()
        .map(|op| {
            Arc::new(MemoryTool {
                op,
                config_dir: config_dir.clone(),
            }) as Arc<dyn Tool>
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Search,
    List,
    Read,
    Mkdir,
    Save,
    Delete,
}

impl Op {
    const ALL: [Op; 6] = [
        Op::Search,
        Op::List,
        Op::Read,
        Op::Mkdir,
        Op::Save,
        Op::Delete,
    ];
}

/// One of the six: which, and where the user scope is.
#[derive(Debug, Clone)]
struct MemoryTool {
    op: Op,
    config_dir: Option<PathBuf>,
}

#[async_trait::async_trait]
impl Tool for MemoryTool {
    fn entry(&self) -> &'static CatalogueEntry {
        match self.op {
            Op::Search => &codaris_catalogue::CODARIS_MEMORY_SEARCH,
            Op::List => &codaris_catalogue::CODARIS_MEMORY_LIST,
            Op::Read => &codaris_catalogue::CODARIS_MEMORY_READ,
            Op::Mkdir => &codaris_catalogue::CODARIS_MEMORY_MKDIR,
            Op::Save => &codaris_catalogue::CODARIS_MEMORY_SAVE,
            Op::Delete => &codaris_catalogue::CODARIS_MEMORY_DELETE,
        }
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let roots = Roots {
            user: self.config_dir.clone(),
            project: Some(ctx.cwd.clone()),
        };
        let (op, tool, args) = (self.op, self.name(), args.clone());
        // The file system work runs off the runtime's worker threads.
        tokio::task::spawn_blocking(move || run(op, tool, &roots, &args))
            .await
            .map_err(|e| ToolError::Fatal {
                tool,
                source: std::io::Error::other(e),
            })?
    }
}

fn run(op: Op, tool: &'static str, roots: &Roots, args: &Value) -> Result<ToolOutput, ToolError> {
    let said = |err: MemoryError| ToolError::model(format!("{tool}: {err}"));
    let text = match op {
        Op::Search => {
            let query = string(tool, args, "query")?;
            let scopes = match args.get("scope").and_then(Value::as_str) {
                None | Some("all") => Scope::ALL.to_vec(),
                Some(name) => vec![Scope::parse(name).ok_or_else(|| {
                    ToolError::model(format!(
                        "{tool}: `{name}` is not a memory scope; use `user`, `project` or `all`"
                    ))
                })?],
            };
            let hits = roots
                .search(query, &scopes, MEMORY_SEARCH_LIMIT)
                .map_err(said)?;
            if hits.is_empty() {
                format!("no note matches `{query}`")
            } else {
                let lines: Vec<String> = hits
                    .iter()
                    .map(|h| format!("- {}: {}", h.path, h.title))
                    .collect();
                format!(
                    "{} notes match `{query}`, best first:\n{}",
                    hits.len(),
                    lines.join("\n")
                )
            }
        }
        Op::List => match args.get("path").and_then(Value::as_str) {
            None | Some("") => {
                let mut lines = Vec::new();
                for scope in Scope::ALL {
                    let root = NotePath {
                        scope,
                        rel: PathBuf::new(),
                    };
                    match roots.list(&root) {
                        Ok(listing) => lines.push(listed(&root, &listing)),
                        Err(MemoryError::NoScope { .. }) => {}
                        Err(err) => return Err(said(err)),
                    }
                }
                lines.join("\n")
            }
            Some(path) => {
                let path = NotePath::parse(path).map_err(|e| said(e.into()))?;
                listed(&path, &roots.list(&path).map_err(said)?)
            }
        },
        Op::Read => {
            let path = note_path(tool, args)?;
            let note = roots.read(&path).map_err(said)?;
            format!("note `{path}`:\n{}", note.text())
        }
        Op::Mkdir => {
            let path = note_path(tool, args)?;
            roots.mkdir(&path).map_err(said)?;
            format!("made `{path}`")
        }
        Op::Save => {
            let scope_name = string(tool, args, "scope")?;
            let scope = Scope::parse(scope_name).ok_or_else(|| {
                ToolError::model(format!(
                    "{tool}: `{scope_name}` is not a memory scope; use `user` or `project`"
                ))
            })?;
            let rel = string(tool, args, "relative_path")?;
            let path = NotePath::note(scope, rel).map_err(|e| said(e.into()))?;
            let title = string(tool, args, "title")?;
            let body = string(tool, args, "body")?;
            let replaced = roots.save(&path, title, body).map_err(said)?;
            format!("{} `{path}`", if replaced { "replaced" } else { "saved" })
        }
        Op::Delete => {
            let path = note_path(tool, args)?;
            if roots.delete(&path).map_err(said)? {
                format!("deleted the folder `{path}` with everything in it")
            } else {
                format!("deleted `{path}`")
            }
        }
    };
    Ok(ToolOutput::text(text))
}

fn listed(path: &NotePath, listing: &super::store::Listing) -> String {
    let mut lines = vec![format!(
        "`{path}`: {} folders, {} notes",
        listing.folders.len(),
        listing.notes.len()
    )];
    lines.extend(listing.folders.iter().map(|f| format!("  {f}/")));
    lines.extend(listing.notes.iter().map(|n| format!("  {n}")));
    lines.join("\n")
}

fn note_path(tool: &'static str, args: &Value) -> Result<NotePath, ToolError> {
    let path = string(tool, args, "path")?;
    NotePath::parse(path).map_err(|err| ToolError::model(format!("{tool}: {err}")))
}

fn string<'a>(tool: &'static str, args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    args.get(name).and_then(Value::as_str).ok_or_else(|| {
        ToolError::model(format!("{tool}: `{name}` is required and must be a string"))
    })
}
