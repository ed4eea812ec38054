//! `nextflow lint` in a sandbox of its own.
//!
//! The server runs outside the daemon's task pools, so it confines the program itself, as the
//! session's commands are confined: Landlock lets it read only the system locations, the path
//! being linted, its own installation (the launcher's directory, `NXF_HOME`, the Java it
//! runs on), and write only a private temporary directory, which is also its working
//! directory (Nextflow writes `.nextflow.log` there). Its environment is an allowlist: the
//! daemon's secrets never reach it. Where the kernel has no Landlock, it runs unconfined, as
//! commands do.

use std::io;
use std::path::{Path, PathBuf};

use codaris_tools::shell::{DEVICES_READABLE, SYSTEM_READABLE};

/// The daemon's variables the program keeps; every other one is dropped.
const PASSED_ENV: [&str; 8] = [
    "PATH",
    "HOME",
    "LANG",
    "TERM",
    "JAVA_HOME",
    "JAVA_CMD",
    "JAVA_OPTS",
    "NXF_OPTS",
];

/// Prepares `command` (the `nextflow` at `program`) to lint `target`: the environment, the
/// private directory (returned: it must outlive the run) and the Landlock ruleset.
pub(super) fn confine(
    command: &mut tokio::process::Command,
    program: &Path,
    target: &Path,
) -> io::Result<tempfile::TempDir> {
    let temp = tempfile::Builder::new().prefix("codaris-lint-").tempdir()?;
    command.env_clear();
    for (key, value) in std::env::vars_os() {
        let name = key.to_string_lossy();
        if PASSED_ENV.contains(&name.as_ref())
            || name.starts_with("LC_")
            || name.starts_with("NXF_")
        {
            command.env(&key, &value);
        }
    }
    command
        .env("TMPDIR", temp.path())
        .env("NXF_TEMP", temp.path())
        .current_dir(temp.path());
    let read = readable(program, target);
    let write = [temp.path().to_path_buf(), PathBuf::from("/dev/null")];
    restrict(command, &read, &write)?;
    Ok(temp)
}

/// What the program may read (and execute), those that exist, symlinks resolved.
fn readable(program: &Path, target: &Path) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let nxf_home = std::env::var_os("NXF_HOME")
        .map(PathBuf::from)
        .or_else(|| home.map(|home| home.join(".nextflow")));
    let java = ["JAVA_HOME", "NXF_JAVA_HOME"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from);
    // A lint of one file may read what it includes beside it.
    let target = if target.is_dir() {
        Some(target.to_path_buf())
    } else {
        target.parent().map(Path::to_path_buf)
    };
    let program = std::fs::canonicalize(program)
        .ok()
        .and_then(|real| real.parent().map(Path::to_path_buf));
    let mut paths: Vec<PathBuf> = SYSTEM_READABLE
        .iter()
        .chain(DEVICES_READABLE.iter())
        .map(PathBuf::from)
        .chain(nxf_home)
        .chain(java)
        .chain(target)
        .chain(program)
        .filter_map(|path| std::fs::canonicalize(path).ok())
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

#[cfg(target_os = "linux")]
#[expect(
    unsafe_code,
    reason = "a process can only confine itself, so this must run in the child between fork and exec"
)]
fn restrict(
    command: &mut tokio::process::Command,
    read: &[PathBuf],
    write: &[PathBuf],
) -> io::Result<()> {
    use landlock::{
        ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, path_beneath_rules,
    };
    let abi = ABI::V5;
    let cannot = |error: landlock::RulesetError| io::Error::other(error.to_string());
    // Best effort: where the kernel has no Landlock, the rules are accepted and not enforced.
    let ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(cannot)?
        .create()
        .map_err(cannot)?
        .add_rules(path_beneath_rules(read, AccessFs::from_read(abi)))
        .map_err(cannot)?
        .add_rules(path_beneath_rules(write, AccessFs::from_all(abi)))
        .map_err(cannot)?;
    let mut ruleset = Some(ruleset);
    // SAFETY: the closure runs in the forked child; the ruleset was built before the fork,
    // `restrict_self` is two system calls (prctl, landlock_restrict_self) and a close, and its
    // error becomes an errno-style `io::Error` without allocating a message.
    unsafe {
        command.pre_exec(move || {
            if let Some(ruleset) = ruleset.take() {
                ruleset
                    .restrict_self()
                    .map_err(|_| io::Error::from(io::ErrorKind::PermissionDenied))?;
            }
            Ok(())
        });
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn restrict(
    _command: &mut tokio::process::Command,
    _read: &[PathBuf],
    _write: &[PathBuf],
) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_reads_the_system_its_program_and_target_and_nothing_of_home() -> io::Result<()> {
        let temp = tempfile::tempdir()?;
        let base = temp.path().canonicalize()?;
        std::fs::create_dir_all(base.join("bin"))?;
        std::fs::create_dir_all(base.join("pipe"))?;
        std::fs::write(base.join("bin/nextflow"), "")?;
        std::fs::write(base.join("pipe/main.nf"), "")?;
        let read = readable(&base.join("bin/nextflow"), &base.join("pipe/main.nf"));
        assert!(read.contains(&base.join("bin")));
        assert!(read.contains(&base.join("pipe")));
        assert!(read.contains(&PathBuf::from("/usr")));
        assert!(!read.contains(&base), "{read:?}");
        Ok(())
    }
}
