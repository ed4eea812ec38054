//! `planner`: the session's checklist, one tool with an `action` argument.
//!
//! The checklist is a Markdown file in the session's own workspace, `plan.md`, one `- [ ]` line
//! per item (`[~]` in progress, `[x]` completed), so it survives restarts and a person can read
//! it. Archiving marks every item completed and moves the file to `plan.archived.N.md`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::context::ToolContext;
use crate::files::fence::system;
use crate::tool::{Tool, ToolError, ToolOutput};

const NAME: &str = codaris_catalogue::PLANNER.name;
const FILE: &str = "plan.md";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Pending,
    InProgress,
    Completed,
}

impl Status {
    fn parse(text: &str) -> Result<Self, ToolError> {
        match text {
            "pending" => Ok(Self::Pending),
            "in_progress" => Ok(Self::InProgress),
            "completed" => Ok(Self::Completed),
            other => Err(ToolError::model(format!(
                "planner: `status` is pending, in_progress or completed, not `{other}`"
            ))),
        }
    }

    fn mark(self) -> &'static str {
        match self {
            Self::Pending => "[ ]",
            Self::InProgress => "[~]",
            Self::Completed => "[x]",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Item {
    status: Status,
    content: String,
}

/// Reads `- [ ] item` lines; anything else in the file is not an item.
fn parse(markdown: &str) -> Vec<Item> {
    markdown
        .lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("- ")?;
            let (status, content) = if let Some(c) = rest.strip_prefix("[ ] ") {
                (Status::Pending, c)
            } else if let Some(c) = rest.strip_prefix("[~] ") {
                (Status::InProgress, c)
            } else if let Some(c) = rest
                .strip_prefix("[x] ")
                .or_else(|| rest.strip_prefix("[X] "))
            {
                (Status::Completed, c)
            } else {
                (Status::Pending, rest)
            };
            let content = content.trim();
            (!content.is_empty()).then(|| Item {
                status,
                content: content.to_owned(),
            })
        })
        .collect()
}

fn render(items: &[Item]) -> String {
    items
        .iter()
        .map(|item| format!("- {} {}\n", item.status.mark(), item.content))
        .collect()
}

/// What the model reads: the items with their zero-based indexes.
fn listing(items: &[Item]) -> String {
    if items.is_empty() {
        return "the checklist is empty".to_owned();
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| format!("{i}. {} {}", item.status.mark(), item.content))
        .collect::<Vec<_>>()
        .join("\n")
}

fn index(args: &Value, key: &str, len: usize) -> Result<usize, ToolError> {
    let value = args.get(key).and_then(Value::as_u64).ok_or_else(|| {
        ToolError::model(format!("planner: `{key}` (a zero-based index) is required"))
    })?;
    let value = usize::try_from(value).unwrap_or(usize::MAX);
    if value >= len {
        return Err(ToolError::model(format!(
            "planner: `{key}` {value} is out of range; the checklist has {len} items"
        )));
    }
    Ok(value)
}

fn text<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// The session's checklist tool.
#[derive(Debug, Default)]
pub struct Planner;

impl Planner {
    fn path(ctx: &ToolContext) -> PathBuf {
        ctx.workspace.join(FILE)
    }

    /// The checklist in `workspace`, read beneath it (a symlink a command planted there is
    /// not followed out).
    fn load(workspace: &Path) -> Result<Vec<Item>, ToolError> {
        match system::read_beneath(workspace, Path::new(FILE)) {
            Ok(text) => Ok(text.as_deref().map(parse).unwrap_or_default()),
            Err(source) => Err(ToolError::Fatal { tool: NAME, source }),
        }
    }

    fn save(path: &Path, items: &[Item]) -> Result<(), ToolError> {
        std::fs::write(path, render(items))
            .map_err(|source| ToolError::Fatal { tool: NAME, source })
    }

    fn apply(ctx: &ToolContext, args: &Value) -> Result<String, ToolError> {
        let path = Self::path(ctx);
        let mut items = Self::load(&ctx.workspace)?;
        let action = text(args, "action").ok_or_else(|| {
            ToolError::model(
                "planner: `action` is one of read, replace, add, update, remove, move, archive",
            )
        })?;
        match action {
            "read" => return Ok(listing(&items)),
            "replace" => {
                let markdown = text(args, "markdown").ok_or_else(|| {
                    ToolError::model(
                        "planner: `replace` needs `markdown`, one `- [ ] item` line per item",
                    )
                })?;
                items = parse(markdown);
            }
            "add" => {
                let content = text(args, "content")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .ok_or_else(|| ToolError::model("planner: `add` needs `content`"))?;
                let status = text(args, "status")
                    .map(Status::parse)
                    .transpose()?
                    .unwrap_or(Status::Pending);
                let at = match args.get("after_index") {
                    Some(_) => index(args, "after_index", items.len())? + 1,
                    None => items.len(),
                };
                items.insert(
                    at,
                    Item {
                        status,
                        content: content.to_owned(),
                    },
                );
            }
            "update" => {
                let i = index(args, "index", items.len())?;
                if let Some(content) = text(args, "content")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                {
                    items[i].content = content.to_owned();
                }
                if let Some(status) = text(args, "status") {
                    items[i].status = Status::parse(status)?;
                }
            }
            "remove" => {
                let i = index(args, "index", items.len())?;
                items.remove(i);
            }
            "move" => {
                let from = index(args, "from_index", items.len())?;
                let to = index(args, "to_index", items.len())?;
                let item = items.remove(from);
                items.insert(to, item);
            }
            "archive" => {
                for item in &mut items {
                    item.status = Status::Completed;
                }
                let archived = (1..)
                    .map(|n| ctx.workspace.join(format!("plan.archived.{n}.md")))
                    .find(|p| !p.exists())
                    .unwrap_or_else(|| ctx.workspace.join("plan.archived.md"));
                Self::save(&archived, &items)?;
                let _ = std::fs::remove_file(&path);
                return Ok(format!(
                    "archived {} items to {}; the checklist is empty",
                    items.len(),
                    archived.display()
                ));
            }
            other => {
                return Err(ToolError::model(format!(
                    "planner: unknown action `{other}`; use read, replace, add, update, remove, move or archive"
                )));
            }
        }
        Self::save(&path, &items)?;
        Ok(listing(&items))
    }
}

#[async_trait::async_trait]
impl Tool for Planner {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::PLANNER
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        Self::apply(ctx, args).map(ToolOutput::text)
    }
}

#[cfg(test)]
#[expect(clippy::disallowed_methods, reason = "tests read what the tool wrote")]
mod tests {
    use super::*;
    use crate::context::Fence;
    use serde_json::json;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext {
            checkpoint: None,
            session_id: "s1".to_owned(),
            cwd: dir.to_path_buf(),
            fence: Fence::new([dir.to_path_buf()]),
            workspace: dir.to_path_buf(),
            read: Default::default(),
        }
    }

    fn call(ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        Planner::apply(ctx, &args)
    }

    #[test]
    fn a_checklist_is_built_changed_persisted_and_archived()
    -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let ctx = ctx(temp.path());
        assert_eq!(
            call(&ctx, json!({"action": "read"}))?,
            "the checklist is empty"
        );
        call(
            &ctx,
            json!({"action": "replace", "markdown": "- [ ] lint\n- [x] clone\nnot an item\n"}),
        )?;
        call(
            &ctx,
            json!({"action": "add", "content": "run tests", "after_index": 0}),
        )?;
        call(
            &ctx,
            json!({"action": "update", "index": 0, "status": "in_progress"}),
        )?;
        let moved = call(
            &ctx,
            json!({"action": "move", "from_index": 2, "to_index": 0}),
        )?;
        assert_eq!(moved, "0. [x] clone\n1. [~] lint\n2. [ ] run tests");
        assert_eq!(
            std::fs::read_to_string(temp.path().join("plan.md"))?,
            "- [x] clone\n- [~] lint\n- [ ] run tests\n"
        );
        call(&ctx, json!({"action": "remove", "index": 0}))?;
        let archived = call(&ctx, json!({"action": "archive"}))?;
        assert!(archived.starts_with("archived 2 items"), "{archived}");
        assert_eq!(
            std::fs::read_to_string(temp.path().join("plan.archived.1.md"))?,
            "- [x] lint\n- [x] run tests\n"
        );
        assert_eq!(
            call(&ctx, json!({"action": "read"}))?,
            "the checklist is empty"
        );
        Ok(())
    }

    #[test]
    fn bad_calls_are_told_how_to_call_again() -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let ctx = ctx(temp.path());
        for (args, needle) in [
            (json!({}), "`action` is one of"),
            (json!({"action": "dance"}), "unknown action `dance`"),
            (json!({"action": "add"}), "`add` needs `content`"),
            (json!({"action": "remove", "index": 3}), "out of range"),
            (
                json!({"action": "add", "content": "x", "status": "done"}),
                "pending, in_progress or completed",
            ),
        ] {
            let message = call(&ctx, args)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(message.contains(needle), "{message}");
        }
        Ok(())
    }
}
