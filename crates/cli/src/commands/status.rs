use codaris_proto::v1;
use serde_json::json;

use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

pub async fn fetch(channel: tonic::transport::Channel) -> Result<v1::StatusResponse, CliError> {
    let mut daemon = v1::daemon_client::DaemonClient::new(channel);
    Ok(daemon.status(v1::StatusRequest {}).await?.into_inner())
}

pub async fn show(target: &Target, autostart: bool, json: bool) -> Result<(), CliError> {
    let channel = client::open(target, autostart).await?;
    let status = fetch(channel.clone()).await?;
    // A daemon without the scheduler's service (an older one) answers the rest all the same.
    let scheduler = v1::scheduler_client::SchedulerClient::new(channel)
        .status(v1::SchedulerStatusRequest {})
        .await
        .ok()
        .map(tonic::Response::into_inner);
    if json {
        let mut value = to_json(&status);
        value["scheduler"] = scheduler_json(scheduler.as_ref());
        return output::json(&value);
    }
    print(&status, false)?;
    output::line(&scheduler_line(scheduler.as_ref()))
}

/// `scheduler` in `status --json`: whether it is on, how many jobs are scheduled, when next.
pub fn scheduler_json(scheduler: Option<&v1::SchedulerStatusReply>) -> serde_json::Value {
    match scheduler {
        Some(s) => json!({
            "enabled": s.enabled,
            "scheduled": s.scheduled,
            "next_run": (!s.next_run.is_empty()).then(|| s.next_run.clone()),
            "clock": s.clock,
        }),
        None => serde_json::Value::Null,
    }
}

fn scheduler_line(scheduler: Option<&v1::SchedulerStatusReply>) -> String {
    match scheduler {
        Some(s) if s.enabled => format!(
            "  scheduler  on: {} jobs scheduled{}",
            s.scheduled,
            if s.next_run.is_empty() {
                String::new()
            } else {
                format!(", next at {}", s.next_run)
            }
        ),
        Some(_) => "  scheduler  off (`[scheduler] enabled = true` turns it on)".to_owned(),
        None => "  scheduler  unknown (the daemon does not say)".to_owned(),
    }
}

/// The `status --json` object: a contract, extended by adding fields only.
pub fn to_json(status: &v1::StatusResponse) -> serde_json::Value {
    let started_at_ms = status
        .started_at
        .as_ref()
        .map(|t| t.seconds * 1000 + i64::from(t.nanos / 1_000_000));
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    json!({
        "running": true,
        "version": status.version,
        "api_version": status.api_version,
        "pid": status.pid,
        "started_at_ms": started_at_ms,
        "uptime_ms": status.uptime_ms,
        "state_dir": status.state_dir,
        "socket": status.socket,
        "tcp_listen": non_empty(&status.tcp_listen),
        "config_file": non_empty(&status.config_file),
        "sessions": {"active": status.sessions_active, "total": status.sessions_total},
        "tools_indexed": status.tools_indexed,
        "sandbox": status.sandbox,
        "limits": status.limits.as_ref().map(|limits| json!({
            "pids_max": limits.pids_max,
            "pids_mechanism": limits.pids_mechanism,
            "memory_max_bytes": limits.memory_max_bytes,
            "memory_mechanism": limits.memory_mechanism,
            "reasons": limits.reasons,
        })),
        "warnings": status.warnings,
        "allowed_dirs": status.allowed_dirs,
        "provider": non_empty(&status.provider),
        "model": non_empty(&status.model),
        "http_allowlist": status.http_allowlist,
        "command_allowlist": status.command_allowlist,
        "memory_enabled": status.memory_enabled,
        "programs": status.programs.iter().map(|p| json!({
            "name": p.name,
            "path": non_empty(&p.path),
            "version": non_empty(&p.version),
            "note": non_empty(&p.note),
        })).collect::<Vec<_>>(),
    })
}

/// The list joined, or `none` when it is empty.
fn list_or(list: &[String], none: &str) -> String {
    if list.is_empty() {
        none.to_owned()
    } else {
        list.iter()
            .map(|entry| format!("`{entry}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

pub fn print(status: &v1::StatusResponse, json: bool) -> Result<(), CliError> {
    if json {
        return output::json(&to_json(status));
    }
    let or = |s: &str, default: &str| {
        if s.is_empty() {
            default.to_owned()
        } else {
            s.to_owned()
        }
    };
    let mut lines = vec![
        format!(
            "codarisd {} (API v{}) is running",
            status.version, status.api_version
        ),
        format!("  pid        {}", status.pid),
        format!("  uptime     {}", output::duration(status.uptime_ms)),
        format!("  state dir  {}", status.state_dir),
        format!("  socket     {}", status.socket),
        format!("  tcp        {}", or(&status.tcp_listen, "off")),
        format!(
            "  config     {}",
            or(&status.config_file, "none (defaults)")
        ),
        format!(
            "  sessions   {} active, {} in all",
            status.sessions_active, status.sessions_total
        ),
        format!("  tools      {} indexed", status.tools_indexed),
        format!(
            "  provider   {}",
            or(
                &status.provider,
                "none set up (`codaris login`, or --script for the scripted model)"
            )
        ),
        format!("  model      {}", or(&status.model, "none")),
        format!(
            "  folders    each session's project and workspace{}",
            if status.allowed_dirs.is_empty() {
                String::new()
            } else {
                format!(", {}", status.allowed_dirs.join(", "))
            }
        ),
        format!(
            "  http ok    {}",
            list_or(&status.http_allowlist, "none (each request asks)")
        ),
        format!(
            "  cmds ok    {}",
            list_or(&status.command_allowlist, "none (each command asks)")
        ),
        format!("  commands   {}", or(&status.sandbox, "unknown")),
        format!(
            "  memory     {}",
            if status.memory_enabled {
                "on (a memory subagent at each turn; `codaris memory list`)"
            } else {
                "off (`[memory] enabled`)"
            }
        ),
    ];
    if let Some(limits) = &status.limits {
        lines.push(format!("  limits     {}", limits.summary));
    }
    if status.programs.is_empty() {
        lines.push(
            "  program    (asking nf-core, nextflow and git for their versions; ask again)"
                .to_owned(),
        );
    }
    lines.extend(status.programs.iter().map(|p| {
        let found = match (p.path.is_empty(), p.version.is_empty()) {
            (true, _) => "not found".to_owned(),
            (false, false) => format!("{} ({})", p.version, p.path),
            (false, true) => format!("version unknown ({})", p.path),
        };
        let note = if p.note.is_empty() {
            String::new()
        } else {
            format!(": {}", p.note)
        };
        format!("  program    {} {found}{note}", p.name)
    }));
    lines.extend(status.warnings.iter().map(|w| format!("  warning    {w}")));
    output::line(&lines.join("\n"))
}
