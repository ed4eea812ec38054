//! `codaris config`: the daemon's configuration as it is in force (`show`, each value with
//! where it came from, secrets redacted), a file checked offline (`check`, by `codarisd
//! check-config`, so the daemon's own parser judges it and no daemon needs to run), and the
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
    }
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
    lines.extend(config.entries.iter().map(|entry| {
        format!(
            "{:width$}  {:<11}  {}",
            entry.key, entry.source, entry.value
        )
    }));
    output::line(&lines.join("\n"))?;
    Ok(Outcome::Success)
}

/// Runs `codarisd check-config FILE` and relays its one line.
fn check(file: Option<PathBuf>, json_out: bool) -> Result<Outcome, CliError> {
    let program = client::daemon_binary()?;
    let mut command = std::process::Command::new(&program);
    command.arg("check-config");
    if let Some(file) = &file {
        let absolute = if file.is_absolute() {
            file.clone()
        } else {
            std::env::current_dir()
                .map_err(|source| CliError::Read {
                    path: file.clone(),
                    source,
                })?
                .join(file)
        };
        command.arg(absolute);
    }
    let ran = command.output().map_err(|source| CliError::Spawn {
        binary: program.clone(),
        source,
    })?;
    let text = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .lines()
            .last()
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    let ok = ran.status.success();
    let line = if ok {
        text(&ran.stdout)
    } else {
        text(&ran.stderr)
    };
    if json_out {
        output::json(&json!({"ok": ok, "message": line}))?;
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
