//! Directory listings (`read_file` on a directory) and `print_tree`, walked through the root's
//! capability so a symlinked directory is shown, never entered.

use std::path::Path;

use cap_std::fs::Dir;
use serde_json::Value;

use super::fence::{Beneath, opt_usize, path_or_cwd};
use crate::context::ToolContext;
use crate::tool::{ToolError, ToolOutput};

/// How many entries a listing or a tree shows before it says what it left out.
const MAX_ENTRIES: usize = 1000;

#[derive(Debug)]
struct Entry {
    name: String,
    is_dir: bool,
    link: Option<String>,
}

/// The entries of one directory, sorted by name, hidden ones only when asked.
fn entries(dir: &Dir, hidden: bool) -> std::io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for entry in dir.entries()? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !hidden && name.starts_with('.') {
            continue;
        }
        let kind = entry.file_type()?;
        let link = if kind.is_symlink() {
            Some(
                dir.read_link_contents(&name)
                    .map(|t| t.display().to_string())
                    .unwrap_or_default(),
            )
        } else {
            None
        };
        out.push(Entry {
            name,
            is_dir: kind.is_dir(),
            link,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn label(entry: &Entry) -> String {
    match (&entry.link, entry.is_dir) {
        (Some(target), _) => format!("{} -> {target}", entry.name),
        (None, true) => format!("{}/", entry.name),
        (None, false) => entry.name.clone(),
    }
}

/// `read_file` on a directory: one entry a line, directories ending in `/`.
pub(crate) fn listing(
    ctx: &ToolContext,
    at: &Beneath,
    recursive: bool,
    hidden: bool,
) -> Result<String, ToolError> {
    let dir = at.dir.open_dir(&at.rel).map_err(|e| at.err(ctx, e))?;
    let mut lines = Vec::new();
    let mut more = 0;
    walk_flat(
        &dir,
        Path::new(""),
        recursive,
        hidden,
        &mut lines,
        &mut more,
    )
    .map_err(|e| at.err(ctx, e))?;
    let mut out = format!("{}/\n", at.shown(ctx).trim_end_matches('/'));
    if lines.is_empty() {
        out.push_str("[empty directory]");
    }
    for line in &lines {
        out.push_str(line);
        out.push('\n');
    }
    if more > 0 {
        out.push_str(&format!("[{more} more entries not shown]"));
    }
    Ok(out)
}

fn walk_flat(
    dir: &Dir,
    prefix: &Path,
    recursive: bool,
    hidden: bool,
    lines: &mut Vec<String>,
    more: &mut usize,
) -> std::io::Result<()> {
    for entry in entries(dir, hidden)? {
        if lines.len() >= MAX_ENTRIES {
            *more += 1;
            continue;
        }
        lines.push(prefix.join(label(&entry)).display().to_string());
        if recursive && entry.is_dir && entry.link.is_none() {
            let sub = dir.open_dir(&entry.name)?;
            walk_flat(&sub, &prefix.join(&entry.name), true, hidden, lines, more)?;
        }
    }
    Ok(())
}

#[derive(Debug, Default, Clone, Copy)]
pub struct PrintTree;

#[async_trait::async_trait]
impl crate::tool::Tool for PrintTree {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::PRINT_TREE
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        super::blocking("print_tree", ctx, args, tree).await
    }
}

fn tree(ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
    const TOOL: &str = "print_tree";
    let at = Beneath::locate(ctx, TOOL, path_or_cwd(TOOL, args)?)?;
    let depth = opt_usize(TOOL, args, "depth")?.unwrap_or(3).max(1);
    let dir = at.dir.open_dir(&at.rel).map_err(|e| at.err(ctx, e))?;
    let mut out = format!("{}\n", at.shown(ctx));
    let mut count = (0, 0, 0); // directories, files, entries not shown
    draw(&dir, "", depth, &mut out, &mut count).map_err(|e| at.err(ctx, e))?;
    out.push_str(&format!("\n{} directories, {} files", count.0, count.1));
    if count.2 > 0 {
        out.push_str(&format!(" ({} more entries not shown)", count.2));
    }
    Ok(ToolOutput::text(out))
}

fn draw(
    dir: &Dir,
    indent: &str,
    depth: usize,
    out: &mut String,
    count: &mut (usize, usize, usize),
) -> std::io::Result<()> {
    let list = entries(dir, false)?;
    let last_index = list.len().saturating_sub(1);
    for (index, entry) in list.iter().enumerate() {
        if count.0 + count.1 >= MAX_ENTRIES {
            count.2 += 1;
            continue;
        }
        let (branch, next) = if index == last_index {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        out.push_str(&format!("{indent}{branch}{}\n", label(entry)));
        if entry.is_dir && entry.link.is_none() {
            count.0 += 1;
            if depth > 1 {
                let sub = dir.open_dir(&entry.name)?;
                draw(&sub, &format!("{indent}{next}"), depth - 1, out, count)?;
            }
        } else {
            count.1 += 1;
        }
    }
    Ok(())
}
