//! Checkpoints: what a turn's file tools changed, kept so that the turn can be undone.
//!
//! Every tool that writes a file calls [`before`] (or [`before_tree`], [`before_move`]) with
//! the path it is about to change; the first call for a path in a turn records its state, and
//! a regular file's content is copied into the turn's store under the daemon's state
//! directory (`checkpoints/<session>/<turn>/`, never inside the project, and secret to every
//! tool and hidden from every command). The copy's name is a counter, never derived from the
//! path. When the turn ends the daemon calls [`Checkpoint::seal`], which reads how the turn
//! left each path and writes the manifest; [`restore`] puts a sealed turn back.
//!
//! A path is recorded where it really is beneath its root (its directories' symlinks resolved),
//! so a restore goes to the same place and refuses when a directory on the way has become a
//! symlink since.

mod restore;
mod state;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use cap_std::fs::{Dir, MetadataExt as _};

pub use restore::{Change, ChangeKind, Survey, SurveyedFile, load, mark_undone, restore, survey};
pub use state::{Entry, MANIFEST_SCHEMA, Manifest, State};

use super::fence::Beneath;
use crate::context::ToolContext;
use crate::tool::ToolError;

/// The manifest's name in a turn's store.
pub const MANIFEST: &str = "manifest.json";

/// The most entries one tree change (`rm` of a directory, `mv` of one) may snapshot.
pub const MAX_TREE: usize = 20_000;

/// What went wrong keeping or restoring a checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("could not keep a copy of `{path}` for undo: {source}")]
    Snapshot {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("could not write the checkpoint in `{path}`: {source}")]
    Store {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the checkpoint `{path}` cannot be read: {reason}")]
    Manifest { path: PathBuf, reason: String },
    #[error("could not restore `{path}`: {source}")]
    Restore {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Which name a tool changes: the file its path leads to (`edit`, `write` rewrite the target of
/// a symlink), or the name itself (`rm`, `mv`, `mkdir`, `apply_patch`'s rename).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Content,
    Name,
}

/// One turn's checkpoint while the turn runs; cloned into each tool call's context.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    inner: Arc<Mutex<Recorder>>,
}

#[derive(Debug)]
struct Recorder {
    /// The turn's store: `<state>/checkpoints/<session>/<turn>`.
    store_path: PathBuf,
    session_id: String,
    turn: u32,
    /// Opened (and made) at the first copy.
    store: Option<Dir>,
    /// Each root written beneath, open, to read the turn's end state through.
    roots: HashMap<PathBuf, Dir>,
    entries: Vec<Entry>,
    seen: HashSet<(PathBuf, PathBuf)>,
    commands: Vec<String>,
    blobs: u64,
}

impl Checkpoint {
    /// A checkpoint for `turn` (from 0) of `session_id`, kept in `store` (made when first
    /// needed).
    pub fn new(store: PathBuf, session_id: impl Into<String>, turn: u32) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Recorder {
                store_path: store,
                session_id: session_id.into(),
                turn,
                store: None,
                roots: HashMap::new(),
                entries: Vec::new(),
                seen: HashSet::new(),
                commands: Vec::new(),
                blobs: 0,
            })),
        }
    }

    fn recorder(&self) -> std::sync::MutexGuard<'_, Recorder> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes that the turn ran something whose own writes are not undone (a command, a
    /// pipeline run), as the person should read it.
    pub fn note_command(&self, what: impl Into<String>) {
        let what = what.into();
        let mut recorder = self.recorder();
        if !recorder.commands.contains(&what) {
            recorder.commands.push(what);
        }
    }

    /// Ends the turn's checkpoint: reads how the turn left each path, syncs the copies and
    /// writes the manifest durably. `None` when the turn changed nothing and ran nothing.
    pub fn seal(&self) -> Result<Option<Manifest>, CheckpointError> {
        let mut recorder = self.recorder();
        if recorder.entries.is_empty() && recorder.commands.is_empty() {
            return Ok(None);
        }
        let store = recorder
            .store()?
            .try_clone()
            .map_err(|source| CheckpointError::Store {
                path: recorder.store_path.clone(),
                source,
            })?;
        let Recorder { roots, entries, .. } = &mut *recorder;
        for entry in entries.iter_mut() {
            let dir = roots.get(&entry.root);
            entry.after = match dir {
                Some(dir) => state::state_at(dir, &entry.rel),
                None => Err(io::Error::from(io::ErrorKind::NotFound)),
            }
            .map_err(|source| CheckpointError::Snapshot {
                path: entry.path(),
                source,
            })?;
            if let (Some(blob), State::File { sha256, size, .. }) = (&entry.blob, &mut entry.before)
            {
                let mut copy =
                    store
                        .open(blob)
                        .map(cap_std::fs::File::into_std)
                        .map_err(|source| CheckpointError::Snapshot {
                            path: entry.root.join(&entry.rel),
                            source,
                        })?;
                (*sha256, *size) =
                    state::sha256_of(&mut copy).map_err(|source| CheckpointError::Snapshot {
                        path: entry.root.join(&entry.rel),
                        source,
                    })?;
            }
        }
        let manifest = Manifest {
            schema: MANIFEST_SCHEMA,
            session_id: recorder.session_id.clone(),
            turn: recorder.turn,
            entries: recorder.entries.clone(),
            commands: recorder.commands.clone(),
            undone: false,
        };
        restore::write_manifest(&store, &recorder.store_path, &manifest)?;
        Ok(Some(manifest))
    }

    /// Records `rel` beneath `root` (and each directory above it the change will make), once
    /// per turn; with `tree`, everything beneath it too. `also_absent` are paths the change
    /// will create that do not exist now (where `mv` puts what a directory holds).
    fn record(
        &self,
        dir: &Dir,
        root: &Path,
        rel: &Path,
        tree: bool,
        also_absent: &[PathBuf],
    ) -> Result<(), CheckpointError> {
        self.record_linking(dir, root, rel, tree, also_absent, None)
            .map(|_| ())
    }

    /// [`Checkpoint::record`]; with `link` (the open file the caller will replace whole),
    /// `rel` may be kept by hard-linking that very file into the store instead of copying it,
    /// which the answer says.
    fn record_linking(
        &self,
        dir: &Dir,
        root: &Path,
        rel: &Path,
        tree: bool,
        also_absent: &[PathBuf],
        link: Option<&cap_std::fs::File>,
    ) -> Result<Kept, CheckpointError> {
        let mut recorder = self.recorder();
        if !recorder.roots.contains_key(root) {
            let opened = dir
                .try_clone()
                .map_err(|source| CheckpointError::Snapshot {
                    path: root.to_path_buf(),
                    source,
                })?;
            recorder.roots.insert(root.to_path_buf(), opened);
        }
        // The directories above it that do not exist yet: the change may make them.
        let ancestors: Vec<&Path> = rel
            .ancestors()
            .skip(1)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        for ancestor in ancestors.into_iter().rev() {
            recorder.absent_if_missing(dir, root, ancestor)?;
        }
        let kept = recorder.one(dir, root, rel, link)?;
        if tree {
            let mut walked = Vec::new();
            walk(dir, rel, &mut walked).map_err(|source| CheckpointError::Snapshot {
                path: root.join(rel),
                source,
            })?;
            for below in walked {
                recorder.one(dir, root, &below, None)?;
            }
        }
        for path in also_absent {
            recorder.absent_if_missing(dir, root, path)?;
        }
        Ok(kept)
    }

    /// Makes the store's copy of `rel` its own file again (a copy of the linked one), for a
    /// caller that was told [`Kept::Linked`] but must write into the file after all.
    fn detach(&self, root: &Path, rel: &Path) -> Result<(), CheckpointError> {
        let mut recorder = self.recorder();
        let Some(blob) = recorder
            .entries
            .iter()
            .find(|e| e.root == root && e.rel == rel)
            .and_then(|e| e.blob.clone())
        else {
            return Ok(());
        };
        let failed = |source| CheckpointError::Store {
            path: root.join(rel),
            source,
        };
        let store = recorder.store()?;
        let temp = format!("{blob}.detached");
        let mut linked = store.open(&blob).map_err(failed)?.into_std();
        copy_into(store, &temp, &mut linked).map_err(failed)?;
        store.rename(&temp, store, &blob).map_err(failed)
    }
}

/// Copies `source` into a new file `name` of the store.
fn copy_into(store: &Dir, name: &str, source: &mut std::fs::File) -> io::Result<()> {
    let mut options = cap_std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    let mut copy = store.open_with(name, &options)?.into_std();
    // `io::copy` between two files copies inside the kernel (`copy_file_range`), which a file
    // system that can share extents does without copying data.
    io::copy(source, &mut copy).map(|_| ())
}

/// How [`before_rewrite`] kept a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kept {
    /// As any change is kept (copied, or already kept this turn, or no checkpoint): write
    /// into the file as usual.
    AsIs,
    /// The file itself was hard-linked into the turn's store: no byte was copied, so it must
    /// not be written into. The caller puts a new file in its place (`rel` beneath the root,
    /// mode `mode`); the old one lives on as the turn's copy.
    Linked { rel: PathBuf, mode: u32 },
}

impl Recorder {
    fn store(&mut self) -> Result<&Dir, CheckpointError> {
        if self.store.is_none() {
            let opened = super::fence::system::private_dir(&self.store_path).map_err(|source| {
                CheckpointError::Store {
                    path: self.store_path.clone(),
                    source,
                }
            })?;
            self.store = Some(opened);
        }
        match &self.store {
            Some(store) => Ok(store),
            None => Err(CheckpointError::Store {
                path: self.store_path.clone(),
                source: io::Error::from(io::ErrorKind::NotFound),
            }),
        }
    }

    /// Hard-links the file at `rel` (which `meta` describes) into the store: its name there,
    /// or `None` when it cannot be linked (another file system than the store's, a kernel
    /// that refuses) and must be copied instead.
    fn link(
        &mut self,
        dir: &Dir,
        rel: &Path,
        meta: &cap_std::fs::Metadata,
    ) -> Result<Option<String>, CheckpointError> {
        let name = format!("b{:06}", self.blobs);
        let store_path = self.store_path.join(&name);
        let store = self.store()?;
        if dir.hard_link(rel, store, &name).is_err() {
            return Ok(None);
        }
        let failed = |source| CheckpointError::Snapshot {
            path: store_path.clone(),
            source,
        };
        // What was linked must be the file looked at and the caller holds, not a name
        // swapped in meanwhile.
        let linked = store.symlink_metadata(&name).map_err(failed)?;
        if !(linked.is_file() && linked.ino() == meta.ino() && linked.dev() == meta.dev()) {
            let _ = store.remove_file(&name);
            return Err(failed(io::Error::new(
                io::ErrorKind::InvalidData,
                "the file was replaced while it was kept",
            )));
        }
        self.blobs += 1;
        Ok(Some(name))
    }

    /// Records `rel` as absent when nothing is there yet (and it is not recorded already).
    fn absent_if_missing(
        &mut self,
        dir: &Dir,
        root: &Path,
        rel: &Path,
    ) -> Result<(), CheckpointError> {
        let key = (root.to_path_buf(), rel.to_path_buf());
        if self.seen.contains(&key) {
            return Ok(());
        }
        match dir.symlink_metadata(rel) {
            Err(e) if state::is_absent(&e) => {
                self.seen.insert(key);
                self.entries.push(Entry {
                    root: root.to_path_buf(),
                    rel: rel.to_path_buf(),
                    before: State::Absent,
                    blob: None,
                    after: State::Absent,
                });
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Records the state of `rel` now, copying a regular file's content into the store, or,
    /// with `link` (the caller's open handle of that file, which it will replace whole),
    /// hard-linking the file itself there when it can.
    fn one(
        &mut self,
        dir: &Dir,
        root: &Path,
        rel: &Path,
        link: Option<&cap_std::fs::File>,
    ) -> Result<Kept, CheckpointError> {
        let key = (root.to_path_buf(), rel.to_path_buf());
        if self.seen.contains(&key) {
            return Ok(Kept::AsIs);
        }
        let failed = |source| CheckpointError::Snapshot {
            path: root.join(rel),
            source,
        };
        let meta = match dir.symlink_metadata(rel) {
            Ok(meta) => Some(meta),
            Err(e) if state::is_absent(&e) => None,
            Err(e) => return Err(failed(e)),
        };
        let linked = match (&meta, link) {
            (Some(meta), Some(file)) if meta.is_file() && may_link(file, meta) => {
                self.link(dir, rel, meta)?
            }
            _ => None,
        };
        let mut kept = Kept::AsIs;
        let (before, blob) = match meta {
            None => (State::Absent, None),
            Some(meta) if linked.is_some() => {
                let mode = cap_std::fs::MetadataExt::mode(&meta) & 0o7777;
                kept = Kept::Linked {
                    rel: rel.to_path_buf(),
                    mode,
                };
                (
                    State::File {
                        mode,
                        sha256: String::new(),
                        size: 0,
                    },
                    linked,
                )
            }
            Some(meta) if meta.is_file() => {
                let mut source = state::open_same(dir, rel, &meta).map_err(failed)?;
                let name = format!("b{:06}", self.blobs);
                self.blobs += 1;
                copy_into(self.store()?, &name, &mut source).map_err(failed)?;
                (
                    State::File {
                        mode: cap_std::fs::MetadataExt::mode(&meta) & 0o7777,
                        // Filled in from the copy when the turn is sealed, off the tool's time.
                        sha256: String::new(),
                        size: 0,
                    },
                    Some(name),
                )
            }
            Some(_) => (state::state_at(dir, rel).map_err(failed)?, None),
        };
        self.seen.insert(key);
        self.entries.push(Entry {
            root: root.to_path_buf(),
            rel: rel.to_path_buf(),
            before,
            blob,
            after: State::Absent,
        });
        Ok(kept)
    }
}

/// Whether the file `file` (at `meta`) may be kept by a hard link and then replaced by a new
/// file of the same name, with nothing a person would notice changing: it is the file the
/// caller holds, has no other name, and a new file made by this process gets its owner and
/// group; and it has no extended attributes (ACLs, capabilities, labels), which a new file
/// would not carry. Anything else is copied.
fn may_link(file: &cap_std::fs::File, meta: &cap_std::fs::Metadata) -> bool {
    let Ok(held) = file.metadata() else {
        return false;
    };
    held.ino() == meta.ino()
        && held.dev() == meta.dev()
        && held.nlink() == 1
        && held.uid() == rustix::process::geteuid().as_raw()
        && held.gid() == rustix::process::getegid().as_raw()
        && matches!(rustix::fs::flistxattr(file, &mut [0u8; 0][..]), Ok(0))
}

/// Every path beneath the directory `rel` (not following symlinks), parents before children,
/// at most [`MAX_TREE`].
fn walk(dir: &Dir, rel: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    let Ok(meta) = dir.symlink_metadata(rel) else {
        return Ok(());
    };
    if !meta.is_dir() {
        return Ok(());
    }
    let mut names: Vec<_> = dir
        .read_dir(rel)?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect::<io::Result<_>>()?;
    names.sort();
    for name in names {
        if out.len() >= MAX_TREE {
            return Err(io::Error::other(format!(
                "more than {MAX_TREE} entries to keep for undo"
            )));
        }
        let below = rel.join(name);
        out.push(below.clone());
        walk(dir, &below, out)?;
    }
    Ok(())
}

/// Where `at` really is below its root: the file it leads to, or the name itself.
fn real_rel(ctx: &ToolContext, at: &Beneath, target: Target) -> Result<PathBuf, ToolError> {
    let real = match target {
        Target::Content => at.real(),
        Target::Name => at.real_name(),
    };
    real.and_then(|real| real.strip_prefix(&at.root).ok().map(Path::to_path_buf))
        .map(|rel| {
            if rel.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                rel
            }
        })
        .ok_or_else(|| {
            ToolError::model(format!(
                "{}: `{}` leads outside its root or through a symlink loop, so it cannot be kept for undo",
                at.tool,
                at.shown(ctx)
            ))
        })
}

fn to_tool_error(tool: &'static str, err: CheckpointError) -> ToolError {
    match err {
        CheckpointError::Snapshot { source, .. }
        | CheckpointError::Store { source, .. }
        | CheckpointError::Restore { source, .. } => ToolError::Fatal { tool, source },
        CheckpointError::Manifest { reason, .. } => ToolError::Fatal {
            tool,
            source: io::Error::other(reason),
        },
    }
}

/// Keeps what `at` is now, before a tool changes it for the first time in this turn (and
/// notes the directories above it the change may create). Nothing without a checkpoint.
pub(crate) fn before(ctx: &ToolContext, at: &Beneath, target: Target) -> Result<(), ToolError> {
    let Some(checkpoint) = &ctx.checkpoint else {
        return Ok(());
    };
    let rel = real_rel(ctx, at, target)?;
    checkpoint
        .record(&at.dir, &at.root, &rel, false, &[])
        .map_err(|e| to_tool_error(at.tool, e))
}

/// [`before`] for a file the caller (`write`, `edit`) will rewrite whole, holding it open as
/// `file`. On its first change in the turn the file itself may become the turn's copy (a
/// hard link, no byte copied: [`Kept::Linked`]); the caller must then replace it by a new
/// file rather than write into it, or call [`detach`] first.
pub(crate) fn before_rewrite(
    ctx: &ToolContext,
    at: &Beneath,
    file: &cap_std::fs::File,
) -> Result<Kept, ToolError> {
    let Some(checkpoint) = &ctx.checkpoint else {
        return Ok(Kept::AsIs);
    };
    let rel = real_rel(ctx, at, Target::Content)?;
    checkpoint
        .record_linking(&at.dir, &at.root, &rel, false, &[], Some(file))
        .map_err(|e| to_tool_error(at.tool, e))
}

/// After [`Kept::Linked`], gives the turn's copy of `rel` data of its own, so the caller may
/// write into the file after all (its directory refused a new file).
pub(crate) fn detach(ctx: &ToolContext, at: &Beneath, rel: &Path) -> Result<(), ToolError> {
    let Some(checkpoint) = &ctx.checkpoint else {
        return Ok(());
    };
    checkpoint
        .detach(&at.root, rel)
        .map_err(|e| to_tool_error(at.tool, e))
}

/// [`before`] for `at` and everything beneath it (`rm` of a directory).
pub(crate) fn before_tree(ctx: &ToolContext, at: &Beneath) -> Result<(), ToolError> {
    let Some(checkpoint) = &ctx.checkpoint else {
        return Ok(());
    };
    let rel = real_rel(ctx, at, Target::Name)?;
    checkpoint
        .record(&at.dir, &at.root, &rel, true, &[])
        .map_err(|e| to_tool_error(at.tool, e))
}

/// [`before`] for a move: the source with everything beneath it, and the destination with
/// the place each of them will take there.
pub(crate) fn before_move(
    ctx: &ToolContext,
    src: &Beneath,
    dst: &Beneath,
) -> Result<(), ToolError> {
    let Some(checkpoint) = &ctx.checkpoint else {
        return Ok(());
    };
    let from = real_rel(ctx, src, Target::Name)?;
    let to = real_rel(ctx, dst, Target::Name)?;
    let mut below = Vec::new();
    walk(&src.dir, &from, &mut below).map_err(|source| ToolError::Fatal {
        tool: src.tool,
        source,
    })?;
    let landing: Vec<PathBuf> = below
        .iter()
        .filter_map(|p| p.strip_prefix(&from).ok())
        .map(|p| to.join(p))
        .collect();
    checkpoint
        .record(&src.dir, &src.root, &from, true, &[])
        .map_err(|e| to_tool_error(src.tool, e))?;
    checkpoint
        .record(&dst.dir, &dst.root, &to, false, &landing)
        .map_err(|e| to_tool_error(dst.tool, e))
}
