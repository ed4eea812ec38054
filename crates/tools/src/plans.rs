//! The session's design plans: Markdown documents in its workspace at `plans/<slug>.plan.md`
//! (`plan_write`, `plan_list`, `plan_read`), and `plan_exit`, which asks the person to take the
//! session out of plan mode.
//!
//! The workspace is the daemon's, but commands run in it, so anything in `plans/` may have
//! been planted: the directory and each document are opened without following a symlink (a
//! link is refused, never read or written through), a document with other hard links is not
//! read, and a write goes to a new file renamed into place. A slug is checked before it names
//! anything: lowercase ASCII letters, digits and `-`, starting with a letter or digit, at most
//! [`PLAN_SLUG_MAX`] characters, so no `..`, `/`, dot file or look-alike letter can name
//! another file.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use codaris_catalogue::limits::{PLAN_MAX_BYTES, PLAN_SLUG_MAX};
use serde_json::Value;

use crate::context::ToolContext;
use crate::files::fence::system;
use crate::preview::{CallPreview, PreviewKind};
use crate::tool::{Tool, ToolError, ToolOutput};

/// The directory of the plans, in the session's workspace.
pub const DIR: &str = "plans";

/// What ends a plan document's file name.
const SUFFIX: &str = ".plan.md";

/// The most plan text [`documents`] returns in all: what compaction carries at most.
pub const DOCUMENTS_MAX_BYTES: usize = PLAN_MAX_BYTES;

/// How much of a plan's first line `plan_list` and the `plan_exit` card show.
const HEADING_MAX_CHARS: usize = 80;

/// How many lines of each plan the `plan_exit` card shows.
const CARD_LINES: usize = 12;

/// How many plans the `plan_exit` card shows the first lines of; the rest by slug only.
const CARD_PLANS: usize = 8;

/// One plan document, as [`documents`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanDocument {
    pub slug: String,
    /// Its text, cut at a character boundary when the budget ran out (`truncated`).
    pub content: String,
    /// The document's size on disk.
    pub bytes: u64,
    /// `content` is not the whole document: the budget of [`documents`] ran out.
    pub truncated: bool,
}

/// Every plan document of `workspace` that can be read safely, sorted by slug, with at most
/// [`DOCUMENTS_MAX_BYTES`] of text in all (a document past the budget comes with what fits,
/// possibly nothing, and `truncated`). A document that is a symlink, has other hard links, is
/// too large or is not UTF-8 is left out: it is not the session's own writing. Reads the
/// file system; never fails (no `plans/` is no plans).
pub fn documents(workspace: &Path) -> Vec<PlanDocument> {
    let Ok(Some(dir)) = system::own_subdir(workspace, DIR, false) else {
        return Vec::new();
    };
    let mut left = DOCUMENTS_MAX_BYTES;
    let mut out = Vec::new();
    for slug in slugs(&dir).unwrap_or_default() {
        let Ok(Some(text)) = read_text(&dir, &slug) else {
            continue;
        };
        let bytes = text.len() as u64;
        let cut = floor_char_boundary(&text, left);
        left -= cut;
        out.push(PlanDocument {
            slug,
            truncated: cut < text.len(),
            content: text[..cut].to_owned(),
            bytes,
        });
    }
    out
}

/// Why a slug is refused, as the model reads it.
fn check_slug(tool: &'static str, slug: &str) -> Result<(), ToolError> {
    let why = if slug.is_empty() {
        "is empty".to_owned()
    } else if slug.len() > PLAN_SLUG_MAX {
        format!("is {} bytes long; at most {PLAN_SLUG_MAX}", slug.len())
    } else if !slug
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        "may hold only lowercase ASCII letters, digits and `-`".to_owned()
    } else if slug.starts_with('-') {
        "must start with a letter or a digit".to_owned()
    } else {
        return Ok(());
    };
    // The slug is shown only once it is known to be short; a long one is named by its length.
    let shown = if slug.chars().count() <= PLAN_SLUG_MAX {
        format!(" `{}`", slug.escape_debug())
    } else {
        String::new()
    };
    Err(ToolError::model(format!(
        "{tool}: the slug{shown} {why} (e.g. `pipeline-refactor`)"
    )))
}

fn file_name(slug: &str) -> String {
    format!("{slug}{SUFFIX}")
}

/// The slugs of the documents in `dir`, sorted: the names that end in the suffix and whose
/// rest is a valid slug (anything else there is not a plan).
fn slugs(dir: &OwnedFd) -> io::Result<Vec<String>> {
    let mut slugs: Vec<String> = system::regular_names(dir)?
        .into_iter()
        .filter_map(|name| name.strip_suffix(SUFFIX).map(str::to_owned))
        .filter(|slug| check_slug("plan_list", slug).is_ok())
        .collect();
    slugs.sort();
    Ok(slugs)
}

/// A document's text; `Ok(None)` when there is none.
fn read_text(dir: &OwnedFd, slug: &str) -> io::Result<Option<String>> {
    let Some(bytes) = system::read_own_at(dir, &file_name(slug), PLAN_MAX_BYTES as u64)? else {
        return Ok(None);
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "the document is not UTF-8"))
}

/// The first non-empty line, its Markdown heading marks dropped, cut for a listing.
fn heading(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line = line.trim_start_matches('#').trim();
    let mut shown: String = line.chars().take(HEADING_MAX_CHARS).collect();
    if line.chars().count() > HEADING_MAX_CHARS {
        shown.push('…');
    }
    shown
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

/// How the model is told a refusal of the file system: a planted link or file is the world
/// saying no, an I/O failure is Codaris's.
fn refusal(tool: &'static str, what: &str, error: io::Error) -> ToolError {
    let why = match error.raw_os_error() {
        Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => {
            "is a symlink, which is not followed".to_owned()
        }
        Some(code) if code == rustix::io::Errno::NOTDIR.raw_os_error() => {
            "is not a directory".to_owned()
        }
        _ => match error.kind() {
            io::ErrorKind::InvalidInput
            | io::ErrorKind::InvalidData
            | io::ErrorKind::PermissionDenied
            | io::ErrorKind::FileTooLarge
            | io::ErrorKind::AlreadyExists => error.to_string(),
            _ => {
                return ToolError::Fatal {
                    tool,
                    source: error,
                };
            }
        },
    };
    ToolError::model(format!("{tool}: `{what}` {why}; it is left as it is"))
}

fn str_arg<'a>(tool: &'static str, args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::model(format!("{tool}: `{name}` (a string) is required")))
}

fn plans_dir(
    tool: &'static str,
    workspace: &Path,
    create: bool,
) -> Result<Option<OwnedFd>, ToolError> {
    system::own_subdir(workspace, DIR, create).map_err(|e| refusal(tool, DIR, e))
}

/// `plan_write`: writes or replaces one document.
#[derive(Debug, Default)]
pub struct PlanWrite;

#[async_trait::async_trait]
impl Tool for PlanWrite {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::PLAN_WRITE
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        const TOOL: &str = "plan_write";
        let slug = str_arg(TOOL, args, "slug")?;
        check_slug(TOOL, slug)?;
        let content = str_arg(TOOL, args, "content")?;
        if content.len() > PLAN_MAX_BYTES {
            return Err(ToolError::model(format!(
                "{TOOL}: the plan is {} bytes; at most {PLAN_MAX_BYTES} (256 KiB): split it into several plans",
                content.len()
            )));
        }
        let name = file_name(slug);
        let shown = format!("{DIR}/{name}");
        let Some(dir) = plans_dir(TOOL, &ctx.workspace, true)? else {
            return Err(ToolError::model(format!(
                "{TOOL}: `{DIR}` could not be made"
            )));
        };
        let existed = system::replace_own_at(&dir, &name, content.as_bytes())
            .map_err(|e| refusal(TOOL, &shown, e))?;
        let verb = if existed { "replaced" } else { "wrote" };
        Ok(ToolOutput::text(format!(
            "{verb} the plan `{slug}` ({} bytes, `{shown}` in the session's workspace)",
            content.len()
        )))
    }
}

/// `plan_list`: the documents by slug, each with its first line and size.
#[derive(Debug, Default)]
pub struct PlanList;

#[async_trait::async_trait]
impl Tool for PlanList {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::PLAN_LIST
    }

    async fn call(&self, ctx: &ToolContext, _args: &Value) -> Result<ToolOutput, ToolError> {
        const TOOL: &str = "plan_list";
        let Some(dir) = plans_dir(TOOL, &ctx.workspace, false)? else {
            return Ok(ToolOutput::text(NO_PLANS));
        };
        let slugs = slugs(&dir).map_err(|e| refusal(TOOL, DIR, e))?;
        if slugs.is_empty() {
            return Ok(ToolOutput::text(NO_PLANS));
        }
        let mut lines = vec![format!(
            "{} plan document{}, by slug:",
            slugs.len(),
            if slugs.len() == 1 { "" } else { "s" }
        )];
        for slug in slugs {
            let line = match read_text(&dir, &slug) {
                Ok(Some(text)) => format!("- `{slug}`: {} ({} bytes)", heading(&text), text.len()),
                Ok(None) => continue,
                Err(e) => format!("- `{slug}`: not readable ({e})"),
            };
            lines.push(line);
        }
        Ok(ToolOutput::text(lines.join("\n")))
    }
}

const NO_PLANS: &str = "the session has no plan documents yet; write one with `plan_write`";

/// `plan_read`: one document's text.
#[derive(Debug, Default)]
pub struct PlanRead;

#[async_trait::async_trait]
impl Tool for PlanRead {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::PLAN_READ
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        const TOOL: &str = "plan_read";
        let slug = str_arg(TOOL, args, "slug")?;
        check_slug(TOOL, slug)?;
        let shown = format!("{DIR}/{}", file_name(slug));
        let text = match plans_dir(TOOL, &ctx.workspace, false)? {
            Some(dir) => read_text(&dir, slug).map_err(|e| refusal(TOOL, &shown, e))?,
            None => None,
        };
        match text {
            Some(text) => Ok(ToolOutput::text(text)),
            None => Err(ToolError::model(format!(
                "{TOOL}: the session has no plan `{slug}`; `plan_list` lists its plans"
            ))),
        }
    }
}

/// `plan_exit`: run only once the person agreed on its card in a plan-mode session (the
/// policy asks there whatever the permission mode); the daemon switches the session and, in a
/// session that is not in plan mode, answers instead of running it.
#[derive(Debug, Default)]
pub struct PlanExit;

/// What the model reads when the person agreed.
pub const LEFT_PLAN_MODE: &str = "the user agreed to leave plan mode: the session is in agent mode from its next turn, with every tool; this turn keeps plan mode's tools, so end it with a short summary of the plan and what you will do first";

#[async_trait::async_trait]
impl Tool for PlanExit {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::PLAN_EXIT
    }

    async fn call(&self, _ctx: &ToolContext, _args: &Value) -> Result<ToolOutput, ToolError> {
        let mut output = ToolOutput::text(LEFT_PLAN_MODE);
        output.leaves_plan_mode = true;
        Ok(output)
    }

    /// The card shows what the person agrees to: each plan's slug and its first lines.
    fn preview(&self, ctx: &ToolContext, _args: &Value) -> Option<CallPreview> {
        let plans = documents(&ctx.workspace);
        let text = if plans.is_empty() {
            "no plan documents were written".to_owned()
        } else {
            let mut parts: Vec<String> = plans
                .iter()
                .take(CARD_PLANS)
                .map(|plan| {
                    let mut lines: Vec<&str> = plan.content.lines().take(CARD_LINES).collect();
                    if plan.content.lines().count() > CARD_LINES || plan.truncated {
                        lines.push("…");
                    }
                    format!("{DIR}/{}{SUFFIX}:\n{}", plan.slug, lines.join("\n"))
                })
                .collect();
            let rest: Vec<String> = plans
                .iter()
                .skip(CARD_PLANS)
                .map(|plan| format!("`{}`", plan.slug))
                .collect();
            if !rest.is_empty() {
                parts.push(format!("and {} more: {}", rest.len(), rest.join(", ")));
            }
            parts.join("\n\n")
        };
        Some(CallPreview {
            kind: PreviewKind::Plan,
            text,
            path: None,
            action: "leave plan mode and carry out the plan in agent mode, with every tool"
                .to_owned(),
        })
    }
}

#[cfg(test)]
mod tests;
