//! `fetch_test_data`'s pure half: which files of nf-core's test-datasets a pipeline's test
//! configuration names, where each goes on disk, and the test configuration and samplesheets
//! rewritten to name the local copies. No I/O: texts in, plans and texts out.
//!
//! A test configuration names its data in three ways, all read here:
//! `input = params.pipelines_testdata_base_path + 'viralrecon/samplesheet/x.csv'` (the
//! template's, the base defined in `nextflow.config` or in the test configuration),
//! `"${params.pipelines_testdata_base_path}rnaseq/x.csv"`, and older pipelines' full URLs
//! `'https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/x.csv'`.
//!
//! Layout: a file at `<base><branch>/<path>` is kept at `<pipeline>/tests/data/<branch>/<path>`
//! ([`LOCAL_DIR`]), the repository's own layout, so a base path pointed at `tests/data/` still
//! concatenates to the right file.
//!
//! Rewriting: a full-URL string becomes the local path; a base path defined in the test
//! configuration gets the local directory as its value; a base path defined only in
//! `nextflow.config` is overridden by one line inserted into the test configuration before
//! its first use (`nextflow.config` is left alone, so `test_full` and real runs keep the
//! remote base). A base path is rewritten only when every file reached through it is fetched.

mod edit;
mod sheet;
mod url;

use std::path::{Path, PathBuf};

use crate::parse::{Setting, Value, parse_config};

pub use edit::ChangedLine;
pub use sheet::{SheetPlan, plan_sheet, sheet_delimiter};
pub use url::{Located, NFCORE_BASE, branch, local_path, locate, looks_like_url};

use edit::{Edit, as_base, groovy_quoted, line_end_at, line_start, line_text};

/// Where the test configuration is, relative to the pipeline.
pub const TEST_CONFIG: &str = "conf/test.config";
/// Where the data goes, relative to the pipeline.
pub const LOCAL_DIR: &str = "tests/data";

/// A file to download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// The URL it is downloaded from (on the configured base).
    pub url: String,
    /// `<branch>/<path>`: where it is in the repository and below [`LOCAL_DIR`].
    pub rel: String,
    /// What names it: `params.input (conf/test.config:28)`, `samplesheet.csv row 2`.
    pub named_by: String,
}

/// A value that looked like test data and is not fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFetched {
    pub named_by: String,
    pub value: String,
    pub reason: String,
}

/// A value already pointing into the local data directory (a second call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlreadyLocal {
    pub named_by: String,
    pub path: PathBuf,
}

/// The test configuration's data, planned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConfigPlan {
    pub files: Vec<Wanted>,
    pub not_fetched: Vec<NotFetched>,
    pub already_local: Vec<AlreadyLocal>,
    /// The rewritten test configuration, when a line changes.
    pub rewritten: Option<String>,
    pub changed: Vec<ChangedLine>,
}

/// What [`plan_config`] is given.
#[derive(Debug, Clone, Copy)]
pub struct ConfigRequest<'a> {
    pub test_config: &'a str,
    /// `nextflow.config`, where the template defines the base path.
    pub nextflow_config: Option<&'a str>,
    /// The configured test-datasets base, ending in `/`.
    pub base: &'a str,
    /// The absolute `<pipeline>/tests/data`.
    pub local_root: &'a Path,
    /// Only this branch, when given.
    pub dataset: Option<&'a str>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TestDataError {
    #[error("`{config}` names no file on test-datasets (no URL and no `params.…_base_path + '…'`)")]
    NothingNamed { config: String },
    #[error("`{config}` names no file of the dataset `{dataset}`; it names {named}")]
    DatasetNotNamed {
        config: String,
        dataset: String,
        named: String,
    },
}

/// How a setting's value reaches a file.
enum Source {
    Url(String),
    /// `params.NAME` followed by a literal suffix.
    Via {
        param: String,
        suffix: String,
    },
}

/// One setting of the test configuration that names data.
struct Reference<'s> {
    setting: &'s Setting,
    source: Source,
}

/// Plans what the test configuration names: the files to fetch, what is not fetched and why,
/// and the configuration rewritten to the local copies.
pub fn plan_config(req: &ConfigRequest<'_>) -> Result<ConfigPlan, TestDataError> {
    let test = parse_config(TEST_CONFIG, req.test_config);
    let local = req.local_root.to_string_lossy();
    let main = req
        .nextflow_config
        .map(|text| parse_config("nextflow.config", text));
    let references: Vec<Reference<'_>> = test
        .settings
        .iter()
        .filter(|s| s.key.starts_with("params.") && s.selector.is_none())
        .filter_map(|setting| {
            source_of(&setting.value, &local).map(|source| Reference { setting, source })
        })
        .collect();
    // A base path's own definition is rewritten with its uses, not reported on its own.
    let bases_used: Vec<String> = references
        .iter()
        .filter_map(|r| match &r.source {
            Source::Via { param, .. } => Some(format!("params.{param}")),
            Source::Url(_) => None,
        })
        .collect();
    let references: Vec<Reference<'_>> = references
        .into_iter()
        .filter(|r| !(matches!(r.source, Source::Url(_)) && bases_used.contains(&r.setting.key)))
        .collect();
    let mut plan = ConfigPlan::default();
    let mut edits = Vec::new();
    let mut named_branches: Vec<String> = Vec::new();
    let mut bases: Vec<BaseUse<'_>> = Vec::new();
    for reference in &references {
        let named_by = format!(
            "{} ({TEST_CONFIG}:{})",
            reference.setting.key, reference.setting.line
        );
        let (url, base_use) = match &reference.source {
            Source::Url(url) => (url.clone(), None),
            Source::Via { param, suffix } => {
                let Some(definition) = base_definition(&test, main.as_ref(), param) else {
                    plan.not_fetched.push(NotFetched {
                        named_by,
                        value: format!("params.{param} + '{suffix}'"),
                        reason: format!(
                            "`params.{param}` is set to a string in neither `{TEST_CONFIG}` nor `nextflow.config`"
                        ),
                    });
                    continue;
                };
                (concat(&definition.value, suffix), Some((param, definition)))
            }
        };
        if let Some(rest) = url.strip_prefix(&*local) {
            plan.already_local.push(AlreadyLocal {
                named_by,
                path: local_path(req.local_root, rest.trim_start_matches('/')),
            });
            continue;
        }
        if is_directory_param(&reference.setting.key) {
            plan.not_fetched.push(NotFetched {
                named_by,
                value: url,
                reason: "names a directory (a base other paths hang off), not a file".to_owned(),
            });
            continue;
        }
        let rel = match locate(&url, req.base) {
            Located::Under(rel) => rel,
            Located::Off(reason) => {
                if looks_like_url(&url) {
                    plan.not_fetched.push(NotFetched {
                        named_by,
                        value: url,
                        reason,
                    });
                }
                continue;
            }
        };
        let this_branch = branch(&rel).to_owned();
        if !named_branches.contains(&this_branch) {
            named_branches.push(this_branch.clone());
        }
        let fetched = req.dataset.is_none_or(|dataset| dataset == this_branch);
        if let Some((param, definition)) = base_use {
            record_base_use(&mut bases, param, definition, reference.setting, fetched);
        }
        if !fetched {
            plan.not_fetched.push(NotFetched {
                named_by,
                value: url,
                reason: format!("of the dataset `{this_branch}`, not the one asked for"),
            });
            continue;
        }
        if let Source::Url(written) = &reference.source {
            match replace_string(req.test_config, reference.setting.line, written, |quote| {
                groovy_quoted(&local_path(req.local_root, &rel).to_string_lossy(), quote)
            }) {
                Some(edit) => edits.push(edit),
                None => plan.not_fetched.push(NotFetched {
                    named_by: named_by.clone(),
                    value: url.clone(),
                    reason: "fetched, but the string could not be found on its line to rewrite"
                        .to_owned(),
                }),
            }
        }
        if !plan.files.iter().any(|f| f.rel == rel) {
            plan.files.push(Wanted {
                url: format!("{}{rel}", req.base),
                rel,
                named_by,
            });
        }
    }
    for base in &bases {
        rewrite_base(req, base, &mut edits, &mut plan.not_fetched);
    }
    if let Some(dataset) = req.dataset
        && !named_branches.iter().any(|b| b == dataset)
    {
        return Err(TestDataError::DatasetNotNamed {
            config: TEST_CONFIG.to_owned(),
            dataset: dataset.to_owned(),
            named: if named_branches.is_empty() {
                "none".to_owned()
            } else {
                named_branches
                    .iter()
                    .map(|b| format!("`{b}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        });
    }
    if plan.files.is_empty() && plan.already_local.is_empty() && plan.not_fetched.is_empty() {
        return Err(TestDataError::NothingNamed {
            config: TEST_CONFIG.to_owned(),
        });
    }
    if !edits.is_empty() {
        let (text, changed) = edit::apply(req.test_config, edits);
        plan.rewritten = Some(text);
        plan.changed = changed;
    }
    Ok(plan)
}

/// Where a base path parameter is set to a string.
#[derive(Clone)]
struct Definition {
    value: String,
    /// The line in the test configuration, when it is set there.
    test_line: Option<u32>,
}

/// Every use of one base path parameter.
struct BaseUse<'s> {
    param: String,
    definition: Definition,
    first_use: &'s Setting,
    all_fetched: bool,
}

fn record_base_use<'s>(
    bases: &mut Vec<BaseUse<'s>>,
    param: &str,
    definition: Definition,
    setting: &'s Setting,
    fetched: bool,
) {
    match bases.iter_mut().find(|b| b.param == param) {
        Some(known) => known.all_fetched &= fetched,
        None => bases.push(BaseUse {
            param: param.to_owned(),
            definition,
            first_use: setting,
            all_fetched: fetched,
        }),
    }
}

/// The value a base path parameter has for the test profile: the test configuration's own
/// string, else `nextflow.config`'s.
fn base_definition(
    test: &crate::parse::Config,
    main: Option<&crate::parse::Config>,
    param: &str,
) -> Option<Definition> {
    let key = format!("params.{param}");
    if let Some(setting) = test.get(&key)
        && let Value::Str(value) = &setting.value
    {
        return Some(Definition {
            value: value.clone(),
            test_line: Some(setting.line),
        });
    }
    match &main?.get(&key)?.value {
        Value::Str(value) => Some(Definition {
            value: value.clone(),
            test_line: None,
        }),
        _ => None,
    }
}

/// Points a base path at the local directory: its value where the test configuration sets
/// it, else one line inserted before its first use.
fn rewrite_base(
    req: &ConfigRequest<'_>,
    base: &BaseUse<'_>,
    edits: &mut Vec<Edit>,
    not_fetched: &mut Vec<NotFetched>,
) {
    let named_by = format!("params.{}", base.param);
    let Some(rest) = url::locate_base(&base.definition.value, req.base) else {
        return;
    };
    if !base.all_fetched {
        not_fetched.push(NotFetched {
            named_by,
            value: base.definition.value.clone(),
            reason: "left as it is: it also leads to files of other datasets, not fetched"
                .to_owned(),
        });
        return;
    }
    let mut local = as_base(req.local_root);
    local.push_str(&rest);
    if let Some(line) = base.definition.test_line
        && let Some(edit) = replace_string(req.test_config, line, &base.definition.value, |q| {
            groovy_quoted(&local, q)
        })
    {
        edits.push(edit);
        return;
    }
    match insert_before(req.test_config, base.first_use, &base.param, &local) {
        Some(edit) => edits.push(edit),
        None => not_fetched.push(NotFetched {
            named_by,
            value: base.definition.value.clone(),
            reason: format!(
                "fetched, but no line could be added to `{TEST_CONFIG}` to point it at `{local}`"
            ),
        }),
    }
}

/// The line `<indent>NAME = 'local'` (or `params.NAME = …` when the use is written dotted)
/// before the line of `first_use`, which must start with its own key.
fn insert_before(text: &str, first_use: &Setting, param: &str, local: &str) -> Option<Edit> {
    let at = line_start(text, first_use.line)?;
    let line = line_text(text, at);
    let indent = &line[..line.len() - line.trim_start().len()];
    let written = line.trim_start();
    let dotted = first_use.key.as_str();
    let short = dotted.strip_prefix("params.")?;
    let key = if written.starts_with(dotted) {
        format!("params.{param}")
    } else if written.starts_with(short) {
        param.to_owned()
    } else {
        return None;
    };
    Some(Edit::Insert {
        at,
        line: format!(
            "{indent}{key} = '{}'{}",
            groovy_quoted(local, '\''),
            line_end_at(text, at)
        ),
    })
}

/// The edit replacing the string literal `value` (as written between quotes) on `line` or
/// the two lines after it with what `with(quote)` gives.
fn replace_string(
    text: &str,
    line: u32,
    value: &str,
    with: impl Fn(char) -> String,
) -> Option<Edit> {
    let start = line_start(text, line)?;
    let end = line_start(text, line + 3).unwrap_or(text.len());
    let window = &text[start..end];
    for quote in ['\'', '"'] {
        let quoted = format!("{quote}{value}{quote}");
        if let Some(at) = window.find(&quoted) {
            let begin = start + at + 1;
            return Some(Edit::Replace {
                start: begin,
                end: begin + value.len(),
                with: with(quote),
            });
        }
    }
    None
}

/// Whether a parameter names a directory by nf-core's naming (`igenomes_base`,
/// `pipelines_testdata_base_path`, `*_dir`): data hangs off it, it is no file to fetch.
fn is_directory_param(key: &str) -> bool {
    key.ends_with("_base") || key.ends_with("_base_path") || key.ends_with("_dir")
}

/// `base` followed by `suffix`, one `/` between them when both have one.
fn concat(base: &str, suffix: &str) -> String {
    match (base.strip_suffix('/'), suffix.strip_prefix('/')) {
        (Some(base), Some(suffix)) => format!("{base}/{suffix}"),
        _ => format!("{base}{suffix}"),
    }
}

/// How a value reaches data: a URL string (or a local copy's path), `params.X + 'lit'`, or `"${params.X}lit"`.
fn source_of(value: &Value, local: &str) -> Option<Source> {
    match value {
        Value::Str(text) if looks_like_url(text) || text.starts_with(local) => {
            Some(Source::Url(text.clone()))
        }
        Value::Expr(expr) => via_param(expr.trim()),
        _ => None,
    }
}

fn via_param(expr: &str) -> Option<Source> {
    // `params.NAME + 'suffix'` or `params.NAME + "suffix"`.
    if let Some(rest) = expr.strip_prefix("params.") {
        let (param, rest) = split_ident(rest);
        let rest = rest.trim_start().strip_prefix('+')?.trim_start();
        let suffix = plain_literal(rest)?;
        return Some(Source::Via {
            param: param.to_owned(),
            suffix,
        });
    }
    // `"${params.NAME}suffix"`.
    let inner = expr.strip_prefix('"')?.strip_suffix('"')?;
    let rest = inner.strip_prefix("${params.")?;
    let (param, rest) = split_ident(rest);
    let suffix = rest.strip_prefix('}')?;
    if param.is_empty() || suffix.contains(['$', '\\', '"']) {
        return None;
    }
    Some(Source::Via {
        param: param.to_owned(),
        suffix: suffix.to_owned(),
    })
}

fn split_ident(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    text.split_at(end)
}

/// The value of a whole single- or double-quoted string without escapes or interpolation.
fn plain_literal(text: &str) -> Option<String> {
    let quote = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = text.strip_prefix(quote)?.strip_suffix(quote)?;
    if inner.contains([quote, '\\']) || (quote == '"' && inner.contains('$')) {
        return None;
    }
    Some(inner.to_owned())
}

#[cfg(test)]
mod tests;
