//! `glob` and `grep`: ripgrep's walker (`.gitignore` respected, hidden files skipped) and
//! searcher. Each file searched is opened through the root's capability, so a name swapped for
//! a symlink out of the fence after the walk listed it is refused, not read.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use globset::GlobBuilder;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::Lossy};
use ignore::{WalkBuilder, overrides::OverrideBuilder};
use serde_json::Value;

use super::fence::{Beneath, opt_bool, opt_str, opt_usize, path_or_cwd, shown, str_arg};
use crate::context::ToolContext;
use crate::tool::{ToolError, ToolOutput};

const MAX_GLOB: usize = 100;
const MAX_LINE_CHARS: usize = 400;

/// Where a walk starts. `real` is the resolved path, checked to lie in the same root. `walk` is
/// what the walker is given: on Linux the start opened beneath the root and named through
/// `/proc/self/fd`, so a symlink swapped in after the check cannot move the walk out of the
/// fence (the walker never follows symlinks below its start).
#[derive(Debug)]
struct Start {
    real: PathBuf,
    walk: PathBuf,
    /// Keeps the descriptor `walk` names open for the walk.
    _handle: Option<cap_std::fs::File>,
}

fn walk_start(ctx: &ToolContext, at: &Beneath) -> Result<Start, ToolError> {
    let handle = at.dir.open(&at.rel).map_err(|e| at.err(ctx, e))?;
    let real = std::fs::canonicalize(&at.abs).map_err(|e| at.err(ctx, e))?;
    match ctx.fence.locate(&real) {
        Some((root, _)) if root == at.root => {}
        _ => {
            return Err(ToolError::model(format!(
                "{}: `{}` leads outside its allowed root",
                at.tool,
                at.shown(ctx)
            )));
        }
    }
    let by_fd = PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()));
    if by_fd.exists() {
        Ok(Start {
            real,
            walk: by_fd,
            _handle: Some(handle),
        })
    } else {
        Ok(Start {
            walk: real.clone(),
            real,
            _handle: None,
        })
    }
}

/// A walker over `start` that reads no ignore file outside the root: not the parents' (the
/// walker's default climbs to `/`), not the user's global one. The `.gitignore` files between
/// the root and `start` are added by hand, each matched relative to its own directory as git
/// does, so searching a subdirectory still honours the project's ignores.
fn walker(ctx: &ToolContext, root: &Path, start: &Start) -> WalkBuilder {
    let mut walker = WalkBuilder::new(&start.walk);
    if ctx.fence.has_secrets() {
        // Entries are named through the start's descriptor; compare their real paths.
        let (walk, real, fence) = (start.walk.clone(), start.real.clone(), ctx.fence.clone());
        walker.filter_entry(move |entry| {
            let rel = entry.path().strip_prefix(&walk).unwrap_or(entry.path());
            !fence.is_secret(&real.join(rel))
        });
    }
    // .gitignore counts even outside a git repository: the model expects it to.
    walker
        .require_git(false)
        .parents(false)
        .git_global(false)
        // Sorted, so the same tree always gives the same answer (and the same cut).
        .sort_by_file_name(|a, b| a.cmp(b));
    let mut dir = start.real.parent();
    while let Some(d) = dir.filter(|d| d.starts_with(root)) {
        let file = d.join(".gitignore");
        if file.is_file() {
            // Errors in someone's .gitignore only cost filtering, never the search.
            let _ = walker.add_ignore(file);
        }
        dir = d.parent();
    }
    walker
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Glob;

#[async_trait::async_trait]
impl crate::tool::Tool for Glob {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::GLOB
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        super::blocking("glob", ctx, args, glob).await
    }
}

fn glob(ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
    const TOOL: &str = "glob";
    let pattern = str_arg(TOOL, args, "pattern")?;
    let at = Beneath::locate(ctx, TOOL, path_or_cwd(TOOL, args)?)?;
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::model(format!("{TOOL}: bad pattern `{pattern}`: {e}")))?
        .compile_matcher();
    let by_name = !pattern.contains('/');
    let start = walk_start(ctx, &at)?;
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    // A pattern naming a hidden component (`.github/**`) asks for hidden files.
    let hidden = pattern
        .split('/')
        .any(|part| part.starts_with('.') && part != "." && part != "..");
    for entry in walker(ctx, &at.root, &start)
        .hidden(!hidden)
        .build()
        .flatten()
    {
        if entry.file_type().is_none_or(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        let rel = path.strip_prefix(&start.walk).unwrap_or(path);
        let hit = if by_name {
            // By the name the model knows: the start itself is named by its descriptor.
            at.abs_join(rel)
                .file_name()
                .is_some_and(|n| matcher.is_match(n))
        } else {
            matcher.is_match(rel)
        };
        if hit {
            let modified = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((modified, at.abs_join(rel)));
        }
    }
    // Newest first; equal times by path, so the answer does not depend on walk order.
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let mut out: Vec<String> = found
        .iter()
        .take(MAX_GLOB)
        .map(|(_, p)| shown(ctx, p))
        .collect();
    if total == 0 {
        out.push(format!("no files match `{pattern}`"));
    } else if total > MAX_GLOB {
        out.push(format!(
            "[{MAX_GLOB} newest of {total} files; narrow the pattern to see others]"
        ));
    }
    Ok(ToolOutput::text(out.join("\n")))
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Grep;

#[async_trait::async_trait]
impl crate::tool::Tool for Grep {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::GREP
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        super::blocking("grep", ctx, args, grep).await
    }
}

fn grep(ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
    const TOOL: &str = "grep";
    let pattern = str_arg(TOOL, args, "pattern")?;
    let at = Beneath::locate(ctx, TOOL, path_or_cwd(TOOL, args)?)?;
    let case_sensitive = match args.get("case_sensitive") {
        None | Some(Value::Null) => true,
        Some(_) => opt_bool(TOOL, args, "case_sensitive")?,
    };
    let max = opt_usize(TOOL, args, "max_results")?.unwrap_or(100).max(1);
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(!case_sensitive)
        .build(pattern)
        .map_err(|e| ToolError::model(format!("{TOOL}: bad regular expression: {e}")))?;
    let start = walk_start(ctx, &at)?;
    let mut walker = walker(ctx, &at.root, &start);
    if let Some(glob) = opt_str(TOOL, args, "glob")? {
        let overrides = OverrideBuilder::new(&start.walk)
            .add(glob)
            .and_then(|b| b.build())
            .map_err(|e| ToolError::model(format!("{TOOL}: bad glob `{glob}`: {e}")))?;
        walker.overrides(overrides);
    }
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let mut lines: Vec<String> = Vec::new();
    let mut more = false;
    for entry in walker.build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if more {
            break;
        }
        let path = entry.path();
        let rel_to_start = path.strip_prefix(&start.walk).unwrap_or(Path::new(""));
        let rel_to_root = at.rel_join(rel_to_start);
        // Opened beneath the root: a symlink swapped in since the walk is refused here.
        let Ok(file) = at.dir.open(&rel_to_root) else {
            continue;
        };
        let name = shown(ctx, &at.abs_join(rel_to_start));
        let result = searcher.search_file(
            &matcher,
            &file.into_std(),
            Lossy(|number, line| {
                if lines.len() >= max {
                    more = true;
                    return Ok(false);
                }
                let line = line.trim_end_matches(['\n', '\r']);
                let line = match line.char_indices().nth(MAX_LINE_CHARS) {
                    Some((cut, _)) => format!("{}…", &line[..cut]),
                    None => line.to_owned(),
                };
                lines.push(format!("{name}:{number}:{line}"));
                Ok(true)
            }),
        );
        // An unreadable file is skipped like ripgrep does; the rest of the search goes on.
        drop(result);
    }
    if lines.is_empty() {
        return Ok(ToolOutput::text(format!("no matches for `{pattern}`")));
    }
    if more {
        lines.push(format!(
            "[stopped at {max} matches; narrow the pattern or path, or raise max_results]"
        ));
    }
    Ok(ToolOutput::text(lines.join("\n")))
}
