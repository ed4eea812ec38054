//! nf-schema's path formats and `exists`, checked on the local file system.
//!
//! Relative values resolve against the launch directory (where `nextflow run` is started),
//! as Nextflow's `file()` does, never against the sheet's own directory. Remote URIs are not
//! checked: the gate has no network, and says so in a warning.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use globset::GlobBuilder;

/// How many directory entries one glob may visit before the gate gives up on it.
const GLOB_VISIT_LIMIT: usize = 200_000;
/// How deep `**` may descend.
const GLOB_DEPTH_LIMIT: usize = 32;

/// What a path turned out to be, following symlinks (a dangling link does not exist).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Missing,
    File,
    Directory,
}

/// After this many look-ups in one directory, the directory is listed once and later
/// look-ups are answered from the listing: a sheet of 10,000 pairs names 20,000 files in one
/// `reads/` directory, and one listing costs far less than 20,000 `stat` calls.
const LIST_AFTER: u32 = 32;
/// A directory with more entries than this is not listed; its paths are looked at one by one.
const LIST_LIMIT: usize = 1_000_000;

/// What a directory listing says of one name.
#[derive(Debug, Clone, Copy)]
enum Listed {
    File,
    Directory,
    /// A symlink: its target decides, so it is looked at on its own.
    Link,
}

#[derive(Debug)]
enum DirState {
    Counting(u32),
    Listed(HashMap<OsString, Listed>),
    Unlistable,
}

#[derive(Debug, Default)]
struct Cache {
    kinds: HashMap<PathBuf, Kind>,
    dirs: HashMap<PathBuf, DirState>,
}

/// The checks nf-schema's evaluators make, with a cache: sheets name the same paths often,
/// and the validator may evaluate a keyword twice.
#[derive(Debug)]
pub(crate) struct PathChecker {
    launch_dir: PathBuf,
    /// The samplesheet's own directory, when known: a missing relative path that exists
    /// there is a launch from the wrong directory, and the failure says so.
    sheet_dir: Option<PathBuf>,
    /// The folders the checks may look in; empty: anywhere. A path that leads out of them
    /// is reported as such and never looked at, so the answer cannot tell whether it exists.
    confine: Vec<PathBuf>,
    cache: Mutex<Cache>,
}

/// Symbolic links followed on the way to a path before it counts as leading nowhere.
const LINK_HOPS: usize = 40;

/// Whether `path` (absolute) leads out of `roots`: made normal lexically, then walked one
/// component at a time, each symbolic link beneath a root replaced by where it points. Only
/// components beneath a root, or on the way to one, are ever looked at.
fn leaves_roots(path: &Path, roots: &[PathBuf]) -> bool {
    use std::path::Component;
    let within = |p: &Path| roots.iter().any(|root| p.starts_with(root));
    let on_the_way = |p: &Path| roots.iter().any(|root| root.starts_with(p));
    let mut pending: Vec<std::ffi::OsString> = Vec::new();
    let push_components = |pending: &mut Vec<std::ffi::OsString>, path: &Path| {
        for c in path.components().rev() {
            match c {
                Component::Normal(name) => pending.push(name.to_os_string()),
                Component::ParentDir => pending.push("..".into()),
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
    };
    push_components(&mut pending, path);
    let mut current = PathBuf::from("/");
    let mut hops = 0;
    while let Some(name) = pending.pop() {
        if name == ".." {
            current.pop();
            continue;
        }
        current.push(&name);
        if within(&current) {
            if let Ok(target) = std::fs::read_link(&current) {
                hops += 1;
                if hops > LINK_HOPS {
                    return true;
                }
                current.pop();
                if target.is_absolute() {
                    current = PathBuf::from("/");
                }
                push_components(&mut pending, &target);
            }
        } else if !on_the_way(&current) {
            return true;
        }
    }
    !within(&current)
}

fn stat_kind(path: &Path) -> Kind {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Kind::Directory,
        Ok(_) => Kind::File,
        Err(_) => Kind::Missing,
    }
}

/// The directory's names and their types (from the directory entries, no `stat` per name);
/// `None` if it cannot be read or is too large to be worth it.
fn list_dir(dir: &Path) -> Option<HashMap<OsString, Listed>> {
    let mut names = HashMap::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        if names.len() >= LIST_LIMIT {
            return None;
        }
        let kind = match entry.file_type().ok()? {
            t if t.is_symlink() => Listed::Link,
            t if t.is_dir() => Listed::Directory,
            _ => Listed::File,
        };
        names.insert(entry.file_name(), kind);
    }
    Some(names)
}

/// A value that is a URI the gate cannot look at.
pub(crate) fn is_remote(value: &str) -> bool {
    match value.split_once("://") {
        Some((scheme, _)) => {
            !scheme.eq_ignore_ascii_case("file")
                && !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        }
        None => false,
    }
}

/// Nextflow's `FilePatternSplitter`: an unescaped `*`, `?`, `[` or `{` makes a glob.
fn is_glob(value: &str) -> bool {
    let mut escaped = false;
    for c in value.chars() {
        match c {
            '\\' if !escaped => escaped = true,
            '*' | '?' | '[' | '{' if !escaped => return true,
            _ => escaped = false,
        }
    }
    false
}

impl Cache {
    /// The kind of `path` from its directory's listing, once the directory has been asked
    /// about often enough to be listed; `None` when the path must be looked at itself.
    fn listed_kind(&mut self, path: &Path) -> Option<Kind> {
        // A trailing slash or a final `..` changes what the kernel resolves: look at those.
        if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
            return None;
        }
        let name = path.file_name()?;
        let dir = path.parent()?;
        if !self.dirs.contains_key(dir) {
            self.dirs.insert(dir.to_path_buf(), DirState::Counting(0));
        }
        let state = self.dirs.get_mut(dir)?;
        if let DirState::Counting(n) = state {
            *n += 1;
            if *n >= LIST_AFTER {
                *state = list_dir(dir).map_or(DirState::Unlistable, DirState::Listed);
            }
        }
        match state {
            DirState::Listed(names) => match names.get(name) {
                None => Some(Kind::Missing),
                Some(Listed::File) => Some(Kind::File),
                Some(Listed::Directory) => Some(Kind::Directory),
                Some(Listed::Link) => None,
            },
            DirState::Counting(_) | DirState::Unlistable => None,
        }
    }
}

impl PathChecker {
    pub(crate) fn new(launch_dir: PathBuf, confine: Vec<PathBuf>) -> Self {
        PathChecker {
            launch_dir,
            sheet_dir: None,
            confine,
            cache: Mutex::new(Cache::default()),
        }
    }

    /// The checker for a sheet in `sheet_dir`, whose failures point at it when a missing
    /// relative path is found there instead.
    pub(crate) fn beside(mut self, sheet_dir: Option<&Path>) -> Self {
        // A sheet named relatively says nothing sure about where it lies.
        self.sheet_dir = sheet_dir.filter(|d| d.is_absolute()).map(Path::to_path_buf);
        self
    }

    /// Where a failure about a missing relative `value` says it was looked for (Nextflow's
    /// `file()` resolves it against the launch directory, the run's working directory, never
    /// the sheet's), and where it is when it sits beside the sheet instead. Empty for an
    /// absolute value. The sheet's side is looked at only inside the confining folders, so
    /// the hint tells nothing about a path Codaris may not read.
    fn base_note(&self, value: &str, glob: bool) -> String {
        if Path::new(value.strip_prefix("file://").unwrap_or(value)).is_absolute() {
            return String::new();
        }
        let mut note = format!(
            " (relative paths are resolved against the launch directory `{}`)",
            self.launch_dir.display()
        );
        let beside = self
            .sheet_dir
            .as_ref()
            .filter(|dir| !glob && **dir != self.launch_dir)
            .map(|dir| (dir, dir.join(value)))
            .filter(|(_, at)| !self.outside(at, false) && self.kind(at) != Kind::Missing);
        if let Some((dir, at)) = beside {
            note.push_str(&format!(
                "; it exists beside the samplesheet, at `{}`: write that path in the sheet, or launch from `{}` (`launch_dir`)",
                at.display(),
                dir.display()
            ));
        }
        note
    }

    /// Whether `resolved` (a glob: its literal prefix) leads out of the confining folders.
    fn outside(&self, resolved: &Path, glob: bool) -> bool {
        if self.confine.is_empty() {
            return false;
        }
        let literal: PathBuf = if glob {
            resolved
                .components()
                .take_while(|c| !is_glob(&c.as_os_str().to_string_lossy()))
                .collect()
        } else {
            resolved.to_path_buf()
        };
        leaves_roots(&literal, &self.confine)
    }

    fn resolve(&self, value: &str) -> PathBuf {
        let local = value.strip_prefix("file://").unwrap_or(value);
        let path = Path::new(local);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.launch_dir.join(path)
        }
    }

    fn kind(&self, path: &Path) -> Kind {
        let Ok(mut cache) = self.cache.lock() else {
            return stat_kind(path);
        };
        if let Some(kind) = cache.listed_kind(path) {
            return kind;
        }
        if let Some(kind) = cache.kinds.get(path) {
            return *kind;
        }
        let kind = stat_kind(path);
        cache.kinds.insert(path.to_path_buf(), kind);
        kind
    }

    /// The failures of `format` (one of nf-schema's path formats) and of `exists` for one
    /// value, in nf-schema's words and in the order its evaluators run.
    pub(crate) fn check(
        &self,
        value: &str,
        format: Option<&str>,
        exists: Option<bool>,
    ) -> Vec<String> {
        if is_remote(value) {
            return Vec::new();
        }
        let mut failures = Vec::new();
        let glob = is_glob(value);
        let resolved = self.resolve(value);
        if self.outside(&resolved, glob) {
            return vec![format!(
                "'{value}' is outside the folders Codaris may read, so it was not looked at"
            )];
        }
        let mut matches: Option<Result<Vec<PathBuf>, String>> = None;
        match format {
            Some("file-path") => {
                if glob {
                    failures.push(format!("'{value}' is not a file, but a file path pattern"));
                } else if self.kind(&resolved) == Kind::Directory {
                    failures.push(format!("'{value}' is not a file, but a directory"));
                }
            }
            Some("directory-path") => {
                if glob {
                    failures.push(format!(
                        "'{value}' is not a directory, but a file path pattern"
                    ));
                } else if self.kind(&resolved) == Kind::File {
                    failures.push(format!("'{value}' is not a directory, but a file"));
                }
            }
            Some("path") if glob => {
                failures.push(format!("'{value}' is not a path, but a file path pattern"));
            }
            Some("file-path-pattern") => {
                let found = self.files(&resolved, glob);
                match &found {
                    Err(reason) => failures.push(format!(
                        "could not validate file format of '{value}': {reason}"
                    )),
                    Ok(paths) if paths.is_empty() => failures.push(format!(
                        "No files were found using the glob pattern '{value}'{}",
                        self.base_note(value, glob)
                    )),
                    Ok(paths) => {
                        for p in paths {
                            if self.kind(p) == Kind::Directory {
                                failures.push(format!(
                                    "'{}' is not a file, but a directory",
                                    p.display()
                                ));
                            }
                        }
                    }
                }
                matches = Some(found);
            }
            _ => {}
        }
        if let Some(should_exist) = exists {
            let found = match matches {
                Some(found) => Some(found),
                None if glob => Some(self.files(&resolved, glob)),
                // The common case, one plain path: no list to build.
                None => None,
            };
            let present = match found {
                None => self.kind(&resolved) != Kind::Missing,
                Some(Err(reason)) => {
                    failures.push(format!("could not check existence of '{value}': {reason}"));
                    return failures;
                }
                Some(Ok(paths)) => match paths.as_slice() {
                    [] => false,
                    [one] => self.kind(one) != Kind::Missing,
                    _ => true,
                },
            };
            if should_exist && !present {
                failures.push(format!(
                    "the file or directory '{value}' does not exist{}",
                    self.base_note(value, glob)
                ));
            } else if !should_exist && present {
                failures.push(format!("the file or directory '{value}' should not exist"));
            }
        }
        failures
    }

    /// Nextflow's `files()`: the value itself when it is no glob, else every match.
    fn files(&self, resolved: &Path, glob: bool) -> Result<Vec<PathBuf>, String> {
        if !glob {
            return Ok(vec![resolved.to_path_buf()]);
        }
        // Walk from the longest literal prefix; the rest of the pattern is matched against
        // each entry's path below it.
        let text = resolved.to_string_lossy().into_owned();
        let mut base = PathBuf::new();
        let mut rest: Vec<&str> = Vec::new();
        for (i, segment) in text.split('/').enumerate() {
            if rest.is_empty() && !is_glob(segment) {
                match (i, segment.is_empty()) {
                    (0, true) => base.push("/"),
                    (_, true) => {}
                    _ => base.push(segment),
                }
            } else {
                rest.push(segment);
            }
        }
        let pattern = rest.join("/");
        let matcher = GlobBuilder::new(&pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| e.kind().to_string())?
            .compile_matcher();
        let depth = if pattern.contains("**") {
            GLOB_DEPTH_LIMIT
        } else {
            rest.len()
        };
        // Nextflow leaves hidden files out of a glob unless the pattern names them.
        let hidden = pattern.starts_with('.') || pattern.contains("/.");
        let mut found = Vec::new();
        let walker = walkdir::WalkDir::new(&base)
            .follow_links(true)
            .min_depth(1)
            .max_depth(depth);
        for (visited, entry) in walker.into_iter().enumerate() {
            if visited >= GLOB_VISIT_LIMIT {
                return Err(format!(
                    "the pattern visits more than {GLOB_VISIT_LIMIT} entries"
                ));
            }
            // Unreadable directories and link loops are skipped, as a shell glob skips them.
            let Ok(entry) = entry else { continue };
            let Ok(relative) = entry.path().strip_prefix(&base) else {
                continue;
            };
            if !hidden
                && relative
                    .components()
                    .any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
            {
                continue;
            }
            if matcher.is_match(relative) {
                found.push(entry.path().to_path_buf());
            }
        }
        found.sort();
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_uris_are_recognised_and_local_ones_are_not() {
        for remote in [
            "s3://b/k.fq.gz",
            "az://c/x",
            "gs://b/x",
            "https://h/x",
            "http://h/x",
        ] {
            assert!(is_remote(remote), "{remote}");
        }
        for local in ["file:///data/x", "/data/x", "rel/x", "1x://y", "C:\\x"] {
            assert!(!is_remote(local), "{local}");
        }
    }

    #[test]
    fn a_listed_directory_answers_as_stat_does() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let d = dir.path();
        for i in 0..40 {
            std::fs::write(d.join(format!("f{i}.fq.gz")), b"")?;
        }
        std::fs::create_dir(d.join("sub"))?;
        std::os::unix::fs::symlink(d.join("f0.fq.gz"), d.join("link_to_file"))?;
        std::os::unix::fs::symlink(d.join("sub"), d.join("link_to_dir"))?;
        std::os::unix::fs::symlink(d.join("gone"), d.join("dangling"))?;
        let checker = PathChecker::new(d.to_path_buf(), Vec::new());
        let names: Vec<String> = (0..40)
            .map(|i| format!("f{i}.fq.gz"))
            .chain(
                [
                    "sub",
                    "link_to_file",
                    "link_to_dir",
                    "dangling",
                    "missing",
                    "sub/",
                    "sub/..",
                ]
                .map(String::from),
            )
            .collect();
        // Twice: the first pass crosses the listing threshold, the second is all from it.
        for _ in 0..2 {
            for name in &names {
                let path = checker.resolve(name);
                assert_eq!(checker.kind(&path), stat_kind(&path), "{name}");
            }
        }
        let listed = checker
            .cache
            .lock()
            .map(|c| matches!(c.dirs.get(d), Some(DirState::Listed(_))))
            .unwrap_or(false);
        assert!(listed);
        Ok(())
    }

    #[test]
    fn a_missing_relative_path_names_its_base_and_the_copy_beside_the_sheet()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let launch = dir.path().join("launch");
        let sheets = dir.path().join("sheets");
        std::fs::create_dir_all(&launch)?;
        std::fs::create_dir_all(sheets.join("reads"))?;
        std::fs::write(sheets.join("reads/S1_R1.fastq.gz"), b"")?;
        let checker =
            PathChecker::new(launch.clone(), vec![dir.path().to_path_buf()]).beside(Some(&sheets));
        let failures = checker.check("reads/S1_R1.fastq.gz", Some("file-path"), Some(true));
        assert_eq!(
            failures,
            [format!(
                "the file or directory 'reads/S1_R1.fastq.gz' does not exist (relative paths are resolved against the launch directory `{}`); it exists beside the samplesheet, at `{}`: write that path in the sheet, or launch from `{}` (`launch_dir`)",
                launch.display(),
                sheets.join("reads/S1_R1.fastq.gz").display(),
                sheets.display()
            )]
        );
        // Missing everywhere: the base alone. Absolute: nothing added.
        let failures = checker.check("reads/S2.fastq.gz", Some("file-path"), Some(true));
        assert_eq!(
            failures,
            [format!(
                "the file or directory 'reads/S2.fastq.gz' does not exist (relative paths are resolved against the launch directory `{}`)",
                launch.display()
            )]
        );
        let absolute = dir.path().join("nowhere.fq");
        let failures = checker.check(&absolute.to_string_lossy(), Some("file-path"), Some(true));
        assert_eq!(
            failures,
            [format!(
                "the file or directory '{}' does not exist",
                absolute.display()
            )]
        );
        // Beside a sheet outside the confining folders, nothing is looked at or told.
        let confined = PathChecker::new(launch.clone(), vec![launch.clone()]).beside(Some(&sheets));
        let failures = confined.check("reads/S1_R1.fastq.gz", Some("file-path"), Some(true));
        assert!(!failures[0].contains("beside"), "{failures:?}");
        Ok(())
    }

    #[test]
    fn globs_are_the_unescaped_metacharacters() {
        assert!(is_glob("reads/*.fq.gz"));
        assert!(is_glob("reads/sample_{1,2}.fq.gz"));
        assert!(is_glob("r?.fq"));
        assert!(!is_glob("reads/plain.fq.gz"));
        assert!(!is_glob("reads/\\*.fq.gz"));
    }

    #[test]
    fn a_path_leaving_the_roots_is_never_looked_at() -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let base = temp.path().canonicalize()?;
        let root = base.join("root");
        std::fs::create_dir_all(root.join("reads"))?;
        std::fs::create_dir_all(base.join("outside"))?;
        std::fs::write(base.join("outside/secret.fq"), "x")?;
        std::fs::write(root.join("reads/a.fq"), "x")?;
        std::os::unix::fs::symlink(base.join("outside/secret.fq"), root.join("out.fq"))?;
        std::os::unix::fs::symlink(base.join("outside/none.fq"), root.join("dangling.fq"))?;
        std::os::unix::fs::symlink("reads/a.fq", root.join("in.fq"))?;
        let roots = vec![root.clone()];
        let leaves = |p: PathBuf| leaves_roots(&p, &roots);
        assert!(!leaves(root.join("reads/a.fq")));
        assert!(!leaves(root.join("reads/missing.fq")));
        assert!(!leaves(root.join("in.fq")));
        assert!(leaves(root.join("../outside/secret.fq")));
        assert!(leaves(root.join("out.fq")));
        assert!(
            leaves(root.join("dangling.fq")),
            "a link out leaves, target or not"
        );
        assert!(leaves(PathBuf::from("/etc/passwd")));
        assert!(leaves(base.clone()), "the root's parent is outside it");

        // The checker says so in one line, the same whether the outside file exists or not.
        let checker = PathChecker::new(root.clone(), roots.clone());
        for value in [
            "../outside/secret.fq",
            "../outside/none.fq",
            "out.fq",
            "dangling.fq",
        ] {
            let failures = checker.check(value, Some("file-path"), Some(true));
            assert_eq!(
                failures,
                [format!(
                    "'{value}' is outside the folders Codaris may read, so it was not looked at"
                )]
            );
        }
        assert!(
            checker.check("../outside/*.fq", Some("file-path-pattern"), Some(true))[0]
                .contains("outside")
        );
        assert!(
            checker
                .check("reads/a.fq", Some("file-path"), Some(true))
                .is_empty()
        );
        Ok(())
    }
}
