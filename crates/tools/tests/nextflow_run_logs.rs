//! `analyze_run_log` on what users have (issue #39, item 3): real failure reports people
//! posted (tests/fixtures/nextflow/real-failures), handed over as a log file of another name
//! and as pasted `text`; and the attacker's pass on a file `path` (links out of the root and
//! into Codaris's state, FIFOs, /proc) and on `text` (capped, no path taken from it).

#![allow(
    clippy::disallowed_methods,
    reason = "tests set up and inspect files directly, outside any fence"
)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use codaris_nextflow::runlog::{MAX_PASTED_BYTES, diagnose, read_console};
use codaris_tools::nextflow::{MemoryGates, NextflowSetup, nextflow_tools};
use codaris_tools::shell::{PoolConfig, ShellPools};
use codaris_tools::{Fence, Tool, ToolContext, ToolError};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const MARKER: &str = "CODARIS-RUNLOG-SECRET-77c1";

/// Real reports pasted as console text: (directory, the failing process as the expert read
/// it, its exit status).
const REPORTS: &[(&str, &str, Option<i32>)] = &[
    ("nextflow-io-nextflow-1087", "test", Some(127)),
    ("nf-core-bacass-27", "trim_and_combine", Some(127)),
    (
        "nf-core-cutandrun-142",
        "NFCORE_CUTANDRUN:CUTANDRUN:PREPARE_PEAKCALLING:BEDTOOLS_SORT",
        Some(137),
    ),
    (
        "nf-core-raredisease-53",
        "NFCORE_RAREDISEASE:RAREDISEASE:ALIGN_BWAMEM2:MARKDUPLICATES",
        Some(134),
    ),
    (
        "nf-core-ampliseq-789",
        "NFCORE_AMPLISEQ:AMPLISEQ:QIIME2_SEQFILTERTABLE",
        Some(255),
    ),
    ("nf-core-pangenome-117", "", None),
];

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    state_file: PathBuf,
    ctx: ToolContext,
    tools: Vec<Arc<dyn Tool>>,
}

fn env() -> Result<Env, Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let base = tmp.path().canonicalize()?;
    let root = base.join("root");
    let state = root.join(".local/state/codaris");
    let workspace = state.join("sessions/s");
    std::fs::create_dir_all(&workspace)?;
    std::fs::create_dir_all(root.join("logs"))?;
    std::fs::create_dir_all(base.join("outside"))?;
    let ctx = ToolContext {
        checkpoint: None,
        session_id: "s".into(),
        cwd: root.clone(),
        fence: Fence::new([root.clone()]).with_state_dir(&state, &workspace),
        workspace,
        read: Default::default(),
    };
    let (pools, _notices) = ShellPools::new(PoolConfig::default());
    let tools = nextflow_tools(
        &Arc::new(pools),
        &NextflowSetup::default(),
        Arc::new(MemoryGates::default()),
    );
    Ok(Env {
        _tmp: tmp,
        root,
        outside: base.join("outside/secret.log"),
        state_file: state.join("ledger.journal"),
        ctx,
        tools,
    })
}

impl Env {
    /// The answer, or the refusal as the model reads it.
    async fn analyze(&self, args: Value) -> Result<String, String> {
        let Some(tool) = self.tools.iter().find(|t| t.name() == "analyze_run_log") else {
            return Err("no analyze_run_log".into());
        };
        match tool.call(&self.ctx, &args).await {
            Ok(output) => Ok(output
                .content
                .iter()
                .filter_map(|c| match c {
                    codaris_tools::Content::Text(text) => Some(text.clone()),
                    codaris_tools::Content::Image { .. } => None,
                })
                .collect()),
            Err(ToolError::Model { message }) => Err(message),
            Err(other) => Err(format!("not a refusal: {other}")),
        }
    }
}

fn report(slug: &str) -> Result<String, std::io::Error> {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/nextflow/real-failures")
            .join(slug)
            .join("report.txt"),
    )
}

/// The answer's line starting with `key: `.
fn line<'a>(answer: &'a str, key: &str) -> Option<&'a str> {
    answer.lines().find(|l| l.starts_with(&format!("{key}: ")))
}

/// What the answer says of a real report: the failing process, its exit status and the
/// likely cause (the one the diagnosis gives the report's error: the tool shows it).
fn check(slug: &str, answer: &str, process: &str, exit: Option<i32>, text: &str) {
    if process.is_empty() {
        assert_eq!(line(answer, "process"), None, "{slug}: {answer}");
    } else {
        assert_eq!(
            line(answer, "process"),
            Some(format!("process: `{process}`").as_str()),
            "{slug}: {answer}"
        );
    }
    assert_eq!(
        line(answer, "exit_status"),
        exit.map(|e| format!("exit_status: {e}")).as_deref(),
        "{slug}: {answer}"
    );
    let error = read_console(text).error;
    let cause = error.as_ref().and_then(diagnose).map(|d| d.cause.as_str());
    let shown = line(answer, "likely_cause").unwrap_or_default();
    assert!(
        cause.is_some_and(|cause| shown.starts_with(&format!("likely_cause: {cause} "))),
        "{slug}: {shown} (want {cause:?})\n{answer}"
    );
    assert!(!answer.contains("error: none found"), "{slug}: {answer}");
}

/// A pasted console saved as `log.txt` is read as the console it is; the answer's first line
/// names the file, as a directory's names its log.
#[tokio::test]
async fn a_real_report_saved_as_log_txt_is_diagnosed() -> TestResult {
    let env = env()?;
    for (slug, process, exit) in REPORTS {
        let text = report(slug)?;
        let file = env.root.join("logs").join(slug).join("log.txt");
        std::fs::create_dir_all(file.parent().ok_or("no parent")?)?;
        std::fs::write(&file, &text)?;
        let answer = env
            .analyze(json!({"path": format!("logs/{slug}/log.txt")}))
            .await?;
        assert!(
            answer.starts_with(&format!("log: `{}`\n", file.display())),
            "{slug}: {answer}"
        );
        check(slug, &answer, process, *exit, &text);
        // Saved as `.nextflow.log` in a launch directory, the same text says the same.
        std::fs::write(file.with_file_name(".nextflow.log"), &text)?;
        let in_dir = env.analyze(json!({"path": format!("logs/{slug}")})).await?;
        check(slug, &in_dir, process, *exit, &text);
    }
    Ok(())
}

/// The same reports pasted as `text`.
#[tokio::test]
async fn a_real_report_pasted_as_text_is_diagnosed() -> TestResult {
    let env = env()?;
    for (slug, process, exit) in REPORTS {
        let text = report(slug)?;
        let answer = env.analyze(json!({"text": text})).await?;
        assert!(
            answer.starts_with(&format!("text: pasted, {} bytes\n", text.len())),
            "{slug}: {answer}"
        );
        check(slug, &answer, process, *exit, &text);
    }
    Ok(())
}

/// A paste past the cap is read from its end, where the error is, and the answer says so.
#[tokio::test]
async fn a_long_paste_is_cut_from_its_start_and_says_so() -> TestResult {
    let env = env()?;
    let error = report("nf-core-bacass-27")?;
    let mut text = format!("{MARKER} at the start\n");
    while text.len() < MAX_PASTED_BYTES + 4096 {
        text.push_str("[ab/cdef12] Submitted process > OTHER (x)\n");
    }
    text.push_str(&error);
    let answer = env.analyze(json!({"text": text})).await?;
    let first = answer.lines().next().unwrap_or_default();
    assert!(first.contains("were cut"), "{first}");
    assert!(!answer.contains(MARKER), "{answer}");
    assert_eq!(
        line(&answer, "process"),
        Some("process: `trim_and_combine`"),
        "{answer}"
    );
    Ok(())
}

/// `text` goes alone, never empty.
#[tokio::test]
async fn text_with_a_path_or_run_or_empty_is_refused() -> TestResult {
    let env = env()?;
    for args in [
        json!({"text": "ERROR ~ boom", "path": "logs"}),
        json!({"text": "ERROR ~ boom", "run": "goofy_kilby"}),
        json!({"text": "  \n"}),
        json!({"text": 7}),
    ] {
        let refused = env.analyze(args.clone()).await;
        assert!(
            refused
                .as_ref()
                .is_err_and(|m| m.starts_with("analyze_run_log: ") && !m.contains('\n')),
            "{args}: {refused:?}"
        );
    }
    // A file with `run` is refused: `run` picks a log in a launch directory.
    std::fs::write(env.root.join("logs/log.txt"), "ERROR ~ boom\n")?;
    let refused = env
        .analyze(json!({"path": "logs/log.txt", "run": "goofy_kilby"}))
        .await;
    assert!(
        refused.as_ref().is_err_and(|m| m.contains("`run`")),
        "{refused:?}"
    );
    Ok(())
}

/// A log file that is a link out of the root, or into Codaris's state, is refused by where it
/// leads, and what it leads to is never shown; a link that stays inside is read.
#[tokio::test]
async fn a_log_file_linked_to_a_secret_is_refused() -> TestResult {
    let env = env()?;
    let content = format!("ERROR ~ {MARKER}\n");
    // The control: the file itself is read and its words shown.
    std::fs::write(env.root.join("logs/inside.log"), &content)?;
    symlink("inside.log", env.root.join("logs/link-inside.txt"))?;
    let shown = env.analyze(json!({"path": "logs/link-inside.txt"})).await?;
    assert!(shown.contains(MARKER), "{shown}");
    for target in [&env.outside, &env.state_file] {
        std::fs::write(target, &content)?;
        let link = env.root.join("logs/log.txt");
        let _ = std::fs::remove_file(&link);
        symlink(target, &link)?;
        let answer = env.analyze(json!({"path": "logs/log.txt"})).await;
        assert!(
            answer.as_ref().is_err_and(|m| !m.contains(MARKER)),
            "read through a link to {}: {answer:?}",
            target.display()
        );
    }
    // Named directly: outside the root, the state file, /proc.
    for path in [
        env.outside.display().to_string(),
        env.state_file.display().to_string(),
        "/proc/self/environ".to_owned(),
        "logs/../../outside/secret.log".to_owned(),
    ] {
        let answer = env.analyze(json!({"path": path})).await;
        assert!(
            answer.as_ref().is_err_and(|m| !m.contains(MARKER)),
            "{path}: {answer:?}"
        );
    }
    Ok(())
}

/// A FIFO (or another file that is not a regular one) named as the log is refused at once:
/// nothing waits on a writer that never comes.
#[tokio::test]
async fn a_fifo_named_as_the_log_is_refused_without_waiting() -> TestResult {
    let env = env()?;
    let fifo = env.root.join("logs/log.txt");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )?;
    let answer = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        env.analyze(json!({"path": "logs/log.txt"})),
    )
    .await?;
    assert!(
        answer
            .as_ref()
            .is_err_and(|m| m.contains("not a regular file")),
        "{answer:?}"
    );
    // As a launch directory's `.nextflow.log` too.
    std::fs::create_dir_all(env.root.join("run"))?;
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        env.root.join("run/.nextflow.log"),
        rustix::fs::Mode::from_raw_mode(0o600),
    )?;
    let answer = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        env.analyze(json!({"path": "run"})),
    )
    .await?;
    assert!(
        answer
            .as_ref()
            .is_err_and(|m| m.contains("not a regular file")),
        "{answer:?}"
    );
    Ok(())
}

/// A log file past 1 GiB (sparse here, so it costs no disk) is read from its last 1 GiB, where
/// the run's error is, and the answer says how much was skipped; what lies before is not read.
#[tokio::test]
async fn a_huge_log_file_is_read_from_its_end_and_says_so() -> TestResult {
    use std::io::{Seek as _, SeekFrom, Write as _};
    const GIB: u64 = 1024 * 1024 * 1024;
    let env = env()?;
    let path = env.root.join("logs/huge.log");
    let mut file = std::fs::File::create(&path)?;
    writeln!(file, "ERROR ~ {MARKER} before the last GiB")?;
    file.seek(SeekFrom::Start(GIB + 4096))?;
    write!(
        file,
        "\nERROR ~ Error executing process > 'FASTQC (s1)'\n\nCaused by:\n  Process `FASTQC (s1)` terminated with an error exit status (127)\n"
    )?;
    drop(file);
    let len = std::fs::metadata(&path)?.len();
    let answer = env.analyze(json!({"path": "logs/huge.log"})).await?;
    let skipped = len - GIB;
    assert!(
        answer.contains(&format!(
            "\nlog_read: the last {GIB} of its {len} bytes (the first {skipped} skipped)\n"
        )),
        "{answer}"
    );
    assert!(!answer.contains(MARKER), "{answer}");
    assert_eq!(
        line(&answer, "process"),
        Some("process: `FASTQC`"),
        "{answer}"
    );
    Ok(())
}

/// A config that does not compile under the Nextflow that ran (nf-core-atacseq-442: the
/// strict parser of 26.04 refusing `def check_max`): the answer names that version and
/// weighs it against the launch directory's `manifest.nextflowVersion`.
#[tokio::test]
async fn a_compile_error_is_weighed_against_the_pipelines_nextflow_version() -> TestResult {
    let env = env()?;
    let dir = env.root.join("atacseq");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(".nextflow.log"), report("nf-core-atacseq-442")?)?;
    std::fs::write(
        dir.join("nextflow.config"),
        "manifest {\n    name            = 'nf-core/atacseq'\n    nextflowVersion = '!>=23.04.0'\n}\n",
    )?;
    let answer = env.analyze(json!({"path": "atacseq"})).await?;
    assert!(answer.starts_with("log: `"), "{answer}");
    assert_eq!(
        line(&answer, "nextflow_version"),
        Some("nextflow_version: `26.04.1`"),
        "{answer}"
    );
    assert_eq!(
        line(&answer, "pipeline_requires"),
        Some("pipeline_requires: `!>=23.04.0`"),
        "{answer}"
    );
    let note = line(&answer, "version_note").ok_or("no version_note")?;
    assert!(note.contains("NXF_SYNTAX_PARSER=v1"), "{note}");
    // Another error, or no manifest: no version lines.
    std::fs::write(dir.join("nextflow.config"), "params.x = 1\n")?;
    let answer = env.analyze(json!({"path": "atacseq"})).await?;
    assert_eq!(line(&answer, "pipeline_requires"), None, "{answer}");
    // A config linked out of the root is not read (the fence), so nothing of it shows.
    std::fs::write(
        &env.outside,
        format!("manifest {{ nextflowVersion = '>=1.0 {MARKER}' }}\n"),
    )?;
    std::fs::remove_file(dir.join("nextflow.config"))?;
    symlink(&env.outside, dir.join("nextflow.config"))?;
    let answer = env.analyze(json!({"path": "atacseq"})).await?;
    assert!(!answer.contains(MARKER), "{answer}");
    assert_eq!(line(&answer, "pipeline_requires"), None, "{answer}");
    Ok(())
}
