//! Git repositories for the tests of tools that run `git` (`worktree_create` and the like).
//!
//! Everything runs the real `git` with a fixed identity and no prompt, and never reads the
//! machine's global configuration for anything a test depends on.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Runs `git -C dir <args>` with a fixed author, and fails the test if it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run git");
    assert!(status.success(), "git {args:?} in {}", dir.display());
}

/// Makes, under `base`, a bare `origin.git` (default branch `main`, one commit holding
/// `README` = `hi\n`) and `repo`, a clone of it; returns the clone's path. `base/seed` is the
/// working tree the first commit was made in.
pub fn origin_and_clone(base: &Path) -> PathBuf {
    let seed = base.join("seed");
    std::fs::create_dir(&seed).expect("create the seed repository");
    git(&seed, &["init", "-q", "-b", "main"]);
    std::fs::write(seed.join("README"), "hi\n").expect("write README");
    git(&seed, &["add", "README"]);
    git(&seed, &["commit", "-q", "-m", "first"]);
    git(base, &["clone", "-q", "--bare", "seed", "origin.git"]);
    git(base, &["clone", "-q", "origin.git", "repo"]);
    base.join("repo")
}
