//! The interpreters and runtimes commands start through, found where the daemon finds them.
//!
//! A `nextflow` launcher runs the Java that `JAVA_HOME` names or the `java` on `PATH`; a
//! script's `python3` may be a pyenv shim under `~/.pyenv` or a SDKMAN candidate under
//! `~/.sdkman`. Outside the readable set, the program dies with an error that does not say
//! "sandbox" (Python's "path configuration" dump), so each is resolved through its symlinks and
//! its installation (the directory above its `bin`, or pyenv's `shims`) made readable; `codaris doctor` names any
//! that commands still cannot read, with the key to set.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The programs looked for on `PATH`.
pub const RUNTIMES: [&str; 3] = ["java", "python3", "Rscript"];

/// One runtime as the daemon's environment finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runtime {
    pub program: &'static str,
    /// The file it resolves to, symlinks followed.
    pub resolved: PathBuf,
    /// Its installation: the directory above its `bin` (or pyenv's `shims`).
    pub home: PathBuf,
}

/// [`RUNTIMES`] as `path` (a `PATH` value) and `java_home` (`JAVA_HOME`, which wins for
/// `java`) find them; those not found are left out. An installation that would hold
/// `user_home` (a `python3` in `~/bin`) or be `/` is cut down to the program's own directory.
pub fn runtimes(
    path: Option<&OsStr>,
    java_home: Option<&Path>,
    user_home: Option<&Path>,
) -> Vec<Runtime> {
    RUNTIMES
        .iter()
        .filter_map(|program| {
            let from_home = (*program == "java")
                .then(|| java_home.map(|home| home.join("bin/java")))
                .flatten()
                .filter(|java| java.is_file());
            let found = from_home.or_else(|| on_path(program, path?))?;
            let resolved = std::fs::canonicalize(found).ok()?;
            let bin = resolved.parent()?;
            let above = bin.parent().filter(|_| {
                ["bin", "shims"]
                    .map(OsStr::new)
                    .contains(&bin.file_name().unwrap_or_default())
            });
            let too_wide = |dir: &Path| {
                dir == Path::new("/") || user_home.is_some_and(|home| home.starts_with(dir))
            };
            let home = match above {
                Some(above) if !too_wide(above) => above.to_path_buf(),
                _ if !too_wide(bin) => bin.to_path_buf(),
                _ => return None,
            };
            Some(Runtime {
                program,
                resolved,
                home,
            })
        })
        .collect()
}

/// [`runtimes`] of the daemon's own environment.
pub fn daemon_runtimes() -> Vec<Runtime> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
    };
    runtimes(
        std::env::var_os("PATH").as_deref(),
        absolute("JAVA_HOME").as_deref(),
        absolute("HOME").as_deref(),
    )
}

fn on_path(program: &str, path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Whether a command may read `path` with no root granted, given `paths`.
pub fn readable_by_commands(paths: &super::SandboxPaths, path: &Path) -> bool {
    let grants = super::sandbox::plan(super::sandbox::Request {
        roots: &[],
        roots_access: super::sandbox::Access::Read,
        own: &[],
        paths,
    });
    let Ok(path) = std::fs::canonicalize(path) else {
        return false;
    };
    grants.iter().any(|grant| path.starts_with(&grant.path))
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn a_shim_and_a_linked_java_resolve_to_their_installations() -> TestResult {
        let temp = tempfile::tempdir()?;
        let base = temp.path().canonicalize()?;
        // SDKMAN: `candidates/java/current` links to the installed version.
        let jdk = base.join(".sdkman/candidates/java/17.0.9-tem");
        std::fs::create_dir_all(jdk.join("bin"))?;
        std::fs::write(jdk.join("bin/java"), "")?;
        std::os::unix::fs::symlink(&jdk, base.join(".sdkman/candidates/java/current"))?;
        // pyenv: a shim script in `~/.pyenv/shims`.
        std::fs::create_dir_all(base.join(".pyenv/shims"))?;
        std::fs::write(base.join(".pyenv/shims/python3"), "#!/bin/sh\n")?;
        let path = std::env::join_paths([
            base.join(".pyenv/shims"),
            base.join(".sdkman/candidates/java/current/bin"),
        ])?;
        let found = runtimes(Some(&path), None, Some(&base.join("me")));
        assert_eq!(
            found,
            vec![
                Runtime {
                    program: "java",
                    resolved: jdk.join("bin/java"),
                    home: jdk.clone(),
                },
                Runtime {
                    program: "python3",
                    resolved: base.join(".pyenv/shims/python3"),
                    home: base.join(".pyenv"),
                },
            ]
        );
        // `JAVA_HOME` wins over `PATH`.
        let other = base.join("jdk21");
        std::fs::create_dir_all(other.join("bin"))?;
        std::fs::write(other.join("bin/java"), "")?;
        assert_eq!(runtimes(Some(&path), Some(&other), None)[0].home, other);
        // A `python3` in `~/bin` opens `~/bin`, not the whole home.
        std::fs::create_dir_all(base.join("me/bin"))?;
        std::fs::write(base.join("me/bin/python3"), "")?;
        let mine = runtimes(
            Some(base.join("me/bin").as_os_str()),
            None,
            Some(&base.join("me")),
        );
        assert_eq!(mine[0].home, base.join("me/bin"));
        // Where even its own directory holds the home, nothing is opened.
        let holding = runtimes(
            Some(base.join("me/bin").as_os_str()),
            None,
            Some(&base.join("me/bin/home")),
        );
        assert!(holding.is_empty(), "{holding:?}");
        Ok(())
    }

    #[test]
    fn what_lies_outside_the_readable_set_is_not_readable() -> TestResult {
        let temp = tempfile::tempdir()?;
        let home = temp.path().canonicalize()?;
        std::fs::create_dir_all(home.join(".sdkman"))?;
        let paths = super::super::SandboxPaths::default();
        assert!(!readable_by_commands(&paths, &home.join(".sdkman")));
        assert!(readable_by_commands(&paths, Path::new("/usr/bin")));
        let paths = super::super::SandboxPaths {
            readable: vec![home.join(".sdkman")],
            ..super::super::SandboxPaths::default()
        };
        assert!(readable_by_commands(&paths, &home.join(".sdkman")));
        Ok(())
    }
}
