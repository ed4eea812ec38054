//! Lexical path handling: making a path absolute, normalising it, and comparing it with roots.
//!
//! Nothing here touches the file system. Symlinks are the caller's business: the daemon
//! resolves them before it calls `evaluate`, so a path that reaches this module is already the
//! path the tool will open, and the only thing left to do is arithmetic on its components.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// The longest path accepted, in bytes: Linux's `PATH_MAX`. A longer one could not be opened,
/// and bounding it keeps every comparison below cheap.
pub const MAX_PATH_BYTES: usize = 4096;

/// Why a path argument could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BadPath {
    /// A path argument the tool requires was not given.
    Missing,
    /// The argument is not a string (or a list of strings).
    NotString,
    /// The argument is the empty string.
    Empty,
    /// The argument contains a NUL byte, which no system call accepts.
    Nul,
    /// The argument is longer than [`MAX_PATH_BYTES`].
    TooLong,
    /// The argument is relative and the task's working directory is not a usable absolute path.
    Relative,
    /// An MCP argument names a path through an environment variable the daemon does not know
    /// (unset, not one it expands, or a shell form such as `${X:-y}`): the fence cannot judge it.
    UnknownVariable,
    /// An MCP argument names another user's home (`~name`, `~+`): the fence cannot judge it.
    OtherUsersHome,
    /// An MCP argument is a `file:` URI naming another host: the fence cannot judge it.
    ForeignHost,
    /// An MCP call names more paths than the daemon judges in one call.
    TooManyPaths,
}

/// Makes `raw` absolute against `cwd` and normalises it lexically: empty and `.` components
/// dropped, `..` removing the previous component (and stopping at `/`), no trailing slash.
/// Borrows `raw` when it already has that shape, which is the common case for resolved paths.
pub fn absolutize<'a>(raw: &'a str, cwd: &str) -> Result<Cow<'a, str>, BadPath> {
    check_shape(raw)?;
    if raw.starts_with('/') {
        if is_normal_absolute(raw) {
            return Ok(Cow::Borrowed(raw));
        }
        let mut out = String::with_capacity(raw.len());
        push_components(&mut out, raw);
        return Ok(Cow::Owned(finish(out)));
    }
    if check_shape(cwd).is_err() || !cwd.starts_with('/') {
        return Err(BadPath::Relative);
    }
    let mut out = String::with_capacity(cwd.len() + raw.len() + 1);
    push_components(&mut out, cwd);
    push_components(&mut out, raw);
    Ok(Cow::Owned(finish(out)))
}

/// Normalises a root or a grant path given by the caller. Only absolute paths qualify: a
/// relative root has no meaning without a directory, and dropping it only shrinks the fence.
pub fn normalize_absolute(raw: &str) -> Option<Cow<'_, str>> {
    if !raw.starts_with('/') {
        return None;
    }
    absolutize(raw, "/").ok()
}

/// True when `path` is `root` or lies beneath it. Both must be normalised absolute paths.
/// Comparing whole components is what keeps `/w/proj-evil` out of `/w/proj`.
pub fn is_within(path: &str, root: &str) -> bool {
    within_by(path, root, |a, b| a == b)
}

/// Like [`is_within`] but ignoring ASCII letter case: used for protected paths, where treating
/// `/S/LEDGER` like `/s/ledger` errs on the side of protection on case-folding file systems.
pub fn is_within_ignore_case(path: &str, root: &str) -> bool {
    within_by(path, root, <[u8]>::eq_ignore_ascii_case)
}

/// True when any component of the path is `.git`, in any letter case.
pub fn has_git_component(path: &str) -> bool {
    // A byte pass: this runs for every changed path of every call.
    path.as_bytes()
        .split(|b| *b == b'/')
        .any(|c| c.eq_ignore_ascii_case(b".git"))
}

/// The components of a normalised absolute path; `/` has none.
pub fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|c| !c.is_empty())
}

fn check_shape(raw: &str) -> Result<(), BadPath> {
    if raw.is_empty() {
        Err(BadPath::Empty)
    } else if raw.len() > MAX_PATH_BYTES {
        Err(BadPath::TooLong)
    } else if raw.contains('\0') {
        Err(BadPath::Nul)
    } else {
        Ok(())
    }
}

fn within_by(path: &str, root: &str, eq: impl Fn(&[u8], &[u8]) -> bool) -> bool {
    if root == "/" {
        return path.starts_with('/');
    }
    let (p, r) = (path.as_bytes(), root.as_bytes());
    p.len() >= r.len() && eq(&p[..r.len()], r) && (p.len() == r.len() || p[r.len()] == b'/')
}

fn is_normal_absolute(raw: &str) -> bool {
    raw == "/"
        || (raw.starts_with('/')
            && raw.as_bytes()[1..]
                .split(|b| *b == b'/')
                .all(|c| !c.is_empty() && c != b"." && c != b".."))
}

fn push_components(out: &mut String, raw: &str) {
    for comp in raw.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                let cut = out.rfind('/').unwrap_or(0);
                out.truncate(cut);
            }
            c => {
                out.push('/');
                out.push_str(c);
            }
        }
    }
}

fn finish(mut out: String) -> String {
    if out.is_empty() {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn abs(raw: &str, cwd: &str) -> Result<String, BadPath> {
        absolutize(raw, cwd).map(Cow::into_owned)
    }

    #[test]
    fn relative_paths_join_the_working_directory() {
        assert_eq!(abs("src/a.rs", "/w/proj"), Ok("/w/proj/src/a.rs".into()));
        assert_eq!(abs("./", "/w/proj"), Ok("/w/proj".into()));
        assert_eq!(abs(".", "/w/proj/"), Ok("/w/proj".into()));
    }

    #[test]
    fn dot_dot_climbs_and_stops_at_the_root() {
        assert_eq!(abs("../../secret", "/w/proj"), Ok("/secret".into()));
        assert_eq!(abs("/w/proj/../secret", "/"), Ok("/w/secret".into()));
        assert_eq!(abs("/../../..", "/"), Ok("/".into()));
        assert_eq!(abs("a/b/../../..", "/w"), Ok("/".into()));
    }

    #[test]
    fn doubled_and_trailing_slashes_vanish() {
        assert_eq!(abs("//w///proj//a/", "/"), Ok("/w/proj/a".into()));
        assert_eq!(abs("/w/proj/", "/"), Ok("/w/proj".into()));
        assert_eq!(abs("/", "/"), Ok("/".into()));
    }

    #[test]
    fn normal_absolute_paths_are_borrowed() {
        assert!(matches!(absolutize("/w/proj/a", "/"), Ok(Cow::Borrowed(_))));
        assert!(matches!(absolutize("/w/./a", "/"), Ok(Cow::Owned(_))));
    }

    #[test]
    fn unusable_paths_say_why() {
        assert_eq!(abs("", "/w"), Err(BadPath::Empty));
        assert_eq!(abs("a\0b", "/w"), Err(BadPath::Nul));
        assert_eq!(abs(&"a/".repeat(3000), "/w"), Err(BadPath::TooLong));
        assert_eq!(abs("a", "relative/cwd"), Err(BadPath::Relative));
        assert_eq!(abs("a", ""), Err(BadPath::Relative));
        assert_eq!(abs("a", "/w\0"), Err(BadPath::Relative));
        // An absolute path does not need the working directory at all.
        assert_eq!(abs("/a", "relative"), Ok("/a".into()));
    }

    #[test]
    fn roots_must_be_absolute() {
        assert_eq!(normalize_absolute("w/proj"), None);
        assert_eq!(normalize_absolute("/w//proj/").as_deref(), Some("/w/proj"));
    }

    #[test]
    fn containment_compares_whole_components() {
        assert!(is_within("/w/proj", "/w/proj"));
        assert!(is_within("/w/proj/a/b", "/w/proj"));
        assert!(!is_within("/w/proj-evil", "/w/proj"));
        assert!(!is_within("/w/proj-evil/a", "/w/proj"));
        assert!(!is_within("/w", "/w/proj"));
        assert!(!is_within("/data-evil", "/data"));
        assert!(is_within("/anything", "/"));
        assert!(!is_within("/W/PROJ/a", "/w/proj"));
        assert!(is_within_ignore_case("/W/PROJ/a", "/w/proj"));
        assert!(!is_within_ignore_case("/W/PROJX", "/w/proj"));
    }

    #[test]
    fn git_components_are_found_in_any_case_at_any_depth() {
        assert!(has_git_component("/w/proj/.git"));
        assert!(has_git_component("/w/proj/.GIT/hooks/pre-commit"));
        assert!(has_git_component("/w/proj/vendor/x/.Git/config"));
        assert!(!has_git_component("/w/proj/.github/workflows"));
        assert!(!has_git_component("/w/proj/a.git"));
    }

    #[test]
    fn components_skip_the_root() {
        assert_eq!(components("/").count(), 0);
        assert_eq!(components("/a/b").collect::<Vec<_>>(), ["a", "b"]);
    }
}
