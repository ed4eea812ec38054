//! Checks of processes (read with [`crate::parse`]) and of the process settings in configs.

use std::sync::LazyLock;

use regex::Regex;

use super::{Facts, Proposal, Report};
use crate::parse::{Directive, Process, ScriptKind, SelectorKind, Setting, Value};
use crate::rules::config::{quoted_strings, single_or_double};
use crate::rules::finding::Finding;
use crate::rules::pipeline::SourceTree;
use crate::rules::rule::Severity;

/// The resource labels of nf-core's `conf/base.config`.
const RESOURCE_LABELS: [&str; 7] = [
    "process_single",
    "process_low",
    "process_medium",
    "process_high",
    "process_long",
    "process_high_memory",
    "process_low_memory",
];
const PUBLISH_MODES: [&str; 6] = ["symlink", "rellink", "link", "copy", "copyNoFollow", "move"];
const ERROR_STRATEGIES: [&str; 4] = ["terminate", "finish", "ignore", "retry"];

#[expect(
    clippy::expect_used,
    reason = "a constant pattern, checked by every test run"
)]
static MODE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bmode\s*:\s*([^,\]\n]+)").expect("constant regex"));
#[expect(
    clippy::expect_used,
    reason = "a constant pattern, checked by every test run"
)]
static PATH_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bpath\s*:").expect("constant regex"));
#[expect(
    clippy::expect_used,
    reason = "a constant pattern, checked by every test run"
)]
static BRANCH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"[?:]\s*(?:'([^'\n]*)'|"([^"\n]*)")"#).expect("constant regex"));
#[expect(
    clippy::expect_used,
    reason = "a constant pattern, checked by every test run"
)]
static DISABLED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\benabled\s*:\s*false\b").expect("constant regex"));
#[expect(
    clippy::expect_used,
    reason = "a constant pattern, checked by every test run"
)]
static SINGLE_LITERAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^\s*(?:'([^'\n]*)'|"([^"\n$]*)")\s*$"#).expect("constant regex")
});

fn line(l: u32) -> usize {
    l as usize
}

/// Why an image reference is not pinned, or `None` when it is.
fn unpinned(image: &str) -> Option<String> {
    // Galaxy's depot URL-encodes the tag separator (`salmon%3A1.10.3--h6dccd9a_2`).
    let decoded = percent_decoded(image.trim());
    let image = decoded.as_str();
    if image.is_empty() {
        return Some("is empty".to_string());
    }
    if image.contains("@sha256:") {
        return None;
    }
    let lower = image.to_ascii_lowercase();
    let (scheme, rest) = match lower.split_once("://") {
        Some((s, r)) => (s, r),
        None => ("", lower.as_str()),
    };
    if matches!(scheme, "https" | "http") && rest.contains("/sha256/") {
        // A Singularity image by blob digest (nf-core's community-cr-prod URLs).
        return None;
    }
    let last = rest.rsplit('/').next().unwrap_or(rest);
    match last.split_once(':') {
        Some((_, "latest")) => Some("uses the `latest` tag".to_string()),
        Some((_, "")) => Some("has an empty tag".to_string()),
        Some(_) => None,
        None => Some("has no tag, which means `latest`".to_string()),
    }
}

/// `%XX` escapes decoded; an escape that is not two hex digits, or bytes that are not UTF-8,
/// leave the text as it was.
fn percent_decoded(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(byte) if b[i] == b'%' => {
                out.push(byte);
                i += 3;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

/// The images a config's container expression can be: the strings that are the branches of a
/// ternary (`cond ? 'a' : 'b'`, `x ?: 'b'`) when it has one, else every quoted string. The
/// condition's own strings (`workflow.containerEngine == 'singularity'`) are not images.
fn expression_images(text: &str) -> Vec<String> {
    if !text.contains('?') {
        return quoted_strings(text);
    }
    single_or_double(&BRANCH, text)
}

fn check_images(
    r: &mut Report<'_>,
    file: &str,
    at: usize,
    owner: &str,
    value: &str,
    images: &[String],
) {
    if images.is_empty() || images.iter().any(|i| i.contains("${")) {
        // Unproven, so a warning: a module may take its image from a param or `task.ext`,
        // set (and pinned) elsewhere.
        r.at_most(
            file,
            at,
            Severity::Warning,
            format!(
                "{owner}container `{}` is computed, so it cannot be checked statically; pin it where it is set",
                value.trim()
            ),
        );
        return;
    }
    for image in images {
        if let Some(why) = unpinned(image) {
            r.at(file, at, format!("{owner}container `{image}` {why}"));
        }
    }
}

/// An `exec:` process runs Groovy inside Nextflow itself: no task, so no container, no tool
/// versions and no resources to label.
fn is_exec(p: &Process) -> bool {
    p.script
        .as_ref()
        .is_some_and(|s| s.kind == ScriptKind::Exec)
}

fn in_selector(s: &Setting) -> bool {
    s.selector.is_some()
}

/// A setting's file and line, as a finding wants them.
fn at(s: &Setting) -> (&str, usize) {
    (s.file.as_str(), line(s.line))
}

pub(super) fn container_pinned(facts: &Facts<'_>, r: &mut Report<'_>) {
    for (nf, p) in facts.processes() {
        if let Some(d) = p.directive("container") {
            let owner = format!("process `{}`: ", p.name);
            check_images(r, &nf.path, line(d.line), &owner, &d.value, &d.strings);
        }
    }
    for s in facts.settings("container") {
        let (file, l) = at(s);
        let images: Vec<String> = match &s.value {
            Value::Str(image) => vec![image.clone()],
            Value::Expr(text) => expression_images(text)
                .into_iter()
                .filter(|i| !i.is_empty())
                .collect(),
            _ => Vec::new(),
        };
        check_images(r, file, l, "", &s.value.to_string(), &images);
    }
}

pub(super) fn process_resource_label(facts: &Facts<'_>, r: &mut Report<'_>) {
    for (nf, p) in facts.processes().filter(|(_, p)| !is_exec(p)) {
        let labelled = p.labels().iter().any(|l| RESOURCE_LABELS.contains(l));
        let explicit = p.directive("cpus").is_some() && p.directive("memory").is_some();
        if !labelled && !explicit {
            r.at(
                &nf.path,
                line(p.line),
                format!("process `{}` has no resource label", p.name),
            );
        }
    }
}

/// The concrete change: `label 'process_single'` (the smallest nf-core label) as the first
/// directive; a person checks whether the process needs more.
pub(super) fn propose_label(finding: &Finding, p: &SourceTree) -> Proposal {
    let name = finding.message.split('`').nth(1).unwrap_or("");
    let instruction = format!(
        "give process `{name}` the nf-core label matching its needs (`process_single`, `process_low`, `process_medium`, `process_high`); the patch adds `process_single`"
    );
    let Some(text) = p.file(&finding.file) else {
        return Proposal::instruction(instruction);
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let header = finding.line.saturating_sub(1);
    let Some(head) = lines.get(header) else {
        return Proposal::instruction(instruction);
    };
    if !head.trim_end().ends_with('{') {
        return Proposal::instruction(instruction);
    }
    let indent: String = lines
        .get(header + 1)
        .map(|l| l.chars().take_while(|c| *c == ' ' || *c == '\t').collect())
        .filter(|s: &String| !s.is_empty())
        .unwrap_or_else(|| "    ".to_string());
    let mut new = String::with_capacity(text.len() + 32);
    for (i, l) in lines.iter().enumerate() {
        new.push_str(l);
        if i == header {
            if !l.ends_with('\n') {
                new.push('\n');
            }
            new.push_str(&format!("{indent}label 'process_single'\n"));
        }
    }
    Proposal {
        instruction,
        change: Some((finding.file.clone(), new)),
    }
}

pub(super) fn process_software(facts: &Facts<'_>, r: &mut Report<'_>) {
    for (nf, p) in facts.processes().filter(|(_, p)| !is_exec(p)) {
        if p.directive("container").is_none() && p.directive("conda").is_none() {
            r.at(
                &nf.path,
                line(p.line),
                format!(
                    "process `{}` declares no container and no conda environment",
                    p.name
                ),
            );
        }
    }
}

fn emits_versions(p: &Process) -> bool {
    p.outputs.iter().any(|o| {
        o.text.contains("versions.yml")
            || o.topic.as_deref() == Some("versions")
            || o.emit.as_deref().is_some_and(|e| e.starts_with("versions"))
    })
}

pub(super) fn versions_emitted(facts: &Facts<'_>, r: &mut Report<'_>) {
    for (nf, p) in facts.processes().filter(|(_, p)| !is_exec(p)) {
        if !emits_versions(p) {
            r.at(
                &nf.path,
                line(p.line),
                format!(
                    "process `{}` emits no tool versions (`versions.yml` or topic `versions`)",
                    p.name
                ),
            );
        }
    }
}

/// What is wrong with a `publishDir` value, if anything.
fn publish_problem(value: &str) -> Option<String> {
    if DISABLED.is_match(value) && PATH_KEY.find_iter(value).count() <= 1 {
        // `publishDir [enabled: false]` publishes nothing, so there is no mode to choose.
        return None;
    }
    let paths = PATH_KEY.find_iter(value).count();
    let modes: Vec<String> = MODE
        .captures_iter(value)
        .filter_map(|c| c.get(1).map(|m| m.as_str().trim().to_string()))
        .collect();
    for m in &modes {
        if let Some(c) = SINGLE_LITERAL.captures(m) {
            let mode = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
            if !PUBLISH_MODES.contains(&mode) {
                return Some(format!(
                    "`publishDir` mode `{mode}` is not one of {}",
                    PUBLISH_MODES.join(", ")
                ));
            }
        }
    }
    if modes.is_empty() || modes.len() < paths {
        return Some(NO_MODE.to_string());
    }
    None
}

const NO_MODE: &str = "`publishDir` sets no `mode` (the default symlinks into the work directory)";

/// What is wrong with a config's `publishDir`: a map (or a list of maps) read by the parser.
fn publish_setting_problem(v: &Value) -> Option<String> {
    let maps: Vec<&Value> = match v {
        Value::Map(_) => vec![v],
        Value::List(items) => items
            .iter()
            .filter(|i| matches!(i, Value::Map(_)))
            .collect(),
        // Not a literal map: read its text.
        Value::Expr(text) => return publish_problem(text),
        _ => Vec::new(),
    };
    if maps.is_empty() {
        return Some(NO_MODE.to_string());
    }
    for m in maps {
        if m.get("enabled") == Some(&Value::Bool(false)) {
            // Publishes nothing (nf-core's way to switch a module's publishing off).
            continue;
        }
        match m.get("mode") {
            None => return Some(NO_MODE.to_string()),
            Some(Value::Str(mode)) if !PUBLISH_MODES.contains(&mode.as_str()) => {
                return Some(format!(
                    "`publishDir` mode `{mode}` is not one of {}",
                    PUBLISH_MODES.join(", ")
                ));
            }
            Some(_) => {}
        }
    }
    None
}

/// What is wrong with a `publishDir` directive: its named `mode` argument as the parser read
/// it, or, for the map forms (`publishDir [path: …, mode: …]`), its text.
fn directive_publish_problem(d: &Directive) -> Option<String> {
    if d.arg("enabled") == Some(&Value::Bool(false)) {
        return None;
    }
    match d.arg("mode") {
        Some(Value::Str(mode)) if !PUBLISH_MODES.contains(&mode.as_str()) => Some(format!(
            "`publishDir` mode `{mode}` is not one of {}",
            PUBLISH_MODES.join(", ")
        )),
        Some(_) => None,
        None => publish_problem(&d.value),
    }
}

fn publish_directives(p: &Process) -> impl Iterator<Item = &Directive> {
    p.directives.iter().filter(|d| d.name == "publishDir")
}

/// Whether a config's `withName`/`withLabel` selector picking this process sets a `publishDir`
/// that needs nothing: a selector's settings override the process's own directives, so the
/// directive's missing `mode` never takes effect (nf-core sets publishing in
/// `conf/modules.config` this way, `mode: params.publish_dir_mode`).
fn config_publishes(facts: &Facts<'_>, p: &Process) -> bool {
    let labels = p.labels();
    facts.settings("publishDir").any(|s| {
        let picked = s.selector.as_ref().is_some_and(|sel| match sel.kind {
            SelectorKind::WithName => names_process(&sel.pattern, &p.name),
            SelectorKind::WithLabel => labels.iter().any(|l| names_process(&sel.pattern, l)),
        });
        picked && publish_setting_problem(&s.value).is_none()
    })
}

/// Whether a selector pattern certainly names this process (or label), knowing only its simple
/// name: its last `:` segment matches the name and says something about it. A negation, or a
/// last segment that is only a wildcard (`…:BAM_STATS_SAMTOOLS:.*`, which picks what a workflow
/// calls, not a process), is never taken as naming it, so a missing mode is still reported.
fn names_process(pattern: &str, name: &str) -> bool {
    if pattern.starts_with('!') {
        return false;
    }
    let last = pattern.rsplit(':').next().unwrap_or(pattern);
    if !last.chars().any(|c| c.is_ascii_alphanumeric()) {
        return false;
    }
    Regex::new(&format!("^(?:{last})$")).is_ok_and(|re| re.is_match(name))
}

pub(super) fn publish_dir_mode(facts: &Facts<'_>, r: &mut Report<'_>) {
    for (nf, p) in facts.processes() {
        // Most processes (all of nf-core's modules) have no directive: skip the selector scan.
        if publish_directives(p).next().is_none() || config_publishes(facts, p) {
            continue;
        }
        for d in publish_directives(p) {
            if let Some(problem) = directive_publish_problem(d) {
                r.at(
                    &nf.path,
                    line(d.line),
                    format!("process `{}`: {problem}", p.name),
                );
            }
        }
    }
    for s in facts.settings("publishDir") {
        if let Some(problem) = publish_setting_problem(&s.value) {
            let (file, l) = at(s);
            r.at(file, l, problem);
        }
    }
}

/// Adds `mode:` to every `publishDir` that has none and is written on one line (a directive
/// `publishDir "x"`, or a config `publishDir = [ path: … ]`): the pipeline's own
/// `params.publish_dir_mode` when it declares one, else `'copy'`.
pub(super) fn fix_publish_dir_mode(p: &SourceTree) -> Vec<(String, String)> {
    let facts = Facts::new(p);
    let declared = facts
        .main_config()
        .is_some_and(|c| c.get("params.publish_dir_mode").is_some());
    let mode = if declared {
        "params.publish_dir_mode"
    } else {
        "'copy'"
    };
    let mut targets: Vec<(String, usize, String)> = Vec::new();
    for (nf, proc_) in facts.processes() {
        if publish_directives(proc_).next().is_none() || config_publishes(&facts, proc_) {
            continue;
        }
        for d in publish_directives(proc_) {
            let missing = d.arg("mode").is_none()
                && !MODE.is_match(&d.value)
                && directive_publish_problem(d).is_some();
            if missing && !d.value.contains('\n') {
                targets.push((nf.path.clone(), line(d.line), d.value.clone()));
            }
        }
    }
    for s in facts.settings("publishDir") {
        if matches!(s.value, Value::Map(_))
            && s.value.get("mode").is_none()
            && publish_setting_problem(&s.value).is_some()
        {
            targets.push((s.file.clone(), line(s.line), String::new()));
        }
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for (file, at, directive_value) in targets {
        let current = out
            .iter()
            .find(|(f, _)| *f == file)
            .map(|(_, t)| t.clone())
            .or_else(|| p.file(&file).map(str::to_string));
        let Some(text) = current else {
            continue;
        };
        let Some(new) = add_mode(&text, at, &directive_value, mode) else {
            continue;
        };
        match out.iter_mut().find(|(f, _)| *f == file) {
            Some(entry) => entry.1 = new,
            None => out.push((file, new)),
        }
    }
    out
}

fn add_mode(text: &str, at: usize, directive_value: &str, mode: &str) -> Option<String> {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    let idx = at.checked_sub(1)?;
    let l = lines.get(idx)?.clone();
    if !directive_value.is_empty() {
        // The directive's value is on this line; `mode:` goes right after it.
        let start = l.find("publishDir")?;
        let pos = l[start..].find(directive_value.trim())? + start + directive_value.trim().len();
        let new = format!("{}, mode: {mode}{}", &l[..pos], &l[pos..]);
        lines[idx] = new;
    } else {
        let start = l.find("publishDir")?;
        let open = l[start..].find('[')? + start;
        if l[open + 1..].trim().is_empty() {
            let indent: String = lines
                .get(idx + 1)
                .map(|n| n.chars().take_while(|c| *c == ' ' || *c == '\t').collect())
                .unwrap_or_default();
            lines.insert(idx + 1, format!("{indent}mode: {mode},\n"));
        } else {
            lines[idx] = format!("{} mode: {mode},{}", &l[..=open], &l[open + 1..]);
        }
    }
    Some(lines.concat())
}

pub(super) fn error_strategy(facts: &Facts<'_>, r: &mut Report<'_>) {
    for (nf, p) in facts.processes() {
        for d in p.directives.iter().filter(|d| d.name == "errorStrategy") {
            if let Some(c) = SINGLE_LITERAL.captures(&d.value) {
                let v = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
                if !ERROR_STRATEGIES.contains(&v) {
                    r.at(
                        &nf.path,
                        line(d.line),
                        format!(
                            "process `{}`: errorStrategy `{v}` is not one of {}",
                            p.name,
                            ERROR_STRATEGIES.join(", ")
                        ),
                    );
                }
            }
        }
    }
    for s in facts.settings("errorStrategy") {
        let Value::Str(v) = &s.value else {
            continue;
        };
        let (file, l) = at(s);
        if !ERROR_STRATEGIES.contains(&v.as_str()) {
            r.at(
                file,
                l,
                format!(
                    "errorStrategy `{v}` is not one of {}",
                    ERROR_STRATEGIES.join(", ")
                ),
            );
        } else if v == "ignore" && !in_selector(s) {
            r.at(
                file,
                l,
                "errorStrategy `ignore` for every process hides every failure; set it in a `withName`/`withLabel` selector",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{names_process, unpinned};

    #[test]
    fn a_selector_names_a_process_only_when_its_last_segment_does() {
        for (pattern, name) in [
            ("FASTQC", "FASTQC"),
            (".*:OVERRIDDEN", "OVERRIDDEN"),
            ("NFCORE_X:X:SE_.*", "SE_GENE"),
            (
                "CAT_ADDITIONAL_FASTA|PREPROCESS_TRANSCRIPTS_FASTA_GENCODE",
                "CAT_ADDITIONAL_FASTA",
            ),
        ] {
            assert!(names_process(pattern, name), "{pattern} {name}");
        }
        for (pattern, name) in [
            (".*:BAM_STATS_SAMTOOLS:.*", "SEEDED"),
            ("!FASTQC", "SEEDED"),
            (".*", "SEEDED"),
            ("FASTQC", "FASTQC_X"),
        ] {
            assert!(!names_process(pattern, name), "{pattern} {name}");
        }
    }

    #[test]
    fn image_references() {
        for pinned in [
            "quay.io/biocontainers/fastqc:0.12.1--hdfd78af_0",
            "community.wave.seqera.io/library/fastqc:0.13.0--b342db7b694c9af4",
            "https://community-cr-prod.seqera.io/docker/registry/v2/blobs/sha256/81/816b/data",
            "ubuntu@sha256:0123456789abcdef",
            "localhost:5000/tool:1.0",
            "oras://community.wave.seqera.io/library/fastqc:0.12.1--0",
        ] {
            assert_eq!(unpinned(pinned), None, "{pinned}");
        }
        for bad in [
            "ubuntu",
            "ubuntu:latest",
            "localhost:5000/tool",
            "docker.io/x/y:",
            "",
        ] {
            assert!(unpinned(bad).is_some(), "{bad}");
        }
    }
}
