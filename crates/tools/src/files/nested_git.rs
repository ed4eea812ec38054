//! Finding a `.git` inside a tree before it is removed: a recursive removal of a directory that
//! holds a repository takes the repository's history and hooks with it, so it is protected like
//! `.git` itself. The daemon scans when it decides; `rm` scans again when it runs.

use std::path::{Path, PathBuf};

use cap_std::fs::Dir;

/// How many entries a scan visits before it gives up: enough for a large `node_modules`, few
/// enough that deciding stays well under a second on a local disk.
pub const MAX_SCANNED: usize = 200_000;

/// What a scan of a tree found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitScan {
    /// No entry named `.git`, in any letter case, anywhere in the tree.
    Clean,
    /// The first `.git` met (a directory, or the file a worktree or submodule has), relative
    /// to the scanned directory.
    Found(PathBuf),
    /// The tree holds more than [`MAX_SCANNED`] entries; what it holds is unknown.
    TooLarge,
}

/// Scans the directory at the absolute path `dir` (not following symlinks below it, which a
/// recursive removal does not follow either). A path that is not a directory is `Clean`: it
/// holds nothing. An entry that cannot be read is skipped: the removal cannot take it either.
pub fn scan_for_git(dir: &Path) -> GitScan {
    match crate::files::fence::system::own_dir(dir) {
        Ok(opened) => scan_dir(&opened, MAX_SCANNED),
        Err(_) => GitScan::Clean,
    }
}

/// Scans an open directory, visiting at most `limit` entries.
pub(crate) fn scan_dir(dir: &Dir, limit: usize) -> GitScan {
    let mut pending: Vec<(Dir, PathBuf)> = match dir.try_clone() {
        Ok(d) => vec![(d, PathBuf::new())],
        Err(_) => return GitScan::Clean,
    };
    let mut seen = 0usize;
    while let Some((current, rel)) = pending.pop() {
        let Ok(entries) = current.entries() else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > limit {
                return GitScan::TooLarge;
            }
            let name = entry.file_name();
            if name.as_encoded_bytes().eq_ignore_ascii_case(b".git") {
                return GitScan::Found(rel.join(name));
            }
            // The entry's own type: a symlink to a directory is not descended into.
            if entry.file_type().is_ok_and(|t| t.is_dir())
                && let Ok(sub) = entry.open_dir()
            {
                pending.push((sub, rel.join(name)));
            }
        }
    }
    GitScan::Clean
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "tests set up and inspect files directly"
)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_git_is_found_in_any_case_at_any_depth_but_not_through_symlinks()
    -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let tree = temp.path().join("proj");
        std::fs::create_dir_all(tree.join("a/b/repo/.GiT/hooks"))?;
        assert_eq!(
            scan_for_git(&tree),
            GitScan::Found(PathBuf::from("a/b/repo/.GiT"))
        );

        let clean = temp.path().join("clean");
        std::fs::create_dir_all(clean.join("src/.github"))?;
        std::fs::write(clean.join("src/a.git"), "")?;
        // A symlink to a repository elsewhere: removing the link does not remove the repository.
        symlink(&tree, clean.join("link"))?;
        assert_eq!(scan_for_git(&clean), GitScan::Clean);

        // A worktree's or submodule's `.git` is a file; it is found too.
        std::fs::write(clean.join("src/.git"), "gitdir: ../x")?;
        assert_eq!(
            scan_for_git(&clean),
            GitScan::Found(PathBuf::from("src/.git"))
        );
        assert_eq!(scan_for_git(&clean.join("src/a.git")), GitScan::Clean);
        Ok(())
    }

    #[test]
    fn a_tree_over_the_limit_is_unknown() -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        for i in 0..5 {
            std::fs::write(temp.path().join(format!("f{i}")), "")?;
        }
        let dir = Dir::open_ambient_dir(temp.path(), cap_std::ambient_authority())?;
        assert_eq!(scan_dir(&dir, 4), GitScan::TooLarge);
        assert_eq!(scan_dir(&dir, 5), GitScan::Clean);
        Ok(())
    }
}
