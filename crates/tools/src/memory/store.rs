//! The notes on disk: each scope's root opened by the fence, every operation relative to it.

use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;
use codaris_catalogue::memory::MEMORY_NOTE_MAX_BYTES;
use codaris_index::{Entry, Index, Kind, SearchRequest, Searcher};

use super::path::{BadNotePath, NotePath, Scope};
use crate::files::fence::scope::open_scope;

/// The folders under a scope's base that hold its notes.
const USER_BELOW: [&str; 1] = ["memory"];
const PROJECT_BELOW: [&str; 2] = [".codaris", "memory"];
/// How deep a search walks, and how many notes it reads at most: a memory is a few dozen
/// notes; a tree far larger than that is not one, and must not stall a turn.
const MAX_DEPTH: usize = 8;
const MAX_NOTES: usize = 2_000;

/// Why a note operation failed; every one is a sentence for the model (or the person).
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error(transparent)]
    BadPath(#[from] BadNotePath),
    #[error("the `{scope}` scope has no folder here (no configuration directory)")]
    NoScope { scope: &'static str },
    #[error("`{path}` does not exist")]
    NotFound { path: String },
    #[error("`{path}` is a symbolic link, which a memory path never follows")]
    Symlink { path: String },
    #[error("`{path}` is a folder, not a note; list it with codaris_memory_list")]
    NotANote { path: String },
    #[error("`{path}` is a note, not a folder")]
    NotAFolder { path: String },
    #[error("`{path}` is over {max} bytes")]
    TooLarge { path: String, max: usize },
    #[error("`{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

/// One note, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub path: NotePath,
    /// Its `# ` heading; empty when it has none.
    pub title: String,
    pub body: String,
}

impl Note {
    /// The note as kept on disk: the title as a heading, then the body.
    pub fn text(&self) -> String {
        format!("# {}\n\n{}\n", self.title.trim(), self.body.trim_end())
    }

    fn parse(path: NotePath, text: &str) -> Note {
        let (title, body) = match text.strip_prefix("# ") {
            Some(rest) => match rest.split_once('\n') {
                Some((title, body)) => (title.trim().to_owned(), body.trim().to_owned()),
                None => (rest.trim().to_owned(), String::new()),
            },
            None => (String::new(), text.trim().to_owned()),
        };
        Note { path, title, body }
    }
}

/// What is one level under a folder: its folders (names) and notes (names), sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub folders: Vec<String>,
    pub notes: Vec<String>,
}

/// One ranked note.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub path: String,
    pub title: String,
}

/// Where each scope's notes are: the configuration directory (`user`) and the session's
/// directory (`project`), as the daemon knows them. A scope with no base has no notes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roots {
    pub user: Option<PathBuf>,
    pub project: Option<PathBuf>,
}

impl Roots {
    /// The folder a scope's notes are kept in, for the person to see.
    pub fn folder(&self, scope: Scope) -> Option<PathBuf> {
        match scope {
            Scope::User => self.user.as_ref().map(|b| b.join(USER_BELOW[0])),
            Scope::Project => self
                .project
                .as_ref()
                .map(|b| PROJECT_BELOW.iter().fold(b.clone(), |p, n| p.join(n))),
        }
    }

    fn open(&self, scope: Scope, create: bool) -> Result<Option<Dir>, MemoryError> {
        let (base, below): (_, &[&str]) = match scope {
            Scope::User => (&self.user, &USER_BELOW),
            Scope::Project => (&self.project, &PROJECT_BELOW),
        };
        let Some(base) = base else {
            return Err(MemoryError::NoScope {
                scope: scope.as_str(),
            });
        };
        open_scope(base, below, create).map_err(|source| MemoryError::Io {
            path: format!("{}:", scope.as_str()),
            source,
        })
    }

    /// The scope's root for `path`, with no symbolic link anywhere on the way to it; `None`
    /// when the scope has nothing kept yet.
    fn open_for(&self, path: &NotePath, create: bool) -> Result<Option<Dir>, MemoryError> {
        let Some(dir) = self.open(path.scope, create)? else {
            return Ok(None);
        };
        no_link_on_the_way(&dir, path)?;
        Ok(Some(dir))
    }

    /// The folders and notes one level under `path` (a folder).
    pub fn list(&self, path: &NotePath) -> Result<Listing, MemoryError> {
        let Some(dir) = self.open_for(path, false)? else {
            return if path.is_root() {
                Ok(Listing::default())
            } else {
                Err(not_found(path))
            };
        };
        let meta = dir
            .symlink_metadata(path.rel_or_root())
            .map_err(|e| io_err(path, e))?;
        if !meta.is_dir() {
            return Err(MemoryError::NotAFolder {
                path: path.to_string(),
            });
        }
        let folder = dir
            .open_dir(path.rel_or_root())
            .map_err(|e| io_err(path, e))?;
        let mut listing = Listing::default();
        for entry in folder.entries().map_err(|e| io_err(path, e))? {
            let entry = entry.map_err(|e| io_err(path, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let kind = entry.file_type().map_err(|e| io_err(path, e))?;
            if kind.is_dir() {
                listing.folders.push(name);
            } else if kind.is_file() && name.ends_with(".md") {
                listing.notes.push(name);
            }
        }
        listing.folders.sort();
        listing.notes.sort();
        Ok(listing)
    }

    /// One note.
    pub fn read(&self, path: &NotePath) -> Result<Note, MemoryError> {
        let dir = self.open_for(path, false)?.ok_or_else(|| not_found(path))?;
        read_note(&dir, path)
    }

    /// Writes `title` and `body` at `path` (a note's address); `true` when one was there.
    pub fn save(&self, path: &NotePath, title: &str, body: &str) -> Result<bool, MemoryError> {
        let note = Note {
            path: path.clone(),
            title: title.to_owned(),
            body: body.to_owned(),
        };
        let text = note.text();
        if text.len() > MEMORY_NOTE_MAX_BYTES {
            return Err(MemoryError::TooLarge {
                path: path.to_string(),
                max: MEMORY_NOTE_MAX_BYTES,
            });
        }
        let dir = self.open_for(path, true)?.ok_or_else(|| not_found(path))?;
        if let Some(parent) = path.rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            dir.create_dir_all(parent).map_err(|e| io_err(path, e))?;
        }
        let existed = match dir.symlink_metadata(&path.rel) {
            Ok(meta) if meta.is_dir() => {
                return Err(MemoryError::NotANote {
                    path: path.to_string(),
                });
            }
            Ok(_) => true,
            Err(err) if err.kind() == io::ErrorKind::NotFound => false,
            Err(err) => return Err(io_err(path, err)),
        };
        // Written whole under a hidden name, then renamed over the note: a reader (the next
        // session's recall) never sees half a note.
        let name = path.rel.file_name().unwrap_or_default().to_string_lossy();
        let temp = path
            .rel
            .with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let written = (|| {
            let mut file = dir.create(&temp)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            dir.rename(&temp, &dir, &path.rel)
        })();
        if let Err(err) = written {
            let _ = dir.remove_file(&temp);
            return Err(io_err(path, err));
        }
        Ok(existed)
    }

    /// Makes the folder `path` and those above it.
    pub fn mkdir(&self, path: &NotePath) -> Result<(), MemoryError> {
        let dir = self.open_for(path, true)?.ok_or_else(|| not_found(path))?;
        if path.is_root() {
            return Ok(());
        }
        dir.create_dir_all(&path.rel).map_err(|e| io_err(path, e))
    }

    /// Removes a note, or a folder with everything in it; never a scope's root. `true` for a
    /// folder.
    pub fn delete(&self, path: &NotePath) -> Result<bool, MemoryError> {
        if path.is_root() {
            return Err(BadNotePath::Root {
                path: path.to_string(),
                action: "is never deleted",
            }
            .into());
        }
        let dir = self.open_for(path, false)?.ok_or_else(|| not_found(path))?;
        let meta = dir
            .symlink_metadata(&path.rel)
            .map_err(|e| io_err(path, e))?;
        if meta.is_dir() {
            // cap-std removes what is inside without following a link out of the folder.
            dir.remove_dir_all(&path.rel).map_err(|e| io_err(path, e))?;
            Ok(true)
        } else {
            dir.remove_file(&path.rel).map_err(|e| io_err(path, e))?;
            Ok(false)
        }
    }

    /// Every note of `scopes`, in path order (at most a few thousand, none over the size cap;
    /// links and hidden names are skipped).
    pub fn notes(&self, scopes: &[Scope]) -> Result<Vec<Note>, MemoryError> {
        let mut notes = Vec::new();
        for &scope in scopes {
            let dir = match self.open(scope, false) {
                Ok(Some(dir)) => dir,
                Ok(None) | Err(MemoryError::NoScope { .. }) => continue,
                Err(err) => return Err(err),
            };
            walk(&dir, scope, PathBuf::new(), 0, &mut notes);
        }
        Ok(notes)
    }

    /// The notes of `scopes` ranked against `query` with the tool index's ranking, best first.
    pub fn search(
        &self,
        query: &str,
        scopes: &[Scope],
        limit: usize,
    ) -> Result<Vec<SearchHit>, MemoryError> {
        let notes = self.notes(scopes)?;
        Ok(rank(&notes, query, limit))
    }
}

/// `notes` ranked against `query`: each note an entry named by its address, its title and its
/// path's words as keywords, its body as the description.
pub(crate) fn rank(notes: &[Note], query: &str, limit: usize) -> Vec<SearchHit> {
    if notes.is_empty() {
        return Vec::new();
    }
    let entries = notes
        .iter()
        .map(|note| {
            let mut entry = Entry::new(note.path.to_string(), Kind::Reference, &note.body);
            entry.keywords = std::iter::once(note.title.clone())
                .chain(
                    note.path
                        .rel
                        .with_extension("")
                        .iter()
                        .map(|part| part.to_string_lossy().replace(['-', '_'], " ")),
                )
                .filter(|k| !k.is_empty())
                .collect();
            entry
        })
        .collect();
    let index = Index::build(entries);
    let outcome = Searcher::new().search(&index, &SearchRequest::new(query).limit(limit));
    outcome
        .hits()
        .iter()
        .map(|hit| SearchHit {
            title: notes
                .iter()
                .find(|n| n.path.to_string() == hit.name)
                .map(|n| n.title.clone())
                .unwrap_or_default(),
            path: hit.name.clone(),
        })
        .collect()
}

fn walk(dir: &Dir, scope: Scope, rel: PathBuf, depth: usize, notes: &mut Vec<Note>) {
    if depth > MAX_DEPTH || notes.len() >= MAX_NOTES {
        return;
    }
    let Ok(entries) = dir.entries() else { return };
    let mut names: Vec<(String, bool)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type().ok()?;
            // `file_type` does not follow links: a link is neither a folder nor a file here.
            let keep = !name.starts_with('.') && (kind.is_dir() || kind.is_file());
            keep.then_some((name, kind.is_dir()))
        })
        .collect();
    names.sort();
    for (name, is_dir) in names {
        if notes.len() >= MAX_NOTES {
            return;
        }
        let below = rel.join(&name);
        if is_dir {
            if let Ok(sub) = dir.open_dir(&name) {
                walk(&sub, scope, below, depth + 1, notes);
            }
        } else if name.ends_with(".md") {
            let path = NotePath { scope, rel: below };
            if let Ok(text) = read_capped(dir, Path::new(&name)) {
                notes.push(Note::parse(path, &text));
            }
        }
    }
}

fn read_note(dir: &Dir, path: &NotePath) -> Result<Note, MemoryError> {
    match dir.symlink_metadata(path.rel_or_root()) {
        Ok(meta) if meta.is_dir() => {
            return Err(MemoryError::NotANote {
                path: path.to_string(),
            });
        }
        Ok(_) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Err(not_found(path)),
        Err(err) => return Err(io_err(path, err)),
    }
    let text = read_capped(dir, &path.rel).map_err(|err| match err.kind() {
        io::ErrorKind::FileTooLarge => MemoryError::TooLarge {
            path: path.to_string(),
            max: MEMORY_NOTE_MAX_BYTES,
        },
        _ => io_err(path, err),
    })?;
    Ok(Note::parse(path.clone(), &text))
}

/// A note's text, refused past the size cap (read one byte over it to know).
fn read_capped(dir: &Dir, rel: &Path) -> io::Result<String> {
    let file = dir.open(rel)?;
    let mut text = String::new();
    file.take(MEMORY_NOTE_MAX_BYTES as u64 + 1)
        .read_to_string(&mut text)?;
    if text.len() > MEMORY_NOTE_MAX_BYTES {
        return Err(io::Error::from(io::ErrorKind::FileTooLarge));
    }
    Ok(text)
}

/// Refuses `path` when a symbolic link lies anywhere on it beneath the scope's root (the part
/// that exists): a memory path never follows one, even one that stays inside.
fn no_link_on_the_way(dir: &Dir, path: &NotePath) -> Result<(), MemoryError> {
    let mut so_far = PathBuf::new();
    for part in path.rel.iter() {
        so_far.push(part);
        match dir.symlink_metadata(&so_far) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(MemoryError::Symlink {
                    path: format!("{}:{}", path.scope.as_str(), so_far.display()),
                });
            }
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(io_err(path, err)),
        }
    }
    Ok(())
}

fn not_found(path: &NotePath) -> MemoryError {
    MemoryError::NotFound {
        path: path.to_string(),
    }
}

fn io_err(path: &NotePath, source: io::Error) -> MemoryError {
    MemoryError::Io {
        path: path.to_string(),
        source,
    }
}
