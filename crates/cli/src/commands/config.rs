//! `codaris config`: the daemon's configuration as it is in force (`show`, each value with
//! where it came from, secrets redacted), a file checked offline (`check`: every problem with
//! its line by `codaris-config`, the key list the daemon's tests hold to its own types, then
//! `codarisd check-config` when that binary is at hand; no daemon needs to run), and the
//! file's path (`path`).

use std::path::PathBuf;

use codaris_proto::v1;
use serde_json::{Value, json};

use super::Outcome;
use crate::cli::ConfigCommand;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

pub async fn run(
    target: &Target,
    autostart: bool,
    json_out: bool,
    command: ConfigCommand,
) -> Result<Outcome, CliError> {
    match command {
        ConfigCommand::Show => show(target, autostart, json_out).await,
        ConfigCommand::Check { file } => check(file, json_out),
        ConfigCommand::Path => path(target, json_out).await,
        ConfigCommand::Get { path } => {
            edit(target, autostart, json_out, Action::Get, path, Vec::new()).await
        }
        ConfigCommand::Set { commands } => {
            let commands = commands.iter().map(|c| as_command(c)).collect();
            edit(target, autostart, json_out, Action::Set, None, commands).await
        }
        ConfigCommand::Changes => {
            edit(
                target,
                autostart,
                json_out,
                Action::Changes,
                None,
                Vec::new(),
            )
            .await
        }
        ConfigCommand::Revert { path } => {
            edit(
                target,
                autostart,
                json_out,
                Action::Revert,
                path,
                Vec::new(),
            )
            .await
        }
        ConfigCommand::Commit => {
            edit(
                target,
                autostart,
                json_out,
                Action::Commit,
                None,
                Vec::new(),
            )
            .await
        }
        ConfigCommand::Rollback => {
            edit(
                target,
                autostart,
                json_out,
                Action::Rollback,
                None,
                Vec::new(),
            )
            .await
        }
        ConfigCommand::Reload => {
            edit(
                target,
                autostart,
                json_out,
                Action::Reload,
                None,
                Vec::new(),
            )
            .await
        }
    }
}

use v1::edit_config_request::Action;

/// `PATH=VALUE` as `set PATH=VALUE`; a whole command as it is.
fn as_command(given: &str) -> String {
    let given = given.trim();
    let is_command = ["set ", "add_list ", "del_list ", "delete "]
        .iter()
        .any(|word| given.starts_with(word));
    if is_command {
        given.to_owned()
    } else {
        format!("set {given}")
    }
}

/// One edit through the daemon, which owns the file, the ledger and the reload; its answer
/// printed (`--json`: `{"action", "text"}`).
async fn edit(
    target: &Target,
    autostart: bool,
    json_out: bool,
    action: Action,
    path: Option<String>,
    commands: Vec<String>,
) -> Result<Outcome, CliError> {
    let channel = client::open(target, autostart).await?;
    let answer = v1::daemon_client::DaemonClient::new(channel)
        .edit_config(v1::EditConfigRequest {
            action: action as i32,
            path: path.unwrap_or_default(),
            commands,
        })
        .await?
        .into_inner();
    if json_out {
        let name = action
            .as_str_name()
            .trim_start_matches("ACTION_")
            .to_lowercase();
        output::json(&json!({"action": name, "text": answer.text}))?;
    } else {
        output::line(answer.text.trim_end())?;
    }
    Ok(Outcome::Success)
}

async fn show(target: &Target, autostart: bool, json_out: bool) -> Result<Outcome, CliError> {
    let channel = client::open(target, autostart).await?;
    let config = v1::daemon_client::DaemonClient::new(channel)
        .get_config(v1::GetConfigRequest {})
        .await?
        .into_inner();
    if json_out {
        output::json(&json!({
            "file": config.file,
            "entries": config.entries.iter().map(|entry| json!({
                "key": entry.key,
                "value": serde_json::from_str::<Value>(&entry.value).unwrap_or(Value::Null),
                "source": entry.source,
                "line": (entry.line > 0).then_some(entry.line),
            })).collect::<Vec<_>>(),
        }))?;
        return Ok(Outcome::Success);
    }
    let width = config
        .entries
        .iter()
        .map(|entry| entry.key.len())
        .max()
        .unwrap_or(0);
    let mut lines = vec![format!("# {}", config.file)];
    // A value from the file says its line: `file:12`.
    lines.extend(config.entries.iter().map(|entry| {
        let source = match entry.line {
            0 => entry.source.clone(),
            line => format!("{}:{line}", entry.source),
        };
        format!("{:width$}  {:<11}  {}", entry.key, source, entry.value)
    }));
    output::line(&lines.join("\n"))?;
    Ok(Outcome::Success)
}

/// Judges the file offline: every problem [`codaris_config::check`] finds, one line each with
/// its line number; with none, `codarisd check-config` when the binary is at hand, for what
/// only the daemon's libraries judge (what an MCP server's settings add up to). Without it the
/// keys and values are still checked, and the answer says what was not.
fn check(file: Option<PathBuf>, json_out: bool) -> Result<Outcome, CliError> {
    let path = match file {
        Some(file) if file.is_absolute() => file,
        Some(file) => std::env::current_dir()
            .map_err(|source| CliError::Read {
                path: file.clone(),
                source,
            })?
            .join(file),
        None => {
            let lookup = |name: &str| std::env::var_os(name);
            codaris_paths::resolve_config_file(&lookup)?.0
        }
    };
    let problems = match std::fs::read_to_string(&path) {
        Ok(text) => codaris_config::check(&text),
        Err(err) => vec![codaris_config::Problem {
            line: 0,
            key: None,
            message: format!("cannot read: {}", io_reason(&err)),
        }],
    };
    let at = |line: usize| match line {
        0 => path.display().to_string(),
        line => format!("{}:{line}", path.display()),
    };
    let lines: Vec<String> = problems
        .iter()
        .map(|p| format!("{}: {}", at(p.line), p.message))
        .collect();
    if !problems.is_empty() {
        if json_out {
            output::json(&json!({
                "ok": false,
                "file": path,
                "message": lines.first(),
                "problems": problems.iter().map(|p| json!({
                    "line": (p.line > 0).then_some(p.line),
                    "key": p.key,
                    "message": p.message,
                })).collect::<Vec<_>>(),
                "checked_by": "codaris",
            }))?;
        } else {
            for line in &lines {
                output::error_line(line);
            }
        }
        return Ok(Outcome::Failed);
    }
    let (ok, line, checked_by) = match client::daemon_binary() {
        Ok(program) => {
            let ran = std::process::Command::new(&program)
                .arg("check-config")
                .arg(&path)
                .output()
                .map_err(|source| CliError::Spawn {
                    binary: program.clone(),
                    source,
                })?;
            let last = |bytes: &[u8]| {
                String::from_utf8_lossy(bytes)
                    .lines()
                    .last()
                    .unwrap_or_default()
                    .trim()
                    .to_owned()
            };
            let ok = ran.status.success();
            let line = if ok {
                last(&ran.stdout)
            } else {
                last(&ran.stderr)
            };
            (ok, line, "codarisd")
        }
        // The file's keys and values are right; what they add up to needs the daemon.
        Err(CliError::DaemonBinaryMissing { .. }) => (
            true,
            format!(
                "ok: {} (keys and values; codarisd is not at hand to judge what they add up to)",
                path.display()
            ),
            "codaris",
        ),
        Err(err) => return Err(err),
    };
    if json_out {
        output::json(&json!({
            "ok": ok,
            "file": path,
            "message": line,
            "problems": [],
            "checked_by": checked_by,
        }))?;
    } else if ok {
        output::line(&line)?;
    } else {
        output::error_line(&line);
    }
    Ok(if ok {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

/// An I/O error's reason without Rust's `(os error N)`.
fn io_reason(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        std::io::ErrorKind::IsADirectory => "it is a directory".to_owned(),
        _ => err.to_string(),
    }
}

/// The file a running daemon reads; with none running, the file one started now would read.
async fn path(target: &Target, json_out: bool) -> Result<Outcome, CliError> {
    let (file, from, explicit) = match client::open(target, false).await {
        Ok(channel) => {
            let config = v1::daemon_client::DaemonClient::new(channel)
                .get_config(v1::GetConfigRequest {})
                .await?
                .into_inner();
            (PathBuf::from(config.file), "daemon", false)
        }
        Err(CliError::NotRunning { .. }) => {
            let lookup = |name: &str| std::env::var_os(name);
            let (file, explicit) = codaris_paths::resolve_config_file(&lookup).map_err(|err| {
                CliError::InvalidFlag {
                    flag: "environment",
                    reason: err.to_string(),
                }
            })?;
            (file, "environment", explicit)
        }
        Err(err) => return Err(err),
    };
    let exists = file.is_file();
    if json_out {
        output::json(&json!({"file": file, "exists": exists, "from": from}))?;
    } else {
        let state = match (exists, explicit) {
            (true, _) => "exists",
            // CODARIS_CONFIG names a file that must exist.
            (false, true) => {
                "does not exist: CODARIS_CONFIG names it, so a daemon would refuse to start"
            }
            (false, false) => "does not exist: defaults apply",
        };
        let note = if from == "daemon" {
            ""
        } else {
            "; no daemon runs, this is the file one started now would read"
        };
        output::line(&format!("{} ({state}{note})", file.display()))?;
    }
    Ok(Outcome::Success)
}
