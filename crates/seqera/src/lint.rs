//! `lint_nextflow`: runs `nextflow lint -o json <path>` (Nextflow 25.04 and later) and turns
//! its JSON into `file:line:column: message` lines. The program runs directly (no shell), with
//! a time limit, in a sandbox of its own (`lint/confine.rs`: it reads the path and its own
//! installation, writes a private directory, gets none of the daemon's environment), and is
//! killed if the call is dropped. An older Nextflow has no `lint`: that is
//! said in words, with its version, rather than as a failure of the pipeline.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::args::{Args, cut};

mod confine;
use crate::{SeqeraSetup, SeqeraTool, ToolFailure};

pub const NAME: &str = "lint_nextflow";
/// How long `nextflow lint` may run.
const LINT_TIMEOUT: Duration = Duration::from_secs(300);
/// How long `nextflow -version` may run.
const VERSION_TIMEOUT: Duration = Duration::from_secs(60);
/// Findings listed in one answer.
const MAX_FINDINGS: usize = 200;

/// The tool.
#[derive(Debug, Clone)]
pub struct LintNextflow {
    nextflow: std::path::PathBuf,
}

impl LintNextflow {
    pub fn new(setup: &SeqeraSetup) -> Self {
        Self {
            nextflow: setup.nextflow.clone(),
        }
    }
}

/// `nextflow lint -o json`'s answer, as documented (warnings are not in it).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    summary: Summary,
    #[serde(default)]
    errors: Vec<Finding>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    errors: u64,
    #[serde(default)]
    files_with_errors: u64,
    #[serde(default)]
    files_without_errors: u64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Finding {
    filename: String,
    #[serde(default)]
    start_line: Option<u64>,
    #[serde(default)]
    start_column: Option<u64>,
    message: String,
}

/// What a run of the program gave.
#[derive(Debug)]
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

#[async_trait::async_trait]
impl SeqeraTool for LintNextflow {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Runs `nextflow lint` (Nextflow 25.04 or later) on a pipeline folder or a .nf/.config \
         file given by its absolute path, and lists the errors it finds as file:line:column: \
         message. Says so when the installed Nextflow is too old to have `lint`."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Absolute path of the pipeline folder or file to lint"}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, args: &Value) -> Result<String, ToolFailure> {
        let args = Args::of(NAME, args)?;
        let path = Path::new(args.required_str("path")?);
        if !path.is_absolute() {
            return Err(ToolFailure::new(format!(
                "{NAME}: `path` must be absolute (e.g. /home/me/pipeline); give the absolute path of {}",
                path.display()
            )));
        }
        if !path.exists() {
            return Err(ToolFailure::new(format!(
                "{NAME}: {} does not exist",
                path.display()
            )));
        }
        // An absolute path starts with `/`, so Nextflow cannot take it for an option.
        let lint_args = [
            "lint".as_ref(),
            "-o".as_ref(),
            "json".as_ref(),
            path.as_os_str(),
        ];
        let ran = self.run(&lint_args, path, LINT_TIMEOUT).await?;
        if let Some(report) = parse_report(&ran.stdout) {
            return Ok(describe(&report));
        }
        let said = format!("{}\n{}", ran.stdout, ran.stderr);
        let version = match version_in(&said) {
            Some(version) => Some(version),
            None => self.version(path).await,
        };
        let too_old = version.as_deref().is_some_and(|v| !has_lint(v));
        if too_old || (ran.code != Some(0) && looks_unknown(&said)) {
            return Ok(format!(
                "nextflow lint is not available in Nextflow {} (it came in 25.04); update Nextflow to lint",
                version.as_deref().unwrap_or("(unknown version)")
            ));
        }
        Err(ToolFailure::new(format!(
            "nextflow lint gave no JSON report ({}): {}",
            ran.code
                .map_or("killed by a signal".to_owned(), |code| format!(
                    "exit status {code}"
                )),
            cut(said.trim(), 400)
        )))
    }
}

impl LintNextflow {
    /// Runs nextflow with `args`, confined to reading `target` (and what it needs to run) and
    /// writing a directory of its own (see `lint/confine.rs`).
    async fn run(
        &self,
        args: &[&std::ffi::OsStr],
        target: &Path,
        limit: Duration,
    ) -> Result<Ran, ToolFailure> {
        let program = self.nextflow.display();
        let resolved = find_on_path(&self.nextflow);
        let mut command = tokio::process::Command::new(&resolved);
        let _workdir = confine::confine(&mut command, &resolved, target).map_err(|err| {
            ToolFailure::new(format!(
                "{NAME}: cannot prepare the sandbox for `{program}`: {err}"
            ))
        })?;
        let child = command
            .args(args)
            // Plain text: no ANSI colours or progress lines in what is parsed.
            .env("NXF_ANSI_LOG", "false")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| {
                if err.kind() == std::io::ErrorKind::NotFound {
                    ToolFailure::new(format!(
                        "{NAME}: Nextflow is not installed: cannot find the program `{program}`; install Nextflow or set [nextflow] bin to its path"
                    ))
                } else {
                    ToolFailure::new(format!("{NAME}: cannot run `{program}`: {err}"))
                }
            })?;
        match tokio::time::timeout(limit, child.wait_with_output()).await {
            Ok(Ok(output)) => Ok(Ran {
                code: output.status.code(),
                stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            }),
            Ok(Err(err)) => Err(ToolFailure::new(format!(
                "{NAME}: `{program}` failed while running: {err}"
            ))),
            Err(_) => Err(ToolFailure::new(format!(
                "{NAME}: `{program}` did not finish within {}s and was stopped",
                limit.as_secs()
            ))),
        }
    }

    /// The version `nextflow -version` reports, if it reports one (run as the lint of
    /// `target` was).
    async fn version(&self, target: &Path) -> Option<String> {
        let ran = self
            .run(&["-version".as_ref()], target, VERSION_TIMEOUT)
            .await
            .ok()?;
        version_in(&format!("{}\n{}", ran.stdout, ran.stderr))
    }
}

/// `program` as found on `PATH` when it is a bare name: the working directory is the lint's
/// own, and the daemon's `PATH` is the one searched (the sandbox needs the real location).
fn find_on_path(program: &Path) -> std::path::PathBuf {
    if program.components().count() != 1 {
        return program.to_path_buf();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| program.to_path_buf())
}

/// The JSON report on stdout: the whole of it, or from its first line opening an object (in
/// case something was printed before it).
fn parse_report(stdout: &str) -> Option<Report> {
    if let Ok(report) = serde_json::from_str(stdout.trim()) {
        return Some(report);
    }
    let start = stdout.find("\n{").map(|at| at + 1)?;
    serde_json::from_str(stdout[start..].trim()).ok()
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn describe(report: &Report) -> String {
    let summary = &report.summary;
    let files = summary.files_with_errors + summary.files_without_errors;
    let mut out = if summary.errors == 0 {
        format!(
            "nextflow lint: no errors in {}",
            plural(files, "file", "files")
        )
    } else {
        format!(
            "nextflow lint: {} in {} of {}",
            plural(summary.errors, "error", "errors"),
            summary.files_with_errors,
            plural(files, "file", "files")
        )
    };
    for finding in report.errors.iter().take(MAX_FINDINGS) {
        let message: String = finding
            .message
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        out.push_str(&format!(
            "\n{}:{}:{}: {}",
            finding.filename,
            finding.start_line.unwrap_or(0),
            finding.start_column.unwrap_or(0),
            cut(&message, 500)
        ));
    }
    if report.errors.len() > MAX_FINDINGS {
        out.push_str(&format!(
            "\n… and {} more",
            report.errors.len() - MAX_FINDINGS
        ));
    }
    out
}

/// `version 24.10.4` in Nextflow's banner.
fn version_in(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    while let Some(word) = words.next() {
        if word.eq_ignore_ascii_case("version") {
            let next = words.next()?;
            if next.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                return Some(next.trim_end_matches([',', ';']).to_owned());
            }
        }
    }
    None
}

/// Whether Nextflow `version` has `lint` (25.04 and later).
fn has_lint(version: &str) -> bool {
    let mut parts = version.split(['.', '-']).map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= (25, 4),
        (Some(major), None) => major >= 25,
        _ => true,
    }
}

fn looks_unknown(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains("unknown command")
        || lower.contains("usage: nextflow")
        || lower.contains("no such command")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    fn tool(program: PathBuf) -> LintNextflow {
        LintNextflow::new(&SeqeraSetup {
            nextflow: program,
            ..SeqeraSetup::default()
        })
    }

    fn pipeline() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.nf"), "workflow { foo }\n").unwrap();
        dir
    }

    #[tokio::test]
    async fn findings_become_file_line_column_lines() {
        let dir = pipeline();
        let text = tool(fixture("nextflow-25.04-errors"))
            .call(&json!({"path": dir.path()}))
            .await
            .unwrap();
        let main = dir.path().join("main.nf");
        assert_eq!(
            text,
            format!(
                "nextflow lint: 2 errors in 1 of 5 files\n{0}:12:5: `foo` is not defined\n{0}:30:1: Unexpected input: '}}'",
                main.display()
            )
        );
    }

    #[tokio::test]
    async fn a_clean_pipeline_says_so() {
        let dir = pipeline();
        let text = tool(fixture("nextflow-25.04-clean"))
            .call(&json!({"path": dir.path()}))
            .await
            .unwrap();
        assert_eq!(text, "nextflow lint: no errors in 5 files");
    }

    #[tokio::test]
    async fn an_old_nextflow_has_no_lint() {
        let dir = pipeline();
        let text = tool(fixture("nextflow-24.10-no-lint"))
            .call(&json!({"path": dir.path()}))
            .await
            .unwrap();
        assert_eq!(
            text.lines().next().unwrap(),
            "nextflow lint is not available in Nextflow 24.10.4 (it came in 25.04); update Nextflow to lint"
        );
    }

    #[tokio::test]
    async fn a_missing_program_names_itself_and_the_setting() {
        let dir = pipeline();
        let err = tool(PathBuf::from("/nonexistent/bin/nextflow"))
            .call(&json!({"path": dir.path()}))
            .await
            .unwrap_err();
        assert!(err.0.contains("/nonexistent/bin/nextflow"), "{err}");
        assert!(err.0.contains("[nextflow] bin"), "{err}");
    }

    #[tokio::test]
    async fn a_program_without_json_is_an_error_with_its_words() {
        let dir = pipeline();
        // `false` runs, exits 1 and says nothing: not a lint report, not an unknown command.
        let err = tool(PathBuf::from("/bin/false"))
            .call(&json!({"path": dir.path()}))
            .await
            .unwrap_err();
        assert!(
            err.0
                .starts_with("nextflow lint gave no JSON report (exit status 1)"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn relative_missing_and_bad_paths_are_refused() {
        let lint = tool(fixture("nextflow-25.04-clean"));
        let cases = [
            (
                json!({"path": "pipeline/main.nf"}),
                "`path` must be absolute",
            ),
            (json!({"path": "/no/such/dir/main.nf"}), "does not exist"),
            (json!({}), "`path` must be a non-empty string"),
            (json!({"path": ["/x"]}), "`path` must be a string"),
            (json!(["/x"]), "the arguments must be a JSON object"),
            (json!({"path": "x".repeat(10_000)}), "at most"),
        ];
        for (args, expected) in cases {
            let err = lint.call(&args).await.unwrap_err();
            assert!(err.0.contains(expected), "{args}: {err}");
        }
    }

    #[test]
    fn versions_are_read_and_compared() {
        assert_eq!(
            version_in("  N E X T F L O W\n  version 24.10.4 build 5934"),
            Some("24.10.4".into())
        );
        assert_eq!(version_in("no version here"), None);
        assert!(!has_lint("24.10.4"));
        assert!(has_lint("25.04.0"));
        assert!(has_lint("25.10.0-edge"));
        assert!(!has_lint("23.04.1"));
    }

    #[test]
    fn a_report_after_other_lines_is_still_read() {
        let stdout = "Picked up JAVA_TOOL_OPTIONS\n{\"summary\":{\"errors\":1,\"filesWithErrors\":1,\"filesWithoutErrors\":0},\"errors\":[{\"filename\":\"a.nf\",\"startLine\":1,\"startColumn\":2,\"message\":\"bad\\nthing\"}]}";
        let report = parse_report(stdout).unwrap();
        assert_eq!(
            describe(&report),
            "nextflow lint: 1 error in 1 of 1 file\na.nf:1:2: bad thing"
        );
    }
}
