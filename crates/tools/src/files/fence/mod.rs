//! Opening beneath a root: the execution half of the fence.
//!
//! The daemon resolved symlinks before the policy decided; by the time a tool runs, a name may
//! point elsewhere. So nothing here touches a path through the ambient file system: each path is
//! located under its allowed root, the root is opened as a capability (`cap_std::fs::Dir`), and
//! every operation is relative to it. cap-std refuses `..` above the root and symlinks leading
//! out of it at every step, which closes the time-of-check to time-of-use gap.

pub(crate) mod open;
pub(crate) mod scope;
pub(crate) mod system;
#[cfg(test)]
mod tests;

use std::io;
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, File, MetadataExt};
use serde_json::Value;

use crate::context::ToolContext;
use crate::tool::ToolError;

/// A path located beneath one allowed root, with that root open as a capability.
#[derive(Debug)]
pub(crate) struct Beneath {
    /// The root directory, opened once; every operation goes through it.
    pub dir: Dir,
    /// The path relative to the root (`.` for the root itself).
    pub rel: PathBuf,
    /// The absolute path as the model named it (normalised), for messages and listings.
    pub abs: PathBuf,
    /// The root it lies in.
    pub root: PathBuf,
    pub tool: &'static str,
}

impl Beneath {
    /// Locates `path` (as the model wrote it, relative to the working directory) under the
    /// fence and opens its root.
    pub fn locate(ctx: &ToolContext, tool: &'static str, path: &str) -> Result<Self, ToolError> {
        if path.contains('\0') {
            return Err(ToolError::model(format!(
                "{tool}: the path contains a NUL byte, which no file name can hold"
            )));
        }
        if path.is_empty() {
            return Err(ToolError::model(format!("{tool}: the path is empty")));
        }
        let joined = ctx.absolute(path);
        if ctx.fence.is_secret(&joined) {
            return Err(ToolError::model(format!(
                "{tool}: `{path}` holds Codaris's credentials, which no tool may read or change"
            )));
        }
        let Some((root, rel)) = ctx.fence.locate(&joined) else {
            return Err(ToolError::model(format!(
                "{tool}: `{path}` is outside every allowed root; files can only be used beneath {}",
                roots_list(ctx)
            )));
        };
        let root = root.to_path_buf();
        #[expect(
            clippy::disallowed_methods,
            reason = "the fence opens the allowed root itself; every other open is relative to it"
        )]
        let dir = Dir::open_ambient_dir(&root, cap_std::ambient_authority())
            .map_err(|source| ToolError::Fatal { tool, source })?;
        let abs = root.join(&rel);
        let rel = if rel.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            rel
        };
        let at = Self {
            dir,
            abs,
            rel,
            root,
            tool,
        };
        // A root may hold a secret (an explicit root above the state directory): a symlink
        // beneath the root that leads into it is refused by where it leads.
        if ctx.fence.has_secrets()
            && let Some(real) = at.real()
            && ctx.fence.is_secret(&real)
        {
            return Err(ToolError::model(format!(
                "{tool}: `{path}` leads to `{}`, which holds Codaris's credentials or state, which no tool may read or change",
                real.display()
            )));
        }
        Ok(at)
    }

    /// The absolute path this one leads to beneath its root, every symlink that exists
    /// followed (a dangling one by its target's name, a bounded number of times); the part that
    /// does not exist yet is kept as written. `None` when it leads out of the root or loops,
    /// which the operation itself then refuses.
    pub fn real(&self) -> Option<PathBuf> {
        self.real_of(&self.rel)
    }

    /// Where the name itself lies: its parent's symlinks followed, not its own (what `rm` and
    /// `mv` act on).
    pub fn real_name(&self) -> Option<PathBuf> {
        let name = self.rel.file_name()?;
        let parent = self.parent_rel().unwrap_or(Path::new("."));
        self.real_of(parent).map(|p| p.join(name))
    }

    /// Locates a path the tool will change, refusing one inside `.git` (any case), a
    /// protected or a secret path, as written or where its symlinks lead beneath the root.
    pub fn locate_change(
        ctx: &ToolContext,
        tool: &'static str,
        path: &str,
    ) -> Result<Self, ToolError> {
        let at = Self::locate(ctx, tool, path)?;
        at.refuse_protected(ctx)?;
        Ok(at)
    }

    /// The execution half of the protected-path rule: the decision checked the same, and this
    /// holds even if it did not (a symlink swapped since, an older record).
    pub fn refuse_protected(&self, ctx: &ToolContext) -> Result<(), ToolError> {
        let (name, real) = (self.real_name(), self.real());
        let hit = [Some(&self.abs), name.as_ref(), real.as_ref()]
            .into_iter()
            .flatten()
            .find(|p| ctx.fence.is_protected(p));
        match hit {
            Some(path) => Err(ToolError::model(format!(
                "{}: `{}` leads to `{}`, inside `.git` or Codaris's own state, which no tool may change",
                self.tool,
                self.shown(ctx),
                path.display()
            ))),
            None => Ok(()),
        }
    }

    fn real_of(&self, rel: &Path) -> Option<PathBuf> {
        let mut current = rel.to_path_buf();
        let mut tail: Vec<std::ffi::OsString> = Vec::new();
        for _ in 0..MAX_HOPS {
            if let Ok(real) = self.dir.canonicalize(&current) {
                let mut out = self.root.join(real);
                out.extend(tail.iter().rev());
                return crate::context::normalize(&out);
            }
            if let Ok(target) = self.dir.read_link_contents(&current) {
                // A dangling link: what it names is where a write through it would land.
                let parent = current.parent().unwrap_or(Path::new(""));
                current = beneath_join(parent, &target)?;
                continue;
            }
            let name = current.file_name()?.to_owned();
            tail.push(name);
            current = match current.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
        }
        None
    }

    pub fn is_root(&self) -> bool {
        self.rel == Path::new(".")
    }

    /// The path as shown to the model: relative to the working directory when beneath it.
    pub fn shown(&self, ctx: &ToolContext) -> String {
        shown(ctx, &self.abs)
    }

    /// Turns an I/O error on this path into the sentence the model reads, or a fatal error
    /// when the model could do nothing about it.
    pub fn err(&self, ctx: &ToolContext, error: io::Error) -> ToolError {
        io_error(self.tool, &self.shown(ctx), error)
    }

    /// The parent directory relative to the root, when there is one below the root.
    pub fn parent_rel(&self) -> Option<&Path> {
        self.rel.parent().filter(|p| !p.as_os_str().is_empty())
    }

    /// A path below this one, relative to the root (`join("")` would add a trailing `/`).
    pub fn rel_join(&self, below: &Path) -> PathBuf {
        if below.as_os_str().is_empty() {
            self.rel.clone()
        } else {
            self.rel.join(below)
        }
    }

    /// A path below this one, absolute.
    pub fn abs_join(&self, below: &Path) -> PathBuf {
        if below.as_os_str().is_empty() {
            self.abs.clone()
        } else {
            self.abs.join(below)
        }
    }
}

/// How many symlinks [`Beneath::real`] follows by name before it gives up (Linux's own limit).
const MAX_HOPS: usize = 40;

/// `target` (a symlink's contents) taken from `parent`, both relative to the root; `None` when
/// it is absolute or climbs above the root.
fn beneath_join(parent: &Path, target: &Path) -> Option<PathBuf> {
    if target.is_absolute() {
        return None;
    }
    let mut out = PathBuf::new();
    for c in parent.components().chain(target.components()) {
        match c {
            std::path::Component::Normal(part) => out.push(part),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            std::path::Component::RootDir | std::path::Component::Prefix(_) => return None,
        }
    }
    Some(if out.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        out
    })
}

/// The absolute path as shown to the model.
pub(crate) fn shown(ctx: &ToolContext, abs: &Path) -> String {
    match abs.strip_prefix(&ctx.cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => abs.display().to_string(),
    }
}

fn roots_list(ctx: &ToolContext) -> String {
    let roots: Vec<String> = ctx
        .fence
        .roots()
        .iter()
        .map(|r| format!("`{}`", r.display()))
        .collect();
    if roots.is_empty() {
        "no root (none is configured)".to_owned()
    } else {
        roots.join(", ")
    }
}

/// An I/O error as a tool error: what the model can act on is a model error, the rest fatal.
pub(crate) fn io_error(tool: &'static str, shown: &str, error: io::Error) -> ToolError {
    use io::ErrorKind as K;
    let what = match error.kind() {
        K::NotFound => "does not exist".to_owned(),
        // cap-std reports a `..` or a symlink leading out of the root as permission denied.
        K::PermissionDenied => {
            "cannot be used: permission denied, or it leads outside its allowed root through a symlink or `..`"
                .to_owned()
        }
        K::CrossesDevices => "leads outside its allowed root".to_owned(),
        K::AlreadyExists => "already exists".to_owned(),
        K::IsADirectory => "is a directory".to_owned(),
        K::NotADirectory => "is not a directory (or a part of it is a file)".to_owned(),
        K::DirectoryNotEmpty => "is a directory that is not empty".to_owned(),
        K::InvalidInput | K::InvalidFilename | K::ReadOnlyFilesystem
        | K::StorageFull | K::QuotaExceeded | K::FileTooLarge | K::ResourceBusy
        | K::ExecutableFileBusy | K::TooManyLinks | K::InvalidData => error.to_string(),
        _ => {
            // ELOOP from a no-follow open surfaces as an uncategorised error.
            if error.raw_os_error() == Some(40) {
                "is a symlink loop or a symlink that cannot be followed here".to_owned()
            } else {
                return ToolError::Fatal {
                    tool,
                    source: error,
                };
            }
        }
    };
    ToolError::model(format!("{tool}: `{shown}` {what}"))
}

/// Makes sure `rel` is a directory beneath the root, creating it and its parents if missing.
/// Opening comes first: `create_dir_all` reports a symlink leading out as "already exists",
/// while the open says what is really wrong.
pub(crate) fn ensure_dir(dir: &cap_std::fs::Dir, rel: &Path) -> io::Result<()> {
    match dir.open_dir(rel) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            dir.create_dir_all(rel)?;
            dir.open_dir(rel).map(drop)
        }
        Err(e) => Err(e),
    }
}

/// Refuses to write through a file that has other hard links: one of them may lie outside the
/// roots, and writing would change it there.
pub(crate) fn refuse_hard_links(
    ctx: &ToolContext,
    at: &Beneath,
    file: &File,
) -> Result<(), ToolError> {
    let meta = file.metadata().map_err(|e| at.err(ctx, e))?;
    if meta.is_file() && meta.nlink() > 1 {
        return Err(ToolError::model(format!(
            "{}: `{}` has {} hard links; writing would also change the other names, which may be outside the allowed roots, so it is refused",
            at.tool,
            at.shown(ctx),
            meta.nlink()
        )));
    }
    Ok(())
}

/// A required string argument.
pub(crate) fn str_arg<'a>(
    tool: &'static str,
    args: &'a Value,
    name: &str,
) -> Result<&'a str, ToolError> {
    match args.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(ToolError::model(format!(
            "{tool}: `{name}` must be a string"
        ))),
        None => Err(ToolError::model(format!("{tool}: `{name}` is required"))),
    }
}

/// An optional string argument.
pub(crate) fn opt_str<'a>(
    tool: &'static str,
    args: &'a Value,
    name: &str,
) -> Result<Option<&'a str>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ToolError::model(format!(
            "{tool}: `{name}` must be a string"
        ))),
    }
}

/// An optional boolean argument.
pub(crate) fn opt_bool(tool: &'static str, args: &Value, name: &str) -> Result<bool, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ToolError::model(format!(
            "{tool}: `{name}` must be true or false"
        ))),
    }
}

/// An optional non-negative integer argument.
pub(crate) fn opt_usize(
    tool: &'static str,
    args: &Value,
    name: &str,
) -> Result<Option<usize>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                ToolError::model(format!("{tool}: `{name}` must be a non-negative integer"))
            }),
    }
}

/// The `path` argument, defaulting to the working directory for the tools whose policy spec
/// says so.
pub(crate) fn path_or_cwd<'a>(tool: &'static str, args: &'a Value) -> Result<&'a str, ToolError> {
    Ok(opt_str(tool, args, "path")?.unwrap_or("."))
}
