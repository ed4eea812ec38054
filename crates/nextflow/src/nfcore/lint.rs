//! `nf-core pipelines lint --json`, offline, read into findings (`lint_pipeline`).
//!
//! Three parts of nf-core's lint need the network and each crashes the whole run when it is
//! missing (rc 1, no JSON): the module and subworkflow lint (`nfcore_components`, clones
//! nf-core/modules), `files_unchanged` (re-creates the template, which fetches
//! nf-co.re/pipelines.json) and `actions_schema_validation` (downloads the GitHub workflow
//! schema). The two tests are left out with `-k` (every other test named); the component lint
//! has no flag, so `.nf-core.yml` gets `lint: {nfcore_components: false}` for the run and its
//! bytes back after it. All three are reported as skipped offline, never as passed.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::tools_config::ToolsConfigEdit;
use super::{NfCoreEnv, NfCoreError, console, lint_test_doc, pipeline_dir};
use crate::runner::{NFCORE_VERSION, Runner};

/// The pipeline lint tests of nf-core 4.2.1, in its order; `--release` adds the last two.
const TESTS: [&str; 28] = [
    "files_exist",
    "nextflow_config",
    "nf_test_content",
    "files_unchanged",
    "actions_nf_test",
    "actions_awstest",
    "actions_awsfulltest",
    "readme",
    "pipeline_todos",
    "pipeline_if_empty_null",
    "plugin_includes",
    "pipeline_name_conventions",
    "template_strings",
    "schema_lint",
    "schema_params",
    "system_exit",
    "schema_description",
    "actions_schema_validation",
    "merge_markers",
    "modules_json",
    "multiqc_config",
    "modules_structure",
    "local_component_structure",
    "base_config",
    "modules_config",
    "nfcore_yml",
    "rocrate_readme_sync",
    "container_configs",
];
const RELEASE_TESTS: [&str; 2] = ["version_consistency", "included_configs"];

/// What is never run offline, and why.
pub const SKIPPED_OFFLINE: [(&str, &str); 3] = [
    (
        "nfcore_components",
        "the module and subworkflow lint clones github.com/nf-core/modules",
    ),
    (
        "files_unchanged",
        "it re-creates the template, which fetches nf-co.re/pipelines.json",
    ),
    (
        "actions_schema_validation",
        "it downloads the GitHub workflow schema from schemastore.org",
    ),
];

/// The pipeline lint tests nf-core knows (with `--release`, the two release tests too).
pub fn known_tests(release: bool) -> Vec<&'static str> {
    let mut tests = TESTS.to_vec();
    if release {
        tests.extend(RELEASE_TESTS);
    }
    tests
}

/// What to lint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintRequest {
    pub pipeline: std::path::PathBuf,
    /// `--release`: the release checks (version without `dev`, two more tests).
    pub release: bool,
    /// Only these tests; empty means all.
    pub tests: Vec<String>,
}

/// One finding as nf-core reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintFinding {
    pub test: String,
    pub message: String,
    /// The file the message names in backticks, relative to the pipeline when inside it.
    pub file: Option<String>,
    /// The test's documentation page.
    pub doc: String,
}

/// A test that was not run because it needs the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedTest {
    pub test: String,
    pub reason: String,
}

/// A lint run, grouped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintReport {
    pub tools_version: String,
    pub failed: Vec<LintFinding>,
    pub warned: Vec<LintFinding>,
    pub ignored: Vec<LintFinding>,
    pub fixed: usize,
    pub passed: usize,
    pub skipped_offline: Vec<SkippedTest>,
    /// How long nf-core ran (`None` for a report read from a file).
    pub elapsed: Option<Duration>,
}

/// Runs the lint on `request.pipeline` through `runner`.
pub fn run_lint(
    runner: &dyn Runner,
    env: &NfCoreEnv,
    request: &LintRequest,
) -> Result<LintReport, NfCoreError> {
    let pipeline = pipeline_dir(&request.pipeline)?;
    let known = known_tests(request.release);
    for test in &request.tests {
        let offline = SKIPPED_OFFLINE.iter().any(|(t, _)| t == test);
        if !offline && !known.contains(&test.as_str()) {
            return Err(NfCoreError::UnknownTest { test: test.clone() });
        }
    }
    let wanted = |test: &str| request.tests.is_empty() || request.tests.iter().any(|t| t == test);
    let skipped_offline: Vec<SkippedTest> = SKIPPED_OFFLINE
        .iter()
        .filter(|(test, _)| request.tests.is_empty() || wanted(test))
        .map(|(test, reason)| SkippedTest {
            test: (*test).to_owned(),
            reason: (*reason).to_owned(),
        })
        .collect();
    let keep: Vec<&str> = known
        .iter()
        .copied()
        .filter(|test| wanted(test) && !SKIPPED_OFFLINE.iter().any(|(t, _)| t == test))
        .collect();
    if keep.is_empty() {
        return Ok(LintReport {
            tools_version: NFCORE_VERSION.to_owned(),
            failed: Vec::new(),
            warned: Vec::new(),
            ignored: Vec::new(),
            fixed: 0,
            passed: 0,
            skipped_offline,
            elapsed: None,
        });
    }

    let scratch = tempfile::tempdir_in(runner.scratch()).map_err(|source| NfCoreError::Io {
        action: "making a temporary directory for",
        path: runner.scratch(),
        source,
    })?;
    let json_path = scratch.path().join("lint.json");
    let mut args = vec![
        "pipelines".to_owned(),
        "lint".to_owned(),
        "--dir".to_owned(),
        ".".to_owned(),
        "--json".to_owned(),
        json_path.to_string_lossy().into_owned(),
    ];
    if request.release {
        args.push("--release".to_owned());
    }
    for test in &keep {
        args.push("-k".to_owned());
        args.push((*test).to_owned());
    }

    let edit = ToolsConfigEdit::apply(&pipeline)?;
    let outcome = env.run(runner, args, &pipeline);
    edit.restore()?;
    let outcome = outcome?;

    // Beneath the scratch directory: nf-core (or what the pipeline makes it run) could leave a
    // symlink there in place of its report, and a report's text is echoed in parse errors.
    let read = crate::files::read_beneath(scratch.path(), Path::new("lint.json"), MAX_REPORT_BYTES)
        .and_then(|bytes| {
            let bytes = bytes.ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::FileTooLarge,
                    "larger than a lint report can be",
                )
            })?;
            String::from_utf8(bytes)
                .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidData, err))
        });
    let text = match read {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            // No JSON means the run stopped before its report: a fatal error, never a pass.
            return Err(NfCoreError::Fatal {
                command: "pipelines lint",
                exit: outcome.exit.to_string(),
                message: console::failure_line(&outcome.stdout.text, &outcome.stderr.text),
            });
        }
        Err(source) => {
            return Err(NfCoreError::Io {
                action: "reading",
                path: json_path,
                source,
            });
        }
    };
    let mut report = parse_lint_json(&text, Some(&pipeline))?;
    report.skipped_offline = skipped_offline;
    report.elapsed = Some(outcome.elapsed);
    Ok(report)
}

/// A lint report larger than this is not nf-core's (a large pipeline's is well under 1 MiB).
const MAX_REPORT_BYTES: u64 = 64 * 1024 * 1024;

/// Reads nf-core's `--json` lint report. `pipeline` lets file names in messages be made
/// relative to it. The report's `num_tests_*` must agree with its lists.
pub fn parse_lint_json(text: &str, pipeline: Option<&Path>) -> Result<LintReport, NfCoreError> {
    let unreadable = |detail: String| NfCoreError::Unreadable {
        command: "pipelines lint",
        detail,
    };
    let value: Value =
        serde_json::from_str(text).map_err(|err| unreadable(format!("its JSON report: {err}")))?;
    let version = value
        .get("nf_core_tools_version")
        .and_then(Value::as_str)
        .unwrap_or(NFCORE_VERSION)
        .to_owned();
    let group = |key: &str| -> Result<Vec<LintFinding>, NfCoreError> {
        let Some(items) = value.get(key) else {
            return Ok(Vec::new());
        };
        let items = items
            .as_array()
            .ok_or_else(|| unreadable(format!("`{key}` is not a list")))?;
        items
            .iter()
            .map(|item| {
                let pair = item.as_array().filter(|p| p.len() == 2);
                let (Some(test), Some(message)) = (
                    pair.and_then(|p| p[0].as_str()),
                    pair.and_then(|p| p[1].as_str()),
                ) else {
                    return Err(unreadable(format!(
                        "an entry of `{key}` is not [test, message]"
                    )));
                };
                Ok(LintFinding {
                    test: test.to_owned(),
                    message: message.to_owned(),
                    file: file_named(message, pipeline),
                    doc: lint_test_doc(&version, test),
                })
            })
            .collect()
    };
    let failed = group("tests_failed")?;
    let warned = group("tests_warned")?;
    let ignored = group("tests_ignored")?;
    let fixed = group("tests_fixed")?.len();
    let passed = group("tests_pass")?.len();
    for (key, len) in [
        ("num_tests_failed", failed.len()),
        ("num_tests_warned", warned.len()),
        ("num_tests_ignored", ignored.len()),
        ("num_tests_pass", passed),
    ] {
        if let Some(n) = value.get(key).and_then(Value::as_u64)
            && usize::try_from(n).ok() != Some(len)
        {
            return Err(unreadable(format!("`{key}` is {n} but the list has {len}")));
        }
    }
    Ok(LintReport {
        tools_version: version,
        failed,
        warned,
        ignored,
        fixed,
        passed,
        skipped_offline: Vec::new(),
        elapsed: None,
    })
}

/// Extensions of the files nf-core's messages name; a backticked word without one (a config
/// key such as `manifest.diagram`, a parameter) is not a file.
const FILE_EXTENSIONS: [&str; 20] = [
    "nf", "config", "json", "yml", "yaml", "md", "txt", "csv", "tsv", "html", "svg", "png", "cff",
    "py", "sh", "test", "snap", "toml", "R", "lock",
];

/// The first backticked text in `message` that is a file name.
pub fn file_named(message: &str, pipeline: Option<&Path>) -> Option<String> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .find_map(|candidate| as_file(candidate, pipeline))
}

fn as_file(candidate: &str, pipeline: Option<&Path>) -> Option<String> {
    // Inside the pipeline (whose own path may hold any character): the part below it.
    let path = Path::new(candidate);
    let inside = pipeline.filter(|_| path.is_absolute()).and_then(|root| {
        [Some(root.to_path_buf()), std::fs::canonicalize(root).ok()]
            .into_iter()
            .flatten()
            .find_map(|root| {
                path.strip_prefix(root)
                    .ok()
                    .map(|rel| rel.to_string_lossy().into_owned())
            })
    });
    let shown = inside.unwrap_or_else(|| candidate.to_owned());
    let shaped = !shown.is_empty()
        && shown
            .chars()
            .all(|c| c.is_alphanumeric() || "._-/+".contains(c));
    if !shaped {
        return None;
    }
    let name = shown.rsplit('/').next().unwrap_or(&shown);
    let ext_ok = name.starts_with('.') && name.len() > 1
        || name
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && FILE_EXTENSIONS.contains(&ext));
    ext_ok.then_some(shown)
}

/// One line of text: a message's own newlines shown as `\n`, so each finding stays one line.
pub(crate) fn one_line(text: &str) -> String {
    text.trim().replace('\r', "").replace('\n', "\\n")
}

impl LintReport {
    /// The answer text: a summary line, then one line per finding starting `failed:`,
    /// `warned:` or `ignored:` and the test's name, then one `skipped offline:` line per test
    /// not run.
    pub fn render(&self) -> String {
        let mut out = format!(
            "nf-core pipelines lint ({}): {} failed, {} warned, {} ignored, {} passed, {} skipped offline{}\n",
            self.tools_version,
            self.failed.len(),
            self.warned.len(),
            self.ignored.len(),
            self.passed,
            self.skipped_offline.len(),
            if self.fixed > 0 {
                format!(", {} fixed", self.fixed)
            } else {
                String::new()
            }
        );
        for (label, findings) in [
            ("failed", &self.failed),
            ("warned", &self.warned),
            ("ignored", &self.ignored),
        ] {
            for f in findings {
                out.push_str(&format!("{label}: {}: {}", f.test, one_line(&f.message)));
                if let Some(file) = &f.file {
                    out.push_str(&format!(" [file: {}]", one_line(file)));
                }
                out.push_str(&format!(" <{}>\n", f.doc));
            }
        }
        for s in &self.skipped_offline {
            out.push_str(&format!(
                "skipped offline: {}: not run, {} (not counted as passed)\n",
                s.test, s.reason
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_files_but_not_config_keys_or_params() {
        assert_eq!(
            file_named("File not found: `CHANGELOG.md`", None),
            Some("CHANGELOG.md".into())
        );
        assert_eq!(
            file_named("Config variable not found: `manifest.diagram`", None),
            None
        );
        assert_eq!(
            file_named("Param `multiqc_title` from `nextflow config` x", None),
            None
        );
        assert_eq!(
            file_named("File found: `.gitattributes`", None),
            Some(".gitattributes".into())
        );
        assert_eq!(
            file_named("Merge marker in `/p/x/main.nf`: y", Some(Path::new("/p/x"))),
            Some("main.nf".into())
        );
        assert_eq!(
            file_named("in `/elsewhere/main.nf`", Some(Path::new("/p/x"))),
            Some("/elsewhere/main.nf".into())
        );
        assert_eq!(
            file_named(
                "in `/p/a dir/conf/base.config`",
                Some(Path::new("/p/a dir"))
            ),
            Some("conf/base.config".into())
        );
    }

    #[test]
    fn a_message_with_newlines_stays_on_one_line() {
        let text = r#"{"tests_failed":[["nextflow_config","not found. File should contain:\n```groovy\nx\n```"]]}"#;
        let rendered = parse_lint_json(text, None)
            .map(|r| r.render())
            .unwrap_or_default();
        let lines: Vec<&str> = rendered.lines().collect();
        assert_eq!(lines.len(), 2, "{rendered}");
        assert!(lines[1].starts_with(
            "failed: nextflow_config: not found. File should contain:\\n```groovy\\nx"
        ));
    }

    #[test]
    fn a_report_whose_counts_disagree_is_refused() {
        let text = r#"{"tests_failed":[["a","b"]],"num_tests_failed":2}"#;
        assert!(matches!(
            parse_lint_json(text, None),
            Err(NfCoreError::Unreadable { .. })
        ));
    }
}
