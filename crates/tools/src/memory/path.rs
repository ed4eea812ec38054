//! A note's address, `scope:relative/path.md`, read once and checked before anything is opened.

use std::path::{Component, Path, PathBuf};

use codaris_catalogue::memory::MEMORY_PATH_MAX_BYTES;

/// Where a note is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// The person's: `<config dir>/memory`, for every project.
    User,
    /// The project's: `<session cwd>/.codaris/memory`.
    Project,
}

impl Scope {
    pub const ALL: [Scope; 2] = [Scope::User, Scope::Project];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }

    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "user" => Some(Scope::User),
            "project" => Some(Scope::Project),
            _ => None,
        }
    }
}

/// Why an address names no place beneath its scope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadNotePath {
    #[error(
        "`{path}` is not a memory path; write `user:relative/path.md` or `project:relative/path.md`"
    )]
    NoScope { path: String },
    #[error("`{scope}` is not a memory scope; the scopes are `user` and `project`")]
    UnknownScope { scope: String },
    #[error("`{path}` is longer than {max} bytes")]
    TooLong { path: String, max: usize },
    #[error("`{path}` {why}; a memory path is a plain relative path beneath its scope")]
    Escapes { path: String, why: &'static str },
    #[error("`{path}` names the scope's root, which {action}")]
    Root { path: String, action: &'static str },
}

/// A checked address: a scope and a relative path of plain names beneath its root (empty: the
/// root itself).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NotePath {
    pub scope: Scope,
    pub rel: PathBuf,
}

impl NotePath {
    /// Reads `scope:relative/path` (`scope:` alone is the root).
    pub fn parse(text: &str) -> Result<NotePath, BadNotePath> {
        let Some((scope, rel)) = text.split_once(':') else {
            return Err(BadNotePath::NoScope {
                path: text.to_owned(),
            });
        };
        let scope = Scope::parse(scope).ok_or_else(|| BadNotePath::UnknownScope {
            scope: scope.to_owned(),
        })?;
        NotePath::in_scope(scope, rel).map_err(|err| match err {
            // Say it with the whole address the model wrote.
            BadNotePath::Escapes { why, .. } => BadNotePath::Escapes {
                path: text.to_owned(),
                why,
            },
            other => other,
        })
    }

    /// `rel` (as written: `cluster/slurm.md`) beneath `scope`'s root.
    pub fn in_scope(scope: Scope, rel: &str) -> Result<NotePath, BadNotePath> {
        let escapes = |why| BadNotePath::Escapes {
            path: rel.to_owned(),
            why,
        };
        if rel.len() > MEMORY_PATH_MAX_BYTES {
            return Err(BadNotePath::TooLong {
                path: rel.chars().take(40).collect::<String>() + "…",
                max: MEMORY_PATH_MAX_BYTES,
            });
        }
        if rel.contains('\0') {
            return Err(escapes("holds a NUL byte"));
        }
        if rel.starts_with('~') {
            return Err(escapes("starts with `~`, which is never expanded"));
        }
        if rel.contains('$') || rel.contains('%') {
            return Err(escapes("holds `$` or `%`, which is never expanded"));
        }
        if rel.contains(':') {
            return Err(escapes("holds `:` (a URI or a second scope)"));
        }
        if rel.contains('\\') {
            return Err(escapes("holds `\\`"));
        }
        if rel.starts_with('/') {
            return Err(escapes("is absolute"));
        }
        let mut out = PathBuf::new();
        for component in Path::new(rel).components() {
            match component {
                Component::Normal(name) => {
                    if name.as_encoded_bytes().first() == Some(&b'.') {
                        return Err(escapes("names a hidden file or folder"));
                    }
                    out.push(name);
                }
                Component::CurDir => {}
                Component::ParentDir => return Err(escapes("climbs with `..`")),
                Component::RootDir | Component::Prefix(_) => return Err(escapes("is absolute")),
            }
        }
        Ok(NotePath { scope, rel: out })
    }

    /// A note's address as written for a save: `.md` added when missing; never the root.
    pub fn note(scope: Scope, rel: &str) -> Result<NotePath, BadNotePath> {
        let mut path = NotePath::in_scope(scope, rel)?;
        if path.is_root() {
            return Err(BadNotePath::Root {
                path: format!("{}:{rel}", scope.as_str()),
                action: "is a folder, not a note",
            });
        }
        if path.rel.extension().is_none_or(|e| e != "md") {
            let mut name = path.rel.file_name().unwrap_or_default().to_owned();
            name.push(".md");
            path.rel.set_file_name(name);
        }
        Ok(path)
    }

    pub fn is_root(&self) -> bool {
        self.rel.as_os_str().is_empty()
    }

    /// True for a note (a `.md` file), as opposed to a folder.
    pub fn is_note(&self) -> bool {
        self.rel.extension().is_some_and(|e| e == "md")
    }

    /// The path relative to the scope's root, `.` for the root (what cap-std takes).
    pub(crate) fn rel_or_root(&self) -> &Path {
        if self.is_root() {
            Path::new(".")
        } else {
            &self.rel
        }
    }
}

impl std::fmt::Display for NotePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.scope.as_str(), self.rel.display())
    }
}
