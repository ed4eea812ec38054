//! Checks of parameters against `nextflow_schema.json`, and of the manifest.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::Regex;

use super::{Facts, Proposal, Report, is_test_path};
use crate::rules::config::{is_empty_value, strip_comments, value_strings};
use crate::rules::finding::Finding;
use crate::rules::pipeline::{SourceTree, line_at};

const SCHEMA: &str = "nextflow_schema.json";

#[expect(
    clippy::expect_used,
    reason = "a constant pattern, checked by every test run"
)]
static PARAM_USE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\bparams\.([A-Za-z_][A-Za-z0-9_]*)\b(\s*\()?").expect("constant regex")
});

/// The parameters `nextflow_schema.json` documents: its `properties` and those of each group
/// under `$defs` (or the older `definitions`), with the line each is defined on.
fn schema_params(text: &str) -> Option<BTreeMap<String, (usize, serde_json::Value)>> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let mut out = BTreeMap::new();
    let mut add = |props: Option<&serde_json::Value>| {
        for (name, def) in props.and_then(|p| p.as_object()).into_iter().flatten() {
            let key = format!("\"{name}\"");
            let line = text.find(&key).map_or(1, |at| line_at(text, at));
            out.entry(name.clone()).or_insert((line, def.clone()));
        }
    };
    add(value.get("properties"));
    for groups in ["$defs", "definitions"] {
        for (_, group) in value
            .get(groups)
            .and_then(|g| g.as_object())
            .into_iter()
            .flatten()
        {
            add(group.get("properties"));
        }
    }
    Some(out)
}

/// The parameters nf-validation (nf-schema's predecessor) accepts without a schema entry: its
/// own settings and `help` (its `addExpectedParams`).
const NF_VALIDATION_PARAMS: [&str; 9] = [
    "validationFailUnrecognisedParams",
    "validationLenientMode",
    "help",
    "validationShowHiddenParams",
    "validationSchemaIgnoreParams",
    "validationSkipDuplicateCheck",
    "validationS3PathCheck",
    "monochromeLogs",
    "monochrome_logs",
];

/// nf-schema's help parameters when `validation.help` is on, by their default names; a
/// config may rename each (`validation.help.fullParameter = "help_full"`).
const NF_SCHEMA_HELP: [(&str, &str); 3] = [
    ("shortParameter", "help"),
    ("fullParameter", "helpFull"),
    ("showHiddenParameter", "showHidden"),
];

/// Parameters the validation plugin does not expect in the schema: those nf-schema is told to
/// ignore (`validation.defaultIgnoreParams`, `ignoreParams`), its help parameters, and, for a
/// pipeline on nf-validation, that plugin's own and those `params.validationSchemaIgnoreParams`
/// lists (as nf-core's `schema_params` lint reads them).
fn ignored_params(facts: &Facts<'_>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Some(config) = facts.main_config() else {
        return out;
    };
    for key in ["validation.defaultIgnoreParams", "validation.ignoreParams"] {
        if let Some(s) = config.get(key) {
            out.extend(value_strings(&s.value));
        }
    }
    let help_on = config
        .settings
        .iter()
        .any(|s| s.key.starts_with("validation.help."));
    if help_on {
        for (key, default) in NF_SCHEMA_HELP {
            let name = config
                .get(&format!("validation.help.{key}"))
                .and_then(|s| value_strings(&s.value).into_iter().next())
                .unwrap_or_else(|| default.to_string());
            out.insert(name);
        }
    }
    let on_nf_validation = facts
        .p
        .file("nextflow.config")
        .is_some_and(|t| strip_comments(t).contains("nf-validation"));
    if on_nf_validation {
        out.extend(NF_VALIDATION_PARAMS.iter().map(|p| p.to_string()));
        if let Some(s) = config.get("params.validationSchemaIgnoreParams") {
            for listed in value_strings(&s.value) {
                out.extend(
                    listed
                        .split(',')
                        .map(str::trim)
                        .filter(|p| !p.is_empty())
                        .map(str::to_string),
                );
            }
        }
    }
    out
}

/// Parameters code reads only behind `params.containsKey('NAME')`: optional on purpose, so not
/// the pipeline's to document (the nf-core utils subworkflow reads `max_multiqc_email_size`
/// this way in pipelines without MultiQC).
fn guarded_params(code: &str) -> BTreeSet<String> {
    #[expect(
        clippy::expect_used,
        reason = "a constant pattern, checked by every test run"
    )]
    static GUARD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"params\.containsKey\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*\)"#)
            .expect("constant regex")
    });
    GUARD
        .captures_iter(code)
        .filter_map(|c| c.get(1).map(|m| m.as_str().to_string()))
        .collect()
}

/// Every parameter the pipeline's code and config use or declare (not its tests): each
/// `params.NAME` in the text, and each key of a config's `params` scope, at its first place.
/// `params.get(…)` and the like are calls on the map, not parameters.
fn used_params(facts: &Facts<'_>) -> BTreeMap<String, (String, usize)> {
    let p = facts.p;
    let mut out: BTreeMap<String, (String, usize)> = BTreeMap::new();
    for config in facts.configs() {
        for s in &config.settings {
            if let Some(rest) = s.key.strip_prefix("params.") {
                let name = rest.split('.').next().unwrap_or(rest);
                out.entry(name.to_string())
                    .or_insert_with(|| (s.file.clone(), s.line as usize));
            }
        }
    }
    for (path, text) in p.files() {
        if !(path.ends_with(".nf") || path.ends_with(".config")) || is_test_path(path) {
            continue;
        }
        let code = strip_comments(text);
        let guarded = guarded_params(&code);
        for c in PARAM_USE.captures_iter(&code) {
            if c.get(2).is_some() || c.get(1).is_some_and(|n| guarded.contains(n.as_str())) {
                continue;
            }
            let (Some(whole), Some(name)) = (c.get(0), c.get(1)) else {
                continue;
            };
            out.entry(name.as_str().to_string())
                .or_insert_with(|| (path.to_string(), line_at(&code, whole.start())));
        }
    }
    out
}

pub(super) fn params_documented(facts: &Facts<'_>, r: &mut Report<'_>) {
    let Some(documented) = facts.p.file(SCHEMA).and_then(schema_params) else {
        return;
    };
    let ignored = ignored_params(facts);
    for (name, (file, line)) in used_params(facts) {
        if !documented.contains_key(&name) && !ignored.contains(&name) {
            r.at(
                &file,
                line,
                format!("`params.{name}` is not documented in `{SCHEMA}`"),
            );
        }
    }
}

pub(super) fn propose_params_documented(finding: &Finding, _p: &SourceTree) -> Proposal {
    let name = finding
        .message
        .split('`')
        .nth(1)
        .unwrap_or("")
        .trim_start_matches("params.");
    Proposal::instruction(format!(
        "document `{name}` in `{SCHEMA}`: add it to the `properties` of one of the groups under `$defs` with its `type` and a `description` (`nf-core pipelines schema build` does this), or, if it is internal, list it in `validation.defaultIgnoreParams`"
    ))
}

/// Parameters given a value anywhere: the `params` scope of any config, or `params.x = …` in a
/// script.
fn declared_params(facts: &Facts<'_>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for config in facts.configs() {
        for s in &config.settings {
            if let Some(name) = s.key.strip_prefix("params.")
                && !name.contains('.')
            {
                out.insert(name.to_string());
            }
        }
    }
    #[expect(
        clippy::expect_used,
        reason = "a constant pattern, checked by every test run"
    )]
    static ASSIGN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?m)^\s*params\.([A-Za-z_][A-Za-z0-9_]*)\s*=[^=~]").expect("constant regex")
    });
    for (path, text) in facts.p.files().filter(|(path, _)| path.ends_with(".nf")) {
        if is_test_path(path) {
            continue;
        }
        for c in ASSIGN.captures_iter(text) {
            if let Some(m) = c.get(1) {
                out.insert(m.as_str().to_string());
            }
        }
    }
    out
}

pub(super) fn schema_params_declared(facts: &Facts<'_>, r: &mut Report<'_>) {
    let Some(documented) = facts.p.file(SCHEMA).and_then(schema_params) else {
        return;
    };
    if facts.main_config().is_none() {
        return;
    }
    let declared = declared_params(facts);
    for (name, (line, _)) in documented {
        if !declared.contains(&name) {
            r.at(
                SCHEMA,
                line,
                format!("parameter `{name}` is documented but has no default in the config"),
            );
        }
    }
}

/// The concrete change for an undeclared schema parameter: `name = default` (the schema's
/// default when it is a plain value, else `null`) as the first line of `params { }`.
pub(super) fn propose_schema_param(finding: &Finding, p: &SourceTree) -> Proposal {
    let name = finding.message.split('`').nth(1).unwrap_or("").to_string();
    let instruction = format!(
        "give `{name}` a default in the `params {{ }}` block of `nextflow.config` (`null` if it has none)"
    );
    let default = p
        .file(SCHEMA)
        .and_then(schema_params)
        .and_then(|m| m.get(&name).and_then(|(_, d)| d.get("default").cloned()));
    let literal = match default {
        Some(serde_json::Value::String(s)) if !s.contains(['\'', '\\', '\n', '$']) => {
            format!("'{s}'")
        }
        Some(serde_json::Value::Bool(b)) => b.to_string(),
        Some(serde_json::Value::Number(n)) => n.to_string(),
        _ => "null".to_string(),
    };
    #[expect(
        clippy::expect_used,
        reason = "a constant pattern, checked by every test run"
    )]
    static PARAMS_BLOCK: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?m)^params\s*\{[ \t]*\n").expect("constant regex"));
    let Some(text) = p.file("nextflow.config") else {
        return Proposal::instruction(instruction);
    };
    let valid_name =
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    match PARAMS_BLOCK.find(text) {
        Some(m) if valid_name => {
            let mut new = String::with_capacity(text.len() + name.len() + 16);
            new.push_str(&text[..m.end()]);
            new.push_str(&format!("    {name} = {literal}\n"));
            new.push_str(&text[m.end()..]);
            Proposal {
                instruction,
                change: Some(("nextflow.config".to_string(), new)),
            }
        }
        _ => Proposal::instruction(instruction),
    }
}

/// The manifest keys nf-core requires; `author` or `contributors` either will do.
const MANIFEST_KEYS: [&str; 5] = [
    "name",
    "description",
    "version",
    "nextflowVersion",
    "homePage",
];

pub(super) fn manifest_complete(facts: &Facts<'_>, r: &mut Report<'_>) {
    let file = "nextflow.config";
    let Some(config) = facts.main_config() else {
        r.at(file, 0, "no `nextflow.config`, so no `manifest`");
        return;
    };
    for key in MANIFEST_KEYS {
        match config.get(&format!("manifest.{key}")) {
            None => r.at(file, 0, format!("`manifest.{key}` is not set")),
            Some(s) if is_empty_value(&s.value) => {
                r.at(file, s.line as usize, format!("`manifest.{key}` is empty"));
            }
            Some(_) => {}
        }
    }
    let people = ["manifest.author", "manifest.contributors"]
        .iter()
        .filter_map(|k| config.get(k))
        .find(|s| !is_empty_value(&s.value));
    if people.is_none() {
        r.at(
            file,
            0,
            "neither `manifest.author` nor `manifest.contributors` is set",
        );
    }
}

pub(super) fn propose_manifest(finding: &Finding, _p: &SourceTree) -> Proposal {
    let key = finding
        .message
        .split('`')
        .nth(1)
        .unwrap_or("manifest.contributors");
    let what = match key {
        "manifest.name" => "the pipeline's name as `org/name` (nf-core needs the `/`)",
        "manifest.description" => "a one-line description of what the pipeline does",
        "manifest.version" => "the pipeline's version (`1.0.0dev` during development)",
        "manifest.nextflowVersion" => "the Nextflow versions it runs on (`!>=25.04.0`)",
        "manifest.homePage" => "the URL of its repository",
        _ => "`contributors = [[name: …, github: …, contribution: ['author']]]`",
    };
    Proposal::instruction(format!(
        "in the `manifest {{ }}` block of `nextflow.config`, set `{key}`: {what}"
    ))
}
