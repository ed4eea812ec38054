//! The built-in checks, and the plumbing every check shares: where findings go, what a check
//! proposes for the plan, and the facts about a pipeline that several checks read.

mod files;
mod params;
mod process;

use std::cell::OnceCell;

use super::finding::Finding;
use super::generic::{fix_generic, propose_generic, run_generic};
use super::pipeline::SourceTree;
use super::rule::{BuiltinCheck, Check, Rule, Severity};
use crate::parse::{
    Config, NfFile, Process, Setting, is_nftest_config, parse_config, parse_script,
};

/// Collects one rule's findings.
pub(crate) struct Report<'a> {
    rule: &'a Rule,
    out: &'a mut Vec<Finding>,
}

impl Report<'_> {
    pub(crate) fn at(&mut self, file: &str, line: usize, message: impl Into<String>) {
        self.at_most(file, line, self.rule.severity, message);
    }

    /// A finding the check cannot prove (a value computed at run time): the rule's severity,
    /// but no more than `cap`.
    pub(crate) fn at_most(
        &mut self,
        file: &str,
        line: usize,
        cap: Severity,
        message: impl Into<String>,
    ) {
        self.out.push(Finding {
            file: file.to_string(),
            line,
            rule: self.rule.id.clone(),
            severity: self.rule.severity.min(cap),
            message: message.into(),
            why: self.rule.description.clone(),
            doc: self.rule.doc.clone(),
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
    pub(crate) p: &'a SourceTree,
    config: OnceCell<Vec<Config>>,
    scripts: OnceCell<Vec<NfFile>>,
}

impl<'a> Facts<'a> {
    pub(crate) fn new(p: &'a SourceTree) -> Facts<'a> {
        Facts {
            p,
            config: OnceCell::new(),
            scripts: OnceCell::new(),
        }
    }

    /// Every `*.config` file of the pipeline except nf-test's own (`nf-test.config`, the
    /// ones under `tests/`), parsed: those are nf-test's, not Nextflow's, so no Nextflow rule
    /// reads them.
    pub(crate) fn configs(&self) -> &[Config] {
        self.config.get_or_init(|| {
            self.p
                .files()
                .filter(|(path, _)| {
                    path.ends_with(".config") && !is_test_path(path) && !is_nftest_config(path)
                })
                .map(|(path, text)| parse_config(path, text))
                .collect()
        })
    }

    /// Every `.nf` file, read by [`crate::parse`].
    pub(crate) fn scripts(&self) -> &[NfFile] {
        self.scripts.get_or_init(|| {
            self.p
                .files()
                .filter(|(path, _)| path.ends_with(".nf"))
                .map(|(path, text)| parse_script(path, text))
                .collect()
        })
    }

    /// Every process of the pipeline with the file it is in.
    pub(crate) fn processes(&self) -> impl Iterator<Item = (&NfFile, &Process)> {
        self.scripts()
            .iter()
            .flat_map(|f| f.processes.iter().map(move |p| (f, p)))
    }

    /// What the reader did not understand in the scripts and configs, one line each.
    pub(crate) fn not_understood(&self) -> Vec<String> {
        let scripts = self.scripts().iter().flat_map(|f| f.unparsed.iter());
        let configs = self.configs().iter().flat_map(|c| c.unparsed.iter());
        scripts
            .chain(configs)
            .map(|u| crate::rules::finding::one_line(&u.to_string()))
            .collect()
    }

    /// `nextflow.config`, parsed, when the pipeline has one.
    pub(crate) fn main_config(&self) -> Option<&Config> {
        self.configs()
            .iter()
            .find(|c| c.files.first().is_some_and(|f| f == "nextflow.config"))
    }

    /// Every setting of every config whose last key is `name` (`container`, `publishDir`).
    pub(crate) fn settings<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s Setting> {
        self.configs()
            .iter()
            .flat_map(|c| c.settings.iter())
            .filter(move |s| s.key.rsplit('.').next() == Some(name))
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
pub(crate) fn fix_rule(rule: &Rule, p: &SourceTree) -> Vec<(String, String)> {
    match &rule.check {
        Check::Generic(g) => fix_generic(g, p),
        Check::Builtin(b) => fix_builtin(*b, p),
    }
}

/// What to do about one finding that autofix did not fix.
pub(crate) fn propose(rule: &Rule, finding: &Finding, p: &SourceTree) -> Proposal {
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
        BuiltinCheck::ContainerPinned => process::container_pinned(facts, r),
        BuiltinCheck::ProcessResourceLabel => process::process_resource_label(facts, r),
        BuiltinCheck::ProcessSoftware => process::process_software(facts, r),
        BuiltinCheck::PublishDirMode => process::publish_dir_mode(facts, r),
        BuiltinCheck::VersionsEmitted => process::versions_emitted(facts, r),
        BuiltinCheck::ErrorStrategy => process::error_strategy(facts, r),
    }
}

pub(crate) fn fix_builtin(check: BuiltinCheck, p: &SourceTree) -> Vec<(String, String)> {
    match check {
        BuiltinCheck::PublishDirMode => process::fix_publish_dir_mode(p),
        // Every other built-in check reports `can_fix() == false` and so is never asked.
        _ => Vec::new(),
    }
}

pub(crate) fn propose_builtin(check: BuiltinCheck, finding: &Finding, p: &SourceTree) -> Proposal {
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
        BuiltinCheck::ProcessResourceLabel => process::propose_label(finding, p),
        BuiltinCheck::ContainerPinned => Proposal::instruction(format!(
            "pin the container on line {} of `{}` to the exact version it should run (`tool:1.2.3--build`, or `@sha256:…`); nf-core modules' containers come from `nf-core modules update`",
            finding.line, finding.file
        )),
        BuiltinCheck::ProcessSoftware => Proposal::instruction(format!(
            "add a `container` (pinned) and a `conda` directive to the process on line {} of `{}`",
            finding.line, finding.file
        )),
        BuiltinCheck::VersionsEmitted => Proposal::instruction(format!(
            "make the process on line {} of `{}` emit its versions: an output `tuple val(\"${{task.process}}\"), val('tool'), eval('tool --version'), topic: versions`, or a `versions.yml` file",
            finding.line, finding.file
        )),
        BuiltinCheck::PublishDirMode => Proposal::instruction(format!(
            "on line {} of `{}`, set the `publishDir` `mode:` to `params.publish_dir_mode` or one of symlink, rellink, link, copy, copyNoFollow, move",
            finding.line, finding.file
        )),
        BuiltinCheck::ErrorStrategy => Proposal::instruction(format!(
            "on line {} of `{}`, use terminate, finish, retry (with `maxRetries`) or a closure; keep `ignore` to a `withName`/`withLabel` selector for processes whose failure is acceptable",
            finding.line, finding.file
        )),
    }
}
