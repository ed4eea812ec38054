//! The model the reader builds: plain data, serialisable, with 1-based lines and file paths
//! relative to the pipeline. Fields are only ever added, so tools built on it keep working.

use serde::Serialize;

/// A value as written in a script or config: a literal where the source has one, otherwise the
/// source text (`Expr`), so nothing is evaluated and nothing is guessed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Value {
    Null,
    Bool(bool),
    /// A number as written (`1`, `-1`, `2.5`, `0x10`); kept as text so `Value` stays exact.
    Number(String),
    Str(String),
    List(Vec<Value>),
    /// A Groovy map literal in source order (`[name: 'x', mode: 'copy']`).
    Map(Vec<(String, Value)>),
    /// Anything that is not a literal — a closure, a GString with `${…}`, a call — as source text.
    Expr(String),
}

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The entry `key` of a map literal.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Whether the value is a literal all the way down (no `Expr` anywhere in it).
    pub fn is_literal(&self) -> bool {
        match self {
            Value::Expr(_) => false,
            Value::List(items) => items.iter().all(Value::is_literal),
            Value::Map(entries) => entries.iter().all(|(_, v)| v.is_literal()),
            _ => true,
        }
    }
}

/// A construct the reader did not understand. The tools show these rather than guess.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unparsed {
    /// Relative to the pipeline (or as given to the single-file readers).
    pub file: String,
    pub line: u32,
    /// What was not understood, one line, lowercase start, no final period.
    pub what: String,
}

/// One `.nf` file.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct NfFile {
    pub path: String,
    pub processes: Vec<Process>,
    pub workflows: Vec<Workflow>,
    pub includes: Vec<Include>,
    /// `params.x = …` assignments at the top level.
    pub params: Vec<Param>,
    /// Top-level `def name(…) { … }` functions.
    pub functions: Vec<Function>,
    /// Top-level statements that are understood but not modelled further (`import`,
    /// `nextflow.enable.dsl = 2`, an `output { }` block, a `def x = …` variable).
    pub others: Vec<Other>,
    pub unparsed: Vec<Unparsed>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Process {
    pub name: String,
    pub line: u32,
    /// Line of the closing `}`; the last line of the file when it is missing.
    pub end_line: u32,
    pub directives: Vec<Directive>,
    pub inputs: Vec<Declaration>,
    pub outputs: Vec<Declaration>,
    pub when: Option<Block>,
    pub script: Option<Script>,
    pub stub: Option<Block>,
}

impl Process {
    /// The first directive called `name` (`container`, `label`, `publishDir`, …).
    pub fn directive(&self, name: &str) -> Option<&Directive> {
        self.directives.iter().find(|d| d.name == name)
    }

    /// Every `label` given as a literal string; a computed one (`"process_${size}"`) is not
    /// listed, though its directive is there.
    pub fn labels(&self) -> Vec<&str> {
        self.directives
            .iter()
            .filter(|d| d.name == "label")
            .flat_map(|d| d.strings.iter().map(String::as_str))
            .collect()
    }

    /// The container images visible in the `container` directive: its literal, or both
    /// branches of the nf-core `workflow.containerEngine … ? 'a' : 'b'` ternary.
    pub fn container_images(&self) -> Vec<&str> {
        self.directive("container")
            .map(|d| d.strings.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// The `emit:` names of the outputs, in order.
    pub fn emits(&self) -> Vec<&str> {
        self.outputs
            .iter()
            .filter_map(|d| d.emit.as_deref())
            .collect()
    }
}

/// A process directive such as `label 'process_low'` or `cpus 4`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Directive {
    /// As written; a dotted name (`ext.args`) is kept whole.
    pub name: String,
    /// The raw source text of the value.
    pub value: String,
    pub line: u32,
    /// The literal strings the value can be, where the source shows them: the string itself,
    /// or the branches of a ternary (inside `"${…}"` or not). Empty when none is visible.
    pub strings: Vec<String>,
    /// The value's comma-separated arguments: `publishDir "${params.outdir}", mode: 'copy'` is
    /// one positional and one named (`mode`).
    pub args: Vec<Arg>,
}

impl Directive {
    /// The named argument `name` (`mode` of `publishDir`, `args` of `ext`).
    pub fn arg(&self, name: &str) -> Option<&Value> {
        self.args
            .iter()
            .find(|a| a.name.as_deref() == Some(name))
            .map(|a| &a.value)
    }
}

/// One argument of a directive.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Arg {
    /// `None` for a positional argument.
    pub name: Option<String>,
    pub value: Value,
}

/// One declaration of an `input:` or `output:` section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Declaration {
    pub line: u32,
    /// The raw source text of the declaration.
    pub text: String,
    /// The first word: `val`, `path`, `tuple`, `env`, `stdin`, `stdout`, `eval`, `file`, …
    pub qualifier: Option<String>,
    /// The `emit:` name.
    pub emit: Option<String>,
    /// The `topic:` name.
    pub topic: Option<String>,
    /// Whether `optional: true` is given.
    pub optional: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptKind {
    Script,
    Shell,
    Exec,
    /// A process body that ends in a bare string with no `script:` label.
    Implicit,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Script {
    pub kind: ScriptKind,
    /// Line of the first token of the body.
    pub line: u32,
    /// The source text of the section, Groovy lines and the command string alike.
    pub text: String,
}

/// A section's source text and the line it starts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Block {
    pub line: u32,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workflow {
    /// `None` for the unnamed entry workflow.
    pub name: Option<String>,
    pub line: u32,
    pub end_line: u32,
    pub take: Vec<Named>,
    pub main: Option<Block>,
    pub emits: Vec<Emit>,
    /// The `publish:` section of the newer workflow-output syntax, one entry a line.
    pub publish: Vec<Emit>,
    /// Calls `NAME(…)` in the body that are not methods (`x.f(…)`): processes, subworkflows
    /// and functions, in order of appearance.
    pub calls: Vec<Named>,
}

/// A name at a line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Named {
    pub name: String,
    pub line: u32,
}

/// One line of a workflow's `emit:` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Emit {
    /// `name` of `name = expr`, or the expression itself when it is a bare name.
    pub name: Option<String>,
    pub text: String,
    pub line: u32,
}

/// `include { A; B as C } from './path'`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Include {
    pub names: Vec<IncludedName>,
    /// The path or `plugin/…` as written.
    pub source: String,
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IncludedName {
    pub name: String,
    pub alias: Option<String>,
}

impl IncludedName {
    /// The name the including file uses: the alias when there is one.
    pub fn local_name(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.name)
    }
}

/// `params.name = value` in a script, or an entry of a script's `params { }` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Param {
    pub name: String,
    /// The default; `Null` for a typed entry without one (`input: Path`).
    pub value: Value,
    pub line: u32,
    /// The declared type of a `params { name: Type }` entry, as written.
    pub type_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Function {
    pub name: String,
    pub line: u32,
}

/// A top-level statement understood but not modelled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Other {
    pub line: u32,
    pub text: String,
}

/// A `withName:` or `withLabel:` process selector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessSelector {
    pub kind: SelectorKind,
    /// The pattern as written, unquoted (`FASTQC`, `.*:MULTIQC`, `!process_low`).
    pub pattern: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SelectorKind {
    WithName,
    WithLabel,
}

impl SelectorKind {
    pub fn keyword(self) -> &'static str {
        match self {
            SelectorKind::WithName => "withName",
            SelectorKind::WithLabel => "withLabel",
        }
    }
}

/// One assignment in a config file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Setting {
    /// The full dotted key as `nextflow config` prints it, scopes included and the profile
    /// left out: `manifest.name`, `process.withName:FASTQC.ext.args`, `docker.enabled`. A
    /// quoted block name is a part of its own, kept quoted when it is not a plain name:
    /// `params.genomes.GRCh37.fasta`, `params.genomes.'GATK.GRCh37'.fasta`.
    pub key: String,
    pub value: Value,
    pub file: String,
    pub line: u32,
    /// The profile it belongs to (`profiles { docker { … } }`), if any.
    pub profile: Option<String>,
    /// The process selector it sits under, if any.
    pub selector: Option<ProcessSelector>,
}

/// A `withName:`/`withLabel:` block in a config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SelectorBlock {
    pub selector: ProcessSelector,
    pub file: String,
    pub line: u32,
    pub profile: Option<String>,
}

/// `includeConfig …`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigInclude {
    /// The file holding the statement.
    pub file: String,
    pub line: u32,
    /// The argument's source text.
    pub expr: String,
    /// The literal paths the argument can be (one, or the two branches of a ternary).
    pub candidates: Vec<String>,
    /// The file read, relative to the pipeline, when one was.
    pub loaded: Option<String>,
    /// Why nothing was read, when nothing was (remote, not found, condition not evaluable).
    pub note: Option<String>,
    pub profile: Option<String>,
}

/// A profile declared in `profiles { name { … } }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Profile {
    pub name: String,
    pub file: String,
    pub line: u32,
}

/// A `def` at a config's top level or in a scope: a variable the file's values use
/// (`def trace_timestamp = new java.util.Date().format(…)`) or a helper function (the old
/// nf-core `def check_max(obj, type) { … }`). Nextflow runs them when it reads the config at
/// launch; the reader records them and runs nothing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigDef {
    pub name: String,
    pub file: String,
    pub line: u32,
    pub profile: Option<String>,
    /// A variable's value as written; `None` for a function.
    pub value: Option<Value>,
    /// What it is, one line: "function `check_max(obj, type)`, called when the config is read",
    /// "a new `java.util.Date`, made at run time".
    pub what: String,
}

/// A file the reader recognised and deliberately did not read as a Nextflow config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub file: String,
    /// Why, one line: "nf-test's own configuration, read by nf-test, not by Nextflow".
    pub why: String,
}

/// The static reading of `nextflow.config` and the configs it includes.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Config {
    /// The files read, in the order they were read.
    pub files: Vec<String>,
    pub settings: Vec<Setting>,
    pub includes: Vec<ConfigInclude>,
    pub profiles: Vec<Profile>,
    pub selectors: Vec<SelectorBlock>,
    pub unparsed: Vec<Unparsed>,
    /// The `def` variables and functions, in reading order.
    pub defs: Vec<ConfigDef>,
    /// Files met (included, given, or beside a pipeline's `nextflow.config`) and not read as a
    /// Nextflow config, with why: an `nf-test.config`.
    pub skipped: Vec<Skipped>,
}

impl Config {
    /// The effective top-level setting for `key` (outside any profile and selector): the last
    /// one assigned, as in Nextflow.
    pub fn get(&self, key: &str) -> Option<&Setting> {
        self.settings
            .iter()
            .rev()
            .find(|s| s.key == key && s.profile.is_none() && s.selector.is_none())
    }

    /// The `params.*` settings outside profiles, the last assignment of each name, in the
    /// order names first appear. Only plain params: a param given as a scope of its own
    /// (`params { genomes { 'GRCh37' { fasta = … } } }`) is in [`Config::nested_params`].
    pub fn params(&self) -> Vec<&Setting> {
        let mut seen: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        for s in &self.settings {
            if s.profile.is_some() {
                continue;
            }
            if let Some(name) = s.key.strip_prefix("params.")
                && key_parts(name).len() == 1
                && !seen.contains(&name)
            {
                seen.push(name);
                if let Some(last) = self.get(&s.key) {
                    out.push(last);
                }
            }
        }
        out
    }

    /// The params set as scopes (a map param such as nf-core's `genomes`), outside profiles:
    /// each name with its settings, in the order names first appear.
    pub fn nested_params(&self) -> Vec<(&str, Vec<&Setting>)> {
        let mut out: Vec<(&str, Vec<&Setting>)> = Vec::new();
        for s in &self.settings {
            if s.profile.is_some() || s.selector.is_some() {
                continue;
            }
            let Some(rest) = s.key.strip_prefix("params.") else {
                continue;
            };
            let parts = key_parts(rest);
            let (Some(name), true) = (parts.first().copied(), parts.len() > 1) else {
                continue;
            };
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some((_, list)) => list.push(s),
                None => out.push((name, vec![s])),
            }
        }
        out
    }

    /// Every setting of `key`, in any profile and under any selector, in reading order.
    pub fn all(&self, key: &str) -> Vec<&Setting> {
        self.settings.iter().filter(|s| s.key == key).collect()
    }

    pub fn profile_names(&self) -> Vec<&str> {
        self.profiles.iter().map(|p| p.name.as_str()).collect()
    }
}

/// The parts of a dotted setting key, a quoted part (`'GATK.GRCh37'`) kept whole with its
/// quotes: `genomes.'GATK.GRCh37'.fasta` is `genomes`, `'GATK.GRCh37'`, `fasta`.
pub fn key_parts(key: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in key.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '\'' => quoted = !quoted,
            '.' if !quoted => {
                out.push(key.get(start..i).unwrap_or(""));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(key.get(start..).unwrap_or(""));
    out
}
