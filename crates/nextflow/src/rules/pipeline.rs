//! A pipeline as the rules see it: its text files, by path relative to its root.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Directories that hold run output, caches or version control, never pipeline source.
const SKIPPED_DIRS: [&str; 7] = [
    ".git",
    ".nextflow",
    "work",
    ".nf-test",
    "node_modules",
    ".lineage",
    ".pixi",
];
/// A larger file is data, not source; it is listed as skipped and not read.
const MAX_FILE: u64 = 4 << 20;
/// A tree with more files than this is not a pipeline checkout (or someone pointed at `/`).
const MAX_FILES: usize = 20_000;
const MAX_DEPTH: usize = 32;

/// A pipeline that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("pipeline `{path}`: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("pipeline `{path}` is not a directory")]
    NotADirectory { path: PathBuf },
    #[error("pipeline `{path}` has more than {limit} files; is it a pipeline?")]
    TooManyFiles { path: PathBuf, limit: usize },
}

/// A pipeline's text files, in memory: what the rules read. (Not [`crate::parse::Pipeline`],
/// the parsed model; the rules parse what they need from these files themselves.) Symbolic links are not followed (a link can point outside the
/// pipeline), binary and oversized files are not read; both are listed in [`SourceTree::skipped`].
#[derive(Debug, Clone, Default)]
pub struct SourceTree {
    files: BTreeMap<String, String>,
    skipped: Vec<String>,
}

impl SourceTree {
    /// Reads the pipeline under `root`.
    pub fn load(root: &Path) -> Result<SourceTree, TreeError> {
        let meta = std::fs::metadata(root).map_err(|source| TreeError::Io {
            path: root.to_path_buf(),
            source,
        })?;
        if !meta.is_dir() {
            return Err(TreeError::NotADirectory {
                path: root.to_path_buf(),
            });
        }
        let mut p = SourceTree::default();
        p.walk(root, root, "", 0)?;
        Ok(p)
    }

    /// A pipeline from files already in memory (path relative to the root, text).
    pub fn from_files<I, P, T>(files: I) -> SourceTree
    where
        I: IntoIterator<Item = (P, T)>,
        P: Into<String>,
        T: Into<String>,
    {
        SourceTree {
            files: files
                .into_iter()
                .map(|(p, t)| (p.into(), t.into()))
                .collect(),
            skipped: Vec::new(),
        }
    }

    fn walk(&mut self, root: &Path, dir: &Path, rel: &str, depth: usize) -> Result<(), TreeError> {
        let io = |path: &Path, source| TreeError::Io {
            path: path.to_path_buf(),
            source,
        };
        // Listed and read beneath the root in one kernel step each: a directory or file swapped
        // for a symlink after it was looked at still cannot lead out of the pipeline.
        let entries = crate::files::list_beneath(root, Path::new(rel.trim_end_matches('/')))
            .map_err(|e| io(dir, e))?;
        for entry in entries {
            let path = entry.path;
            let Some(name) = entry.name.to_str() else {
                self.skipped.push(format!(
                    "{rel}{}: name is not UTF-8",
                    entry.name.to_string_lossy()
                ));
                continue;
            };
            let rel_path = format!("{rel}{name}");
            match entry.stat.kind {
                crate::files::Kind::Symlink => self
                    .skipped
                    .push(format!("{rel_path}: symbolic link, not followed")),
                crate::files::Kind::Dir => {
                    if SKIPPED_DIRS.contains(&name) {
                        continue;
                    }
                    if depth >= MAX_DEPTH {
                        self.skipped
                            .push(format!("{rel_path}: nested deeper than {MAX_DEPTH}"));
                        continue;
                    }
                    self.walk(root, &path, &format!("{rel_path}/"), depth + 1)?;
                }
                crate::files::Kind::File => {
                    if self.files.len() >= MAX_FILES {
                        return Err(TreeError::TooManyFiles {
                            path: root.to_path_buf(),
                            limit: MAX_FILES,
                        });
                    }
                    let Some(bytes) =
                        crate::files::read_beneath(root, Path::new(&rel_path), MAX_FILE)
                            .map_err(|e| io(&path, e))?
                    else {
                        self.skipped
                            .push(format!("{rel_path}: more than {MAX_FILE} bytes, not read"));
                        continue;
                    };
                    match String::from_utf8(bytes) {
                        Ok(text) => {
                            self.files.insert(rel_path, text);
                        }
                        Err(_) => self.skipped.push(format!("{rel_path}: not UTF-8 text")),
                    }
                }
                crate::files::Kind::Other => {}
            }
        }
        Ok(())
    }

    /// The text of `path`, if the pipeline has it.
    pub fn file(&self, path: &str) -> Option<&str> {
        self.files.get(path).map(String::as_str)
    }

    pub fn contains(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    /// Every text file, in path order.
    pub fn files(&self) -> impl Iterator<Item = (&str, &str)> {
        self.files.iter().map(|(p, t)| (p.as_str(), t.as_str()))
    }

    /// What was not read, one line each (`path: why`).
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    pub(crate) fn set_file(&mut self, path: &str, text: String) {
        self.files.insert(path.to_string(), text);
    }
}

/// The 1-based line of a byte offset in `text`.
pub(crate) fn line_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}
