//! `edit` and `write`. An existing file is opened once, beneath its root, and read through
//! that handle. It is rewritten through the same handle — a name swapped for a symlink or a
//! hard link after the open does not redirect the write — unless the turn's checkpoint kept
//! the file by linking it (its first change in a turn, see `checkpoint::before_rewrite`): then
//! a new file takes its name by a rename beneath the root, which replaces whatever the name
//! is then and follows no symlink.

use std::io::{Read, Seek, SeekFrom, Write};

use cap_std::fs::{File, OpenOptions};
use serde_json::Value;

use super::checkpoint::{self, Kept, Target};
use super::fence::{Beneath, ensure_dir, opt_bool, refuse_hard_links, str_arg};
use crate::context::ToolContext;
use crate::tool::{ToolError, ToolOutput};

/// Opens an existing regular file for reading and writing, refusing one with other hard links.
/// `Ok(None)` when it does not exist.
pub(crate) fn open_existing(ctx: &ToolContext, at: &Beneath) -> Result<Option<File>, ToolError> {
    let mut options = OpenOptions::new();
    options.read(true).write(true);
    let file = match at.dir.open_with(&at.rel, &options) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(at.err(ctx, e)),
    };
    let meta = file.metadata().map_err(|e| at.err(ctx, e))?;
    if !meta.is_file() {
        return Err(ToolError::model(format!(
            "{}: `{}` is not a regular file",
            at.tool,
            at.shown(ctx)
        )));
    }
    refuse_hard_links(ctx, at, &file)?;
    Ok(Some(file))
}

/// Replaces the whole content of an open file, kept for undo as `kept` says: a file the
/// checkpoint linked (its inode is the turn's copy now) is replaced by a new file of the same
/// name and mode, which costs no copy of the old content; any other is written in place.
pub(crate) fn rewrite(
    ctx: &ToolContext,
    at: &Beneath,
    file: &mut File,
    bytes: &[u8],
    kept: Kept,
) -> Result<(), ToolError> {
    if let Kept::Linked { rel, mode } = kept {
        if replace(at, &rel, mode, bytes).is_ok() {
            return Ok(());
        }
        // The directory refused a new file (not writable, full): the old file must be
        // written into after all, so the turn's copy gets data of its own first.
        checkpoint::detach(ctx, at, &rel)?;
    }
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.set_len(0))
        .and_then(|()| file.write_all(bytes))
        .and_then(|()| file.flush())
        .map_err(|e| at.err(ctx, e))
}

/// Puts `bytes` at `rel` beneath `at`'s root as a new file of mode `mode`: written beside it
/// under a temporary name, then renamed over it (`rename` replaces the name itself, so a
/// symlink planted there meanwhile is not followed). Nothing changes at `rel` on an error.
fn replace(at: &Beneath, rel: &std::path::Path, mode: u32, bytes: &[u8]) -> std::io::Result<()> {
    use cap_std::fs::{OpenOptionsExt as _, Permissions};
    use std::os::unix::fs::PermissionsExt as _;
    // Two calls in flight on one file get two names.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = super::side_name(rel, "write", n);
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).mode(0o600);
    let written = (|| {
        let mut file = at.dir.open_with(&temp, &options)?;
        file.write_all(bytes)?;
        // Set after the write, whatever the umask: the file's own mode, setgid and all.
        file.set_permissions(Permissions::from_std(std::fs::Permissions::from_mode(mode)))?;
        at.dir.rename(&temp, &at.dir, rel)
    })();
    if written.is_err() {
        let _ = at.dir.remove_file(&temp);
    }
    written
}

#[derive(Debug, Default, Clone, Copy)]
pub struct WriteFile;

#[async_trait::async_trait]
impl crate::tool::Tool for WriteFile {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::WRITE
    }

    fn preview(&self, ctx: &ToolContext, args: &Value) -> Option<crate::preview::CallPreview> {
        crate::preview::file_change(ctx, self.id(), args)
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        super::blocking("write", ctx, args, write).await
    }
}

fn write(ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
    let (at, content) = locate_write(ctx, args)?;
    let verb = match open_existing(ctx, &at)? {
        Some(mut file) => {
            let kept = checkpoint::before_rewrite(ctx, &at, &file)?;
            rewrite(ctx, &at, &mut file, content.as_bytes(), kept)?;
            "overwrote"
        }
        None => {
            // Kept as absent, with each directory above it the write will make.
            checkpoint::before(ctx, &at, Target::Content)?;
            if let Some(parent) = at.parent_rel() {
                ensure_dir(&at.dir, parent).map_err(|e| at.err(ctx, e))?;
            }
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            let mut file = at
                .dir
                .open_with(&at.rel, &options)
                .map_err(|e| at.err(ctx, e))?;
            file.write_all(content.as_bytes())
                .map_err(|e| at.err(ctx, e))?;
            "created"
        }
    };
    Ok(ToolOutput::text(format!(
        "{verb} `{}` ({} bytes, {} lines)",
        at.shown(ctx),
        content.len(),
        content.lines().count()
    )))
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Edit;

#[async_trait::async_trait]
impl crate::tool::Tool for Edit {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::EDIT
    }

    fn preview(&self, ctx: &ToolContext, args: &Value) -> Option<crate::preview::CallPreview> {
        crate::preview::file_change(ctx, self.id(), args)
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        super::blocking("edit", ctx, args, edit).await
    }
}

fn edit(ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
    let mut planned = plan_edit(ctx, args)?;
    let kept = checkpoint::before_rewrite(ctx, &planned.at, &planned.file)?;
    rewrite(
        ctx,
        &planned.at,
        &mut planned.file,
        planned.after.as_bytes(),
        kept,
    )?;
    Ok(ToolOutput::text(format!(
        "edited `{}`: {} replacement{}",
        planned.at.shown(ctx),
        planned.count,
        if planned.count == 1 { "" } else { "s" }
    )))
}

/// The file a `write` call names, located beneath its root (not a protected path, not a
/// root itself), and the content it gives.
fn locate_write<'a>(ctx: &ToolContext, args: &'a Value) -> Result<(Beneath, &'a str), ToolError> {
    const TOOL: &str = "write";
    let path = str_arg(TOOL, args, "path")?;
    let content = str_arg(TOOL, args, "content")?;
    let at = Beneath::locate_change(ctx, TOOL, path)?;
    if at.is_root() {
        return Err(ToolError::model(format!(
            "{TOOL}: `{}` is a directory",
            at.shown(ctx)
        )));
    }
    Ok((at, content))
}

/// An edit worked out and not yet written: the file open beneath its root, its text now and
/// the text the edit leaves.
pub(crate) struct PlannedEdit {
    pub(crate) at: Beneath,
    file: File,
    pub(crate) before: String,
    pub(crate) after: String,
    count: usize,
}

/// Everything `edit` checks and computes before it writes; a card's preview shows the same
/// result the call would write.
pub(crate) fn plan_edit(ctx: &ToolContext, args: &Value) -> Result<PlannedEdit, ToolError> {
    const TOOL: &str = "edit";
    let path = str_arg(TOOL, args, "path")?;
    let old = str_arg(TOOL, args, "oldString")?;
    let new = str_arg(TOOL, args, "newString")?;
    let all = opt_bool(TOOL, args, "replaceAll")?;
    if old.is_empty() {
        return Err(ToolError::model(format!(
            "{TOOL}: `oldString` is empty; use write to create a file"
        )));
    }
    if old == new {
        return Err(ToolError::model(format!(
            "{TOOL}: `oldString` and `newString` are the same; nothing to change"
        )));
    }
    let at = Beneath::locate_change(ctx, TOOL, path)?;
    let Some(mut file) = open_existing(ctx, &at)? else {
        return Err(ToolError::model(format!(
            "{TOOL}: `{}` does not exist; use write to create it",
            at.shown(ctx)
        )));
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| at.err(ctx, e))?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(ToolError::model(format!(
            "{TOOL}: `{}` is not UTF-8 text; edit changes UTF-8 files only (write can replace it whole)",
            at.shown(ctx)
        )));
    };
    let (old, new) = endings_of(&text, old, new);
    let count = text.matches(old.as_str()).count();
    if count == 0 {
        return Err(ToolError::model(format!(
            "{TOOL}: `oldString` was not found in `{}`; it must match exactly, whitespace and indentation included (read the file again)",
            at.shown(ctx)
        )));
    }
    if count > 1 && !all {
        return Err(ToolError::model(format!(
            "{TOOL}: `oldString` matches {count} places in `{}`; add surrounding lines to make it unique, or set replaceAll",
            at.shown(ctx)
        )));
    }
    let after = if all {
        text.replace(old.as_str(), &new)
    } else {
        text.replacen(old.as_str(), &new, 1)
    };
    Ok(PlannedEdit {
        at,
        file,
        before: text,
        after,
        count,
    })
}

/// What `write` would leave: the file located beneath its root, the text it holds now (`None`:
/// it does not exist yet) and the new content. Reads only; nothing is created.
pub(crate) fn plan_write(
    ctx: &ToolContext,
    args: &Value,
) -> Result<(Beneath, Option<Vec<u8>>, String), ToolError> {
    let (at, content) = locate_write(ctx, args)?;
    let before = match open_existing(ctx, &at)? {
        Some(mut file) => {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).map_err(|e| at.err(ctx, e))?;
            Some(bytes)
        }
        None => None,
    };
    Ok((at, before, content.to_owned()))
}

/// The model writes `\n`; in a CRLF file its text would never match, and its replacement
/// would mix endings. When the text as given does not occur but its CRLF form does, both
/// strings take the file's CRLF endings.
fn endings_of(text: &str, old: &str, new: &str) -> (String, String) {
    let crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
    if old.contains('\n') && !old.contains('\r') && !text.contains(old) && text.contains("\r\n") {
        let converted = crlf(old);
        if text.contains(&converted) {
            return (converted, crlf(new));
        }
    }
    if !old.contains('\n') && new.contains('\n') && !new.contains('\r') && text.contains("\r\n") {
        // A one-line match in a CRLF file: the new lines it adds end the way the others do.
        return (old.to_owned(), crlf(new));
    }
    (old.to_owned(), new.to_owned())
}

#[cfg(test)]
mod tests {
    use super::endings_of;

    #[test]
    fn crlf_files_keep_crlf() {
        let text = "a\r\nb\r\nc\r\n";
        assert_eq!(
            endings_of(text, "a\nb", "x\ny"),
            ("a\r\nb".to_owned(), "x\r\ny".to_owned())
        );
        assert_eq!(
            endings_of(text, "b", "1\n2"),
            ("b".to_owned(), "1\r\n2".to_owned())
        );
        assert_eq!(
            endings_of("a\nb\n", "a\nb", "x\ny"),
            ("a\nb".to_owned(), "x\ny".to_owned())
        );
    }
}
