//! `nf-core pipelines schema lint` and `schema validate` (`validate_pipeline`).
//!
//! Both report through nf-core's console log only (and `schema lint` exits 0 on an invalid
//! schema), so the findings are read from its `ERROR` and `WARNING` records. nf-core's console
//! treats `[...]` in a message as markup and drops it, so a regex in a message can lose its
//! character classes; the parameter is recovered from the message (`'x' is a required
//! property`, `On schema[...]['properties']['x']`) or by matching the quoted value against the
//! params file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::console::{self, Level, LogRecord};
use super::lint::one_line;
use super::{NfCoreEnv, NfCoreError, pipeline_dir};
use crate::runner::Runner;

/// What was being checked when a finding was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `nextflow_schema.json` itself.
    Schema,
    /// The parameters of the params file against the schema.
    Params,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// One schema or parameter problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaFinding {
    pub stage: Stage,
    pub severity: Severity,
    /// The parameter it is about, when nf-core's message lets it be known.
    pub parameter: Option<String>,
    pub message: String,
}

/// What one nf-core schema command said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaOutput {
    pub findings: Vec<SchemaFinding>,
    /// `found N params`, when the schema was valid.
    pub params_found: Option<usize>,
    /// Why nf-core could not evaluate the pipeline's config (`nextflow config`), when it could
    /// not: without the config's params it cannot finish checking the schema against them.
    pub config_error: Option<String>,
}

/// What to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidateRequest {
    pub pipeline: PathBuf,
    /// A JSON params file to validate against the schema.
    pub params_file: Option<PathBuf>,
}

/// The schema check and, with a params file, the parameter check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidateReport {
    pub findings: Vec<SchemaFinding>,
    pub params_found: Option<usize>,
    /// The params file, when one was given.
    pub params_file: Option<PathBuf>,
    /// Whether the parameters were checked (not when the schema itself is invalid, nor when
    /// the config could not be evaluated).
    pub params_checked: bool,
    /// Why the pipeline's config could not be evaluated, when it could not (see
    /// [`SchemaOutput::config_error`]); the check did not finish.
    pub config_error: Option<String>,
    pub elapsed: Duration,
}

/// Reads the console of `schema lint` (stage `Schema`) or `schema validate` (the records
/// after the schema's own, stage `Params`). `params` is the params file's content, for
/// finding the parameter a value belongs to.
pub fn parse_schema_output(stdout: &str, stderr: &str, params: Option<&Value>) -> SchemaOutput {
    let mut findings = Vec::new();
    let mut params_found = None;
    let mut stage = Stage::Schema;
    let all: Vec<LogRecord> = console::records(stdout)
        .into_iter()
        .chain(console::records(stderr))
        .collect();
    let mut config_error = None;
    for record in &all {
        let head = record.headline();
        // nf-core runs `nextflow config` to read the params; when that fails it logs one ERROR
        // that is not about the schema at all (nextflow missing, the config not evaluating).
        if head.starts_with(CONFIG_FAILED) {
            config_error = Some(config_failure_reason(record));
            continue;
        }
        if let Some(n) = head
            .strip_prefix("Pipeline schema looks valid (found ")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
        {
            params_found = Some(n);
            stage = Stage::Params;
            continue;
        }
        let severity = match record.level {
            Level::Error | Level::Critical => Severity::Error,
            Level::Warning => Severity::Warning,
            _ => continue,
        };
        let this_stage = if head.starts_with("Input parameters are invalid") {
            Stage::Params
        } else {
            stage
        };
        let message = record.summary();
        let message = message
            .strip_prefix("Input parameters are invalid: ")
            .unwrap_or(&message)
            .to_owned();
        findings.push(SchemaFinding {
            stage: this_stage,
            severity,
            parameter: parameter_of(record, &message, params),
            message,
        });
    }
    SchemaOutput {
        findings,
        params_found,
        config_error,
    }
}

/// How nf-core starts the record it logs when `nextflow config` fails.
const CONFIG_FAILED: &str = "Could not parse Nextflow config for";

/// Why `nextflow config` failed, from nf-core's record: nextflow missing, else Nextflow's own
/// error (an `ERROR ~` line, else the last line it printed), else the exit.
fn config_failure_reason(record: &LogRecord) -> String {
    let lines: Vec<&str> = record
        .lines
        .iter()
        .skip(1)
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    if lines
        .iter()
        .any(|l| l.starts_with("It looks like nextflow is not installed"))
    {
        return "`nextflow` is not on PATH".to_owned();
    }
    let exit = lines.iter().find_map(|l| {
        l.strip_prefix("Command '")
            .and_then(|rest| rest.split_once("' failed with exit code "))
            .map(|(_, code)| code.trim().to_owned())
    });
    let said = lines
        .iter()
        .find(|l| l.starts_with("ERROR ~"))
        .or_else(|| lines.iter().rev().find(|l| !l.starts_with("Command '")))
        .map(|l| cut(&one_line(l), MAX_REASON_CHARS));
    match (exit, said) {
        (Some(code), Some(said)) => format!("`nextflow config` exited with {code}: {said}"),
        (Some(code), None) => format!("`nextflow config` exited with {code}"),
        (None, Some(said)) => said,
        (None, None) => "nf-core gave no reason".to_owned(),
    }
}

/// Nextflow's message is quoted in the headline; past this it is cut.
const MAX_REASON_CHARS: usize = 300;

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        let head: String = text.chars().take(max).collect();
        format!("{head}…")
    } else {
        text.to_owned()
    }
}

fn parameter_of(record: &LogRecord, message: &str, params: Option<&Value>) -> Option<String> {
    // jsonschema's "On schema[...]['properties']['x'][...]" names the parameter's definition.
    for line in &record.lines {
        if let Some(rest) = line.trim().strip_prefix("On schema[")
            && let Some(after) = rest
                .rsplit("['properties']['")
                .next()
                .filter(|_| rest.contains("['properties']['"))
            && let Some((name, _)) = after.split_once("']")
        {
            return Some(name.to_owned());
        }
    }
    if let Some(name) = message
        .strip_suffix(" is a required property")
        .and_then(|q| q.strip_prefix('\''))
        .and_then(|q| q.strip_suffix('\''))
    {
        return Some(name.to_owned());
    }
    // "'value' does not match …", "25 is not of type 'string'": the value leads.
    let leading = if let Some(rest) = message.strip_prefix('\'') {
        rest.split_once('\'')
            .map(|(v, _)| Value::String(v.to_owned()))
    } else {
        message
            .split(' ')
            .next()
            .and_then(|w| serde_json::from_str::<Value>(w).ok())
    }?;
    let map = params?.as_object()?;
    let mut keys = map
        .iter()
        .filter(|(_, v)| **v == leading)
        .map(|(k, _)| k.clone());
    let first = keys.next()?;
    // A value shared by two parameters names neither.
    keys.next().is_none().then_some(first)
}

/// Checks the pipeline's schema and, with a params file, the parameters.
pub fn validate(
    runner: &dyn Runner,
    env: &NfCoreEnv,
    request: &ValidateRequest,
) -> Result<ValidateReport, NfCoreError> {
    let pipeline = pipeline_dir(&request.pipeline)?;
    let schema = pipeline.join("nextflow_schema.json");
    if !schema.is_file() {
        return Err(NfCoreError::NotAPipeline {
            path: pipeline,
            file: "nextflow_schema.json",
        });
    }
    // Resolved here: nf-core runs inside the pipeline, where a relative path would mean
    // something else than it does to the caller.
    // The caller named the params file: it is read as named, a symlink in its place not
    // followed, and only then resolved for nf-core, which runs inside the pipeline where a
    // relative path would mean something else than it does to the caller.
    let (params_file, params_value) = match &request.params_file {
        Some(path) => {
            let read_error = |source| NfCoreError::Io {
                action: "reading",
                path: path.clone(),
                source,
            };
            let mut text = String::new();
            crate::files::open_nofollow(path)
                .and_then(|mut file| std::io::Read::read_to_string(&mut file, &mut text))
                .map_err(read_error)?;
            let resolved = std::fs::canonicalize(path).map_err(read_error)?;
            // Not JSON: nf-core says so itself, and no parameter is matched by value.
            let value = serde_json::from_str::<Value>(&text).unwrap_or(Value::Null);
            (Some(resolved), Some(value))
        }
        None => (None, None),
    };
    let lint = env.run(
        runner,
        vec![
            "pipelines".into(),
            "schema".into(),
            "lint".into(),
            "--dir=.".into(),
            "nextflow_schema.json".into(),
        ],
        &pipeline,
    )?;
    let mut elapsed = lint.elapsed;
    let parsed = parse_schema_output(&lint.stdout.text, &lint.stderr.text, None);
    if !lint.exit.success() && parsed.findings.is_empty() && parsed.config_error.is_none() {
        return Err(fatal("pipelines schema lint", &lint));
    }
    let mut findings = parsed.findings;
    let mut params_found = parsed.params_found;
    let config_error = parsed.config_error;
    // `schema validate` evaluates the same config; it would fail the same way.
    let schema_ok =
        config_error.is_none() && !findings.iter().any(|f| f.severity == Severity::Error);
    let mut params_checked = false;
    if let (Some(params_file), true) = (&params_file, schema_ok) {
        let run = env.run(
            runner,
            vec![
                "pipelines".into(),
                "schema".into(),
                "validate".into(),
                ".".into(),
                params_file.to_string_lossy().into_owned(),
            ],
            &pipeline,
        )?;
        elapsed += run.elapsed;
        let out = parse_schema_output(&run.stdout.text, &run.stderr.text, params_value.as_ref());
        if !run.exit.success() && out.findings.is_empty() {
            return Err(fatal("pipelines schema validate", &run));
        }
        params_checked = true;
        params_found = params_found.or(out.params_found);
        // The schema records repeat what `schema lint` said; only the parameters' are new.
        findings.extend(
            out.findings
                .into_iter()
                .filter(|f| f.stage == Stage::Params),
        );
    }
    Ok(ValidateReport {
        findings,
        params_found,
        params_file: request.params_file.clone(),
        params_checked,
        config_error,
        elapsed,
    })
}

fn fatal(command: &'static str, outcome: &crate::runner::Outcome) -> NfCoreError {
    NfCoreError::Fatal {
        command,
        exit: outcome.exit.to_string(),
        message: console::failure_line(&outcome.stdout.text, &outcome.stderr.text),
    }
}

impl ValidateReport {
    pub fn passed(&self) -> bool {
        self.config_error.is_none() && !self.findings.iter().any(|f| f.severity == Severity::Error)
    }

    /// `passed` or `failed` on the first line, then one line per finding:
    /// `error: schema: `param`: message`, `error: params: …` or `warning: …`. When the config
    /// could not be evaluated the first line says so and why, not that the schema has errors.
    pub fn render(&self) -> String {
        let count = |stage| {
            self.findings
                .iter()
                .filter(|f| f.stage == stage && f.severity == Severity::Error)
                .count()
        };
        let schema_part = match (&self.config_error, count(Stage::Schema), self.params_found) {
            (Some(why), 0, _) => format!(
                "the pipeline's config could not be evaluated ({}), so nextflow_schema.json was not checked against its params",
                one_line(why)
            ),
            (Some(why), n, _) => format!(
                "nextflow_schema.json has {n} error(s), and the pipeline's config could not be evaluated ({})",
                one_line(why)
            ),
            (None, 0, Some(n)) => format!("nextflow_schema.json is valid ({n} params)"),
            (None, 0, None) => "nextflow_schema.json is valid".to_owned(),
            (None, n, _) => format!("nextflow_schema.json has {n} error(s)"),
        };
        let params_part = match (&self.params_file, self.params_checked) {
            (None, _) => String::new(),
            (Some(file), false) if self.config_error.is_some() => {
                format!("; `{}` was not checked", file.display())
            }
            (Some(file), false) => format!(
                "; `{}` was not checked against an invalid schema",
                file.display()
            ),
            (Some(file), true) => match count(Stage::Params) {
                0 => format!("; the parameters in `{}` are valid", file.display()),
                n => format!("; the parameters in `{}` have {n} error(s)", file.display()),
            },
        };
        let verdict = if self.passed() { "passed" } else { "failed" };
        let mut out = format!("{verdict}: {schema_part}{params_part}\n");
        for f in &self.findings {
            let severity = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            let stage = match f.stage {
                Stage::Schema => "schema",
                Stage::Params => "params",
            };
            let param = f
                .parameter
                .as_deref()
                .map(|p| format!("`{}`: ", one_line(p)))
                .unwrap_or_default();
            out.push_str(&format!(
                "{severity}: {stage}: {param}{}\n",
                one_line(&f.message)
            ));
        }
        out
    }
}

/// The pipeline's schema path (for callers that show it).
pub fn schema_path(pipeline: &Path) -> PathBuf {
    pipeline.join("nextflow_schema.json")
}
