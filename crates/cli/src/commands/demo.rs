//! `codaris demo`: a real daemon on a temporary state directory, the scripted model, and a small
//! sample pipeline project, walked through step by step with what each step shows.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use codaris_proto::v1;
use serde_json::json;

use super::Outcome;
use super::run::{Layout, Printer, play_turn};
use crate::cli::Approve;
use crate::client;
use crate::error::CliError;
use crate::output;

/// The sample project: a tiny nf-core-style pipeline.
const PROJECT: &[(&str, &str)] = &[
    (
        "main.nf",
        "#!/usr/bin/env nextflow\nnextflow.enable.dsl = 2\n\ninclude { FASTQC } from './modules/fastqc/main.nf'\n\nworkflow {\n    reads = Channel.fromPath(params.input).splitCsv(header: true).map { row -> file(row.fastq_1) }\n    FASTQC(reads)\n}\n",
    ),
    (
        "nextflow.config",
        "params {\n    input  = 'samplesheet.csv'\n    outdir = 'results'\n}\nprocess.container = 'quay.io/biocontainers/fastqc:0.12.1--hdfd78af_0'\n",
    ),
    (
        "modules/fastqc/main.nf",
        "process FASTQC {\n    input:\n    path reads\n    output:\n    path '*.html'\n    script:\n    \"fastqc ${reads}\"\n}\n",
    ),
    (
        "samplesheet.csv",
        "sample,fastq_1\nWT_REP1,data/WT_REP1_R1.fastq.gz\nKO_REP1,data/KO_REP1_R1.fastq\n",
    ),
    (
        "README.md",
        "# rnaseq-mini\n\nA two-sample FastQC pipeline used by `codaris demo`.\n",
    ),
];

const SKILL: &str = "---\nname: debugging-failed-runs\ndescription: How to debug a failed Nextflow run: work directories, .command.err, exit codes and -resume\nkeywords: [nextflow, failure, resume]\n---\n# Debugging a failed run\n\nLook in the task's work directory first: `.command.err`, `.command.log`, `.exitcode`.\n";

struct Step {
    explain: &'static str,
    prompt: &'static str,
}

const STEPS: &[Step] = &[
    Step {
        explain: "Turn 1 — finding a tool. The model starts with the lean surface; it needs a directory tree, so it calls search_tools. The hit is bound from the next round, and the model uses it.",
        prompt: "Give me an overview of this pipeline.",
    },
    Step {
        explain: "Turn 2 — the fence. Reading a file outside the allowed folders is refused at dispatch with the capability it needs. The model asks for it with request_capability; the demo answers the card \"allow for this session\"; the grant is recorded durably, and the same read now passes.",
        prompt: "Compare with the cluster's shared config next door, ../shared/hostname.conf.",
    },
    Step {
        explain: "Turn 3 — a read-only turn. /review makes the turn read-only: the write is refused by the policy whatever the model says, with the capability it would need.",
        prompt: "/review is the samplesheet valid? Fix it if not.",
    },
    Step {
        explain: "Turn 4 — the binding expires. print_tree was found in turn 1 and stayed bound through turns 2 and 3; in turn 4 it is gone (found by search: 0), so calling it is refused as not bound.",
        prompt: "Show me the tree once more.",
    },
];

fn script(outside: &str) -> serde_json::Value {
    json!({"turns": [
        {"rounds": [
            {"text": "Let me look for a tool that shows the project layout.",
             "tool_calls": [{"name": "search_tools", "args": {"query": "show the directory tree of a project"}}]},
            {"tool_calls": [{"name": "print_tree", "args": {"path": "."}},
                            {"name": "read_file", "args": {"path": "main.nf"}}]},
            {"text": "rnaseq-mini runs FastQC on the samples listed in samplesheet.csv; the module lives in modules/fastqc.",
             "usage": {"input_tokens": 1800, "cache_read_tokens": 2600, "cache_write_tokens": 0, "output_tokens": 60}}
        ]},
        {"rounds": [
            {"tool_calls": [{"name": "read_file", "args": {"path": outside}}]},
            {"tool_calls": [{"name": "request_capability",
                             "args": {"capability": "read_outside_fence", "path": outside, "reason": "compare it with nextflow.config"}}]},
            {"tool_calls": [{"name": "read_file", "args": {"path": outside}}]},
            {"text": "Read it; nothing there overrides the pipeline's settings.",
             "usage": {"input_tokens": 400, "cache_read_tokens": 4200, "cache_write_tokens": 300, "output_tokens": 40}}
        ]},
        {"rounds": [
            {"tool_calls": [{"name": "read_file", "args": {"path": "samplesheet.csv"}}]},
            {"tool_calls": [{"name": "write", "args": {"path": "samplesheet.csv",
                             "content": "sample,fastq_1\nWT_REP1,data/WT_REP1_R1.fastq.gz\nKO_REP1,data/KO_REP1_R1.fastq.gz\n"}}]},
            {"text": "KO_REP1's file is not gzipped; this is a review, so I only report it.",
             "usage": {"input_tokens": 300, "cache_read_tokens": 4700, "cache_write_tokens": 0, "output_tokens": 35}}
        ]},
        {"rounds": [
            {"tool_calls": [{"name": "print_tree", "args": {"path": "."}}]},
            {"text": "print_tree is no longer bound; I would search for it again.",
             "usage": {"input_tokens": 200, "cache_read_tokens": 4900, "cache_write_tokens": 0, "output_tokens": 20}}
        ]}
    ]})
}

pub async fn demo(keep: bool) -> Result<Outcome, CliError> {
    let root = tempfile::Builder::new()
        .prefix("codaris-demo-")
        .tempdir()
        .map_err(|source| CliError::Write {
            path: std::env::temp_dir(),
            source,
        })?;
    let result = walk(root.path()).await;
    if keep {
        let path = root.keep();
        output::line(&format!("\nKept everything in {}", path.display()))?;
    }
    result
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| CliError::Write {
            path: parent.to_path_buf(),
            source,
        })?;
    }
    std::fs::write(path, text).map_err(|source| CliError::Write {
        path: path.to_path_buf(),
        source,
    })
}

fn say(text: &str) -> Result<(), CliError> {
    output::line(&format!("\n▸ {text}"))
}

async fn walk(root: &Path) -> Result<Outcome, CliError> {
    let project = root.join("rnaseq-mini");
    for (name, text) in PROJECT {
        write(&project.join(name), text)?;
    }
    write(&root.join("skills/debugging/SKILL.md"), SKILL)?;
    let outside = root.join("shared/hostname.conf");
    write(&outside, "cluster = demo\n")?;
    let state = root.join("state");
    let config = root.join("config.toml");
    write(
        &config,
        &format!("skills_dirs = [\"{}\"]\n", root.join("skills").display()),
    )?;
    let script_path = root.join("script.json");
    let script = script(&outside.display().to_string());
    write(&script_path, &serde_json::to_string_pretty(&script)?)?;

    say(&format!(
        "Codaris demo. A sample pipeline is in {}; a daemon starts on the state directory {} with the scripted model, so nothing leaves this machine.",
        project.display(),
        state.display()
    ))?;
    let daemon = Daemon::start(&state, &config, &project).await?;
    let channel = daemon.channel.clone();
    let mut sessions = v1::sessions_client::SessionsClient::new(channel.clone());
    let session = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: project.display().to_string(),
            script: script_path.display().to_string(),
            ..Default::default()
        })
        .await?
        .into_inner();
    say(&format!(
        "Session {} works in {}. Allowed folders: the project and the session's own workspace.",
        session.id,
        project.display()
    ))?;
    // One walkthrough on standard output; the decision codes are what the demo teaches.
    let printer = Printer::new(false, Layout::all_on_stdout(true));
    for step in STEPS {
        say(step.explain)?;
        output::line(&format!("  you: {}", step.prompt))?;
        play_turn(
            &mut sessions,
            &session.id,
            step.prompt.to_owned(),
            Approve::Session,
            &mut super::question_view::Answers::default(),
            &printer,
        )
        .await?;
    }

    say("The ledger: every grant and every decision, with its whole input.")?;
    let mut ledger = v1::ledger_client::LedgerClient::new(channel);
    let grants = ledger
        .list_grants(v1::ListGrantsRequest::default())
        .await?
        .into_inner()
        .grants;
    for grant in &grants {
        let capability = grant.capability.clone().unwrap_or_default();
        output::line(&format!(
            "  grant {}: {} on {} for the session (from a card)",
            grant.id, capability.name, capability.path
        ))?;
    }
    let decisions = ledger
        .list_decisions(v1::ListDecisionsRequest {
            session_id: session.id.clone(),
            limit: 100,
        })
        .await?
        .into_inner()
        .decisions;
    output::line(&format!(
        "  {} dispatch decisions recorded",
        decisions.len()
    ))?;
    sessions
        .end_session(v1::EndSessionRequest { id: session.id })
        .await?;
    daemon.stop().await?;

    say(
        "Audit: the daemon is stopped; codaris audit replay decides every recorded call again with the policy linked into this binary.",
    )?;
    let ledger = codaris_ledger::Ledger::open(&state.join("ledger"))?;
    let report = codaris_ledger::audit(&ledger.evidence()?);
    output::line(&format!(
        "  replayed {} decisions with policy version {}: {} matched, {} differ",
        report.decisions,
        report.policy_version,
        report.matched,
        report.differences.len()
    ))?;
    say(
        "That was Codaris. `codaris run --help` drives your own sessions; README.md says the rest.",
    )?;
    Ok(if report.is_clean() {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

/// The demo's own daemon, stopped when the demo ends (or killed if it fails).
struct Daemon {
    child: Option<Child>,
    channel: tonic::transport::Channel,
    pid_file: PathBuf,
}

impl Daemon {
    async fn start(state: &Path, config: &Path, project: &Path) -> Result<Self, CliError> {
        let binary = client::daemon_binary()?;
        let mut child = Command::new(&binary)
            .arg("--state-dir")
            .arg(state)
            .arg("--config")
            .arg(config)
            // The session's own project is its fence by default; nothing else is opened.
            .env_remove("CODARIS_ALLOWED_DIRS")
            .env("CODARIS_PROVIDER", "scripted")
            .env("RUST_LOG", "warn")
            .current_dir(project)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| CliError::Spawn {
                binary: binary.clone(),
                source,
            })?;
        let socket = state.join("codaris.sock");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(channel) = client::connect(&socket).await {
                return Ok(Self {
                    child: Some(child),
                    channel,
                    pid_file: state.join("codarisd.pid"),
                });
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(CliError::DaemonFailed {
                    message: format!("the demo daemon exited with {status}"),
                });
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return Err(CliError::StartTimeout {
                    socket,
                    seconds: 10,
                });
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn stop(mut self) -> Result<(), CliError> {
        v1::daemon_client::DaemonClient::new(self.channel.clone())
            .shutdown(v1::ShutdownRequest {})
            .await?;
        if let Some(mut child) = self.child.take() {
            let _ = tokio::task::spawn_blocking(move || child.wait()).await;
        }
        while self.pid_file.exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
