//! Skills and references on disk, turned into index entries.
//!
//! A skills directory holds one folder per skill: `<dir>/<skill>/SKILL.md` opens with a front
//! matter block (`---` … `---`) giving `name:`, `description:` and optionally `keywords:` (a
//! comma list or `[a, b]`, or a YAML list of `- item` lines). Every other `*.md` under
//! `<dir>/<skill>/references/` is a reference named `<skill>/<file stem>`, described by its
//! front matter's `description:`, else its first heading, else its first line. The model reads
//! both with `read_file`, so each entry carries its absolute path.
//!
//! A file that cannot be read or parsed is skipped with a warning: one bad skill never keeps the
//! daemon from starting or hides the others.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use codaris_config::front_matter;
use codaris_index::{Entry, Kind};

/// How many lines of a file are read looking for its front matter or its first line.
const MAX_HEAD_LINES: usize = 200;
/// How deep `references/` is walked.
const MAX_REFERENCE_DEPTH: usize = 4;
/// The longest skill name accepted, in characters.
const MAX_NAME_CHARS: usize = 100;

/// Why one skill or reference file was skipped.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("it does not start with a front matter block (`---` on the first line)")]
    NoFrontMatter,
    #[error("its front matter block has no closing `---` within {MAX_HEAD_LINES} lines")]
    Unterminated,
    #[error("its front matter has no `{key}:`")]
    Missing { key: &'static str },
    #[error(
        "the name `{name}` must be one word of at most {MAX_NAME_CHARS} characters, without `/`"
    )]
    BadName { name: String },
    #[error("it has no text to describe it")]
    NoDescription,
}

/// The keys of a front matter block that describe a skill or a reference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrontMatter {
    pub name: Option<String>,
    pub description: Option<String>,
    pub keywords: Vec<String>,
}

/// Every skill and reference under `dirs`, in directory order then name order. A name found in
/// an earlier directory wins over the same name later (with a warning). Missing directories are
/// skipped quietly: the default one need not exist.
#[tracing::instrument(skip_all, fields(dirs = dirs.len()))]
pub fn scan(dirs: &[PathBuf]) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut names = BTreeSet::new();
    for dir in dirs {
        let skills = match sorted_children(dir) {
            Ok(children) => children,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                tracing::debug!(dir = %dir.display(), "no skills directory");
                continue;
            }
            Err(err) => {
                tracing::warn!(dir = %dir.display(), %err, "cannot read skills directory; skipped");
                continue;
            }
        };
        for skill_dir in skills.into_iter().filter(|p| p.is_dir()) {
            let file = skill_dir.join("SKILL.md");
            if !file.is_file() {
                continue;
            }
            let skill = match read_skill(&file) {
                Ok(skill) => skill,
                Err(err) => {
                    tracing::warn!(file = %file.display(), %err, "skill skipped");
                    continue;
                }
            };
            if !names.insert(skill.name.clone()) {
                tracing::warn!(file = %file.display(), name = %skill.name, "a skill of this name was found earlier; skipped");
                continue;
            }
            let skill_name = skill.name.clone();
            entries.push(skill);
            for reference in references(&skill_dir.join("references"), &skill_name) {
                if names.insert(reference.name.clone()) {
                    entries.push(reference);
                }
            }
        }
    }
    tracing::info!(
        skills = entries.iter().filter(|e| e.kind == Kind::Skill).count(),
        references = entries.iter().filter(|e| e.kind == Kind::Reference).count(),
        "skills scanned"
    );
    entries
}

/// Reads one `SKILL.md` into a skill entry.
pub fn read_skill(file: &Path) -> Result<Entry, SkillError> {
    let head = read_head(file)?;
    let front = front_matter(&head)?;
    let name = front.name.ok_or(SkillError::Missing { key: "name" })?;
    if name.chars().count() > MAX_NAME_CHARS
        || name.contains('/')
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(SkillError::BadName { name });
    }
    let description = front
        .description
        .ok_or(SkillError::Missing { key: "description" })?;
    let mut entry = Entry::new(name, Kind::Skill, description);
    entry.keywords = front.keywords;
    entry.path = Some(file.display().to_string());
    Ok(entry)
}

/// The references of one skill, warning about and skipping the unreadable ones.
fn references(dir: &Path, skill: &str) -> Vec<Entry> {
    let mut files = Vec::new();
    collect_markdown(dir, &mut files, 0);
    files
        .into_iter()
        .filter_map(|file| {
            let relative = file.strip_prefix(dir).ok()?.with_extension("");
            let stem: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let name = format!("{skill}/{}", stem.join("/"));
            match read_reference(&file, name) {
                Ok(entry) => Some(entry),
                Err(err) => {
                    tracing::warn!(file = %file.display(), %err, "reference skipped");
                    None
                }
            }
        })
        .collect()
}

/// Reads one reference file into an entry called `name`.
pub fn read_reference(file: &Path, name: String) -> Result<Entry, SkillError> {
    let head = read_head(file)?;
    let (front, body) = match front_matter::split(&head) {
        Some((block, body)) => (parse_block(block), body),
        None => (FrontMatter::default(), head.as_str()),
    };
    let description = front
        .description
        .or_else(|| first_line(body))
        .ok_or(SkillError::NoDescription)?;
    let mut entry = Entry::new(name, Kind::Reference, description);
    entry.keywords = front.keywords;
    entry.path = Some(file.display().to_string());
    Ok(entry)
}

/// Parses the front matter block at the top of `text`.
pub fn front_matter(text: &str) -> Result<FrontMatter, SkillError> {
    if !front_matter::opens(text) {
        return Err(SkillError::NoFrontMatter);
    }
    front_matter::split(text)
        .map(|(block, _)| parse_block(block))
        .ok_or(SkillError::Unterminated)
}

/// The keys of a front matter block that describe a skill ([`front_matter::fields`] reads
/// it); other keys are ignored.
fn parse_block(block: &str) -> FrontMatter {
    let mut front = FrontMatter::default();
    for (key, field) in front_matter::fields(block) {
        let text = front_matter::unquote(field.text.trim()).trim().to_owned();
        match key.as_str() {
            "name" if !text.is_empty() => front.name = Some(text),
            "description" if !text.is_empty() => front.description = Some(text),
            "keywords" => {
                let list = text.strip_prefix('[').unwrap_or(&text);
                let list = list.strip_suffix(']').unwrap_or(list);
                front.keywords = list
                    .split(',')
                    .map(|k| front_matter::unquote(k.trim()).trim().to_owned())
                    .chain(field.items)
                    .filter(|k| !k.is_empty())
                    .collect();
            }
            _ => {}
        }
    }
    front
}

/// The first heading or, failing that, the first non-empty line, without its `#` marks.
fn first_line(body: &str) -> Option<String> {
    body.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| line.trim_start_matches('#').trim().to_owned())
        .filter(|line| !line.is_empty())
}

/// The first [`MAX_HEAD_LINES`] lines of a file: enough for a front matter block or a heading,
/// without reading a large reference whole.
fn read_head(file: &Path) -> Result<String, SkillError> {
    let read_err = |source| SkillError::Read {
        path: file.to_path_buf(),
        source,
    };
    let reader = BufReader::new(std::fs::File::open(file).map_err(read_err)?);
    let mut head = String::new();
    for line in reader.lines().take(MAX_HEAD_LINES) {
        head.push_str(&line.map_err(read_err)?);
        head.push('\n');
    }
    Ok(head)
}

/// The entries of `dir`, sorted by name.
fn sorted_children(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut children = std::fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<std::io::Result<Vec<_>>>()?;
    children.sort();
    Ok(children)
}

/// Every `*.md` file under `dir`, in name order, to a bounded depth.
fn collect_markdown(dir: &Path, files: &mut Vec<PathBuf>, depth: usize) {
    if depth > MAX_REFERENCE_DEPTH {
        return;
    }
    let children = match sorted_children(dir) {
        Ok(children) => children,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return,
        Err(err) => {
            tracing::warn!(dir = %dir.display(), %err, "cannot read references; skipped");
            return;
        }
    };
    for child in children {
        if child.is_dir() {
            collect_markdown(&child, files, depth + 1);
        } else if child.extension().is_some_and(|ext| ext == "md") && child.is_file() {
            files.push(child);
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn keywords(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn front_matter_reads_plain_quoted_and_listed_values() -> Result<(), SkillError> {
        let text = "---\nname: nf-core-modules\ndescription: \"How to write: an nf-core module\"\nkeywords: [nf-core, 'module', authoring]\nlicense: MIT\n---\n# Body\n";
        assert_eq!(
            front_matter(text)?,
            FrontMatter {
                name: Some("nf-core-modules".to_owned()),
                description: Some("How to write: an nf-core module".to_owned()),
                keywords: keywords(&["nf-core", "module", "authoring"]),
            }
        );
        let text = "---\nname: a\ndescription: >\n  Folded over\n  two lines\nkeywords:\n  - one\n  - \"two words\"\n---\n";
        assert_eq!(
            front_matter(text)?,
            FrontMatter {
                name: Some("a".to_owned()),
                description: Some("Folded over two lines".to_owned()),
                keywords: keywords(&["one", "two words"]),
            }
        );
        let text = "---\nname: b\ndescription: d\nkeywords: x, y ,z\n---\n";
        assert_eq!(front_matter(text)?.keywords, keywords(&["x", "y", "z"]));
        Ok(())
    }

    #[test]
    fn bad_front_matter_is_named() {
        assert!(matches!(
            front_matter("# Just a heading\n"),
            Err(SkillError::NoFrontMatter)
        ));
        assert!(matches!(
            front_matter("---\nname: a\n"),
            Err(SkillError::Unterminated)
        ));
    }

    #[test]
    fn first_line_prefers_the_heading_text() {
        assert_eq!(
            first_line("\n\n## Exit codes of Nextflow tasks\nmore"),
            Some("Exit codes of Nextflow tasks".to_owned())
        );
        assert_eq!(
            first_line("plain first line\n"),
            Some("plain first line".to_owned())
        );
        assert_eq!(first_line("\n#\n"), None);
    }

    #[test]
    fn a_directory_of_skills_becomes_entries() -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let dir = temp.path().join("skills");
        let good = dir.join("debugging");
        std::fs::create_dir_all(good.join("references/deep"))?;
        std::fs::write(
            good.join("SKILL.md"),
            "---\nname: debugging-failed-runs\ndescription: Debug a failed Nextflow run\nkeywords: [nextflow]\n---\nBody\n",
        )?;
        std::fs::write(good.join("references/exit-codes.md"), "# Exit codes\n")?;
        std::fs::write(
            good.join("references/deep/work-dirs.md"),
            "---\ndescription: Work directories explained\n---\n# Ignored heading\n",
        )?;
        std::fs::write(good.join("references/notes.txt"), "not markdown")?;
        std::fs::write(good.join("references/empty.md"), "\n\n")?;
        let bad = dir.join("broken");
        std::fs::create_dir_all(&bad)?;
        std::fs::write(bad.join("SKILL.md"), "no front matter")?;
        let dup = temp.path().join("more/debugging-again");
        std::fs::create_dir_all(&dup)?;
        std::fs::write(
            dup.join("SKILL.md"),
            "---\nname: debugging-failed-runs\ndescription: A second copy\n---\n",
        )?;

        let entries = scan(&[
            dir.clone(),
            temp.path().join("more"),
            temp.path().join("absent"),
        ]);
        let summary: Vec<(String, Kind, String, Option<String>)> = entries
            .into_iter()
            .map(|e| (e.name, e.kind, e.description, e.path))
            .collect();
        let path = |p: &Path| Some(p.display().to_string());
        assert_eq!(
            summary,
            vec![
                (
                    "debugging-failed-runs".to_owned(),
                    Kind::Skill,
                    "Debug a failed Nextflow run".to_owned(),
                    path(&good.join("SKILL.md")),
                ),
                (
                    "debugging-failed-runs/deep/work-dirs".to_owned(),
                    Kind::Reference,
                    "Work directories explained".to_owned(),
                    path(&good.join("references/deep/work-dirs.md")),
                ),
                (
                    "debugging-failed-runs/exit-codes".to_owned(),
                    Kind::Reference,
                    "Exit codes".to_owned(),
                    path(&good.join("references/exit-codes.md")),
                ),
            ]
        );
        Ok(())
    }

    #[test]
    fn names_must_be_one_word_and_descriptions_present() -> std::io::Result<()> {
        let temp = tempfile::tempdir()?;
        let file = temp.path().join("SKILL.md");
        std::fs::write(&file, "---\nname: two words\ndescription: d\n---\n")?;
        assert!(matches!(read_skill(&file), Err(SkillError::BadName { .. })));
        std::fs::write(&file, "---\nname: ok\n---\n")?;
        assert!(matches!(
            read_skill(&file),
            Err(SkillError::Missing { key: "description" })
        ));
        Ok(())
    }
}
