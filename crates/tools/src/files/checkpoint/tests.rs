#![cfg(test)]
#![expect(
    clippy::disallowed_methods,
    reason = "the tests read the tree as a person would, to compare it byte for byte"
)]
//! A turn's checkpoint kept by the real tools and put back: the tree afterwards is the tree
//! before, byte for byte and mode for mode.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::{ChangeKind, Checkpoint, load, restore, survey};
use crate::context::{Fence, ToolContext};

struct Turn {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    store: PathBuf,
    ctx: ToolContext,
    checkpoint: Checkpoint,
}

fn turn() -> Turn {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("project");
    let state = base.join("state");
    let workspace = state.join("sessions/s1");
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&workspace).unwrap();
    let store = state.join("checkpoints/s1/0");
    let checkpoint = Checkpoint::new(store.clone(), "s1", 0);
    let ctx = ToolContext {
        checkpoint: Some(checkpoint.clone()),
        session_id: "s1".into(),
        cwd: root.clone(),
        fence: Fence::new([root.clone(), workspace.clone()]).with_state_dir(&state, &workspace),
        workspace,
        read: Default::default(),
    };
    Turn {
        _tmp: tmp,
        root,
        store,
        ctx,
        checkpoint,
    }
}

/// Every path beneath `root`: its kind, mode and content.
fn tree(root: &Path) -> BTreeMap<PathBuf, (String, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.insert(
                    rel,
                    (
                        "link".into(),
                        0,
                        target.into_os_string().into_encoded_bytes(),
                    ),
                );
            } else if meta.is_dir() {
                out.insert(rel, ("dir".into(), mode, Vec::new()));
                stack.push(path);
            } else {
                out.insert(rel, ("file".into(), mode, fs::read(&path).unwrap()));
            }
        }
    }
    out
}

async fn call(ctx: &ToolContext, tool: &str, args: serde_json::Value) {
    let tools = crate::files::file_tools();
    let tool = tools.iter().find(|t| t.name() == tool).unwrap();
    tool.call(ctx, &args).await.unwrap();
}

fn seed(root: &Path) {
    fs::create_dir_all(root.join("src/old")).unwrap();
    fs::write(root.join("src/main.nf"), "workflow {\n  FOO()\n}\n").unwrap();
    fs::write(root.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
    fs::write(root.join("src/old/a.txt"), "a\n").unwrap();
    fs::write(root.join("src/old/b.txt"), vec![0u8, 159, 146, 150]).unwrap();
    fs::write(root.join("notes.md"), "notes\n").unwrap();
    fs::write(root.join("gone.txt"), "to be removed\n").unwrap();
    std::os::unix::fs::symlink("notes.md", root.join("link")).unwrap();
}

/// What a turn of every kind of change does, through the real tools.
async fn change_everything(t: &Turn) {
    call(
        &t.ctx,
        "edit",
        json!({"path": "src/main.nf", "oldString": "FOO()", "newString": "BAR()"}),
    )
    .await;
    call(
        &t.ctx,
        "write",
        json!({"path": "run.sh", "content": "#!/bin/sh\nrm -rf /\n"}),
    )
    .await;
    call(
        &t.ctx,
        "write",
        json!({"path": "new/deep/file.txt", "content": "new\n"}),
    )
    .await;
    call(&t.ctx, "mv", json!({"src": "src/old", "dst": "moved/old"})).await;
    call(&t.ctx, "mv", json!({"src": "notes.md", "dst": "notes2.md"})).await;
    call(&t.ctx, "rm", json!({"path": "gone.txt"})).await;
    call(&t.ctx, "rm", json!({"path": "link"})).await;
    call(
        &t.ctx,
        "mkdir",
        json!({"path": "made/empty", "parents": true}),
    )
    .await;
    call(&t.ctx, "touch", json!({"path": "touched"})).await;
    // A patch that changes one file, adds one and deletes one (autofix and remediation plans
    // land the same way).
    let patch = "*** Begin Patch\n*** Update File: moved/old/a.txt\n-a\n+patched\n*** Add File: added.txt\n+added\n*** Delete File: notes2.md\n*** End Patch";
    call(&t.ctx, "apply_patch", json!({"patch": patch})).await;
    // A second change of the same file keeps the first copy.
    call(
        &t.ctx,
        "edit",
        json!({"path": "src/main.nf", "oldString": "BAR()", "newString": "BAZ()"}),
    )
    .await;
}

#[tokio::test]
async fn undo_puts_back_the_tree_byte_for_byte() {
    let t = turn();
    seed(&t.root);
    let before = tree(&t.root);
    change_everything(&t).await;
    assert_ne!(tree(&t.root), before);
    let sealed = t.checkpoint.seal().unwrap().unwrap();
    let manifest = load(&t.store).unwrap();
    assert_eq!(manifest, sealed);
    assert!(survey(&manifest, &t.ctx.fence).first_changed().is_none());

    let dry = restore(&manifest, &t.store, true).unwrap();
    let edit = dry
        .iter()
        .find(|c| c.path.ends_with("src/main.nf"))
        .unwrap();
    assert!(
        edit.diff.contains("-  BAZ()") && edit.diff.contains("+  FOO()"),
        "{}",
        edit.diff
    );
    assert_ne!(tree(&t.root), before, "a dry run changes nothing");

    let changes = restore(&manifest, &t.store, false).unwrap();
    assert_eq!(tree(&t.root), before);
    let kind = |p: &str| changes.iter().find(|c| c.path.ends_with(p)).map(|c| c.kind);
    assert_eq!(kind("gone.txt"), Some(ChangeKind::Recreated));
    assert_eq!(kind("new/deep/file.txt"), Some(ChangeKind::Removed));
    assert_eq!(kind("src/main.nf"), Some(ChangeKind::Restored));
}

#[tokio::test]
async fn a_file_changed_since_the_turn_is_named() {
    let t = turn();
    seed(&t.root);
    change_everything(&t).await;
    let manifest = t.checkpoint.seal().unwrap().unwrap();
    fs::write(t.root.join("src/main.nf"), "mine now\n").unwrap();
    let survey = survey(&manifest, &t.ctx.fence);
    let changed = survey.first_changed().unwrap();
    assert_eq!(changed.path, t.root.join("src/main.nf"));
}

#[tokio::test]
async fn a_directory_turned_symlink_since_is_refused_not_followed() {
    let t = turn();
    seed(&t.root);
    call(
        &t.ctx,
        "write",
        json!({"path": "new/deep/file.txt", "content": "new\n"}),
    )
    .await;
    let manifest = t.checkpoint.seal().unwrap().unwrap();
    // The person (or a command) swaps the directory for a link to somewhere else.
    fs::remove_dir_all(t.root.join("new/deep")).unwrap();
    fs::create_dir_all(t.root.join("elsewhere")).unwrap();
    fs::write(t.root.join("elsewhere/file.txt"), "new\n").unwrap();
    std::os::unix::fs::symlink("../elsewhere", t.root.join("new/deep")).unwrap();
    let changed = survey(&manifest, &t.ctx.fence)
        .first_changed()
        .cloned()
        .unwrap();
    assert!(
        changed.found.starts_with("symlink-on-the-way:") || changed.found.starts_with("symlink:"),
        "{changed:?}"
    );
}

#[tokio::test]
async fn a_file_the_person_added_keeps_the_directory_the_turn_made() {
    let t = turn();
    call(
        &t.ctx,
        "write",
        json!({"path": "made/file.txt", "content": "x\n"}),
    )
    .await;
    let manifest = t.checkpoint.seal().unwrap().unwrap();
    fs::write(t.root.join("made/mine.txt"), "mine\n").unwrap();
    assert!(survey(&manifest, &t.ctx.fence).first_changed().is_none());
    let changes = restore(&manifest, &t.store, false).unwrap();
    assert!(!t.root.join("made/file.txt").exists());
    assert_eq!(
        fs::read_to_string(t.root.join("made/mine.txt")).unwrap(),
        "mine\n"
    );
    let made = changes.iter().find(|c| c.path.ends_with("made")).unwrap();
    assert_eq!(made.kind, ChangeKind::Kept);
}

#[tokio::test]
async fn copies_live_in_the_store_under_counter_names() {
    let t = turn();
    seed(&t.root);
    call(
        &t.ctx,
        "write",
        json!({"path": "src/../run.sh", "content": "x"}),
    )
    .await;
    let manifest = t.checkpoint.seal().unwrap().unwrap();
    let names: Vec<String> = fs::read_dir(&t.store)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n == "manifest.json" || n.starts_with('b')),
        "{names:?}"
    );
    assert_eq!(manifest.entries[0].rel, PathBuf::from("run.sh"));
    assert!(!t.store.starts_with(&t.root));
}

#[tokio::test]
async fn a_path_inside_git_or_the_state_directory_is_never_put_back() {
    let t = turn();
    seed(&t.root);
    call(&t.ctx, "write", json!({"path": "x.txt", "content": "x"})).await;
    let mut manifest = t.checkpoint.seal().unwrap().unwrap();
    // A manifest that names a path no tool may change (as a forged or stale one might).
    for (n, rel) in [".git/hooks/pre-commit", "../state/codaris.sock"]
        .iter()
        .enumerate()
    {
        let mut entry = manifest.entries[0].clone();
        entry.rel = PathBuf::from(rel);
        manifest.entries.insert(n, entry);
    }
    let found: Vec<String> = survey(&manifest, &t.ctx.fence)
        .files
        .into_iter()
        .map(|f| f.found)
        .collect();
    assert!(found[0].starts_with("protected:"), "{found:?}");
    assert!(found[1].starts_with("protected:"), "{found:?}");
}

/// The inode number of `path` (not following a symlink).
fn ino(path: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&fs::symlink_metadata(path).unwrap())
}

/// The inode numbers of the turn's copies in its store.
fn blobs(store: &Path) -> Vec<u64> {
    fs::read_dir(store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('b'))
        .map(|p| ino(&p))
        .collect()
}

/// A file `write` or `edit` rewrites whole is kept without copying a byte: the file itself
/// becomes the turn's copy (a hard link in the store) and a new file takes its name, with its
/// mode; a symlink written through stays a symlink. Undo still puts back every byte.
#[tokio::test]
async fn a_rewritten_file_is_kept_by_its_own_inode_and_replaced_by_a_new_one() {
    let t = turn();
    seed(&t.root);
    let before = tree(&t.root);
    let script = ino(&t.root.join("run.sh"));
    let notes = ino(&t.root.join("notes.md"));
    call(
        &t.ctx,
        "write",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho bye\n"}),
    )
    .await;
    // Through the symlink `link` → notes.md: the file it leads to is the one kept.
    call(
        &t.ctx,
        "edit",
        json!({"path": "link", "oldString": "notes", "newString": "changed"}),
    )
    .await;
    let kept = blobs(&t.store);
    assert!(kept.contains(&script), "run.sh was copied, not linked");
    assert!(kept.contains(&notes), "notes.md was copied, not linked");
    assert_ne!(ino(&t.root.join("run.sh")), script);
    let meta = fs::metadata(t.root.join("run.sh")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o750, "mode kept");
    assert_eq!(std::os::unix::fs::MetadataExt::nlink(&meta), 1);
    assert!(
        fs::symlink_metadata(t.root.join("link"))
            .unwrap()
            .is_symlink()
    );
    assert_eq!(
        fs::read_to_string(t.root.join("notes.md")).unwrap(),
        "changed\n"
    );
    // No temporary file is left beside them.
    let names: Vec<String> = fs::read_dir(&t.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains(".codaris-")), "{names:?}");

    let manifest = t.checkpoint.seal().unwrap().unwrap();
    assert!(survey(&manifest, &t.ctx.fence).first_changed().is_none());
    restore(&manifest, &t.store, false).unwrap();
    assert_eq!(tree(&t.root), before);
}

/// A file a new file could not stand in for unnoticed — another group's, or one with
/// extended attributes — is copied and written in place, as before.
#[tokio::test]
async fn a_file_a_new_one_would_not_match_is_copied_and_written_in_place() {
    let t = turn();
    seed(&t.root);
    let path = t.root.join("notes.md");
    let other_group = rustix::process::geteuid().is_root()
        && std::os::unix::fs::chown(&path, None, Some(1)).is_ok();
    let attribute = rustix::fs::setxattr(
        &path,
        "user.codaris-test",
        b"1",
        rustix::fs::XattrFlags::empty(),
    )
    .is_ok();
    assert!(
        other_group || attribute,
        "this test needs root (to chown) or a file system with user attributes"
    );
    let was = ino(&path);
    call(
        &t.ctx,
        "write",
        json!({"path": "notes.md", "content": "rewritten\n"}),
    )
    .await;
    assert_eq!(ino(&path), was, "written in place");
    assert!(!blobs(&t.store).contains(&was), "copied, not linked");
    let manifest = t.checkpoint.seal().unwrap().unwrap();
    restore(&manifest, &t.store, false).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "notes\n");
}

/// When the new file cannot be made after the link (`detach`), the copy gets data of its
/// own before the file is written into: the turn's copy still holds the old bytes.
#[test]
fn a_detached_copy_survives_a_write_into_the_file() {
    let t = turn();
    seed(&t.root);
    let dir = cap_std::fs::Dir::open_ambient_dir(&t.root, cap_std::ambient_authority()).unwrap();
    let file = dir.open("notes.md").unwrap();
    let kept = t
        .checkpoint
        .record_linking(
            &dir,
            &t.root,
            Path::new("notes.md"),
            false,
            &[],
            Some(&file),
        )
        .unwrap();
    assert!(matches!(kept, super::Kept::Linked { .. }), "{kept:?}");
    t.checkpoint.detach(&t.root, Path::new("notes.md")).unwrap();
    fs::write(t.root.join("notes.md"), "overwritten in place\n").unwrap();
    let manifest = t.checkpoint.seal().unwrap().unwrap();
    restore(&manifest, &t.store, false).unwrap();
    assert_eq!(
        fs::read_to_string(t.root.join("notes.md")).unwrap(),
        "notes\n"
    );
}

/// The new file a linked rewrite writes first is made beside the target with `create_new`:
/// a symlink planted at its name (the project can make one with a command) is neither
/// followed nor renamed into place — not to a file outside the root (the root's handle
/// refuses that anyway) nor to another file of the project; the write goes into the file in
/// place instead, and the turn's copy still holds the old bytes.
#[tokio::test]
async fn a_symlink_planted_at_the_temporary_name_is_not_written_through() {
    let t = turn();
    seed(&t.root);
    let script = fs::read(t.root.join("run.sh")).unwrap();
    // Every name the next write could pick in this process, each leading to `run.sh`.
    for n in 0..10_000 {
        let name = format!(".notes.md.codaris-write-{}-{n}", std::process::id());
        std::os::unix::fs::symlink("run.sh", t.root.join(name)).unwrap();
    }
    call(
        &t.ctx,
        "write",
        json!({"path": "notes.md", "content": "rewritten\n"}),
    )
    .await;
    assert_eq!(fs::read(t.root.join("run.sh")).unwrap(), script);
    let notes = t.root.join("notes.md");
    assert!(fs::symlink_metadata(&notes).unwrap().is_file());
    assert_eq!(fs::read_to_string(&notes).unwrap(), "rewritten\n");
    let manifest = t.checkpoint.seal().unwrap().unwrap();
    restore(&manifest, &t.store, false).unwrap();
    assert_eq!(fs::read_to_string(&notes).unwrap(), "notes\n");
}
