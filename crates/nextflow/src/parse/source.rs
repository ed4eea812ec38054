//! Reading files beneath a pipeline directory: never outside it (`..`, absolute paths and
//! symlinks that leave it are refused), never more than a size limit, and only UTF-8 text.

use std::fs;
use std::path::{Component, Path, PathBuf};

use super::ParseError;

/// Files larger than this are refused rather than read: no real Nextflow source is near it.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// A pipeline directory, canonical, to read relative paths beneath.
#[derive(Debug, Clone)]
pub(crate) struct SourceRoot {
    root: PathBuf,
}

impl SourceRoot {
    pub fn new(dir: &Path) -> Result<Self, ParseError> {
        let root = fs::canonicalize(dir).map_err(|source| ParseError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        if !root.is_dir() {
            return Err(ParseError::NotADirectory {
                path: dir.display().to_string(),
            });
        }
        Ok(SourceRoot { root })
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.root.join(rel).exists()
    }

    /// Reads `rel` (relative, `/`-separated) as text.
    pub fn read(&self, rel: &str) -> Result<String, ParseError> {
        let outside = || ParseError::OutsideRoot {
            path: rel.to_string(),
        };
        let joined = normalise_relative(Path::new(rel)).ok_or_else(outside)?;
        // One step in the kernel, not a check and then an open: a symlink swapped in between
        // the two would otherwise be followed out of the pipeline.
        let io = |source: std::io::Error| {
            let outside = source
                .get_ref()
                .and_then(|e| e.downcast_ref::<crate::files::BeneathError>())
                .is_some_and(|e| matches!(e, crate::files::BeneathError::Outside { .. }));
            if outside {
                ParseError::OutsideRoot {
                    path: rel.to_string(),
                }
            } else {
                ParseError::Io {
                    path: rel.to_string(),
                    source,
                }
            }
        };
        let file = crate::files::open_beneath(&self.root, Path::new(&joined)).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        if size > MAX_FILE_BYTES {
            return Err(ParseError::TooLarge {
                path: rel.to_string(),
                size,
                limit: MAX_FILE_BYTES,
            });
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(file, MAX_FILE_BYTES + 1),
            &mut bytes,
        )
        .map_err(io)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(ParseError::TooLarge {
                path: rel.to_string(),
                size: bytes.len() as u64,
                limit: MAX_FILE_BYTES,
            });
        }
        decode(rel, bytes)
    }
}

/// The bytes as UTF-8 text, or an error naming the line of the first bad byte. A leading
/// byte-order mark is dropped.
pub fn decode(path: &str, bytes: Vec<u8>) -> Result<String, ParseError> {
    match String::from_utf8(bytes) {
        Ok(s) => Ok(s.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(s)),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let bytes = e.as_bytes();
            let line = bytes
                .get(..at)
                .map_or(0, |b| b.iter().filter(|c| **c == b'\n').count())
                + 1;
            Err(ParseError::NotUtf8 {
                path: path.to_string(),
                line: u32::try_from(line).unwrap_or(u32::MAX),
            })
        }
    }
}

/// `path` with `.` and `..` resolved lexically, `/`-joined; `None` when it is absolute or
/// climbs above its start.
pub(crate) fn normalise_relative(path: &Path) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str()?.to_string()),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_stay_inside() {
        assert_eq!(
            normalise_relative(Path::new("conf/../conf/./base.config")).as_deref(),
            Some("conf/base.config")
        );
        assert_eq!(normalise_relative(Path::new("../x.config")), None);
        assert_eq!(normalise_relative(Path::new("/etc/passwd")), None);
    }

    #[test]
    fn bad_bytes_name_their_line() {
        let err = decode("main.nf", b"a\nb\n\xff".to_vec()).err();
        assert!(matches!(err, Some(ParseError::NotUtf8 { line: 3, .. })));
    }
}
