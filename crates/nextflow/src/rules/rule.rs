//! A rule as data, and the rule set: the built-in rules plus an operator's rule files.

use std::fmt;
use std::path::Path;

use globset::GlobSet;
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::error::RuleError;
use super::load;

/// How much a finding matters. Ordered `Info < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    /// The word used in rule files and in rendered findings.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    pub(crate) fn from_word(word: &str) -> Option<Severity> {
        match word {
            "info" => Some(Severity::Info),
            "warning" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One compliance rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Upper-case words joined by `-`, e.g. `NF-CONTAINER-PINNED`.
    pub id: String,
    pub title: String,
    pub severity: Severity,
    /// What the rule checks and why, in a sentence or two.
    pub description: String,
    /// Whether [`crate::audit::autofix`] can fix its findings without a person.
    pub fixable: bool,
    /// A link to where the practice is documented (`doc = "https://…"` in a rule file).
    pub doc: Option<String>,
    pub check: Check,
    /// Where the rule was defined: `built-in` or the rule file's path.
    pub source: String,
}

/// What a rule runs.
#[derive(Debug, Clone)]
pub enum Check {
    /// A check implemented in Rust, named in the rule file by `name`.
    Builtin(BuiltinCheck),
    /// A data-only check, written entirely in the rule file.
    Generic(Box<GenericCheck>),
}

impl Check {
    /// Whether this check knows how to fix what it finds.
    pub fn can_fix(&self) -> bool {
        match self {
            Check::Builtin(b) => b.can_fix(),
            Check::Generic(g) => g.can_fix(),
        }
    }
}

/// The named checks implemented in Rust (`kind = "builtin"`, `name = "..."` in a rule file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BuiltinCheck {
    /// Every container (process directive or config) names a tag other than `latest`, or a digest.
    ContainerPinned,
    /// Every process carries a resource label (or sets cpus/memory itself).
    ProcessResourceLabel,
    /// Every process declares its software: a container or a conda environment.
    ProcessSoftware,
    /// Every `publishDir` sets `mode`, to a mode Nextflow knows.
    PublishDirMode,
    /// Every `params.X` the code uses is documented in `nextflow_schema.json`.
    ParamsDocumented,
    /// Every parameter of `nextflow_schema.json` has a default in the config.
    SchemaParamsDeclared,
    /// `manifest` has name, description, author or contributors, version, nextflowVersion, homePage.
    ManifestComplete,
    /// Every process emits its tool versions (`versions.yml` or the `versions` topic).
    VersionsEmitted,
    /// nf-core modules and subworkflows have `main.nf`, `meta.yml` and nf-tests.
    ModuleStructure,
    /// `errorStrategy` values are valid, `ignore` only in selectors, `retry` bounded.
    ErrorStrategy,
    /// `nextflow_schema.json` is JSON, declares `$schema` and describes an object.
    SchemaValid,
    /// Conda dependencies name a version.
    CondaPinned,
}

impl BuiltinCheck {
    const ALL: [BuiltinCheck; 12] = [
        BuiltinCheck::ContainerPinned,
        BuiltinCheck::ProcessResourceLabel,
        BuiltinCheck::ProcessSoftware,
        BuiltinCheck::PublishDirMode,
        BuiltinCheck::ParamsDocumented,
        BuiltinCheck::SchemaParamsDeclared,
        BuiltinCheck::ManifestComplete,
        BuiltinCheck::VersionsEmitted,
        BuiltinCheck::ModuleStructure,
        BuiltinCheck::ErrorStrategy,
        BuiltinCheck::SchemaValid,
        BuiltinCheck::CondaPinned,
    ];

    /// The name a rule file uses for this check.
    pub fn name(self) -> &'static str {
        match self {
            BuiltinCheck::ContainerPinned => "container_pinned",
            BuiltinCheck::ProcessResourceLabel => "process_resource_label",
            BuiltinCheck::ProcessSoftware => "process_software",
            BuiltinCheck::PublishDirMode => "publish_dir_mode",
            BuiltinCheck::ParamsDocumented => "params_documented",
            BuiltinCheck::SchemaParamsDeclared => "schema_params_declared",
            BuiltinCheck::ManifestComplete => "manifest_complete",
            BuiltinCheck::VersionsEmitted => "versions_emitted",
            BuiltinCheck::ModuleStructure => "module_structure",
            BuiltinCheck::ErrorStrategy => "error_strategy",
            BuiltinCheck::SchemaValid => "schema_valid",
            BuiltinCheck::CondaPinned => "conda_pinned",
        }
    }

    /// The check a rule file names, if there is one by that name.
    pub fn from_name(name: &str) -> Option<BuiltinCheck> {
        BuiltinCheck::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The names of every built-in check, for error messages.
    pub fn names() -> Vec<&'static str> {
        BuiltinCheck::ALL.iter().map(|c| c.name()).collect()
    }

    /// Only a missing `publishDir` mode has one right answer (the pipeline's own
    /// `params.publish_dir_mode`, else `copy`); every other built-in finding needs a person.
    pub fn can_fix(self) -> bool {
        matches!(self, BuiltinCheck::PublishDirMode)
    }
}

/// A data-only check.
#[derive(Debug, Clone)]
pub enum GenericCheck {
    /// No line of the files matching `files` (and not `exclude`) matches `pattern`. With a
    /// `replacement` (regex replacement syntax, `$1`), the matches are replaced by autofix.
    ForbiddenPattern {
        files: FileSet,
        pattern: Regex,
        message: String,
        replacement: Option<String>,
    },
    /// At least one file matches one of `any_of` (globs). With `create_with`, autofix creates
    /// the first of `any_of` with that text.
    ///
    /// With `when_any` (globs), the file is required only in a pipeline with a file matching
    /// one of them (`nf-test.config` only where there are nf-tests).
    RequiredFile {
        any_of: Vec<String>,
        matcher: GlobSet,
        message: String,
        create_with: Option<String>,
        when_any: Option<GlobSet>,
    },
    /// Each dotted key (e.g. `manifest.version`) is assigned a non-empty value in `file`.
    RequiredConfigKey { file: String, keys: Vec<String> },
    /// `file` contains each of `lines` as a whole line; autofix appends the missing ones. A line
    /// named in `when` (line, globs) is required only in a pipeline with a file matching one of
    /// its globs (`.nf-test/` in `.gitignore` only where nf-test is used).
    RequiredLines {
        file: String,
        lines: Vec<String>,
        when: Vec<(String, GlobSet)>,
    },
}

impl GenericCheck {
    /// A data check is fixable exactly when its data says how.
    pub fn can_fix(&self) -> bool {
        match self {
            GenericCheck::ForbiddenPattern { replacement, .. } => replacement.is_some(),
            GenericCheck::RequiredFile { create_with, .. } => create_with.is_some(),
            GenericCheck::RequiredConfigKey { .. } => false,
            GenericCheck::RequiredLines { .. } => true,
        }
    }
}

/// A set of files given by globs over paths relative to the pipeline (`/`-separated; `*` stays
/// within one directory, `**` crosses them).
#[derive(Debug, Clone)]
pub struct FileSet {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub(crate) include_set: GlobSet,
    pub(crate) exclude_set: GlobSet,
}

impl FileSet {
    pub fn matches(&self, path: &str) -> bool {
        self.include_set.is_match(path) && !self.exclude_set.is_match(path)
    }
}

/// The rules in force, in the order they were defined (built-in first).
#[derive(Debug, Clone)]
pub struct RuleSet {
    rules: Vec<Rule>,
}

const BUILTIN_RULES: &str = include_str!("builtin.toml");

impl RuleSet {
    /// The built-in rules only.
    pub fn builtin() -> Result<RuleSet, RuleError> {
        let rules = load::parse_rules("built-in", BUILTIN_RULES)?;
        let mut set = RuleSet { rules: Vec::new() };
        set.extend(rules)?;
        Ok(set)
    }

    /// The built-in rules plus every `*.toml` file of `dir`, in file-name order. A directory
    /// that does not exist adds nothing (an operator need not have one); a rule whose id is
    /// already defined is an error, so an operator's file can never silently replace a rule.
    pub fn load(dir: &Path) -> Result<RuleSet, RuleError> {
        let mut set = RuleSet::builtin()?;
        for (name, text) in load::read_rule_dir(dir)? {
            let rules = load::parse_rules(&name, &text)?;
            set.extend(rules)?;
        }
        Ok(set)
    }

    /// The built-in rules plus the rules of one file's text (`name` is used in errors).
    pub fn with_file(mut self, name: &str, text: &str) -> Result<RuleSet, RuleError> {
        let rules = load::parse_rules(name, text)?;
        self.extend(rules)?;
        Ok(self)
    }

    fn extend(&mut self, rules: Vec<Rule>) -> Result<(), RuleError> {
        for rule in rules {
            if let Some(first) = self.get(&rule.id) {
                return Err(RuleError::Duplicate {
                    file: rule.source.clone(),
                    id: rule.id.clone(),
                    first: first.source.clone(),
                });
            }
            self.rules.push(rule);
        }
        Ok(())
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn get(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }
}

/// `list_compliance_rules`: one rule per line, starting with its id:
/// `ID SEVERITY autofix|manual TITLE: DESCRIPTION (see DOC)`.
pub fn render_rules(set: &RuleSet) -> String {
    let mut out = String::new();
    for rule in set.rules() {
        let fix = if rule.fixable { "autofix" } else { "manual" };
        out.push_str(&format!(
            "{} {} {} {}: {}",
            rule.id,
            rule.severity,
            fix,
            super::finding::one_line(&rule.title),
            super::finding::one_line(&rule.description)
        ));
        if let Some(doc) = &rule.doc {
            out.push_str(&format!(" (see {})", super::finding::one_line(doc)));
        }
        out.push('\n');
    }
    out
}
