//! A whole pipeline read into one model: `main.nf`, every `.nf` under `workflows/`,
//! `subworkflows/` and `modules/`, and `nextflow.config` with the configs it includes.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::ParseError;
use super::config::{NFTEST_CONFIG, NFTEST_WHY, load_config};
use super::model::{Config, Include, NfFile, Process, Setting, Skipped, Unparsed, Workflow};
use super::script::parse_script;
use super::source::{SourceRoot, normalise_relative};

/// The directories searched for `.nf` files, besides `main.nf` at the top.
const NF_DIRS: &[&str] = &["workflows", "subworkflows", "modules"];
/// How deep the search goes; nf-core's deepest is `modules/nf-core/tool/subtool/main.nf`.
const MAX_DEPTH: usize = 8;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pipeline {
    /// The canonical pipeline directory.
    pub root: PathBuf,
    /// Every `.nf` file read, by relative path, `main.nf` first and then in path order.
    pub files: Vec<NfFile>,
    pub config: Config,
}

impl Pipeline {
    /// Reads the pipeline at `dir`. Only a missing or unreadable `dir` is an error; a file
    /// that cannot be read or parsed shows up as an [`Unparsed`] entry.
    pub fn load(dir: &Path) -> Result<Pipeline, ParseError> {
        let root = SourceRoot::new(dir)?;
        let mut rels = Vec::new();
        if root.exists("main.nf") {
            rels.push("main.nf".to_string());
        }
        for d in NF_DIRS {
            walk(root.path(), d, 0, &mut rels);
        }
        let files = rels
            .into_iter()
            .map(|rel| match root.read(&rel) {
                Ok(src) => parse_script(&rel, &src),
                Err(e) => unreadable(rel, &e),
            })
            .collect();
        let mut config = if root.exists("nextflow.config") {
            load_config(root.path(), "nextflow.config").unwrap_or_else(|e| Config {
                unparsed: vec![Unparsed {
                    file: "nextflow.config".to_string(),
                    line: e.line(),
                    what: e.to_string(),
                }],
                ..Config::default()
            })
        } else {
            Config::default()
        };
        // nf-test's file sits beside `nextflow.config` and looks like one; say it was seen and
        // why it is not part of the configuration.
        if root.exists(NFTEST_CONFIG) && !config.skipped.iter().any(|s| s.file == NFTEST_CONFIG) {
            config.skipped.push(Skipped {
                file: NFTEST_CONFIG.to_string(),
                why: NFTEST_WHY.to_string(),
            });
        }
        Ok(Pipeline {
            root: root.path().to_path_buf(),
            files,
            config,
        })
    }

    /// The `.nf` file at a relative path.
    pub fn file(&self, rel: &str) -> Option<&NfFile> {
        self.files.iter().find(|f| f.path == rel)
    }

    pub fn processes(&self) -> impl Iterator<Item = (&NfFile, &Process)> {
        self.files
            .iter()
            .flat_map(|f| f.processes.iter().map(move |p| (f, p)))
    }

    pub fn workflows(&self) -> impl Iterator<Item = (&NfFile, &Workflow)> {
        self.files
            .iter()
            .flat_map(|f| f.workflows.iter().map(move |w| (f, w)))
    }

    pub fn includes(&self) -> impl Iterator<Item = (&NfFile, &Include)> {
        self.files
            .iter()
            .flat_map(|f| f.includes.iter().map(move |i| (f, i)))
    }

    /// The process called `name`, wherever it is defined.
    pub fn process(&self, name: &str) -> Option<(&NfFile, &Process)> {
        self.processes().find(|(_, p)| p.name == name)
    }

    /// The `.nf` file an include names, as Nextflow finds it: relative to the including file,
    /// `.nf` added when missing, `DIR/main.nf` for a directory. `None` for `plugin/…`, for a
    /// path outside the pipeline, and for a file that is not there.
    pub fn resolve_include(&self, from: &NfFile, include: &Include) -> Option<String> {
        if include.source.starts_with("plugin/") {
            return None;
        }
        let base = Path::new(&from.path).parent().unwrap_or(Path::new(""));
        let target = normalise_relative(&base.join(&include.source))?;
        let candidates = if target.ends_with(".nf") {
            vec![target]
        } else {
            vec![format!("{target}.nf"), format!("{target}/main.nf")]
        };
        candidates
            .into_iter()
            .find(|c| self.file(c).is_some() || self.root.join(c).is_file())
    }

    /// The params of the config, outside profiles (see [`Config::params`]).
    pub fn params(&self) -> Vec<&Setting> {
        self.config.params()
    }

    /// Everything not understood, scripts first then config, each in file and line order.
    pub fn unparsed(&self) -> Vec<&Unparsed> {
        self.files
            .iter()
            .flat_map(|f| f.unparsed.iter())
            .chain(self.config.unparsed.iter())
            .collect()
    }
}

fn unreadable(rel: String, e: &ParseError) -> NfFile {
    NfFile {
        unparsed: vec![Unparsed {
            file: rel.clone(),
            line: e.line(),
            what: e.to_string(),
        }],
        path: rel,
        ..NfFile::default()
    }
}

/// Collects `.nf` files under `rel`, sorted, not following symlinked directories (a link may
/// point anywhere; a linked file is still read, and refused if it leaves the root).
fn walk(root: &Path, rel: &str, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    // Listed beneath the root: a symlinked `modules/` must not list a directory outside it.
    let Ok(entries) = crate::files::list_beneath(root, Path::new(rel)) else {
        return;
    };
    let mut names: Vec<(String, bool)> = entries
        .into_iter()
        .filter_map(|e| {
            let name = e.name.to_str()?.to_string();
            Some((name, e.stat.kind == crate::files::Kind::Dir))
        })
        .collect();
    names.sort();
    for (name, is_dir) in names {
        let child = format!("{rel}/{name}");
        if is_dir {
            walk(root, &child, depth + 1, out);
        } else if name.ends_with(".nf") {
            out.push(child);
        }
    }
}
