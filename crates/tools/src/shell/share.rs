//! `share_file`: a file of the project copied into the session as an immutable artifact.
//!
//! The copy is named by its SHA-256 under `<workspace>/shared/`, read-only, and recorded in
//! `shared/index.jsonl` (one JSON object a line: `sha256`, `name`, `path`, `size`) for the
//! daemon to offer for download; it never enters the model's context. The source is opened
//! beneath the allowed root it lies in as the file tools open theirs (`files::fence::Beneath`,
//! which also refuses the fence's secrets), and the workspace is reached through a capability
//! too (`cap_std::fs::Dir`), so a symlink swapped in cannot lead the read or the write out of
//! its directory; the source itself must be a regular file, not a symlink.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, MetadataExt, OpenOptions, Permissions};
use serde_json::Value;

use super::args::required_string;
use crate::context::ToolContext;
use crate::files::fence::{Beneath, system};
use crate::tool::{Tool, ToolError, ToolOutput};

const NAME: &str = codaris_catalogue::SHARE_FILE.name;
/// The most one shared file may hold, and all of a session's shared files together: the
/// defaults of [`ShareFile`]'s limits.
pub const SHARE_FILE_LIMIT: u64 = 25 * 1024 * 1024;
pub const SHARE_SESSION_LIMIT: u64 = 100 * 1024 * 1024;
const SHARED: &str = "shared";
const INDEX: &str = "index.jsonl";

/// One shared file, as a line of `shared/index.jsonl` records it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SharedFile {
    /// The content's SHA-256, 64 lowercase hex digits: also its file name under `shared/`.
    pub sha256: String,
    /// The file name it was shared under.
    pub name: String,
    /// Where it was shared from.
    pub path: PathBuf,
    pub size: u64,
}

/// The files shared into the session with workspace `workspace`, oldest first, one per
/// content (the latest name wins); empty when nothing was shared. Lines that do not read are
/// skipped: the index is the daemon's own file, and one bad line must not hide the rest.
pub fn shared_files(workspace: &Path) -> io::Result<Vec<SharedFile>> {
    let Some(text) = system::read_beneath(workspace, &Path::new(SHARED).join(INDEX))? else {
        return Ok(Vec::new());
    };
    let mut files: Vec<SharedFile> = Vec::new();
    for entry in text
        .lines()
        .filter_map(|line| serde_json::from_str::<SharedFile>(line).ok())
    {
        match files.iter_mut().find(|f| f.sha256 == entry.sha256) {
            Some(known) => *known = entry,
            None => files.push(entry),
        }
    }
    Ok(files)
}

/// Where the content `sha256` of a shared file is kept, when the session shared it. Only a
/// name from the index is ever joined to the directory, so no argument can lead elsewhere.
pub fn shared_file_path(workspace: &Path, sha256: &str) -> io::Result<Option<PathBuf>> {
    let known = shared_files(workspace)?
        .into_iter()
        .any(|f| f.sha256 == sha256 && is_sha256(&f.sha256));
    Ok(known.then(|| workspace.join(SHARED).join(sha256)))
}

fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `share_file`: a content-addressed, read-only copy into the session workspace.
#[derive(Debug, Clone, Copy)]
pub struct ShareFile {
    /// The most one shared file may hold.
    file_limit: u64,
    /// The most all of a session's shared files may hold together.
    session_limit: u64,
}

impl Default for ShareFile {
    fn default() -> Self {
        Self::with_limits(SHARE_FILE_LIMIT, SHARE_SESSION_LIMIT)
    }
}

impl ShareFile {
    /// The tool with the default limits ([`SHARE_FILE_LIMIT`], [`SHARE_SESSION_LIMIT`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The tool with other limits, in bytes (tests shrink them).
    pub fn with_limits(file_limit: u64, session_limit: u64) -> Self {
        Self {
            file_limit,
            session_limit,
        }
    }
}

#[async_trait::async_trait]
impl Tool for ShareFile {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::SHARE_FILE
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let path = required_string(args, "path")?.to_owned();
        let (ctx, tool) = (ctx.clone(), *self);
        tokio::task::spawn_blocking(move || tool.share(&ctx, &path))
            .await
            .map_err(|error| ToolError::Fatal {
                tool: NAME,
                source: io::Error::other(error),
            })?
    }
}

fn model_io(path: &str, error: &io::Error) -> ToolError {
    ToolError::model(format!("`{path}` cannot be shared: {error}"))
}

fn fatal(source: io::Error) -> ToolError {
    ToolError::Fatal { tool: NAME, source }
}

/// A size limit as the model reads it: whole MiB when it is one, bytes otherwise.
fn size_limit(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

impl ShareFile {
    fn share(self, ctx: &ToolContext, path: &str) -> Result<ToolOutput, ToolError> {
        let at = Beneath::locate(ctx, NAME, path)?;
        if at.is_root() {
            return Err(ToolError::model(format!("`{path}` is a directory")));
        }
        let bytes = self.read_source(&at, path)?;
        let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
        let hex: String = digest
            .as_ref()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        let size = bytes.len() as u64;
        let workspace = system::own_dir(&ctx.workspace).map_err(fatal)?;
        workspace.create_dir_all(SHARED).map_err(fatal)?;
        let shared = workspace.open_dir(SHARED).map_err(fatal)?;
        let already = shared
            .symlink_metadata(&hex)
            .is_ok_and(|meta| meta.is_file());
        if !already {
            let used = usage(&shared).map_err(fatal)?;
            if used + size > self.session_limit {
                return Err(ToolError::model(format!(
                    "`{path}` ({size} bytes) would take this session's shared files past {} ({used} bytes used)",
                    size_limit(self.session_limit)
                )));
            }
            store(&shared, &hex, &bytes).map_err(fatal)?;
        }
        let name = at
            .rel
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let entry = SharedFile {
            sha256: hex.clone(),
            name,
            path: at.abs.clone(),
            size,
        };
        let entry = serde_json::to_string(&entry).map_err(|e| fatal(io::Error::other(e)))?;
        let mut index = shared
            .open_with(INDEX, OpenOptions::new().append(true).create(true))
            .map_err(fatal)?;
        writeln!(index, "{entry}").map_err(fatal)?;
        Ok(ToolOutput::text(format!(
            "shared `{path}` ({size} bytes) as sha256:{hex}{}",
            if already { " (already shared)" } else { "" }
        )))
    }

    /// The file's bytes, opened beneath its root; refused if it is a symlink, not a regular
    /// file, over the limit, or was replaced between the look and the open.
    fn read_source(self, at: &Beneath, path: &str) -> Result<Vec<u8>, ToolError> {
        let looked = at
            .dir
            .symlink_metadata(&at.rel)
            .map_err(|error| model_io(path, &error))?;
        if looked.is_symlink() {
            return Err(ToolError::model(format!(
                "`{path}` is a symlink; share the file it points to"
            )));
        }
        if !looked.is_file() {
            return Err(ToolError::model(format!("`{path}` is not a regular file")));
        }
        let too_big = |size: u64| {
            ToolError::model(format!(
                "`{path}` is {size} bytes; share_file takes at most {}",
                size_limit(self.file_limit)
            ))
        };
        if looked.len() > self.file_limit {
            return Err(too_big(looked.len()));
        }
        let file = at
            .dir
            .open(&at.rel)
            .map_err(|error| model_io(path, &error))?;
        let opened = file.metadata().map_err(fatal)?;
        if (opened.dev(), opened.ino()) != (looked.dev(), looked.ino()) {
            return Err(ToolError::model(format!(
                "`{path}` changed while being shared; try again"
            )));
        }
        let mut bytes = Vec::new();
        file.take(self.file_limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| model_io(path, &error))?;
        if bytes.len() as u64 > self.file_limit {
            return Err(too_big(bytes.len() as u64));
        }
        Ok(bytes)
    }
}

/// Bytes held by the session's shared files (the index is bookkeeping, not counted).
fn usage(shared: &Dir) -> io::Result<u64> {
    let mut used = 0;
    for entry in shared.entries()? {
        let entry = entry?;
        if entry.file_name() != INDEX {
            used += entry.metadata()?.len();
        }
    }
    Ok(used)
}

/// Written under a temporary name and renamed, so a reader never sees half a copy; then
/// made read-only, as an artifact does not change.
fn store(shared: &Dir, hex: &str, bytes: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let partial = format!(".{hex}.partial");
    let mut file = shared.create(&partial)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    file.set_permissions(Permissions::from_std(std::fs::Permissions::from_mode(
        0o444,
    )))?;
    shared.rename(&partial, shared, hex)
}
