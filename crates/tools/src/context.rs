//! What a tool call knows about where it may act.

use std::path::{Component, Path, PathBuf};

/// The allowed roots and the session workspace, as absolute paths with symlinks resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    roots: Vec<PathBuf>,
}

impl Fence {
    pub fn new(roots: impl IntoIterator<Item = PathBuf>) -> Self {
        Self {
            roots: roots.into_iter().collect(),
        }
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
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
