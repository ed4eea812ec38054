use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use codaris_proto::v1;
use serde_json::json;

use super::Outcome;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

const STOP_TIMEOUT: Duration = Duration::from_secs(10);

pub async fn start(target: &Target, json: bool) -> Result<Outcome, CliError> {
    let (channel, started_by) = match client::connect(&target.socket()).await {
        Ok(channel) => (channel, None),
        Err(_) => {
            let (channel, by) = client::start_and_wait_with(
                target,
                crate::service::default_state_dir().as_deref(),
                &crate::service::SystemdUser,
            )
            .await?;
            (channel, Some(by))
        }
    };
    let started = started_by.is_some();
    let status = super::status::fetch(channel).await?;
    if json {
        let mut value = super::status::to_json(&status);
        value["started"] = json!(started);
        // Who started it: `cli` (this command spawned it), `systemd` (the user unit), or null.
        value["started_by"] = match &started_by {
            None => json!(null),
            Some(client::StartedBy::Cli) => json!("cli"),
            Some(client::StartedBy::Unit { .. }) => json!("systemd"),
        };
        output::json(&value)?;
    } else if let Some(client::StartedBy::Unit { unit }) = &started_by {
        output::line(&format!(
            "codarisd started by systemd (unit {}; pid {}, socket {})",
            unit.display(),
            status.pid,
            status.socket
        ))?;
    } else if started {
        output::line(&format!(
            "codarisd started (pid {}, socket {})",
            status.pid, status.socket
        ))?;
    } else {
        output::line(&format!(
            "codarisd is already running (pid {}, socket {})",
            status.pid, status.socket
        ))?;
    }
    Ok(Outcome::Success)
}

pub async fn stop(target: &Target, json: bool) -> Result<Outcome, CliError> {
    let socket = target.socket();
    let Ok(channel) = client::connect(&socket).await else {
        if json {
            output::json(&json!({"stopped": false, "running": false}))?;
        } else {
            output::line(&format!(
                "codarisd is not running (state dir {})",
                target.layout.dir().display()
            ))?;
        }
        return Ok(Outcome::Success);
    };
    let status = super::status::fetch(channel.clone()).await?;
    let mut daemon = v1::daemon_client::DaemonClient::new(channel);
    daemon.shutdown(v1::ShutdownRequest {}).await?;
    // The daemon removes its pid file last, after the ledger is flushed: that is "stopped".
    let deadline = Instant::now() + STOP_TIMEOUT;
    while target.layout.pid_file().exists() {
        if Instant::now() > deadline {
            return Err(CliError::StopTimeout {
                pid: status.pid,
                seconds: STOP_TIMEOUT.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if json {
        output::json(&json!({"stopped": true, "pid": status.pid}))?;
    } else {
        output::line(&format!("codarisd stopped (pid {})", status.pid))?;
    }
    Ok(Outcome::Success)
}

pub async fn status(target: &Target, json: bool) -> Result<Outcome, CliError> {
    match client::connect(&target.socket()).await {
        Ok(channel) => {
            let status = super::status::fetch(channel).await?;
            super::status::print(&status, json)?;
            Ok(Outcome::Success)
        }
        Err(_) => {
            if json {
                output::json(&json!({
                    "running": false,
                    "state_dir": target.layout.dir().display().to_string(),
                    "socket": target.socket().display().to_string(),
                }))?;
            } else {
                output::line(&format!(
                    "codarisd is not running (socket {})",
                    target.socket().display()
                ))?;
            }
            Ok(Outcome::NotRunning)
        }
    }
}

/// Prints the end of `<state>/codarisd.log`, a link to the day's file (see
/// `codaris_daemon::server::logging`); `--follow` goes on to the next day's file when the log rotates.
pub async fn logs(target: &Target, lines: usize, follow: bool) -> Result<Outcome, CliError> {
    let path = target.layout.log();
    let read_err = |source| CliError::Read {
        path: path.clone(),
        source,
    };
    let mut file = std::fs::File::open(&path).map_err(read_err)?;
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(read_err)?;
    let all: Vec<&str> = text.lines().collect();
    let tail = &all[all.len().saturating_sub(lines)..];
    if !tail.is_empty() {
        output::line(&tail.join("\n"))?;
    }
    if !follow {
        return Ok(Outcome::Success);
    }
    let mut offset = file.seek(SeekFrom::End(0)).map_err(read_err)?;
    let mut pending = String::new();
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(Outcome::Success),
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
        // What is left of the file being read, then, if the link moved on, the new file.
        file.seek(SeekFrom::Start(offset)).map_err(read_err)?;
        let mut chunk = String::new();
        offset += u64::try_from(file.read_to_string(&mut chunk).map_err(read_err)?).unwrap_or(0);
        pending.push_str(&chunk);
        if let Some(end) = pending.rfind('\n') {
            output::line(&pending[..end])?;
            pending.drain(..=end);
        }
        let current = std::fs::metadata(&path).map_err(read_err)?;
        let reading = file.metadata().map_err(read_err)?;
        if current.ino() != reading.ino() || current.dev() != reading.dev() {
            // Rotated (or replaced): the new file from its beginning.
            file = std::fs::File::open(&path).map_err(read_err)?;
            offset = 0;
        } else if current.len() < offset {
            // Truncated: start again from its beginning.
            offset = 0;
        }
    }
}
