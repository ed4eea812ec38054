//! A pipeline copied into the session's temp dir, for the nf-core runs that must not change
//! it: nf-core's lint regenerates the container configs in place to compare them (and puts
//! them back), and the offline run edits `.nf-core.yml`. Run on the copy, with the roots
//! read-only, neither touches the person's files, and Nextflow's configuration code cannot
//! either.

use std::io;
use std::path::{Path, PathBuf};

use crate::files::fence::system;

/// What a copy leaves out: what Nextflow and nf-test leave behind, which no check reads.
const LEFT_OUT: [&str; 5] = ["work", ".nextflow", "results", ".nf-test", "null"];
/// The most a copy may hold; a pipeline with more (data kept beside the code) is refused.
pub(crate) const MAX_COPY_BYTES: u64 = 256 * 1024 * 1024;

/// A copy of `pipeline` beneath `scratch`, removed when dropped.
#[derive(Debug)]
pub(crate) struct PipelineCopy {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl PipelineCopy {
    pub(crate) fn new(pipeline: &Path, scratch: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(scratch)?;
        // Real, so the no-follow opens below see no symlink in the directories above.
        let scratch = std::fs::canonicalize(scratch)?;
        let dir = tempfile::Builder::new()
            .prefix("pipeline-")
            .tempdir_in(&scratch)?;
        let name = pipeline
            .file_name()
            .unwrap_or(std::ffi::OsStr::new("pipeline"));
        let path = dir.path().join(name);
        let mut budget = MAX_COPY_BYTES;
        copy_tree(pipeline, &path, &mut budget)?;
        Ok(Self { _dir: dir, path })
    }

    /// `text` with the copy's path written as the pipeline's, for what the model reads.
    pub(crate) fn as_original(&self, text: &str, pipeline: &Path) -> String {
        text.replace(&*self.path.to_string_lossy(), &pipeline.to_string_lossy())
    }
}

/// Copies `from` (a pipeline's real path) into `to`, file by file, each opened through the
/// fence's no-follow open: a symlink anywhere is copied as a link, never read through.
fn copy_tree(from: &Path, to: &Path, budget: &mut u64) -> io::Result<()> {
    std::fs::create_dir(to)?;
    for entry in system::list_own(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if LEFT_OUT.iter().any(|left| name == *left) {
            continue;
        }
        let (source, target) = (entry.path(), to.join(&name));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            // Copied as the link it is: what it points to is read in the sandbox, if at all.
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
        } else if kind.is_dir() {
            copy_tree(&source, &target, budget)?;
        } else if kind.is_file() {
            let size = entry.metadata()?.len();
            *budget = budget.checked_sub(size).ok_or_else(|| {
                io::Error::other(format!(
                    "the pipeline holds more than {} MiB besides its run directories",
                    MAX_COPY_BYTES / (1024 * 1024)
                ))
            })?;
            let mut reader = system::open_own(&source, std::fs::OpenOptions::new().read(true))?;
            let mut writer = system::open_own(
                &target,
                std::fs::OpenOptions::new().write(true).create_new(true),
            )?;
            io::copy(&mut reader, &mut writer)?;
            writer.set_permissions(reader.metadata()?.permissions())?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[expect(clippy::disallowed_methods, reason = "tests read what the copy made")]
mod tests {
    use super::*;

    #[test]
    fn a_copy_leaves_run_directories_out_and_keeps_links_as_links() -> io::Result<()> {
        let temp = tempfile::tempdir()?;
        let pipeline = temp.path().join("pipe");
        std::fs::create_dir_all(pipeline.join("work/ab"))?;
        std::fs::create_dir_all(pipeline.join("conf"))?;
        std::fs::write(pipeline.join("main.nf"), "workflow {}\n")?;
        std::fs::write(pipeline.join("conf/base.config"), "process {}\n")?;
        std::fs::write(pipeline.join("work/ab/.exitcode"), "0")?;
        std::os::unix::fs::symlink("/etc/hostname", pipeline.join("link"))?;
        let copy = PipelineCopy::new(&pipeline, &temp.path().join("scratch"))?;
        assert_eq!(
            std::fs::read_to_string(copy.path.join("main.nf"))?,
            "workflow {}\n"
        );
        assert!(copy.path.join("conf/base.config").is_file());
        assert!(!copy.path.join("work").exists());
        assert_eq!(
            std::fs::read_link(copy.path.join("link"))?,
            Path::new("/etc/hostname")
        );
        let shown = copy.as_original(&format!("`{}/main.nf`", copy.path.display()), &pipeline);
        assert_eq!(shown, format!("`{}/main.nf`", pipeline.display()));
        let gone = copy.path.clone();
        drop(copy);
        assert!(!gone.exists());
        Ok(())
    }
}
