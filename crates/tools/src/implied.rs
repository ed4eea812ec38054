//! The paths a call changes beyond its path arguments (the policy's `Task::implied`), owned by
//! the tools that change them: every file an `apply_patch` patch names (joined to its `path`,
//! default `cwd`), and the first `.git` inside a tree an `rm` with `recursive: true` would
//! remove. Found on disk and resolved through symlinks like the arguments, so the recorded
//! request replays to the same decision. `args` are as the model sent them; anything malformed
//! implies nothing (the policy or the tool refuses it).
//!
//! Read before the policy decides, so nothing here opens a file: a patch's names are taken from
//! the patch as read (`Tool::read_args`), a tree is walked by its names (`scan_for_git`,
//! bounded) and a path's kind read without following it.

use std::path::{Path, PathBuf};

use codaris_policy::{Implied, ImpliedBy};
use serde_json::Value;

use crate::context::resolve_existing;
use crate::files::{GitScan, ReadPatch, scan_for_git};

/// `path` (absolute, or relative to `cwd`) through every symlink that exists. NUL and empty
/// paths are the policy's to refuse (`bad_path`): handed over untouched.
fn resolved(cwd: &Path, path: &str) -> String {
    if path.is_empty() || path.contains('\0') {
        return path.to_owned();
    }
    resolve_existing(&cwd.join(path))
        .to_string_lossy()
        .into_owned()
}

fn text<'a>(args: &'a Value, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

/// `apply_patch`: every file its patch (as read when the call was prepared) names.
pub(crate) fn patch_targets_of(cwd: &Path, args: &Value, patch: &ReadPatch) -> Vec<Implied> {
    let base = resolved(cwd, text(args, "path").unwrap_or("."));
    patch
        .targets()
        .unwrap_or_default()
        .iter()
        .map(|name| Implied {
            path: resolved(Path::new(&base), name),
            by: ImpliedBy::PatchTarget,
            arg: None,
        })
        .collect()
}

/// `rm` with `recursive: true`: the first `.git` inside the tree, or the tree itself when it is
/// too large to check.
pub(crate) fn removed_tree_of(cwd: &Path, args: &Value) -> Vec<Implied> {
    if args.get("recursive") != Some(&Value::Bool(true)) {
        return Vec::new();
    }
    let Some(raw) = text(args, "path").filter(|p| !p.is_empty() && !p.contains('\0')) else {
        return Vec::new();
    };
    // `rm` removes a symlink itself, never what it points to: only a real directory takes a
    // tree with it.
    let is_dir = std::fs::symlink_metadata(cwd.join(raw)).is_ok_and(|m| m.is_dir());
    if !is_dir {
        return Vec::new();
    }
    let tree = PathBuf::from(resolved(cwd, raw));
    match scan_for_git(&tree) {
        GitScan::Clean => Vec::new(),
        GitScan::Found(git) => vec![Implied {
            path: tree.join(git).to_string_lossy().into_owned(),
            by: ImpliedBy::RemovedGit,
            arg: None,
        }],
        GitScan::TooLarge => vec![Implied {
            path: tree.to_string_lossy().into_owned(),
            by: ImpliedBy::RemovalUnchecked,
            arg: None,
        }],
    }
}
