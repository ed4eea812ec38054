//! What the sandbox refused a command, told in its result: which path, and how to allow it.
//!
//! A denied open reaches the command as `EACCES` (Landlock) or `EROFS` (the read-only `.git`),
//! and the program prints it in its own words; Python's "path configuration" dump or a Java
//! stack does not tell a person that a setting would fix it. So the usual shapes are read back
//! from the command's stderr ([`refused_paths`]: sh, bash, coreutils, Python, Java), and each
//! path the sandbox plan does not grant gets one line naming it and the key that opens it
//! ([`explain`]). A path the plan grants was refused by its mode, not the sandbox: no line.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::sandbox::{Access, Grant, SandboxPaths};

/// The most lines one result gets.
const MOST: usize = 5;

/// The reasons a program prints after (or before) the path.
const REASONS: [&str; 2] = ["Permission denied", "Read-only file system"];

/// What the sandbox gave one command, kept to explain its refusals.
#[derive(Debug, Clone)]
pub(crate) struct SandboxView {
    pub(crate) grants: Arc<[Grant]>,
    pub(crate) paths: Arc<SandboxPaths>,
    pub(crate) cwd: PathBuf,
}

/// The paths `stderr` says were refused, in order, each once.
pub(crate) fn refused_paths(stderr: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for line in stderr.lines() {
        if let Some(path) = refused_path(line.trim_end())
            && !path.is_empty()
            && !paths.contains(&path)
        {
            paths.push(path);
        }
    }
    paths
}

/// The path of one line, if it reports a refusal.
fn refused_path(line: &str) -> Option<String> {
    // Java: `java.nio.file.AccessDeniedException: /etc/shadow`,
    // `java.io.FileNotFoundException: /etc/shadow (Permission denied)`,
    // `java.nio.file.FileSystemException: /p/.git/x: Read-only file system`.
    if let Some((_, rest)) = line.split_once("AccessDeniedException: ") {
        return Some(rest.trim().to_owned());
    }
    if let Some((_, rest)) = line.split_once("FileNotFoundException: ") {
        return rest
            .strip_suffix(" (Permission denied)")
            .map(|path| path.to_owned());
    }
    // Python: `PermissionError: [Errno 13] Permission denied: '/etc/shadow'`,
    // `OSError: [Errno 30] Read-only file system: '.git/hooks/p'`.
    if line.contains("[Errno ") {
        let after = REASONS
            .iter()
            .find_map(|reason| line.split_once(&format!("{reason}: ")))?
            .1;
        return quoted(after).or_else(|| Some(after.to_owned()));
    }
    // sh, bash, coreutils: `<program>: [<where>: ]<what>: <reason>`.
    let before = REASONS
        .iter()
        .find_map(|reason| line.strip_suffix(&format!(": {reason}")))?;
    if let Some(path) = quoted(before) {
        // `touch: cannot touch '/root/x'`, `mkdir: cannot create directory ‘/root/d’`.
        return Some(path);
    }
    let last = before.rsplit(": ").next()?;
    // dash: `sh: 2: cannot create /root/y`.
    let path = last.strip_prefix("cannot create ").unwrap_or(last);
    // The program alone (`ls: Permission denied`) names no path.
    (before.contains(": ")).then(|| path.to_owned())
}

/// The last text between quotes ('…' or ‘…’) in `text`.
fn quoted(text: &str) -> Option<String> {
    for (open, close) in [('\'', '\''), ('‘', '’')] {
        if let Some(end) = text.rfind(close) {
            let start = text[..end].rfind(open)?;
            if start < end {
                return Some(text[start + open.len_utf8()..end].to_owned());
            }
        }
    }
    None
}

/// One line per refused path the sandbox explains, for the result.
pub(crate) fn explain(stderr: &str, view: &SandboxView) -> String {
    let mut out = String::new();
    for shown in refused_paths(stderr).iter().take(MOST) {
        if let Some(line) = explain_one(shown, view) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

fn explain_one(shown: &str, view: &SandboxView) -> Option<String> {
    let path = crate::context::normalize(&view.cwd.join(shown))?;
    let path = crate::context::resolve_existing(&path);
    let prefix = format!("note: the sandbox refused `{shown}`:");
    if path
        .components()
        .any(|part| part.as_os_str().eq_ignore_ascii_case(".git"))
    {
        return Some(format!(
            "{prefix} `.git` is read-only to commands (hooks and config planted there would run outside the sandbox)"
        ));
    }
    let hidden = view
        .paths
        .hidden
        .iter()
        .map(|p| crate::context::resolve_existing(p))
        .chain(super::sandbox::etc_secrets(Path::new("/etc")));
    if hidden.into_iter().any(|secret| path.starts_with(&secret)) {
        return Some(format!(
            "{prefix} it is protected and no setting opens it to commands"
        ));
    }
    let granted = view
        .grants
        .iter()
        .filter(|grant| path.starts_with(&grant.path))
        .map(|grant| grant.access)
        .max();
    match granted {
        None => Some(format!(
            "{prefix} to let commands read it, add it (or a directory above it) to `tools.sandbox_readable`, or allow a root that holds it"
        )),
        Some(Access::Read) => Some(format!(
            "{prefix} commands may read it but not write it; add a directory above it to `tools.sandbox_writable`, or allow a root that holds it"
        )),
        Some(Access::Write) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Verbatim from the programs (Debian: dash, bash 5, coreutils 9, Python 3, OpenJDK 17),
    /// run as `nobody` or in a read-only bind mount.
    const STDERR: &str = "\
cat: /etc/shadow: Permission denied
touch: cannot touch '/root/x': Permission denied
mkdir: cannot create directory ‘/root/d’: Permission denied
ls: cannot open directory '/root': Permission denied
cp: cannot stat '/root/h': Permission denied
sh: 2: cannot create /root/y: Permission denied
rm: cannot remove '/etc/passwd': Permission denied
sh: 2: /etc/shadow: Permission denied
Traceback (most recent call last):
  File \"<string>\", line 1, in <module>
PermissionError: [Errno 13] Permission denied: '/etc/shadow'
bash: line 1: /root/q: Permission denied
touch: cannot touch '.git/x': Read-only file system
sh: 1: cannot create .git/hooks/pre-commit: Read-only file system
OSError: [Errno 30] Read-only file system: '.git/hooks/p'
cp: cannot create regular file '.git/config2': Read-only file system
java.nio.file.AccessDeniedException: /etc/gshadow
\tat java.base/sun.nio.fs.UnixException.translateToIOException(UnixException.java:90)
java.io.FileNotFoundException: /opt/jdk/lib/modules (Permission denied)
\tat java.base/java.io.FileInputStream.open0(Native Method)
java.nio.file.FileSystemException: /tmp/rotest/.git/hooks/pre-commit: Read-only file system
";

    #[test]
    fn the_usual_shapes_give_their_paths() {
        assert_eq!(
            refused_paths(STDERR),
            [
                "/etc/shadow",
                "/root/x",
                "/root/d",
                "/root",
                "/root/h",
                "/root/y",
                "/etc/passwd",
                "/root/q",
                ".git/x",
                ".git/hooks/pre-commit",
                ".git/hooks/p",
                ".git/config2",
                "/etc/gshadow",
                "/opt/jdk/lib/modules",
                "/tmp/rotest/.git/hooks/pre-commit",
            ]
        );
    }

    #[test]
    fn lines_that_refuse_nothing_give_nothing() {
        for line in [
            "ls: Permission denied",
            "error: permission denied for table users",
            "Permission denied (publickey).",
            "warning: 3 files changed",
        ] {
            assert!(refused_paths(line).is_empty(), "{line}");
        }
    }

    #[test]
    fn each_refusal_is_explained_by_what_the_plan_grants() -> Result<(), Box<dyn std::error::Error>>
    {
        let temp = tempfile::tempdir()?;
        let base = temp.path().canonicalize()?;
        let root = base.join("proj");
        let state = base.join("state");
        let tools = base.join("tools");
        for dir in [&root, &state, &tools] {
            std::fs::create_dir_all(dir)?;
        }
        let view = SandboxView {
            grants: vec![
                Grant {
                    path: root.clone(),
                    access: Access::Write,
                },
                Grant {
                    path: tools.clone(),
                    access: Access::Read,
                },
            ]
            .into(),
            paths: Arc::new(SandboxPaths {
                hidden: vec![state.clone()],
                ..SandboxPaths::default()
            }),
            cwd: root.clone(),
        };
        let stderr = format!(
            "sh: 1: cannot create .GIT/hooks/pre-commit: Read-only file system\n\
             cat: {outside}: Permission denied\n\
             touch: cannot touch '{tools}/x': Permission denied\n\
             cat: {state}/token: Permission denied\n\
             cat: /etc/shadow: Permission denied\n\
             cat: mine: Permission denied\n",
            outside = base.join("other/f").display(),
            tools = tools.display(),
            state = state.display(),
        );
        let lines: Vec<String> = explain(&stderr, &view).lines().map(str::to_owned).collect();
        assert_eq!(lines.len(), 5, "{lines:#?}");
        assert!(lines[0].contains("`.GIT/hooks/pre-commit`: `.git` is read-only"));
        assert!(
            lines[1].contains("`tools.sandbox_readable`"),
            "{}",
            lines[1]
        );
        assert!(lines[1].contains(&base.join("other/f").display().to_string()));
        assert!(
            lines[2].contains("`tools.sandbox_writable`"),
            "{}",
            lines[2]
        );
        assert!(lines[3].contains("protected"), "{}", lines[3]);
        assert!(
            lines[4].contains("`/etc/shadow`: it is protected"),
            "{}",
            lines[4]
        );
        Ok(())
    }
}
