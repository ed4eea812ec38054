//! What a tool call knows about where it may act.

use std::path::{Component, Path, PathBuf};

/// The allowed roots and the session workspace, as absolute paths with symlinks resolved, and
/// the secrets inside them that no tool opens (Codaris's API token, its configuration file, its
/// state directory but for the session's own workspace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    roots: Vec<PathBuf>,
    secret: Vec<PathBuf>,
    /// The state directory, secret as a whole except `open`.
    state: Option<PathBuf>,
    /// The session's own workspace, when it lies strictly inside `state`.
    open: Option<PathBuf>,
    /// Paths no tool changes beside every `.git` (Codaris's ledger).
    protected: Vec<PathBuf>,
}

impl Fence {
    pub fn new(roots: impl IntoIterator<Item = PathBuf>) -> Self {
        Self {
            roots: roots.into_iter().collect(),
            secret: Vec::new(),
            state: None,
            open: None,
            protected: Vec::new(),
        }
    }

    /// Makes the state directory secret, all but `workspace` when it lies strictly inside it:
    /// the ledger's journal, the socket, the pid file, other sessions' workspaces.
    #[must_use]
    pub fn with_state_dir(mut self, state: &Path, workspace: &Path) -> Self {
        self.state = normalize(state);
        self.open = normalize(workspace).filter(|ws| {
            self.state
                .as_ref()
                .is_some_and(|s| ws.starts_with(s) && ws != s)
        });
        self
    }

    /// Paths no tool changes, beside every `.git` (checked by [`Fence::is_protected`]).
    #[must_use]
    pub fn with_protected(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.protected = paths.into_iter().filter_map(|p| normalize(&p)).collect();
        self
    }

    /// Paths no tool opens and no search walks into, whatever the policy decided: the policy
    /// refuses them by name, and this keeps a directory-wide `grep` from reading them too.
    #[must_use]
    pub fn with_secret(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.secret = paths.into_iter().filter_map(|p| normalize(&p)).collect();
        self
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    pub fn secret(&self) -> &[PathBuf] {
        &self.secret
    }

    /// True when any path is secret: searches then filter what they walk.
    pub fn has_secrets(&self) -> bool {
        !self.secret.is_empty() || self.state.is_some()
    }

    /// True when `path` is a secret or lies beneath one, or lies in the state directory outside
    /// the session's own workspace; compared component by component and without regard to
    /// ASCII case (as the policy compares it), the workspace exactly.
    pub fn is_secret(&self, path: &Path) -> bool {
        normalize(path).is_some_and(|path| {
            is_within_any(&path, &self.secret)
                || (self
                    .state
                    .as_ref()
                    .is_some_and(|state| is_within_any(&path, std::slice::from_ref(state)))
                    && !self.open.as_ref().is_some_and(|ws| path.starts_with(ws)))
        })
    }

    /// True when no tool may change `path`: a component is `.git` in any letter case, or it is
    /// secret, or it lies beneath a protected path. Lexical: resolve symlinks first.
    pub fn is_protected(&self, path: &Path) -> bool {
        let git = path.components().any(|c| {
            c.as_os_str()
                .as_encoded_bytes()
                .eq_ignore_ascii_case(b".git")
        });
        git || self.is_secret(path)
            || normalize(path).is_some_and(|p| is_within_any(&p, &self.protected))
    }

    /// The root `path` lies under (component by component: `/w/proj-evil` is not under
    /// `/w/proj`) and the path relative to it. The longest matching root wins.
    pub fn locate<'a>(&'a self, path: &'a Path) -> Option<(&'a Path, PathBuf)> {
        let normal = normalize(path)?;
        self.roots
            .iter()
            .filter_map(|root| {
                normal
                    .strip_prefix(root)
                    .ok()
                    .map(|rest| (root.as_path(), rest.to_path_buf()))
            })
            .max_by_key(|(root, _)| root.components().count())
    }
}

/// True when `path` equals or lies beneath one of `roots`, ignoring ASCII case.
pub(crate) fn is_within_any(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|root| {
        let mut ours = path.components();
        root.components().all(|r| {
            ours.next().is_some_and(|p| {
                p.as_os_str()
                    .as_encoded_bytes()
                    .eq_ignore_ascii_case(r.as_os_str().as_encoded_bytes())
            })
        })
    })
}

/// `path` with every symlink that exists followed: the longest prefix that exists is
/// canonicalised and the rest appended as written (`..` included, for a lexical pass to
/// settle), so a file about to be written, or a protected path not made yet, still compares
/// with resolved paths. A relative `path` counts from the process's directory.
pub fn resolve_existing(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut tail: Vec<Component<'_>> = Vec::new();
    loop {
        if let Ok(mut resolved) = existing.canonicalize() {
            for component in tail.iter().rev() {
                resolved.push(component.as_os_str());
            }
            return resolved;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                tail.push(last);
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Lexical normalisation of an absolute path; `None` for a relative one or one that climbs
/// above `/`.
pub fn normalize(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(part) => out.push(part),
            Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// Everything a tool call may use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub session_id: String,
    /// The resolved working directory relative paths are taken against.
    pub cwd: PathBuf,
    pub fence: Fence,
    /// The session's own workspace (also inside the fence).
    pub workspace: PathBuf,
    /// The running turn's checkpoint: each write tool keeps what it changes here first, so
    /// the turn can be undone. `None` where nothing is kept (a card's preview, tests).
    pub checkpoint: Option<crate::files::Checkpoint>,
    /// What the call's arguments were read into when it was prepared ([`Tool::read_args`]):
    /// the run and the card's preview use it instead of reading them again.
    ///
    /// [`Tool::read_args`]: crate::Tool::read_args
    pub read: ReadArgs,
}

/// What a call's arguments were read into before the policy judged them, carried with the
/// call so nothing is parsed twice.
#[derive(Debug, Clone, Default)]
pub enum ReadArgs {
    /// Nothing read ahead (most tools; a call made outside the daemon).
    #[default]
    Nothing,
    /// `apply_patch`'s patch.
    Patch(crate::files::ReadPatch),
}

impl ToolContext {
    /// `path` made absolute against the working directory (not normalised, not resolved).
    pub fn absolute(&self, path: &str) -> PathBuf {
        self.cwd.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_prefix_is_resolved_and_the_rest_kept_as_written()
    -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let real = temp.path().canonicalize()?;
        std::fs::create_dir(real.join("dir"))?;
        std::os::unix::fs::symlink(real.join("dir"), real.join("alias"))?;
        assert_eq!(resolve_existing(&real.join("alias")), real.join("dir"));
        assert_eq!(
            resolve_existing(&real.join("alias/not/yet")),
            real.join("dir/not/yet")
        );
        // `..` in the missing tail stays, for the lexical pass to settle.
        assert_eq!(
            normalize(&resolve_existing(&real.join("alias/missing/../x"))),
            Some(real.join("dir/x"))
        );
        Ok(())
    }

    #[test]
    fn the_state_directory_is_secret_but_for_the_own_workspace() {
        let fence = Fence::new([PathBuf::from("/")])
            .with_state_dir(Path::new("/s"), Path::new("/s/sessions/1"))
            .with_protected([PathBuf::from("/w/ledger")]);
        for secret in [
            "/s",
            "/s/ledger.journal",
            "/S/codaris.sock",
            "/s/sessions/2/x",
            "/s/sessions/1/../2",
            "/s/sessions/10",
        ] {
            assert!(fence.is_secret(Path::new(secret)), "{secret}");
        }
        for open in ["/s/sessions/1", "/s/sessions/1/a/b", "/w/s", "/sx"] {
            assert!(!fence.is_secret(Path::new(open)), "{open}");
        }
        for protected in ["/w/.GIT/config", "/w/a/.git", "/w/ledger/x", "/s/x"] {
            assert!(fence.is_protected(Path::new(protected)), "{protected}");
        }
        assert!(!fence.is_protected(Path::new("/w/.github/x")));
        // A workspace that is the state directory itself opens nothing.
        let whole = Fence::new([]).with_state_dir(Path::new("/s"), Path::new("/s"));
        assert!(whole.is_secret(Path::new("/s/x")));
    }

    #[test]
    fn locate_compares_whole_components() {
        let fence = Fence::new([PathBuf::from("/w/proj"), PathBuf::from("/w/proj/sub")]);
        assert_eq!(
            fence.locate(Path::new("/w/proj/sub/a.txt")),
            Some((Path::new("/w/proj/sub"), PathBuf::from("a.txt")))
        );
        assert_eq!(fence.locate(Path::new("/w/proj-evil/a")), None);
        assert_eq!(
            fence.locate(Path::new("/w/proj/x/../../proj/y")),
            Some((Path::new("/w/proj"), PathBuf::from("y")))
        );
        assert_eq!(fence.locate(Path::new("/w/proj/../secret")), None);
        assert_eq!(fence.locate(Path::new("relative")), None);
    }
}
