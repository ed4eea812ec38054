//! Symlink resolution before the policy sees a path: the daemon's half of the policy contract.
//!
//! `codaris_policy::evaluate` is pure and compares paths lexically, so the daemon hands it paths
//! in which every symlink that exists has been followed. A path whose tail does not exist yet
//! (a file about to be written) keeps that tail as written, appended to its resolved parent.
//!
//! A call's paths are resolved once, by one [`Resolver`], into [`ResolvedPath`]s: the policy
//! judges their string projection (what the ledger records) and the tool's fence is built from
//! the paths themselves (see [`crate::calls::prepare`]).

use std::path::{Path, PathBuf};

use codaris_policy::{
    BuiltinTool, ExternalSpec, Implied, ImpliedBy, MAX_PATH_BYTES, Task, ToolId, builtin_spec,
};
use codaris_tools::ReadArgs;
use serde_json::Value;

use crate::mcp::paths::{ArgumentMarks, Named, file_uri_path};

/// A path with every symlink that exists followed, as the policy judged it: only a
/// [`Resolver`] makes one, so a fence built from these was never resolved a second time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath(PathBuf);

impl ResolvedPath {
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// The path as the policy judges it and the ledger records it.
    pub fn projection(&self) -> String {
        self.0.to_string_lossy().into_owned()
    }

    /// The directory a fence opens as a root for this path: the path itself when it is a
    /// directory, else the one holding it (a grant for one file opens its directory).
    pub fn directory(self) -> ResolvedPath {
        if self.0.is_dir() {
            return self;
        }
        match self.0.parent() {
            Some(parent) => ResolvedPath(parent.to_path_buf()),
            None => self,
        }
    }
}

/// Resolves the paths of one call, each once: a path met again (the working directory is one
/// of the roots too, a grant names the path an argument resolved to) is answered from what was
/// found, since following the same links twice could only disagree with the decision.
#[derive(Debug, Clone, Default)]
pub struct Resolver {
    /// Each path met (as joined to its base) and what it resolved to; a resolved path is filed
    /// under itself too.
    found: Vec<(PathBuf, PathBuf)>,
}

impl Resolver {
    /// `path` (absolute, or relative to `cwd`) with every symlink that exists followed.
    pub fn resolve(&mut self, cwd: &Path, path: &Path) -> ResolvedPath {
        // NUL and empty paths are the policy's to refuse (`bad_path`); hand them over untouched.
        if path.as_os_str().is_empty() || path.as_os_str().as_encoded_bytes().contains(&0) {
            return ResolvedPath(path.to_path_buf());
        }
        let joined = cwd.join(path);
        // Compared byte for byte: `Path`'s equality reads `link/` as `link`, which resolve
        // differently when the link names a file.
        let met = |(seen, _): &&(PathBuf, PathBuf)| seen.as_os_str() == joined.as_os_str();
        if let Some((_, resolved)) = self.found.iter().find(met) {
            return ResolvedPath(resolved.clone());
        }
        let resolved = resolve_existing(&joined);
        if resolved.as_os_str() != joined.as_os_str() {
            self.found.push((resolved.clone(), resolved.clone()));
        }
        self.found.push((joined, resolved.clone()));
        ResolvedPath(resolved)
    }

    /// [`Resolver::resolve`] of a path given as text, as the policy judges it.
    pub fn resolve_str(&mut self, cwd: &Path, path: &str) -> String {
        self.resolve(cwd, Path::new(path)).projection()
    }
}

/// The one place a path is resolved through the file system; the tests count its calls.
fn resolve_existing(joined: &Path) -> PathBuf {
    #[cfg(test)]
    counted::note(joined);
    codaris_tools::resolve_existing(joined)
}

/// Resolves `path` (absolute, or relative to `cwd`) through every symlink that exists.
pub fn resolve_path(cwd: &Path, path: &str) -> String {
    Resolver::default().resolve_str(cwd, path)
}

/// Where a call is decided and runs, every path resolved: the working directory, the roots,
/// the session's workspace, and the paths no tool may change, read, or (the state directory)
/// enter. The policy judges [`Place::project`]; the tool's fence is built from these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub cwd: ResolvedPath,
    pub roots: Vec<ResolvedPath>,
    pub workspace: Option<ResolvedPath>,
    pub protected: Vec<ResolvedPath>,
    pub secret: Vec<ResolvedPath>,
    pub state_dir: Option<ResolvedPath>,
}

impl Place {
    /// The paths of `task`, the working directory `cwd` when given (typed, as the session holds
    /// it) else the task's: roots and the working directory from `/`, the rest from the
    /// working directory.
    pub fn resolve(resolver: &mut Resolver, task: &Task, cwd: Option<&Path>) -> Place {
        let root = Path::new("/");
        let cwd = resolver.resolve(root, cwd.unwrap_or(Path::new(&task.cwd)));
        let mut from_cwd = |p: &String| resolver.resolve(cwd.as_path(), Path::new(p));
        let protected = task.protected.iter().map(&mut from_cwd).collect();
        let secret = task.secret.iter().map(&mut from_cwd).collect();
        let state_dir = task.state_dir.as_ref().map(&mut from_cwd);
        let mut from_root = |p: &String| resolver.resolve(root, Path::new(p));
        Place {
            roots: task.allowed_roots.iter().map(&mut from_root).collect(),
            workspace: task.workspace.as_ref().map(&mut from_root),
            protected,
            secret,
            state_dir,
            cwd,
        }
    }

    /// `task` with these paths in it, as the policy judges them and the ledger records them.
    pub fn project(&self, task: &Task) -> Task {
        let strings = |paths: &[ResolvedPath]| paths.iter().map(ResolvedPath::projection).collect();
        Task {
            allowed_roots: strings(&self.roots),
            workspace: self.workspace.as_ref().map(ResolvedPath::projection),
            protected: strings(&self.protected),
            secret: strings(&self.secret),
            state_dir: self.state_dir.as_ref().map(ResolvedPath::projection),
            cwd: self.cwd.projection(),
            ..task.clone()
        }
    }
}

/// The task with its working directory, roots and workspace resolved.
pub fn resolve_task(task: &Task) -> Task {
    Place::resolve(&mut Resolver::default(), task, None).project(task)
}

/// The paths a call changes beyond its path arguments (the policy's `Task::implied`): the
/// tool's own answer ([`Tool::implied_paths`](codaris_tools::Tool::implied_paths): a patch's
/// files, a `.git` inside a tree `rm -r` removes), found on disk and resolved like arguments.
pub fn implied_paths(tool: &ToolId, cwd: &Path, args: &Value, read: &ReadArgs) -> Vec<Implied> {
    use codaris_tools::Tool as _;
    match tool.builtin() {
        Some(BuiltinTool::ApplyPatch) => {
            codaris_tools::files::ApplyPatch.implied_paths(cwd, args, read)
        }
        Some(BuiltinTool::Rm) => codaris_tools::files::Rm.implied_paths(cwd, args, read),
        _ => Vec::new(),
    }
}

/// What of a call's arguments its tool reads once, when the call is prepared
/// ([`Tool::read_args`](codaris_tools::Tool::read_args): `apply_patch`'s patch); it travels
/// with the call to its run and its card's preview.
pub fn read_args(tool: &ToolId, args: &Value) -> ReadArgs {
    use codaris_tools::Tool as _;
    match tool.builtin() {
        Some(BuiltinTool::ApplyPatch) => codaris_tools::files::ApplyPatch.read_args(args),
        _ => ReadArgs::Nothing,
    }
}

/// The arguments with every path argument of the tool's spec resolved; other values untouched.
/// Arguments that are not an object are returned as they are (the policy refuses them).
pub fn resolve_args(tool: &ToolId, spec: Option<&ExternalSpec>, cwd: &Path, args: &Value) -> Value {
    resolve_args_with(&mut Resolver::default(), tool, spec, cwd, args)
}

/// [`resolve_args`] with the call's own resolver.
pub fn resolve_args_with(
    resolver: &mut Resolver,
    tool: &ToolId,
    spec: Option<&ExternalSpec>,
    cwd: &Path,
    args: &Value,
) -> Value {
    let Value::Object(map) = args else {
        return args.clone();
    };
    let builtin = tool.builtin().map(builtin_spec);
    let names: Vec<String> = match (builtin, spec) {
        (Some(spec), _) => spec.paths.iter().map(|p| p.name.to_string()).collect(),
        (None, Some(spec)) => spec.paths.iter().map(|p| p.name.to_string()).collect(),
        (None, None) => Vec::new(),
    };
    // An MCP tool may name a file by URI where a built-in takes a path: judged as the path.
    let external = builtin.is_none() && spec.is_some();
    let mut resolve = |path: &str| match file_uri_path(path).filter(|_| external) {
        Some(path) => resolver.resolve_str(cwd, &path),
        None => resolver.resolve_str(cwd, path),
    };
    let mut resolved = map.clone();
    for name in names {
        if let Some(value) = resolved.get_mut(&name) {
            match value {
                Value::String(path) => *path = resolve(path),
                Value::Array(items) => {
                    for item in items {
                        if let Value::String(path) = item {
                            *path = resolve(path);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    Value::Object(resolved)
}

/// The paths an MCP call's arguments name by what they are (see [`crate::mcp::paths`]), each
/// resolved like a path argument, for the policy to judge (`ImpliedBy::ArgumentPath`,
/// `FileUri`), and the arguments it cannot judge (`ImpliedBy::Unjudged`, which refuses the
/// call). A path longer than the kernel takes is judged by its lexical form when that is short
/// enough (a server that normalises it first could open that), and left out when even that is
/// too long: nothing could open it.
pub fn argument_paths(marks: &ArgumentMarks, cwd: &Path, args: &Value) -> Vec<Implied> {
    argument_paths_with(&mut Resolver::default(), marks, cwd, args)
}

/// [`argument_paths`] with the call's own resolver: a path its spec's path arguments resolved
/// already is not resolved again.
pub fn argument_paths_with(
    resolver: &mut Resolver,
    marks: &ArgumentMarks,
    cwd: &Path,
    args: &Value,
) -> Vec<Implied> {
    let mut implied: Vec<Implied> = Vec::new();
    for found in crate::mcp::paths::argument_paths(marks, args) {
        let arg = Some(found.pointer);
        let (path, by) = match found.named {
            Named::Path(path) => match resolve_bounded(resolver, cwd, &path) {
                Some(path) => (path, ImpliedBy::ArgumentPath),
                None => continue,
            },
            Named::Uri(path) => match resolve_bounded(resolver, cwd, &path) {
                Some(path) => (path, ImpliedBy::FileUri),
                None => continue,
            },
            Named::Unjudged(why) => (found.raw, ImpliedBy::Unjudged(why)),
        };
        let one = Implied { path, by, arg };
        if !implied.contains(&one) {
            implied.push(one);
        }
    }
    implied
}

/// [`resolve_path`] through dangling links too, for a path of any length: one longer than
/// `PATH_MAX` is first normalised lexically against `cwd`, and `None` when it is still too long.
fn resolve_bounded(resolver: &mut Resolver, cwd: &Path, path: &str) -> Option<String> {
    if path.len() <= MAX_PATH_BYTES {
        return Some(through_dangling_links(resolver.resolve_str(cwd, path)));
    }
    let joined = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{}/{path}", cwd.display())
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    let lexical = format!("/{}", parts.join("/"));
    (lexical.len() <= MAX_PATH_BYTES)
        .then(|| through_dangling_links(resolver.resolve_str(cwd, &lexical)))
}

/// How many dangling links one path may pass through, as the kernel's `ELOOP` limit.
const MAX_LINKS: usize = 40;

/// `resolved` (every existing link followed) with a dangling link in it followed as well: an
/// MCP server that writes `proj/link` where `link -> /etc/cron.d/x` creates the target, so the
/// target is what is judged. Only the first component that does not resolve can be one (nothing
/// exists beneath it). A loop, or more than [`MAX_LINKS`] links, is judged where it stopped.
fn through_dangling_links(resolved: String) -> String {
    let mut path = std::path::PathBuf::from(&resolved);
    for _ in 0..MAX_LINKS {
        let mut prefix = std::path::PathBuf::new();
        let mut components = path.components();
        let mut next = None;
        for component in components.by_ref() {
            prefix.push(component);
            match std::fs::symlink_metadata(&prefix) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    next = std::fs::read_link(&prefix).ok();
                    break;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let Some(target) = next else {
            break;
        };
        let parent = prefix.parent().unwrap_or(Path::new("/"));
        let rest = components.as_path();
        let joined = parent.join(target).join(rest);
        path = resolve_existing(&joined);
    }
    path.to_string_lossy().into_owned()
}

/// The file-system resolutions made on this thread, for the tests that count them: one call
/// resolves each of its paths once.
#[cfg(test)]
pub(crate) mod counted {
    use std::cell::RefCell;
    use std::path::{Path, PathBuf};

    thread_local! {
        static RESOLVED: RefCell<Vec<PathBuf>> = const { RefCell::new(Vec::new()) };
    }

    pub(crate) fn note(path: &Path) {
        RESOLVED.with(|seen| seen.borrow_mut().push(path.to_path_buf()));
    }

    /// The paths resolved since the last call, in order, and forgets them.
    pub(crate) fn take() -> Vec<PathBuf> {
        RESOLVED.with(|seen| std::mem::take(&mut *seen.borrow_mut()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use std::os::unix::fs::symlink;

    #[test]
    fn symlinks_out_of_the_root_are_followed() -> std::io::Result<()> {
        let temp = tempfile::tempdir()?;
        let root = temp.path().canonicalize()?;
        let proj = root.join("proj");
        let outside = root.join("outside");
        std::fs::create_dir_all(&proj)?;
        std::fs::create_dir_all(&outside)?;
        symlink(&outside, proj.join("link"))?;

        let through = resolve_path(&proj, "link/new.txt");
        assert_eq!(through, outside.join("new.txt").display().to_string());
        let dotdot = resolve_path(&proj, "link/../escape");
        assert_eq!(dotdot, root.join("escape").display().to_string());
        let plain = resolve_path(&proj, "src/main.rs");
        assert_eq!(plain, proj.join("src/main.rs").display().to_string());
        assert_eq!(resolve_path(&proj, ""), "");
        assert_eq!(resolve_path(&proj, "a\0b"), "a\0b");
        Ok(())
    }

    #[test]
    fn file_uris_read_as_the_paths_they_name() {
        assert_eq!(
            file_uri_path("file:///etc/passwd"),
            Some("/etc/passwd".to_owned())
        );
        assert_eq!(
            file_uri_path("FILE://localhost/a%20b?x#y"),
            Some("/a b".to_owned())
        );
        assert_eq!(file_uri_path("file://host"), Some("/".to_owned()));
        assert_eq!(file_uri_path("https://x/a"), None);
        assert_eq!(file_uri_path("fil"), None);
        assert_eq!(file_uri_path("/plain"), None);
    }

    #[test]
    fn an_mcp_calls_uris_are_found_at_any_depth_and_its_path_args_converted() -> std::io::Result<()>
    {
        let temp = tempfile::tempdir()?;
        let root = temp.path().canonicalize()?;
        let spec = ExternalSpec {
            paths: vec![codaris_policy::PathArg::new(
                "path",
                codaris_policy::Access::Mutate,
                codaris_policy::PathDefault::Optional,
            )],
            ..ExternalSpec::default()
        };
        let args = json!({
            "path": "file:///etc/shadow",
            "nested": {"list": ["x", "file:///root/.ssh/id_rsa"]},
            "note": "see file:///not/at/start"
        });
        let resolved = resolve_args(&ToolId::parse("fs__write"), Some(&spec), &root, &args);
        assert_eq!(resolved["path"], json!("/etc/shadow"));
        let marks = ArgumentMarks::default();
        let implied = argument_paths(&marks, &root, &args);
        let mut found: Vec<(&str, ImpliedBy, Option<&str>)> = implied
            .iter()
            .map(|i| (i.path.as_str(), i.by, i.arg.as_deref()))
            .collect();
        found.sort_by_key(|f| f.0);
        assert_eq!(
            found,
            vec![
                ("/etc/shadow", ImpliedBy::FileUri, Some("/path")),
                (
                    "/root/.ssh/id_rsa",
                    ImpliedBy::FileUri,
                    Some("/nested/list/1")
                ),
            ]
        );
        // A built-in's path is never read as a URI.
        let builtin = resolve_args(
            &ToolId::parse("write"),
            None,
            &root,
            &json!({"path": "file:///etc/x"}),
        );
        assert_eq!(
            builtin["path"],
            json!(root.join("file:/etc/x").display().to_string())
        );
        Ok(())
    }

    #[test]
    fn only_path_arguments_are_rewritten() -> std::io::Result<()> {
        let temp = tempfile::tempdir()?;
        let root = temp.path().canonicalize()?;
        let args = json!({"path": "a.txt", "content": "link/../x"});
        let resolved = resolve_args(&ToolId::parse("write"), None, &root, &args);
        assert_eq!(
            resolved,
            json!({"path": root.join("a.txt").display().to_string(), "content": "link/../x"})
        );
        assert_eq!(
            resolve_args(&ToolId::parse("write"), None, &root, &json!("a")),
            json!("a")
        );
        Ok(())
    }

    #[test]
    fn argument_paths_are_resolved_through_symlinks_and_unjudged_ones_kept_raw()
    -> std::io::Result<()> {
        let temp = tempfile::tempdir()?;
        let root = temp.path().canonicalize()?;
        let proj = root.join("proj");
        std::fs::create_dir_all(&proj)?;
        std::fs::create_dir_all(root.join("secret"))?;
        symlink(root.join("secret"), proj.join("link"))?;
        symlink(root.join("gone/cron"), proj.join("dangling"))?;
        symlink("loop", proj.join("loop"))?;
        let marks = ArgumentMarks::new(
            false,
            json!({"properties": {"repo_path": {"type": "string"}}}),
            [("HOME", root.display().to_string())],
        );
        let args = json!({
            "repo_path": "link/x",
            "q": "~/.ssh",
            "v": "$NOPE/x",
            "long": format!("/{}{}etc", "a/".repeat(2100), "../".repeat(2100)),
            "huge": format!("/{}", "a/".repeat(3000)),
            "w": [format!("{}/dangling", proj.display()), format!("{}/loop/x", proj.display())],
        });
        let mut implied = argument_paths(&marks, &proj, &args);
        implied.sort_by(|a, b| a.arg.cmp(&b.arg).then(a.path.cmp(&b.path)));
        let shown: Vec<(String, ImpliedBy, String)> = implied
            .into_iter()
            .map(|i| (i.path, i.by, i.arg.unwrap_or_default()))
            .collect();
        let at = |p: &Path| p.display().to_string();
        assert_eq!(
            shown,
            vec![
                (
                    "/etc".to_owned(),
                    ImpliedBy::ArgumentPath,
                    "/long".to_owned()
                ),
                (
                    at(&root.join(".ssh")),
                    ImpliedBy::ArgumentPath,
                    "/q".to_owned()
                ),
                (
                    at(&proj.join("~/.ssh")),
                    ImpliedBy::ArgumentPath,
                    "/q".to_owned()
                ),
                (
                    at(&root.join("secret/x")),
                    ImpliedBy::ArgumentPath,
                    "/repo_path".to_owned()
                ),
                (
                    "$NOPE/x".to_owned(),
                    ImpliedBy::Unjudged(codaris_policy::BadPath::UnknownVariable),
                    "/v".to_owned()
                ),
                (
                    at(&root.join("gone/cron")),
                    ImpliedBy::ArgumentPath,
                    "/w/0".to_owned()
                ),
                (
                    at(&proj.join("loop/x")),
                    ImpliedBy::ArgumentPath,
                    "/w/1".to_owned()
                ),
            ]
        );
        Ok(())
    }
}
