//! Putting a sealed turn back: what each path is now beside what the turn left ([`survey`]),
//! what undoing would change, with its diff ([`restore`] with `dry_run`), and the restore
//! itself. Every operation goes through the root opened as a capability, relative to it, and
//! acts on names without following them: a symlink planted since is refused or replaced, never
//! written through.

use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, OpenOptions, Permissions};
use std::os::unix::fs::PermissionsExt as _;

use super::state::{self, Entry, Manifest, State};
use super::{CheckpointError, MANIFEST};
use crate::context::Fence;

/// A path now beside how the turn left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurveyedFile {
    pub path: PathBuf,
    /// [`State::fingerprint`] of what the turn left.
    pub left: String,
    /// The same of what is there now; `protected:`, `symlink-on-the-way:` or `unreadable:` when
    /// it cannot be compared (which never equals `left`).
    pub found: String,
}

/// Every path the turn changed, surveyed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Survey {
    pub files: Vec<SurveyedFile>,
}

impl Survey {
    /// The first path no longer as the turn left it.
    pub fn first_changed(&self) -> Option<&SurveyedFile> {
        self.files.iter().find(|f| f.left != f.found)
    }
}

/// What undoing does to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Its content (and mode) as before the turn.
    Restored,
    /// The turn removed or moved it away: it comes back.
    Recreated,
    /// The turn made it: it goes.
    Removed,
    /// A directory the turn made that holds something else now: left in place.
    Kept,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Restored => "restored",
            ChangeKind::Recreated => "recreated",
            ChangeKind::Removed => "removed",
            ChangeKind::Kept => "kept",
        }
    }
}

/// One path undone (or, in a dry run, to be undone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: PathBuf,
    pub kind: ChangeKind,
    /// The unified diff from now to after the undo (dry runs only).
    pub diff: String,
}

/// Reads the manifest of the turn stored at `store_path`.
pub fn load(store_path: &Path) -> Result<Manifest, CheckpointError> {
    let bad = |reason: String| CheckpointError::Manifest {
        path: store_path.join(MANIFEST),
        reason,
    };
    let store =
        crate::files::fence::system::exact_dir(store_path).map_err(|e| bad(e.to_string()))?;
    let text = store
        .read_to_string(MANIFEST)
        .map_err(|e| bad(e.to_string()))?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if manifest.schema > state::MANIFEST_SCHEMA {
        return Err(bad(format!(
            "written by a newer Codaris (schema {})",
            manifest.schema
        )));
    }
    Ok(manifest)
}

/// Records in the stored manifest that the turn was undone.
pub fn mark_undone(store_path: &Path) -> Result<(), CheckpointError> {
    let mut manifest = load(store_path)?;
    manifest.undone = true;
    let store = crate::files::fence::system::exact_dir(store_path).map_err(|source| {
        CheckpointError::Store {
            path: store_path.to_path_buf(),
            source,
        }
    })?;
    write_manifest(&store, store_path, &manifest)
}

/// Writes the manifest beside a temporary name, syncs it and renames it into place.
pub(super) fn write_manifest(
    store: &Dir,
    store_path: &Path,
    manifest: &Manifest,
) -> Result<(), CheckpointError> {
    let failed = |source| CheckpointError::Store {
        path: store_path.join(MANIFEST),
        source,
    };
    let json = serde_json::to_vec_pretty(manifest).map_err(|e| failed(io::Error::other(e)))?;
    let temp = format!("{MANIFEST}.tmp");
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    let mut file = store.open_with(&temp, &options).map_err(failed)?;
    // The copies reach the disk before the manifest that names them: one `syncfs` instead of
    // a sync per copy.
    rustix::fs::syncfs(&file).map_err(|e| failed(e.into()))?;
    file.write_all(&json).map_err(failed)?;
    file.sync_all().map_err(failed)?;
    store.rename(&temp, store, MANIFEST).map_err(failed)?;
    store.open(".").and_then(|d| d.sync_all()).map_err(failed)
}

/// Each path the turn changed, now beside as the turn left it. A path `fence` protects
/// (`.git`, Codaris's state but for the workspace), one reached through a directory that is a
/// symlink now, and one under a root that cannot be opened as it was never compare equal.
pub fn survey(manifest: &Manifest, fence: &Fence) -> Survey {
    let mut roots = Roots::default();
    let files = manifest
        .changed()
        .map(|entry| {
            let path = entry.path();
            let found = if fence.is_protected(&path) {
                format!("protected:{}", path.display())
            } else {
                match roots.get(&entry.root) {
                    Err(e) => format!("unreadable:{e}"),
                    Ok(dir) => match symlink_on_the_way(dir, &entry.rel) {
                        Some(link) => {
                            format!("symlink-on-the-way:{}", entry.root.join(link).display())
                        }
                        None => match state::state_at(dir, &entry.rel) {
                            Ok(found) => found.fingerprint(),
                            Err(e) => format!("unreadable:{e}"),
                        },
                    },
                }
            };
            SurveyedFile {
                path,
                left: entry.after.fingerprint(),
                found,
            }
        })
        .collect();
    Survey { files }
}

/// Undoes the turn of `manifest`, whose copies are in `store_path`; with `dry_run`, only says
/// what it would do, with each file's diff. The caller has checked the [`survey`].
pub fn restore(
    manifest: &Manifest,
    store_path: &Path,
    dry_run: bool,
) -> Result<Vec<Change>, CheckpointError> {
    let store = crate::files::fence::system::exact_dir(store_path).map_err(|source| {
        CheckpointError::Store {
            path: store_path.to_path_buf(),
            source,
        }
    })?;
    let mut roots = Roots::default();
    let mut changed: Vec<&Entry> = manifest.changed().collect();
    if dry_run {
        return changed
            .iter()
            .map(|entry| {
                let dir = roots
                    .get(&entry.root)
                    .map_err(|source| restore_error(entry, source))?;
                Ok(Change {
                    path: entry.path(),
                    kind: kind_of(entry),
                    diff: diff_of(dir, &store, entry)
                        .map_err(|source| restore_error(entry, source))?,
                })
            })
            .collect();
    }
    let mut kept = Vec::new();
    // Deepest first: what a directory holds goes before the directory.
    changed.sort_by_key(|e| std::cmp::Reverse(e.depth()));
    for entry in &changed {
        let dir = roots
            .get(&entry.root)
            .map_err(|source| restore_error(entry, source))?;
        if remove(dir, entry).map_err(|source| restore_error(entry, source))? == Removal::Kept {
            kept.push(entry.path());
        }
    }
    // Shallowest first: a directory comes back before what it held.
    changed.reverse();
    for (n, entry) in changed.iter().enumerate() {
        let dir = roots
            .get(&entry.root)
            .map_err(|source| restore_error(entry, source))?;
        put_back(dir, &store, entry, n).map_err(|source| restore_error(entry, source))?;
    }
    // One `syncfs` per root rather than a sync per file: a thousand syncs would cost seconds.
    for (root, dir) in &roots.open {
        dir.open(".")
            .and_then(|d| rustix::fs::syncfs(&d).map_err(io::Error::from))
            .map_err(|source| CheckpointError::Restore {
                path: root.clone(),
                source,
            })?;
    }
    // Exactly as before, or the undo says so.
    for entry in &changed {
        if kept.contains(&entry.path()) {
            continue;
        }
        let dir = roots
            .get(&entry.root)
            .map_err(|source| restore_error(entry, source))?;
        let now =
            state::state_at(dir, &entry.rel).map_err(|source| restore_error(entry, source))?;
        if now != entry.before {
            return Err(restore_error(
                entry,
                io::Error::other("it does not read back as it was before the turn"),
            ));
        }
    }
    let mut changes: Vec<Change> = changed
        .iter()
        .map(|entry| Change {
            path: entry.path(),
            kind: if kept.contains(&entry.path()) {
                ChangeKind::Kept
            } else {
                kind_of(entry)
            },
            diff: String::new(),
        })
        .collect();
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(changes)
}

fn restore_error(entry: &Entry, source: io::Error) -> CheckpointError {
    CheckpointError::Restore {
        path: entry.path(),
        source,
    }
}

fn kind_of(entry: &Entry) -> ChangeKind {
    match (&entry.before, &entry.after) {
        (State::Absent, _) => ChangeKind::Removed,
        (_, State::Absent) => ChangeKind::Recreated,
        _ => ChangeKind::Restored,
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Removal {
    Done,
    Kept,
}

/// Takes away what the turn left where it differs in kind from what was there before (a
/// file whose content changed is replaced whole later, by a rename).
fn remove(dir: &Dir, entry: &Entry) -> io::Result<Removal> {
    match (&entry.before, &entry.after) {
        (_, State::Absent)
        | (State::File { .. }, State::File { .. })
        | (State::Dir { .. }, State::Dir { .. }) => Ok(Removal::Done),
        (_, State::File { .. } | State::Symlink { .. }) => {
            dir.remove_file(&entry.rel).map(|()| Removal::Done)
        }
        (before, State::Dir { .. }) => match dir.remove_dir(&entry.rel) {
            Ok(()) => Ok(Removal::Done),
            // A directory the turn made that holds the person's files now stays.
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty && *before == State::Absent => {
                Ok(Removal::Kept)
            }
            Err(e) => Err(e),
        },
    }
}

/// Puts back what was there before the turn.
fn put_back(dir: &Dir, store: &Dir, entry: &Entry, n: usize) -> io::Result<()> {
    match &entry.before {
        State::Absent => Ok(()),
        State::Dir { mode } => {
            match dir.create_dir(&entry.rel) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
            dir.set_permissions(&entry.rel, permissions(*mode))
        }
        State::Symlink { target } => dir.symlink_contents(target, &entry.rel),
        State::File { mode, .. } => {
            let blob = entry
                .blob
                .as_deref()
                .ok_or_else(|| io::Error::other("the checkpoint holds no copy of it"))?;
            let mut copy = store.open(blob)?.into_std();
            let temp = crate::files::side_name(&entry.rel, "undo", n);
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            let written = (|| {
                let mut file = dir.open_with(&temp, &options)?.into_std();
                io::copy(&mut copy, &mut file)?;
                file.set_permissions(std::fs::Permissions::from_mode(*mode))?;
                // `rename` replaces the name itself: a symlink planted there is not followed.
                dir.rename(&temp, dir, &entry.rel)
            })();
            if written.is_err() {
                let _ = dir.remove_file(&temp);
            }
            written
        }
    }
}

fn permissions(mode: u32) -> Permissions {
    Permissions::from_std(std::fs::Permissions::from_mode(mode))
}

/// The first directory above `rel` that is a symlink now (the path was recorded with none).
fn symlink_on_the_way(dir: &Dir, rel: &Path) -> Option<PathBuf> {
    let mut ancestors: Vec<&Path> = rel
        .ancestors()
        .skip(1)
        .filter(|p| !p.as_os_str().is_empty())
        .collect();
    ancestors.reverse();
    for ancestor in ancestors {
        match dir.symlink_metadata(ancestor) {
            Ok(meta) if meta.is_symlink() => return Some(ancestor.to_path_buf()),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// The diff from what is at the path now to what undoing puts back.
fn diff_of(dir: &Dir, store: &Dir, entry: &Entry) -> io::Result<String> {
    let shown = entry.path().display().to_string();
    let now = content(dir, &entry.rel, &entry.after)?;
    let back = match (&entry.before, &entry.blob) {
        (State::File { .. }, Some(blob)) => {
            let mut bytes = Vec::new();
            store.open(blob)?.read_to_end(&mut bytes)?;
            Some(bytes)
        }
        _ => None,
    };
    let describe = |state: &State| match state {
        State::Absent => "nothing".to_owned(),
        State::File { mode, .. } => format!("a file (mode {mode:o})"),
        State::Dir { mode } => format!("a directory (mode {mode:o})"),
        State::Symlink { target } => format!("a symlink to `{}`", target.display()),
    };
    if now.is_none() && back.is_none() {
        return Ok(format!(
            "{shown}: {} becomes {}\n",
            describe(&entry.after),
            describe(&entry.before)
        ));
    }
    let mut text = crate::files::preview::unified(&shown, now.as_deref(), back.as_deref());
    if let (State::File { mode: was, .. }, State::File { mode: is, .. }) =
        (&entry.before, &entry.after)
        && was != is
    {
        text.push_str(&format!("{shown}: mode {is:o} becomes {was:o}\n"));
    }
    Ok(text)
}

/// The bytes of a regular file at `rel` (as the survey found it), `None` for anything else.
fn content(dir: &Dir, rel: &Path, state: &State) -> io::Result<Option<Vec<u8>>> {
    if !matches!(state, State::File { .. }) {
        return Ok(None);
    }
    let meta = dir.symlink_metadata(rel)?;
    let mut file = state::open_same(dir, rel, &meta)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// The roots of a manifest, each opened once and only where it really is.
#[derive(Debug, Default)]
struct Roots {
    open: Vec<(PathBuf, Dir)>,
}

impl Roots {
    fn get(&mut self, root: &Path) -> io::Result<&Dir> {
        let at = match self.open.iter().position(|(path, _)| path == root) {
            Some(at) => at,
            None => {
                let dir = crate::files::fence::system::exact_dir(root)?;
                self.open.push((root.to_path_buf(), dir));
                self.open.len() - 1
            }
        };
        Ok(&self.open[at].1)
    }
}
