//! The built-in checks, and the plumbing every check shares: where findings go, what a check
//! proposes for the plan, and the facts about a pipeline that several checks read.

mod files;
mod params;

use std::cell::OnceCell;

use super::config::ConfigFile;
use super::finding::Finding;
use super::generic::{fix_generic, propose_generic, run_generic};
use super::pipeline::Pipeline;
use super::rule::{BuiltinCheck, Check, Rule};

/// Collects one rule's findings.
pub(crate) struct Report<'a> {
    rule: &'a Rule,
    out: &'a mut Vec<Finding>,
}

impl Report<'_> {
    pub(crate) fn at(&mut self, file: &str, line: usize, message: impl Into<String>) {
        self.out.push(Finding {
            file: file.to_string(),
            line,
            rule: self.rule.id.clone(),
            severity: self.rule.severity,
            message: message.into(),
        });
    }
}

/// What the plan tells a person about a finding: always an instruction, and the new text of
/// one file when a concrete change can be computed (shown and applied as a unified diff).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Proposal {
    pub(crate) instruction: String,
    pub(crate) change: Option<(String, String)>,
}

impl Proposal {
    pub(crate) fn instruction(instruction: impl Into<String>) -> Proposal {
        Proposal {
            instruction: instruction.into(),
            change: None,
        }
    }
}

/// What several checks read, computed once per audit.
pub(crate) struct Facts<'a> {
    pub(crate) p: &'a Pipeline,
    config: OnceCell<Vec<(String, ConfigFile)>>,
}

impl<'a> Facts<'a> {
    pub(crate) fn new(p: &'a Pipeline) -> Facts<'a> {
        Facts {
            p,
            config: OnceCell::new(),
        }
    }

    /// Every `*.config` file of the pipeline except the nf-test ones under `tests/`, parsed.
    pub(crate) fn configs(&self) -> &[(String, ConfigFile)] {
        self.config.get_or_init(|| {
            self.p
                .files()
                .filter(|(path, _)| path.ends_with(".config") && !is_test_path(path))
                .map(|(path, text)| (path.to_string(), ConfigFile::parse(text)))
                .collect()
        })
    }

    /// `nextflow.config`, parsed, when the pipeline has one.
    pub(crate) fn main_config(&self) -> Option<&ConfigFile> {
        self.configs()
            .iter()
            .find(|(path, _)| path == "nextflow.config")
            .map(|(_, c)| c)
    }
}

/// Files under a `tests/` directory or named `*.nf.test` configure tests, not the pipeline.
pub(crate) fn is_test_path(path: &str) -> bool {
    path.starts_with("tests/") || path.contains("/tests/") || path.ends_with(".nf.test")
}

/// Runs one rule.
pub(crate) fn run_rule(rule: &Rule, facts: &Facts<'_>, out: &mut Vec<Finding>) {
    let mut r = Report { rule, out };
    match &rule.check {
        Check::Generic(g) => run_generic(g, facts.p, &mut r),
        Check::Builtin(b) => run_builtin(*b, facts, &mut r),
    }
}

/// The new text of each file a fixable rule changes (nothing for a rule that cannot fix).
pub(crate) fn fix_rule(rule: &Rule, p: &Pipeline) -> Vec<(String, String)> {
    match &rule.check {
        Check::Generic(g) => fix_generic(g, p),
        Check::Builtin(b) => fix_builtin(*b, p),
    }
}

/// What to do about one finding that autofix did not fix.
pub(crate) fn propose(rule: &Rule, finding: &Finding, p: &Pipeline) -> Proposal {
    match &rule.check {
        Check::Generic(g) => propose_generic(g, &finding.file, finding.line),
        Check::Builtin(b) => propose_builtin(*b, finding, p),
    }
}

pub(crate) fn run_builtin(check: BuiltinCheck, facts: &Facts<'_>, r: &mut Report<'_>) {
    match check {
        BuiltinCheck::ModuleStructure => files::module_structure(facts.p, r),
        BuiltinCheck::SchemaValid => files::schema_valid(facts.p, r),
        BuiltinCheck::CondaPinned => files::conda_pinned(facts.p, r),
        BuiltinCheck::ParamsDocumented => params::params_documented(facts, r),
        BuiltinCheck::SchemaParamsDeclared => params::schema_params_declared(facts, r),
        BuiltinCheck::ManifestComplete => params::manifest_complete(facts, r),
        BuiltinCheck::ContainerPinned
        | BuiltinCheck::ProcessResourceLabel
        | BuiltinCheck::ProcessSoftware
        | BuiltinCheck::PublishDirMode
        | BuiltinCheck::VersionsEmitted
        | BuiltinCheck::ErrorStrategy => {}
    }
}

pub(crate) fn fix_builtin(check: BuiltinCheck, _p: &Pipeline) -> Vec<(String, String)> {
    let _ = check;
    Vec::new()
}

pub(crate) fn propose_builtin(check: BuiltinCheck, finding: &Finding, p: &Pipeline) -> Proposal {
    match check {
        BuiltinCheck::ModuleStructure => files::propose_module_structure(finding),
        BuiltinCheck::SchemaValid => Proposal::instruction(format!(
            "make `{}` a JSON Schema object with `$schema` (draft 2020-12, as `nf-core pipelines schema build` writes it)",
            finding.file
        )),
        BuiltinCheck::CondaPinned => Proposal::instruction(format!(
            "pin the dependency on line {} of `{}` to the version the container holds (`channel::tool=1.2.3`)",
            finding.line, finding.file
        )),
        BuiltinCheck::ParamsDocumented => params::propose_params_documented(finding, p),
        BuiltinCheck::SchemaParamsDeclared => params::propose_schema_param(finding, p),
        BuiltinCheck::ManifestComplete => params::propose_manifest(finding, p),
        _ => Proposal::instruction(finding.message.clone()),
    }
}
