//! `apply_patch`: every hunk is applied in memory first; only when all of them fit are the new
//! contents written to temporary files beside their targets and renamed over them. A hunk that
//! does not apply fails the whole patch and changes nothing.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::PathBuf;

use cap_std::fs::OpenOptions;
use serde_json::Value;

use super::edit::open_existing;
use super::fence::{Beneath, ensure_dir, path_or_cwd, str_arg};
use super::patch_parse::{Hunk, Op, ReadPatch};
use crate::context::{ReadArgs, ToolContext, normalize};
use crate::tool::{ToolError, ToolOutput};

const TOOL: &str = codaris_catalogue::APPLY_PATCH.name;

#[derive(Debug, Default, Clone, Copy)]
pub struct ApplyPatch;

#[async_trait::async_trait]
impl crate::tool::Tool for ApplyPatch {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::APPLY_PATCH
    }

    fn read_args(&self, args: &Value) -> ReadArgs {
        match args.get("patch").and_then(Value::as_str) {
            Some(patch) => ReadArgs::Patch(ReadPatch::read(patch)),
            None => ReadArgs::Nothing,
        }
    }

    fn implied_paths(
        &self,
        cwd: &std::path::Path,
        args: &Value,
        read: &ReadArgs,
    ) -> Vec<codaris_policy::Implied> {
        match read {
            ReadArgs::Patch(patch) => crate::implied::patch_targets_of(cwd, args, patch),
            ReadArgs::Nothing => Vec::new(),
        }
    }

    fn preview(&self, ctx: &ToolContext, args: &Value) -> Option<crate::preview::CallPreview> {
        crate::preview::file_change(ctx, self.id(), args)
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        super::blocking(TOOL, ctx, args, apply).await
    }
}

/// What the patch leaves at one path once every hunk applied.
#[derive(Debug)]
pub(crate) struct Change {
    pub(crate) at: Beneath,
    /// `None` removes the file.
    pub(crate) content: Option<Vec<u8>>,
}

fn apply(ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
    let (staged, summary) = plan_patch(ctx, args)?;
    commit(ctx, &staged)?;
    Ok(ToolOutput::text(format!(
        "applied:\n{}",
        summary.join("\n")
    )))
}

/// Every change the patch makes, worked out in memory (nothing written), in the order they
/// land, and the summary lines (`M path`, `A path`, …). A card's preview shows these.
pub(crate) fn plan_patch(
    ctx: &ToolContext,
    args: &Value,
) -> Result<(Vec<Change>, Vec<String>), ToolError> {
    let patch = str_arg(TOOL, args, "patch")?;
    let base = ctx.absolute(path_or_cwd(TOOL, args)?);
    // Read when the call was prepared; read here only for a call made outside the daemon.
    let read;
    let patch = match &ctx.read {
        ReadArgs::Patch(read) => read,
        ReadArgs::Nothing => {
            read = ReadPatch::read(patch);
            &read
        }
    };
    let ops = patch
        .ops()
        .map_err(|e| ToolError::model(format!("{TOOL}: {e}; nothing was changed")))?;
    // Keyed by absolute path, so a later operation on the same file sees the earlier result.
    let mut changes: HashMap<PathBuf, Change> = HashMap::new();
    let mut order: Vec<PathBuf> = Vec::new();
    let mut summary = Vec::new();
    for op in ops {
        match op {
            Op::Add { path, content } => {
                let at = locate(ctx, &base, path)?;
                if current(ctx, &changes, &at)?.is_some() {
                    return Err(fail(format!("`{}` already exists", at.shown(ctx))));
                }
                summary.push(format!("A {}", at.shown(ctx)));
                stage(
                    &mut changes,
                    &mut order,
                    at,
                    Some(content.clone().into_bytes()),
                );
            }
            Op::Delete { path } => {
                let at = locate(ctx, &base, path)?;
                // Removing a name changes no content, so a read-only file or one with other
                // hard links may go; only a directory may not.
                let exists = match changes.get(&at.abs) {
                    Some(change) => change.content.is_some(),
                    None => at.dir.symlink_metadata(&at.rel).is_ok_and(|m| !m.is_dir()),
                };
                if !exists {
                    return Err(fail(format!("`{}` is not an existing file", at.shown(ctx))));
                }
                summary.push(format!("D {}", at.shown(ctx)));
                stage(&mut changes, &mut order, at, None);
            }
            Op::Update {
                path,
                move_to,
                hunks,
            } => {
                let at = locate(ctx, &base, path)?;
                let Some(old) = current(ctx, &changes, &at)? else {
                    return Err(fail(format!("`{}` does not exist", at.shown(ctx))));
                };
                let Ok(text) = String::from_utf8(old) else {
                    return Err(fail(format!("`{}` is not UTF-8 text", at.shown(ctx))));
                };
                let new = apply_hunks(&text, hunks)
                    .map_err(|e| fail(format!("in `{}`: {e}", at.shown(ctx))))?;
                match move_to {
                    Some(to) => {
                        let dst = locate(ctx, &base, to)?;
                        summary.push(format!("R {} -> {}", at.shown(ctx), dst.shown(ctx)));
                        stage(&mut changes, &mut order, at, None);
                        stage(&mut changes, &mut order, dst, Some(new.into_bytes()));
                    }
                    None => {
                        summary.push(format!("M {}", at.shown(ctx)));
                        stage(&mut changes, &mut order, at, Some(new.into_bytes()));
                    }
                }
            }
        }
    }
    let staged: Vec<Change> = order.iter().filter_map(|p| changes.remove(p)).collect();
    Ok((staged, summary))
}

fn fail(why: String) -> ToolError {
    fail_as(TOOL, why)
}

fn fail_as(tool: &str, why: String) -> ToolError {
    ToolError::model(format!("{tool}: {why}; nothing was changed"))
}

/// A patch's file, beneath `base` (the directory the policy checked) and beneath a root.
fn locate(ctx: &ToolContext, base: &std::path::Path, name: &str) -> Result<Beneath, ToolError> {
    locate_as(ctx, TOOL, base, name)
}

fn locate_as(
    ctx: &ToolContext,
    tool: &'static str,
    base: &std::path::Path,
    name: &str,
) -> Result<Beneath, ToolError> {
    let joined = base.join(name);
    let inside = match (normalize(&joined), normalize(base)) {
        (Some(file), Some(base)) => file.starts_with(&base) && file != base,
        _ => false,
    };
    if !inside {
        return Err(fail_as(
            tool,
            format!(
                "`{name}` is not beneath `{}`, the directory the change applies in",
                base.display()
            ),
        ));
    }
    let at = Beneath::locate(ctx, tool, &joined.to_string_lossy())?;
    // The decision saw every target too; this holds even if it did not (an older daemon, a
    // symlink swapped since).
    at.refuse_protected(ctx).map_err(|e| match e {
        ToolError::Model { message } => ToolError::model(format!("{message}; nothing was changed")),
        fatal => fatal,
    })?;
    Ok(at)
}

/// A whole-file change another tool computed (the compliance autofix): the file beneath the
/// base directory, the bytes it must hold now (`None`: it must not exist), and the new bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replacement {
    pub path: PathBuf,
    pub expected: Option<Vec<u8>>,
    pub new: Vec<u8>,
}

/// Lands `replacements` beneath `base` as `apply_patch` lands a patch: every target located
/// under the fence (protected and secret paths refused) and found as expected before anything
/// is written, then written whole or not at all.
pub(crate) fn land_replacements(
    ctx: &ToolContext,
    tool: &'static str,
    base: &std::path::Path,
    replacements: &[Replacement],
) -> Result<(), ToolError> {
    let mut seen = std::collections::HashSet::new();
    let mut staged = Vec::new();
    for replacement in replacements {
        let name = replacement.path.to_string_lossy();
        let at = locate_as(ctx, tool, base, &name)?;
        if !seen.insert(at.abs.clone()) {
            return Err(fail_as(tool, format!("`{name}` is changed twice")));
        }
        if current(ctx, &HashMap::new(), &at)? != replacement.expected {
            return Err(fail_as(
                tool,
                format!(
                    "`{}` changed since it was read; read it again",
                    at.shown(ctx)
                ),
            ));
        }
        staged.push(Change {
            at,
            content: Some(replacement.new.clone()),
        });
    }
    commit(ctx, &staged)
}

fn stage(
    changes: &mut HashMap<PathBuf, Change>,
    order: &mut Vec<PathBuf>,
    at: Beneath,
    content: Option<Vec<u8>>,
) {
    let key = at.abs.clone();
    if !changes.contains_key(&key) {
        order.push(key.clone());
    }
    changes.insert(key, Change { at, content });
}

/// The content a path has at this point of the patch: staged, else on disk.
pub(crate) fn current(
    ctx: &ToolContext,
    changes: &HashMap<PathBuf, Change>,
    at: &Beneath,
) -> Result<Option<Vec<u8>>, ToolError> {
    if let Some(change) = changes.get(&at.abs) {
        return Ok(change.content.clone());
    }
    let Some(mut file) = open_existing(ctx, at)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| at.err(ctx, e))?;
    Ok(Some(bytes))
}

/// Applies the hunks in order; the file keeps its line endings and final newline.
pub(crate) fn apply_hunks(text: &str, hunks: &[Hunk]) -> Result<String, String> {
    let crlf = text.contains("\r\n");
    let mut final_newline = text.is_empty() || text.ends_with('\n');
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut cursor = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let number = index + 1;
        for anchor in &hunk.anchors {
            let found = (cursor..lines.len())
                .find(|&i| lines[i].trim() == anchor.trim())
                .ok_or_else(|| format!("hunk {number}: the anchor `@@ {anchor}` was not found"))?;
            cursor = found + 1;
        }
        let at = if hunk.old.is_empty() {
            // A pure insertion: where the header says, else after the anchors, else at the end.
            match hunk.hint {
                Some(line) => line.min(lines.len()),
                None if hunk.anchors.is_empty() => lines.len(),
                None => cursor,
            }
        } else {
            find_block(&lines, &hunk.old, cursor, hunk.hint, hunk.at_eof).ok_or_else(|| {
                format!(
                    "hunk {number} does not apply: its old lines were not found{}:\n{}",
                    if cursor > 0 {
                        " after the previous hunk"
                    } else {
                        ""
                    },
                    hunk.old
                        .iter()
                        .map(|l| format!("  {l}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                )
            })?
        };
        let end = at + hunk.old.len();
        // A unified hunk that reaches the end says whether the new file ends in a newline
        // (`\ No newline at end of file` after its new side); a V4A patch cannot, so the file
        // keeps what it had.
        if end == lines.len() && hunk.hint.is_some() {
            final_newline = !hunk.new_no_eol;
        }
        lines.splice(at..end, hunk.new.iter().cloned());
        cursor = at + hunk.new.len();
    }
    let ending = if crlf { "\r\n" } else { "\n" };
    let mut out = lines.join(ending);
    if final_newline && !lines.is_empty() {
        out.push_str(ending);
    }
    Ok(out)
}

/// How a file line may match a patch line.
type Fit = fn(&str, &str) -> bool;

/// Where `old` occurs at or after `from`: exactly first, then ignoring trailing and then
/// surrounding whitespace (models often get indentation slightly wrong). Nearest the hint wins.
fn find_block(
    lines: &[String],
    old: &[String],
    from: usize,
    hint: Option<usize>,
    at_eof: bool,
) -> Option<usize> {
    let fits: [Fit; 3] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
    ];
    let last = lines.len().checked_sub(old.len())?;
    for fit in fits {
        let starts = (from.min(last + 1)..=last).filter(|&s| {
            (!at_eof || s == last) && old.iter().zip(&lines[s..]).all(|(o, l)| fit(l, o))
        });
        let best = match hint {
            Some(h) => starts.min_by_key(|&s| s.abs_diff(h.saturating_sub(1))),
            None => starts.into_iter().next(),
        };
        if best.is_some() {
            return best;
        }
    }
    None
}

/// Writes every new content to a temporary file beside its target, then renames them all; a
/// failure before the renames removes the temporaries and leaves every target as it was. Each
/// file replaced or removed is first kept under a backup name (a hard link, or the file itself
/// moved aside), so a failure part-way through the renames puts back every file already
/// changed: the patch lands whole or not at all.
fn commit(ctx: &ToolContext, changes: &[Change]) -> Result<(), ToolError> {
    // `apply_patch`, the compliance autofix and remediation plans all land here: each file is
    // kept for undo before the first temporary is written (a rename replaces the name).
    for change in changes {
        super::checkpoint::before(ctx, &change.at, super::checkpoint::Target::Name)?;
    }
    let mut temps: Vec<(PathBuf, &Change)> = Vec::new();
    let cleanup = |temps: &[(PathBuf, &Change)]| {
        for (temp, change) in temps {
            let _ = change.at.dir.remove_file(temp);
        }
    };
    for (n, change) in changes.iter().enumerate() {
        let Some(content) = &change.content else {
            continue;
        };
        let at = &change.at;
        let temp = super::side_name(&at.rel, "patch", n);
        let written = (|| {
            if let Some(parent) = at.parent_rel() {
                ensure_dir(&at.dir, parent)?;
            }
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            let mut file = at.dir.open_with(&temp, &options)?;
            // The replacement keeps the permissions of the file it replaces (an executable stays one).
            if let Ok(meta) = at.dir.metadata(&at.rel) {
                file.set_permissions(meta.permissions())?;
            }
            file.write_all(content)
        })();
        if let Err(e) = written {
            cleanup(&temps);
            let _ = at.dir.remove_file(&temp);
            return Err(at.err(ctx, e));
        }
        temps.push((temp, change));
    }
    let mut done: Vec<Landed<'_>> = Vec::new();
    let mut failed = None;
    for (n, (temp, change)) in temps.iter().enumerate() {
        match land(change, n, Some(temp)) {
            Ok(landed) => done.push(landed),
            Err(e) => {
                failed = Some((&change.at, e));
                break;
            }
        }
    }
    if failed.is_none() {
        for (n, change) in changes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.content.is_none())
        {
            match land(change, temps.len() + n, None) {
                Ok(landed) => done.push(landed),
                Err(e) => {
                    failed = Some((&change.at, e));
                    break;
                }
            }
        }
    }
    match failed {
        None => {
            for landed in &done {
                if let Some(backup) = &landed.backup {
                    let _ = landed.at.dir.remove_file(backup);
                }
            }
            Ok(())
        }
        Some((at, e)) => {
            for landed in done.iter().rev() {
                let at = landed.at;
                let _ = match &landed.backup {
                    Some(backup) => at.dir.rename(backup, &at.dir, &at.rel),
                    None => at.dir.remove_file(&at.rel),
                };
            }
            cleanup(&temps);
            Err(ToolError::model(format!(
                "{}; every file the patch had changed was put back",
                at.err(ctx, e)
            )))
        }
    }
}

/// Puts one change in place — the new content from `temp`, or, without one, the file moved
/// aside — keeping what it replaces under a backup name.
fn land<'a>(change: &'a Change, n: usize, temp: Option<&PathBuf>) -> std::io::Result<Landed<'a>> {
    let at = &change.at;
    let exists = at.dir.symlink_metadata(&at.rel).is_ok();
    let backup = super::side_name(&at.rel, "orig", n);
    let Some(temp) = temp else {
        at.dir.rename(&at.rel, &at.dir, &backup)?;
        return Ok(Landed {
            at,
            backup: Some(backup),
        });
    };
    if exists {
        at.dir.hard_link(&at.rel, &at.dir, &backup)?;
    }
    if let Err(e) = at.dir.rename(temp, &at.dir, &at.rel) {
        if exists {
            let _ = at.dir.remove_file(&backup);
        }
        return Err(e);
    }
    Ok(Landed {
        at,
        backup: exists.then_some(backup),
    })
}

/// A file the patch changed, and where its old self waits until the patch has landed whole.
struct Landed<'a> {
    at: &'a Beneath,
    /// `None`: the file is new, and putting back means removing it.
    backup: Option<PathBuf>,
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "tests set up and inspect files directly"
)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_failing_part_way_puts_back_every_file_already_changed() {
        let temp = tempfile::tempdir().unwrap_or_else(|e| unreachable!("{e}"));
        let root = temp
            .path()
            .canonicalize()
            .unwrap_or_else(|e| unreachable!("{e}"));
        std::fs::write(root.join("a.txt"), "old a\n").unwrap_or_else(|e| unreachable!("{e}"));
        std::fs::create_dir_all(root.join("d/inside")).unwrap_or_else(|e| unreachable!("{e}"));
        let ctx = ToolContext {
            checkpoint: None,
            session_id: "s".into(),
            cwd: root.clone(),
            fence: crate::Fence::new([root.clone()]),
            workspace: root.clone(),
            read: Default::default(),
        };
        let change = |path: &str, content: &str| Change {
            at: Beneath::locate(&ctx, TOOL, path).unwrap_or_else(|e| unreachable!("{e}")),
            content: Some(content.as_bytes().to_vec()),
        };
        // A file cannot be renamed over a directory, so the second change fails after the
        // first has landed.
        let result = commit(&ctx, &[change("a.txt", "new a\n"), change("d", "x")]);
        let message = result.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("was put back"), "{message}");
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).unwrap_or_default(),
            "old a\n"
        );
        let mut left: Vec<String> = std::fs::read_dir(&root)
            .unwrap_or_else(|e| unreachable!("{e}"))
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["a.txt", "d"],
            "no temporary or backup is left behind"
        );
    }

    fn hunk(old: &[&str], new: &[&str]) -> Hunk {
        Hunk {
            old: old.iter().map(|s| (*s).to_owned()).collect(),
            new: new.iter().map(|s| (*s).to_owned()).collect(),
            ..Hunk::default()
        }
    }

    #[test]
    fn hunks_keep_endings_and_fail_whole() {
        assert_eq!(
            apply_hunks("a\r\nb\r\n", &[hunk(&["b"], &["c", "d"])]),
            Ok("a\r\nc\r\nd\r\n".to_owned())
        );
        assert_eq!(
            apply_hunks("a\nb", &[hunk(&["a"], &["x"])]),
            Ok("x\nb".to_owned())
        );
        assert!(apply_hunks("a\nb\n", &[hunk(&["a"], &["x"]), hunk(&["zzz"], &["y"])]).is_err());
    }
}
