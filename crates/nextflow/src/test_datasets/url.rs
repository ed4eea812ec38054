//! Where a test-datasets URL lives in the repository and on disk: the part after the base
//! (`<branch>/<path in the branch>`), checked so it can only name a file beneath the local
//! data directory.

use std::path::{Path, PathBuf};

/// nf-core's own base, which configs write even when the operator has a mirror.
pub const NFCORE_BASE: &str = "https://raw.githubusercontent.com/nf-core/test-datasets/";

/// Where a URL leads, relative to the base it hangs off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    /// Under the configured base (or nf-core's, mapped onto the configured one): the part
    /// after the base, `<branch>/<path>`.
    Under(String),
    /// Not a file this tool fetches, and why.
    Off(String),
}

/// Whether `text` is written as a URL (`scheme://…`), which is what the reader looks for.
pub fn looks_like_url(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+')
    })
}

/// The part of `url` after `base` (the configured one, ending in `/`) or after nf-core's own
/// base, checked to name a file: no query, no empty, `.` or `..` segment, no `.git`.
pub fn locate(url: &str, base: &str) -> Located {
    let rest = url
        .strip_prefix(base)
        .or_else(|| url.strip_prefix(NFCORE_BASE));
    let Some(rest) = rest else {
        return Located::Off(format!("not under the test-datasets base `{base}`"));
    };
    match check_relative(rest) {
        Ok(()) => Located::Under(rest.to_owned()),
        Err(why) => Located::Off(why),
    }
}

/// The same check for the part after the base of a base path itself (`""` or `demo/`).
pub fn locate_base(url: &str, base: &str) -> Option<String> {
    let rest = url
        .strip_prefix(base)
        .or_else(|| url.strip_prefix(NFCORE_BASE))?;
    if rest.is_empty() {
        return Some(String::new());
    }
    let dir = rest.strip_suffix('/')?;
    dir.split('/')
        .all(|segment| check_segment(segment).is_ok())
        .then(|| rest.to_owned())
}

fn check_relative(rest: &str) -> Result<(), String> {
    if rest.contains(['?', '#']) {
        return Err("has a query or fragment, which names no file in the repository".to_owned());
    }
    if rest.ends_with('/') || rest.is_empty() {
        return Err("names a directory; only files are fetched".to_owned());
    }
    let segments: Vec<&str> = rest.split('/').collect();
    if segments.len() < 2 {
        return Err("names no file inside a branch (`<branch>/<path>`)".to_owned());
    }
    segments.into_iter().try_for_each(check_segment)
}

fn check_segment(segment: &str) -> Result<(), String> {
    if segment.is_empty() || segment == "." || segment == ".." {
        return Err(format!("has a `{segment}` path segment"));
    }
    if segment.eq_ignore_ascii_case(".git") || segment.contains(['\\', '\0', '%', '?', '#']) {
        return Err(format!(
            "has the path segment `{segment}`, which is not fetched"
        ));
    }
    Ok(())
}

/// The branch of a located path: its first segment.
pub fn branch(rel: &str) -> &str {
    rel.split('/').next().unwrap_or(rel)
}

/// Where a located path is kept: `<local_root>/<branch>/<path>`.
pub fn local_path(local_root: &Path, rel: &str) -> PathBuf {
    let mut path = local_root.to_path_buf();
    path.extend(rel.split('/'));
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIRROR: &str = "http://127.0.0.1:8080/test-datasets/";

    #[test]
    fn urls_on_the_base_or_on_nf_cores_own_are_located() {
        assert_eq!(
            locate(
                "https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/samplesheet/v3.10/samplesheet_test.csv",
                NFCORE_BASE
            ),
            Located::Under("rnaseq/samplesheet/v3.10/samplesheet_test.csv".to_owned())
        );
        assert_eq!(
            locate(
                "https://raw.githubusercontent.com/nf-core/test-datasets/viralrecon/illumina/amplicon/sample1_R1.fastq.gz",
                MIRROR
            ),
            Located::Under("viralrecon/illumina/amplicon/sample1_R1.fastq.gz".to_owned())
        );
        assert_eq!(
            locate(&format!("{MIRROR}modules/data/genomics/x.fa"), MIRROR),
            Located::Under("modules/data/genomics/x.fa".to_owned())
        );
    }

    #[test]
    fn urls_that_could_climb_or_name_directories_are_not_located() {
        for url in [
            "https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/../../etc/passwd",
            "https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/.git/config",
            "https://raw.githubusercontent.com/nf-core/test-datasets/modules/data/",
            "https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq//x.csv",
            "https://raw.githubusercontent.com/nf-core/test-datasets/x.csv",
            "https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/x.csv?token=1",
            "https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/%2e%2e/x",
            "https://example.org/data/rnaseq/x.csv",
        ] {
            assert!(matches!(locate(url, NFCORE_BASE), Located::Off(_)), "{url}");
        }
    }

    #[test]
    fn a_base_path_with_or_without_a_branch_is_located() {
        assert_eq!(locate_base(NFCORE_BASE, MIRROR), Some(String::new()));
        assert_eq!(
            locate_base(&format!("{NFCORE_BASE}demo/"), NFCORE_BASE),
            Some("demo/".to_owned())
        );
        assert_eq!(
            locate_base("s3://ngi-igenomes/igenomes/", NFCORE_BASE),
            None
        );
    }

    #[test]
    fn local_paths_mirror_the_repository_below_the_data_directory() {
        assert_eq!(
            local_path(Path::new("/p/tests/data"), "viralrecon/samplesheet/s.csv"),
            Path::new("/p/tests/data/viralrecon/samplesheet/s.csv")
        );
        assert_eq!(branch("viralrecon/samplesheet/s.csv"), "viralrecon");
        assert!(looks_like_url("s3://bucket/key"));
        assert!(!looks_like_url("R64-1-1"));
    }
}
