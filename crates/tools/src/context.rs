//! What a tool call knows about where it may act.

use std::path::{Component, Path, PathBuf};

/// The allowed roots and the session workspace, as absolute paths with symlinks resolved, and
/// the secrets inside them that no tool opens (Codaris's API token, its configuration file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    roots: Vec<PathBuf>,
    secret: Vec<PathBuf>,
}

impl Fence {
    pub fn new(roots: impl IntoIterator<Item = PathBuf>) -> Self {
        Self {
            roots: roots.into_iter().collect(),
            secret: Vec::new(),
        }
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

    /// True when `path` is a secret or lies beneath one, compared component by component and
    /// without regard to ASCII case (as the policy compares it).
    pub fn is_secret(&self, path: &Path) -> bool {
        normalize(path).is_some_and(|path| is_within_any(&path, &self.secret))
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
