//! Every Nextflow tool that reads a file by a path it was given or derived (a run's
//! `.nextflow.log`, a rotated one, `.nextflow/history`, the trace, a task's `.command.err`, the
//! input schema), with that file replaced by a symlink to a secret: a file outside the roots,
//! and one in Codaris's state directory (inside the root here, as when a root is the home
//! directory). The secret's marker never reaches a tool result.
//!
//! Each case first reads the same file as a real file holding the marker and sees the marker
//! in the result: so the tool does echo what it reads, and a symlink followed would leak it.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use codaris_tools::nextflow::{MemoryGates, NextflowSetup, nextflow_tools};
use codaris_tools::shell::{PoolConfig, ShellPools};
use codaris_tools::{Fence, Tool, ToolContext};
use serde_json::{Value, json};

use super::TestResult;

const MARKER: &str = "CODARIS-READERS-SECRET-5e1f";
const SESSION: &str = "e710da1b-ce06-482f-bbcf-987a507f85d1";
const HASH_DIR: &str = "work/9b/02e776000000000000000000000000";

/// `.nextflow/history` with one run.
fn history(name: &str) -> String {
    format!(
        "2026-12-01 10:00:00\t5s\t{name}\tERR\t6b9515aba6\t{SESSION}\tnextflow run main.nf -with-trace\n"
    )
}

/// A trace with one failed task of `process`.
fn trace(process: &str) -> String {
    format!(
        "task_id\thash\tnative_id\tprocess\ttag\tname\tstatus\texit\n1\t9b/02e776\t4242\t{process}\t-\t{process}\tFAILED\t127\n"
    )
}

/// A log whose launch line names `run` and whose last record is an error saying `message`.
fn log(run: &str, message: &str) -> String {
    format!(
        "Dec-01 10:00:00.000 [main] DEBUG nextflow.cli.Launcher - $> nextflow run main.nf\n\
         Dec-01 10:00:00.100 [main] INFO  nextflow.cli.CmdRun - Launching `main.nf` [{run}] DSL2 - revision: 6b9515aba6\n\
         Dec-01 10:00:01.000 [main] ERROR nextflow.cli.Launcher - {message}\n"
    )
}

/// An input schema that requires a column named `column`.
fn schema(column: &str) -> String {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"sample": {"type": "string"}, column: {"type": "string"}},
            "required": ["sample", column]
        }
    })
    .to_string()
}

/// A pipeline that ran and failed, launched from its own directory: everything a reader
/// opens is there and ordinary.
fn launch(pipe: &Path) -> TestResult {
    std::fs::create_dir_all(pipe.join(".nextflow"))?;
    std::fs::create_dir_all(pipe.join(HASH_DIR))?;
    std::fs::create_dir_all(pipe.join("assets"))?;
    std::fs::write(
        pipe.join("main.nf"),
        "process FASTQC {\n    script:\n    \"fastqc\"\n}\nworkflow { FASTQC() }\n",
    )?;
    std::fs::write(pipe.join(".nextflow/history"), history("goofy_kilby"))?;
    std::fs::write(pipe.join("trace.txt"), trace("FASTQC"))?;
    std::fs::write(pipe.join(".nextflow.log"), log("goofy_kilby", "ordinary"))?;
    std::fs::write(pipe.join(".nextflow.log.1"), log("old_turing", "ordinary"))?;
    for (name, text) in [
        (".command.err", "fastqc: command not found\n"),
        (".command.out", ""),
        (".command.begin", ""),
        (".exitcode", "127"),
    ] {
        std::fs::write(pipe.join(HASH_DIR).join(name), text)?;
    }
    std::fs::write(pipe.join("sheet.csv"), "sample\nA\n")?;
    std::fs::write(
        pipe.join("nextflow_schema.json"),
        json!({"$defs": {"io": {"properties": {"input": {
            "type": "string", "schema": "assets/schema_input.json"
        }}}}})
        .to_string(),
    )?;
    std::fs::write(pipe.join("assets/schema_input.json"), schema("fastq_1"))?;
    Ok(())
}

/// One reader, the file it derives from its arguments, and what that file holds when it
/// carries the marker in a form the reader shows.
struct Case {
    tool: &'static str,
    args: Value,
    file: &'static str,
    holding_marker: fn() -> String,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            tool: "analyze_run_log",
            args: json!({"path": "pipe"}),
            file: ".nextflow.log",
            holding_marker: || log("goofy_kilby", MARKER),
        },
        Case {
            tool: "analyze_run_log",
            args: json!({"path": "pipe", "run": "old_turing"}),
            file: ".nextflow.log.1",
            holding_marker: || log("old_turing", MARKER),
        },
        Case {
            tool: "check_run_status",
            args: json!({"path": "pipe"}),
            file: ".nextflow.log",
            holding_marker: || log("goofy_kilby", MARKER),
        },
        Case {
            tool: "check_run_status",
            args: json!({"path": "pipe"}),
            file: ".nextflow/history",
            holding_marker: || history(MARKER),
        },
        Case {
            tool: "check_run_status",
            args: json!({"path": "pipe"}),
            file: "trace.txt",
            holding_marker: || trace(MARKER),
        },
        Case {
            tool: "debug_last_run",
            args: json!({"path": "pipe"}),
            file: ".nextflow/history",
            holding_marker: || history(MARKER),
        },
        Case {
            tool: "debug_last_run",
            args: json!({"path": "pipe"}),
            file: "trace.txt",
            holding_marker: || trace(MARKER),
        },
        Case {
            tool: "debug_last_run",
            args: json!({"path": "pipe"}),
            file: "work/9b/02e776000000000000000000000000/.command.err",
            holding_marker: || format!("{MARKER}\n"),
        },
        Case {
            tool: "prepare_samplesheet_gate",
            args: json!({"path": "pipe", "samplesheet": "pipe/sheet.csv"}),
            file: "assets/schema_input.json",
            holding_marker: || schema(MARKER),
        },
    ]
}

/// Where the secrets are.
#[derive(Debug, Clone, Copy)]
enum Secret {
    /// A file outside every root.
    Outside,
    /// A file in the state directory, which lies inside the root.
    State,
}

struct Env {
    _tmp: tempfile::TempDir,
    pipe: PathBuf,
    ctx: ToolContext,
    tools: Vec<Arc<dyn Tool>>,
    /// A file outside every root.
    outside: PathBuf,
    /// A file in the state directory.
    state_file: PathBuf,
}

fn env() -> Result<Env, Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let base = tmp.path().canonicalize()?;
    let root = base.join("root");
    let pipe = root.join("pipe");
    let state = root.join(".local/state/codaris");
    let workspace = state.join("sessions/s");
    std::fs::create_dir_all(&workspace)?;
    std::fs::create_dir_all(base.join("outside"))?;
    launch(&pipe)?;
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
        pipe,
        ctx,
        tools,
        outside: base.join("outside/secret"),
        state_file: state.join("ledger.journal"),
    })
}

impl Env {
    /// The tool's result, an answer or an error, as the model would read it.
    async fn run(&self, tool: &str, args: &Value) -> Result<String, Box<dyn std::error::Error>> {
        let tool = self
            .tools
            .iter()
            .find(|t| t.name() == tool)
            .ok_or_else(|| format!("no tool `{tool}`"))?;
        Ok(match tool.call(&self.ctx, args).await {
            Ok(output) => format!("{output:?}"),
            Err(error) => error.to_string(),
        })
    }
}

#[tokio::test]
async fn no_reader_follows_a_derived_file_to_a_secret() -> TestResult {
    let mut failures = Vec::new();
    for case in cases() {
        let content = (case.holding_marker)();
        // The control: the file itself holding the marker is read and shown.
        let env = env()?;
        std::fs::write(env.pipe.join(case.file), &content)?;
        let shown = env.run(case.tool, &case.args).await?;
        assert!(
            shown.contains(MARKER),
            "{} does not show `{}` when it holds the marker, so this case proves nothing: {shown}",
            case.tool,
            case.file
        );
        for secret in [Secret::Outside, Secret::State] {
            let env = env_with_link(&content, case.file, secret)?;
            let answer = env.run(case.tool, &case.args).await?;
            let name = case.file.rsplit('/').next().unwrap_or(case.file);
            if answer.contains(MARKER) {
                failures.push(format!(
                    "{} read the {secret:?} secret through `{}`: {answer}",
                    case.tool, case.file
                ));
            } else if !answer.contains(name) {
                failures.push(format!(
                    "{} with `{}` a link to the {secret:?} secret does not name the path: {answer}",
                    case.tool, case.file
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

/// A fresh launch with `file` replaced by a symlink to the `secret`, which holds `content`.
fn env_with_link(
    content: &str,
    file: &str,
    secret: Secret,
) -> Result<Env, Box<dyn std::error::Error>> {
    let env = env()?;
    let target = match secret {
        Secret::Outside => env.outside.clone(),
        Secret::State => env.state_file.clone(),
    };
    std::fs::write(&target, content)?;
    let link = env.pipe.join(file);
    std::fs::remove_file(&link)?;
    symlink(&target, &link)?;
    Ok(env)
}

#[tokio::test]
async fn a_symlink_that_stays_in_the_root_is_followed() -> TestResult {
    let env = env()?;
    let elsewhere = env.pipe.join("../logs/run.log");
    std::fs::create_dir_all(env.pipe.join("../logs"))?;
    std::fs::write(&elsewhere, log("goofy_kilby", MARKER))?;
    std::fs::remove_file(env.pipe.join(".nextflow.log"))?;
    symlink("../logs/run.log", env.pipe.join(".nextflow.log"))?;
    let answer = env.run("analyze_run_log", &json!({"path": "pipe"})).await?;
    assert!(answer.contains(MARKER), "{answer}");
    Ok(())
}

#[tokio::test]
async fn a_work_directory_linked_out_of_the_root_is_not_read() -> TestResult {
    let env = env()?;
    let outside = env.outside.with_file_name("work");
    std::fs::rename(env.pipe.join("work"), &outside)?;
    std::fs::write(
        outside.join("9b/02e776000000000000000000000000/.command.err"),
        format!("{MARKER}\n"),
    )?;
    symlink(&outside, env.pipe.join("work"))?;
    let answer = env.run("debug_last_run", &json!({"path": "pipe"})).await?;
    assert!(!answer.contains(MARKER), "{answer}");
    Ok(())
}
