//! `mkdir`, `rmdir`, `touch`, `rm`, `mv`: each acts on names relative to the root's
//! capability, so none of them follows a symlink out of the fence. Removing and renaming act on
//! the name itself (a symlink is removed or moved, never its target).

use std::os::unix::fs::MetadataExt;
use std::time::SystemTime;

use cap_std::fs::OpenOptions;
use serde_json::Value;

use super::checkpoint::{self, Target};
use super::fence::{Beneath, ensure_dir, opt_bool, str_arg};
use crate::context::ToolContext;
use crate::tool::{ToolError, ToolOutput};

/// A tree tool whose name, description and schema are its catalogue entry's.
macro_rules! file_tool {
    ($ty:ident, $entry:expr, $run:ident) => {
        file_tool!($ty, $entry, $run, |_cwd, _args| Vec::new());
    };
    ($ty:ident, $entry:expr, $run:ident, $implied:expr) => {
        #[derive(Debug, Default, Clone, Copy)]
        pub struct $ty;

        #[async_trait::async_trait]
        impl crate::tool::Tool for $ty {
            fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
                &$entry
            }
            fn implied_paths(
                &self,
                cwd: &std::path::Path,
                args: &Value,
                _read: &crate::context::ReadArgs,
            ) -> Vec<codaris_policy::Implied> {
                let implied: fn(&std::path::Path, &Value) -> Vec<codaris_policy::Implied> =
                    $implied;
                implied(cwd, args)
            }
            async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
                super::blocking($entry.name, ctx, args, $run).await
            }
        }
    };
}

/// The root itself is never removed, moved or recreated by these tools.
fn not_root(ctx: &ToolContext, at: &Beneath) -> Result<(), ToolError> {
    if at.is_root() {
        return Err(ToolError::model(format!(
            "{}: `{}` is an allowed root itself and cannot be changed by this tool",
            at.tool,
            at.shown(ctx)
        )));
    }
    Ok(())
}

file_tool!(Mkdir, codaris_catalogue::MKDIR, mkdir);

fn mkdir(ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
    let at = Beneath::locate_change(ctx, "mkdir", str_arg("mkdir", args, "path")?)?;
    checkpoint::before(ctx, &at, Target::Name)?;
    if opt_bool("mkdir", args, "parents")? {
        ensure_dir(&at.dir, &at.rel).map_err(|e| at.err(ctx, e))?;
    } else {
        not_root(ctx, &at)?;
        at.dir.create_dir(&at.rel).map_err(|e| at.err(ctx, e))?;
    }
    Ok(ToolOutput::text(format!(
        "created directory `{}`",
        at.shown(ctx)
    )))
}

file_tool!(Rmdir, codaris_catalogue::RMDIR, rmdir);

fn rmdir(ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
    let at = Beneath::locate_change(ctx, "rmdir", str_arg("rmdir", args, "path")?)?;
    not_root(ctx, &at)?;
    checkpoint::before(ctx, &at, Target::Name)?;
    at.dir.remove_dir(&at.rel).map_err(|e| at.err(ctx, e))?;
    Ok(ToolOutput::text(format!(
        "removed directory `{}`",
        at.shown(ctx)
    )))
}

file_tool!(Touch, codaris_catalogue::TOUCH, touch);

fn touch(ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
    let at = Beneath::locate_change(ctx, "touch", str_arg("touch", args, "path")?)?;
    // A file that exists keeps its content: only one `touch` creates is kept for undo (times
    // are not restored).
    if at.dir.metadata(&at.rel).is_err() {
        checkpoint::before(ctx, &at, Target::Content)?;
    }
    if opt_bool("touch", args, "create_parents")?
        && let Some(parent) = at.parent_rel()
    {
        ensure_dir(&at.dir, parent).map_err(|e| at.err(ctx, e))?;
    }
    let mut options = OpenOptions::new();
    options.write(true).create(true);
    // A directory cannot be opened for writing; refresh it through a read handle instead.
    let file = match at.dir.open_with(&at.rel, &options) {
        Ok(file) => file.into_std(),
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => at
            .dir
            .open(&at.rel)
            .map(cap_std::fs::File::into_std)
            .map_err(|e| at.err(ctx, e))?,
        Err(e) => return Err(at.err(ctx, e)),
    };
    // A file's times are shared by all its names; one outside the roots would change too.
    if file.metadata().is_ok_and(|m| m.is_file() && m.nlink() > 1) {
        return Err(ToolError::model(format!(
            "touch: `{}` has other hard links, which may be outside the allowed roots, so it is refused",
            at.shown(ctx)
        )));
    }
    file.set_modified(SystemTime::now())
        .map_err(|e| at.err(ctx, e))?;
    Ok(ToolOutput::text(format!("touched `{}`", at.shown(ctx))))
}

file_tool!(
    Rm,
    codaris_catalogue::RM,
    rm,
    crate::implied::removed_tree_of
);

fn rm(ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
    let at = Beneath::locate_change(ctx, "rm", str_arg("rm", args, "path")?)?;
    not_root(ctx, &at)?;
    let meta = at
        .dir
        .symlink_metadata(&at.rel)
        .map_err(|e| at.err(ctx, e))?;
    if meta.is_dir() {
        if !opt_bool("rm", args, "recursive")? {
            return Err(ToolError::model(format!(
                "rm: `{}` is a directory; set recursive to remove it with everything under it",
                at.shown(ctx)
            )));
        }
        // The decision scanned the tree too; a `.git` may have appeared since.
        let tree = at.dir.open_dir(&at.rel).map_err(|e| at.err(ctx, e))?;
        match super::nested_git::scan_dir(&tree, super::nested_git::MAX_SCANNED) {
            super::nested_git::GitScan::Clean => {}
            super::nested_git::GitScan::Found(git) => {
                return Err(ToolError::model(format!(
                    "rm: `{}` holds the `.git` directory `{}`, which no tool may change, so it was not removed; ask the user to remove it themselves",
                    at.shown(ctx),
                    at.abs.join(git).display()
                )));
            }
            super::nested_git::GitScan::TooLarge => {
                return Err(ToolError::model(format!(
                    "rm: `{}` holds more than {} entries, too many to check for a `.git` directory, so it was not removed; ask the user to remove it themselves",
                    at.shown(ctx),
                    super::nested_git::MAX_SCANNED
                )));
            }
        }
        checkpoint::before_tree(ctx, &at)?;
        at.dir.remove_dir_all(&at.rel).map_err(|e| at.err(ctx, e))?;
    } else {
        checkpoint::before(ctx, &at, Target::Name)?;
        at.dir.remove_file(&at.rel).map_err(|e| at.err(ctx, e))?;
    }
    Ok(ToolOutput::text(format!("removed `{}`", at.shown(ctx))))
}

file_tool!(Mv, codaris_catalogue::MV, mv);

fn mv(ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
    let src = Beneath::locate_change(ctx, "mv", str_arg("mv", args, "src")?)?;
    let mut dst = Beneath::locate_change(ctx, "mv", str_arg("mv", args, "dst")?)?;
    not_root(ctx, &src)?;
    src.dir
        .symlink_metadata(&src.rel)
        .map_err(|e| src.err(ctx, e))?;
    // Into an existing directory (not through a symlink): like mv, keep the source's name.
    if dst.dir.symlink_metadata(&dst.rel).is_ok_and(|m| m.is_dir())
        && let Some(name) = src.rel.file_name()
    {
        dst.rel = dst.rel.join(name);
        dst.abs = dst.abs.join(name);
    }
    not_root(ctx, &dst)?;
    dst.refuse_protected(ctx)?;
    checkpoint::before_move(ctx, &src, &dst)?;
    if let Some(parent) = dst.parent_rel() {
        ensure_dir(&dst.dir, parent).map_err(|e| dst.err(ctx, e))?;
    }
    src.dir
        .rename(&src.rel, &dst.dir, &dst.rel)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::CrossesDevices => ToolError::model(format!(
                "mv: `{}` and `{}` are on different file systems; copy and remove instead",
                src.shown(ctx),
                dst.shown(ctx)
            )),
            _ => dst.err(ctx, e),
        })?;
    Ok(ToolOutput::text(format!(
        "moved `{}` to `{}`",
        src.shown(ctx),
        dst.shown(ctx)
    )))
}
