//! What a checkpoint stores: the state of each path a turn changed, before the turn's first
//! change and as the turn left it, and the manifest that lists them.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, MetadataExt};
use serde::{Deserialize, Serialize};

/// The manifest's shape; fields are only ever added.
pub const MANIFEST_SCHEMA: u32 = 1;

/// The state of one path, compared without following its last component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum State {
    Absent,
    /// A regular file: its permission bits and the SHA-256 of its content.
    File {
        mode: u32,
        sha256: String,
        size: u64,
    },
    /// A directory: its permission bits (restored; not compared, see [`State::fingerprint`]).
    Dir {
        mode: u32,
    },
    /// A symlink and what it holds, as written (not followed).
    Symlink {
        target: PathBuf,
    },
}

impl State {
    /// The form compared to decide whether a path is still as the turn left it, and recorded in
    /// the ledger: `absent`, `file:<mode>:<sha256>`, `dir`, `symlink:<target>`. A directory's
    /// mode is left out: a directory the turn made is removed only when empty, whatever its
    /// mode became.
    pub fn fingerprint(&self) -> String {
        match self {
            State::Absent => "absent".to_owned(),
            State::File { mode, sha256, .. } => format!("file:{mode:o}:{sha256}"),
            State::Dir { .. } => "dir".to_owned(),
            State::Symlink { target } => format!("symlink:{}", target.display()),
        }
    }

    /// `true` for a directory.
    pub fn is_dir(&self) -> bool {
        matches!(self, State::Dir { .. })
    }
}

/// One path a turn changed, beneath one of the session's roots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The allowed root it lies in (absolute, symlinks resolved when the session started).
    pub root: PathBuf,
    /// The path below the root, its directories' symlinks resolved when it was snapshotted.
    pub rel: PathBuf,
    /// Before the turn's first change.
    pub before: State,
    /// The stored copy of a file's content before (`before` is a file), in the store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// As the turn left it (read when the turn ended).
    pub after: State,
}

impl Entry {
    /// The absolute path, for messages.
    pub fn path(&self) -> PathBuf {
        self.root.join(&self.rel)
    }

    /// How deep below its root (ancestors restore before descendants).
    pub(crate) fn depth(&self) -> usize {
        self.rel.components().count()
    }
}

/// Everything one turn changed through its file tools, and the commands it ran, whose own
/// changes are not undone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: u32,
    pub session_id: String,
    /// The turn, counted from 0 (as the JSON of `run` counts it).
    pub turn: u32,
    /// In the order the turn first touched them; a directory the turn made comes before what
    /// it holds.
    pub entries: Vec<Entry>,
    /// What the turn ran that may have changed files too, as shown to the person
    /// (`run_command` `make`, `run_built_pipeline`).
    #[serde(default)]
    pub commands: Vec<String>,
    /// Set once the turn was undone.
    #[serde(default)]
    pub undone: bool,
}

impl Manifest {
    /// The entries whose path the turn changed: the ones it left as it found them (a file
    /// written back to its own content) need nothing.
    pub fn changed(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.before != e.after)
    }
}

/// The state of `rel` beneath `dir`, its last component not followed. A part of the path that
/// is a file now makes it absent.
pub(crate) fn state_at(dir: &Dir, rel: &Path) -> io::Result<State> {
    let meta = match dir.symlink_metadata(rel) {
        Ok(meta) => meta,
        Err(e) if is_absent(&e) => return Ok(State::Absent),
        Err(e) => return Err(e),
    };
    if meta.is_symlink() {
        return Ok(State::Symlink {
            target: dir.read_link_contents(rel)?,
        });
    }
    if meta.is_dir() {
        return Ok(State::Dir {
            mode: meta.mode() & 0o7777,
        });
    }
    let mut file = open_same(dir, rel, &meta)?;
    let (sha256, size) = sha256_of(&mut file)?;
    Ok(State::File {
        mode: meta.mode() & 0o7777,
        sha256,
        size,
    })
}

/// Opens the regular file `rel` whose metadata (read without following it) is `meta`,
/// refusing whatever replaced it in between (a symlink swapped in is not followed).
pub(crate) fn open_same(
    dir: &Dir,
    rel: &Path,
    meta: &cap_std::fs::Metadata,
) -> io::Result<std::fs::File> {
    let file = dir.open(rel)?.into_std();
    let opened = file.metadata()?;
    if !opened.is_file()
        || std::os::unix::fs::MetadataExt::ino(&opened) != meta.ino()
        || std::os::unix::fs::MetadataExt::dev(&opened) != meta.dev()
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the file was replaced while it was read",
        ));
    }
    Ok(file)
}

/// The SHA-256 (hex) and length of what `reader` holds.
pub(crate) fn sha256_of(reader: &mut impl Read) -> io::Result<(String, u64)> {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buffer = vec![0u8; 256 * 1024];
    let mut size = 0u64;
    loop {
        let n = reader.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        context.update(&buffer[..n]);
    }
    let digest = context.finish();
    let hex = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    Ok((hex, size))
}

/// Not found, or a part of the path is not a directory: nothing is at the path.
pub(crate) fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}
