//! Checks over files and their layout: nf-core component structure, the schema, conda pins.

use std::collections::BTreeSet;

use super::{Proposal, Report};
use crate::rules::pipeline::SourceTree;
use crate::rules::vendored::is_modules_repository;

/// The directories of nf-core components under `modules/nf-core/` and
/// `subworkflows/nf-core/`: every directory holding a `main.nf`, `meta.yml` or
/// `environment.yml` outside a `tests/` directory. `true` marks a module.
fn component_dirs(p: &SourceTree) -> BTreeSet<(String, bool)> {
    let mut dirs = BTreeSet::new();
    for (path, _) in p.files() {
        let is_module = path.starts_with("modules/nf-core/");
        if !is_module && !path.starts_with("subworkflows/nf-core/") {
            continue;
        }
        let Some((dir, file)) = path.rsplit_once('/') else {
            continue;
        };
        let marker = matches!(file, "main.nf" | "meta.yml" | "environment.yml");
        if marker && !dir.split('/').any(|part| part == "tests") && dir.split('/').count() > 2 {
            dirs.insert((dir.to_string(), is_module));
        }
    }
    dirs
}

/// Whether a module's `main.nf` declares a conda environment. A container-only module (GPU
/// tools such as Parabricks, DeepVariant: no conda package exists) has none, and so no
/// `environment.yml`.
fn declares_conda(main_nf: Option<&str>) -> bool {
    main_nf.is_none_or(|text| {
        text.lines().map(str::trim_start).any(|l| {
            l.starts_with("conda ") || l.starts_with("conda\t") || l.starts_with("conda\"")
        })
    })
}

pub(super) fn module_structure(p: &SourceTree, r: &mut Report<'_>) {
    // In a pipeline these components are vendored copies whose tests stay in nf-core/modules
    // (sarek's `.gitignore` drops them on purpose); only the modules repository must have them.
    let tests_required = is_modules_repository(p);
    for (dir, is_module) in component_dirs(p) {
        let what = if is_module { "module" } else { "subworkflow" };
        let name = dir.split('/').skip(2).collect::<Vec<_>>().join("/");
        let mut required = vec!["main.nf", "meta.yml"];
        if is_module && declares_conda(p.file(&format!("{dir}/main.nf"))) {
            required.push("environment.yml");
        }
        for file in required {
            let path = format!("{dir}/{file}");
            if !p.contains(&path) {
                r.at(&path, 0, format!("nf-core {what} `{name}` has no `{file}`"));
            }
        }
        if !tests_required {
            continue;
        }
        let tests = format!("{dir}/tests/");
        let has_test = p
            .files()
            .any(|(path, _)| path.starts_with(&tests) && path.ends_with(".nf.test"));
        if !has_test {
            r.at(
                &format!("{dir}/tests/main.nf.test"),
                0,
                format!("nf-core {what} `{name}` has no nf-test under `tests/`"),
            );
        }
    }
}

pub(super) fn propose_module_structure(finding: &crate::rules::Finding) -> Proposal {
    let file = finding.file.rsplit('/').next().unwrap_or("");
    let dir = finding
        .file
        .rsplit_once('/')
        .map_or("", |(d, _)| d)
        .trim_end_matches("/tests");
    let how = match file {
        "meta.yml" => {
            "describe the component's inputs, outputs and tools in `meta.yml` (nf-core's `meta-schema.json` format)"
        }
        "environment.yml" => {
            "list the tool's conda packages, pinned, in `environment.yml` (channels conda-forge and bioconda)"
        }
        "main.nf" => "the component has no `main.nf`; restore it or remove the directory",
        _ => {
            "add an nf-test (`tests/main.nf.test`, with its snapshot) that runs the component on test data"
        }
    };
    Proposal::instruction(format!(
        "in `{dir}`: {how}; if the component came from nf-core/modules, reinstall it with `nf-core modules install` (or `nf-core subworkflows install`)"
    ))
}

pub(super) fn schema_valid(p: &SourceTree, r: &mut Report<'_>) {
    let file = "nextflow_schema.json";
    let Some(text) = p.file(file) else {
        return;
    };
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            r.at(file, e.line(), format!("not valid JSON: {e}"));
            return;
        }
    };
    let Some(obj) = value.as_object() else {
        r.at(file, 1, "the schema is not a JSON object");
        return;
    };
    if !obj.contains_key("$schema") {
        r.at(file, 1, "the schema does not declare `$schema`");
    }
    if obj.get("type").and_then(|t| t.as_str()) != Some("object") {
        r.at(file, 1, "the schema's `type` is not `object`");
    }
    if !["$defs", "definitions", "properties"]
        .iter()
        .any(|k| obj.contains_key(*k))
    {
        r.at(
            file,
            1,
            "the schema defines no parameters (no `$defs`, `definitions` or `properties`)",
        );
    }
}

pub(super) fn conda_pinned(p: &SourceTree, r: &mut Report<'_>) {
    for (path, text) in p
        .files()
        .filter(|(path, _)| path.ends_with("environment.yml") || path.ends_with("environment.yaml"))
    {
        let mut in_deps = false;
        let mut deps_indent = 0;
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            let indent = line.len() - trimmed.len();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if trimmed.starts_with("dependencies:") {
                in_deps = true;
                deps_indent = indent;
                continue;
            }
            if !in_deps {
                continue;
            }
            if indent <= deps_indent && !trimmed.starts_with('-') {
                in_deps = false;
                continue;
            }
            let Some(item) = trimmed.strip_prefix("- ") else {
                continue;
            };
            let item = item
                .split('#')
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches(['"', '\'']);
            // `- pip:` opens a nested list of pip requirements, checked by the same test.
            if item.is_empty() || item.ends_with(':') {
                continue;
            }
            if !item.contains(['=', '<', '>', '@']) {
                r.at(
                    path,
                    i + 1,
                    format!("conda dependency `{item}` names no version"),
                );
            }
        }
    }
}
