//! `codaris mcp`: the daemon's MCP servers through `codaris.v1.Mcp` — add, list, remove,
//! restart, switch and approve them, and list their tools.
//!
//! `--json` prints one JSON value (an array for `list` and `tools`, an object otherwise); its
//! fields are only ever added to. Environment and header values never come back from the
//! daemon, only their names.

use std::path::{Path, PathBuf};

use codaris_proto::v1;
use codaris_proto::v1::mcp_client::McpClient;
use serde_json::{Value, json};
use tonic::transport::Channel;

use super::Outcome;
use crate::cli::{McpAddArgs, McpCommand};
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

pub async fn run(
    target: &Target,
    autostart: bool,
    json: bool,
    command: McpCommand,
) -> Result<Outcome, CliError> {
    let command = match command {
        McpCommand::Add(args) => return add(target, autostart, json, *args).await,
        other => other,
    };
    let mut mcp = McpClient::new(client::open(target, autostart).await?);
    match command {
        McpCommand::Add(_) => {}
        McpCommand::List => {
            let servers = mcp
                .list_servers(v1::ListServersRequest {})
                .await?
                .into_inner()
                .servers;
            if json {
                output::json(&Value::Array(servers.iter().map(server_json).collect()))?;
            } else {
                output::line(&servers_table(&servers))?;
            }
        }
        McpCommand::Tools { name } => {
            let tools = mcp
                .list_server_tools(v1::ListServerToolsRequest { name: name.clone() })
                .await?
                .into_inner()
                .tools;
            if json {
                output::json(&Value::Array(tools.iter().map(tool_json).collect()))?;
            } else {
                output::line(&tools_text(&name, &tools))?;
            }
        }
        McpCommand::Remove { name } => {
            mcp.remove_server(v1::RemoveServerRequest { name: name.clone() })
                .await?;
            done(
                json,
                &name,
                "removed",
                &format!("removed the MCP server `{name}`"),
            )?;
        }
        McpCommand::Restart { name } => {
            let server = mcp
                .restart_server(v1::RestartServerRequest { name })
                .await?
                .into_inner();
            changed(json, &server, "is starting again")?;
        }
        McpCommand::Enable { name } => switch(&mut mcp, json, name, true).await?,
        McpCommand::Disable { name } => switch(&mut mcp, json, name, false).await?,
        McpCommand::Approve { name } => {
            let approved = mcp
                .approve_server(v1::ApproveServerRequest { name: name.clone() })
                .await?
                .into_inner()
                .approved;
            if json {
                output::json(&json!({"name": name, "approved": approved}))?;
            } else {
                output::line(&format!(
                    "approved {approved} tool definition{} of the MCP server `{name}`",
                    if approved == 1 { "" } else { "s" }
                ))?;
            }
        }
    }
    Ok(Outcome::Success)
}

async fn add(
    target: &Target,
    autostart: bool,
    json: bool,
    args: McpAddArgs,
) -> Result<Outcome, CliError> {
    // Checked before the daemon is reached (and perhaps started) for nothing.
    let request = add_request(args, &current_dir()?)?;
    let mut mcp = McpClient::new(client::open(target, autostart).await?);
    let server = mcp.add_server(request).await?.into_inner();
    if json {
        output::json(&server_json(&server))?;
    } else {
        output::line(&format!(
            "added the MCP server `{}` ({}); it starts in the background: `codaris mcp list` shows when it is ready",
            server.name,
            launch(&server)
        ))?;
    }
    Ok(Outcome::Success)
}

async fn switch(
    mcp: &mut McpClient<Channel>,
    json: bool,
    name: String,
    enabled: bool,
) -> Result<(), CliError> {
    let server = mcp
        .set_server_enabled(v1::SetServerEnabledRequest { name, enabled })
        .await?
        .into_inner();
    changed(
        json,
        &server,
        if enabled {
            "is switched on and starting"
        } else {
            "is switched off"
        },
    )
}

fn changed(json: bool, server: &v1::McpServerInfo, what: &str) -> Result<(), CliError> {
    if json {
        output::json(&server_json(server))
    } else {
        output::line(&format!("the MCP server `{}` {what}", server.name))
    }
}

fn done(json: bool, name: &str, key: &str, text: &str) -> Result<(), CliError> {
    if json {
        output::json(&json!({"name": name, key: true}))
    } else {
        output::line(text)
    }
}

/// A timeout flag as the request carries it, where 0 means the default: so 0 itself is refused
/// here; the daemon checks the rest (at most a day).
fn seconds(flag: &'static str, value: Option<f64>) -> Result<f64, CliError> {
    match value {
        None => Ok(0.0),
        Some(seconds) if seconds > 0.0 => Ok(seconds),
        Some(seconds) => Err(CliError::InvalidFlag {
            flag,
            reason: format!("{seconds} is not a number of seconds above 0"),
        }),
    }
}

fn current_dir() -> Result<PathBuf, CliError> {
    std::env::current_dir().map_err(|source| CliError::Read {
        path: PathBuf::from("."),
        source,
    })
}

/// The `AddServer` request of `codaris mcp add`: a relative `--cwd` (and, without one, a
/// relative program path such as `./server`) taken from `here`, the CLI's directory.
pub fn add_request(args: McpAddArgs, here: &Path) -> Result<v1::AddServerRequest, CliError> {
    let mut request = v1::AddServerRequest {
        name: args.name,
        keywords: args.keywords,
        trust: args.trust,
        approval: args.approval.unwrap_or_default(),
        startup_timeout_seconds: seconds("--startup-timeout", args.startup_timeout)?,
        tool_timeout_seconds: seconds("--tool-timeout", args.tool_timeout)?,
        share_roots: args.share_roots,
        ..v1::AddServerRequest::default()
    };
    if let Some(url) = args.url {
        request.url = url;
        for header in &args.headers {
            let (name, value) = parse_header(header)?;
            request.headers.insert(name, value);
        }
        return Ok(request);
    }
    if !args.headers.is_empty() {
        return Err(CliError::InvalidFlag {
            flag: "--header",
            reason: "headers are for a --url server".to_owned(),
        });
    }
    for entry in &args.env {
        parse_env(entry)?;
    }
    let mut command = args.command.into_iter();
    let Some(program) = command.next() else {
        return Err(CliError::InvalidFlag {
            flag: "COMMAND",
            reason: "give the server's program after `--`, or --url".to_owned(),
        });
    };
    let absolute = |path: PathBuf| -> Result<String, CliError> {
        let path = if path.is_absolute() {
            path
        } else {
            here.join(path)
        };
        path.into_os_string()
            .into_string()
            .map_err(|_| CliError::InvalidFlag {
                flag: "--cwd",
                reason: "the directory's path is not UTF-8".to_owned(),
            })
    };
    request.command = if args.cwd.is_none() && program.contains('/') {
        absolute(PathBuf::from(program))?
    } else {
        program
    };
    request.args = command.collect();
    request.env = args.env;
    if let Some(cwd) = args.cwd {
        request.cwd = absolute(cwd)?;
    }
    Ok(request)
}

/// Checks `KEY=VALUE`, with a non-empty key. A refused entry is not echoed: its value may be a
/// secret.
pub fn parse_env(entry: &str) -> Result<(), CliError> {
    let reason = match entry.split_once('=') {
        Some((key, _)) if !key.is_empty() => return Ok(()),
        Some(_) => "an entry has no variable name before `=`; give KEY=VALUE",
        None => "an entry has no `=`; give KEY=VALUE",
    };
    Err(CliError::InvalidFlag {
        flag: "--env",
        reason: reason.to_owned(),
    })
}

/// `NAME: VALUE` (the space is optional), with a non-empty name, as its name and value. A
/// refused header is not echoed: its value may be a secret.
pub fn parse_header(header: &str) -> Result<(String, String), CliError> {
    let reason = match header.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => {
            return Ok((name.trim().to_owned(), value.trim().to_owned()));
        }
        Some(_) => "a header has no name before `:`; give 'NAME: VALUE'",
        None => "a header has no `:`; give 'NAME: VALUE'",
    };
    Err(CliError::InvalidFlag {
        flag: "--header",
        reason: reason.to_owned(),
    })
}

/// `stdio: COMMAND ARGS…` or `http: URL`.
fn launch(server: &v1::McpServerInfo) -> String {
    if server.transport == "http" {
        return format!("http: {}", server.url);
    }
    let mut line = format!("stdio: {}", server.command);
    for arg in &server.args {
        line.push(' ');
        line.push_str(arg);
    }
    line
}

fn non_empty(s: &str) -> Value {
    if s.is_empty() {
        Value::Null
    } else {
        Value::String(s.to_owned())
    }
}

/// One server of `codaris mcp list --json`.
pub fn server_json(server: &v1::McpServerInfo) -> Value {
    let stdio = server.transport == "stdio";
    let when = |yes: bool, value: Value| if yes { value } else { Value::Null };
    json!({
        "name": server.name,
        "transport": server.transport,
        "state": server.state,
        "tools": server.tools,
        "held": server.held,
        "error": non_empty(&server.error),
        "origin": server.origin,
        "enabled": server.enabled,
        "trust": server.trust,
        "approval": server.approval,
        "keywords": server.keywords,
        "protocol": non_empty(&server.protocol),
        "server_info": non_empty(&server.server_info),
        "restarts": server.restarts,
        "share_roots": server.share_roots,
        "list_changed": server.list_changed,
        "listings": server.listings,
        "command": when(stdio, json!(server.command)),
        "args": when(stdio, json!(server.args)),
        "env_names": when(stdio, json!(server.env_names)),
        "cwd": when(stdio, non_empty(&server.cwd)),
        "url": when(!stdio, json!(server.url)),
        "header_names": when(!stdio, json!(server.header_names)),
    })
}

/// One tool of `codaris mcp tools NAME --json`; its schema as JSON, not as text.
pub fn tool_json(tool: &v1::McpToolInfo) -> Value {
    let schema = serde_json::from_str::<Value>(&tool.input_schema)
        .unwrap_or_else(|_| Value::String(tool.input_schema.clone()));
    json!({
        "name": tool.name,
        "description": tool.description,
        "enabled": tool.enabled,
        "held": non_empty(&tool.held),
        "read_only": tool.read_only,
        "input_schema": schema,
    })
}

/// A header, then one line per server: name, state, transport, tools, held, error.
fn servers_table(servers: &[v1::McpServerInfo]) -> String {
    if servers.is_empty() {
        return "no MCP servers: add one with `codaris mcp add NAME -- COMMAND [ARGS...]` or \
                `codaris mcp add NAME --url URL`, or under [mcp.servers.NAME] in the configuration"
            .to_owned();
    }
    let header = ["NAME", "STATE", "TRANSPORT", "TOOLS", "HELD", "ERROR"].map(str::to_owned);
    let rows: Vec<[String; 6]> = servers
        .iter()
        .map(|s| {
            [
                s.name.clone(),
                s.state.clone(),
                s.transport.clone(),
                s.tools.to_string(),
                s.held.to_string(),
                if s.error.is_empty() {
                    "-".to_owned()
                } else {
                    s.error.replace('\n', " ")
                },
            ]
        })
        .collect();
    table(&header, &rows)
}

fn table(header: &[String; 6], rows: &[[String; 6]]) -> String {
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    std::iter::once(header)
        .chain(rows)
        .map(|row| {
            let mut line = String::new();
            for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
                if i + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<width$}  "));
                }
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One line per tool: its name, `off`, `read-only` and why it is held back, and its description.
fn tools_text(server: &str, tools: &[v1::McpToolInfo]) -> String {
    if tools.is_empty() {
        return format!(
            "the MCP server `{server}` lists no tools (yet: `codaris mcp list` shows its state)"
        );
    }
    tools
        .iter()
        .map(|tool| {
            let mut marks = Vec::new();
            if !tool.enabled {
                marks.push("off".to_owned());
            }
            if tool.read_only {
                marks.push("read-only".to_owned());
            }
            if !tool.held.is_empty() {
                marks.push(format!("held: {}", tool.held));
            }
            let marks = if marks.is_empty() {
                String::new()
            } else {
                format!(" [{}]", marks.join(", "))
            };
            let description = tool.description.lines().next().unwrap_or_default();
            format!("{}{marks} — {description}", tool.name)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse(args: &[&str]) -> Result<McpCommand, clap::Error> {
        let cli = Cli::try_parse_from(std::iter::once("codaris").chain(args.iter().copied()))?;
        match cli.command {
            Some(Command::Mcp(command)) => Ok(command),
            other => panic!("not an mcp command: {other:?}"),
        }
    }

    fn add(args: &[&str]) -> Result<v1::AddServerRequest, String> {
        match parse(args).map_err(|err| err.to_string())? {
            McpCommand::Add(args) => {
                add_request(*args, Path::new("/home/me/project")).map_err(|err| err.to_string())
            }
            other => panic!("not add: {other:?}"),
        }
    }

    #[test]
    fn a_stdio_server_takes_everything_after_the_double_dash() -> Result<(), String> {
        let request = add(&[
            "mcp",
            "add",
            "fs",
            "--env",
            "TOKEN=a=b",
            "--keyword",
            "files",
            "--trust",
            "--cwd",
            "sub",
            "--",
            "server",
            "--root",
            "/",
            "-v",
        ])?;
        assert_eq!(request.name, "fs");
        assert_eq!(request.command, "server");
        assert_eq!(request.args, ["--root", "/", "-v"]);
        assert_eq!(request.env, ["TOKEN=a=b"]);
        assert_eq!(request.keywords, ["files"]);
        assert!(request.trust);
        assert_eq!(request.cwd, "/home/me/project/sub");
        assert!(request.url.is_empty());
        Ok(())
    }

    #[test]
    fn approval_timeouts_and_roots_reach_the_request() -> Result<(), String> {
        let request = add(&[
            "mcp",
            "add",
            "fs",
            "--approval",
            "ask",
            "--startup-timeout",
            "5",
            "--tool-timeout",
            "0.5",
            "--share-roots",
            "--",
            "server",
        ])?;
        assert_eq!(request.approval, "ask");
        assert_eq!(request.startup_timeout_seconds, 5.0);
        assert_eq!(request.tool_timeout_seconds, 0.5);
        assert!(request.share_roots);
        let defaults = add(&["mcp", "add", "fs", "--", "server"])?;
        assert_eq!(
            (defaults.approval.as_str(), defaults.tool_timeout_seconds),
            ("", 0.0)
        );
        let zero = add(&["mcp", "add", "fs", "--tool-timeout", "0", "--", "server"]);
        assert!(zero.is_err_and(|e| e.contains("--tool-timeout")));
        let bad = add(&[
            "mcp",
            "add",
            "fs",
            "--approval",
            "sometimes",
            "--",
            "server",
        ]);
        assert!(bad.is_err_and(|e| e.contains("sometimes")));
        Ok(())
    }

    #[test]
    fn a_relative_program_path_is_taken_from_the_current_directory() -> Result<(), String> {
        let request = add(&["mcp", "add", "x", "--", "./bin/server"])?;
        assert_eq!(request.command, "/home/me/project/./bin/server");
        let request = add(&["mcp", "add", "x", "--cwd", "/srv", "--", "./server"])?;
        assert_eq!(
            request.command, "./server",
            "the daemon reads it against --cwd"
        );
        assert_eq!(request.cwd, "/srv");
        Ok(())
    }

    #[test]
    fn an_http_server_takes_its_headers() -> Result<(), String> {
        let request = add(&[
            "mcp",
            "add",
            "docs",
            "--url",
            "http://127.0.0.1:3001/mcp",
            "--header",
            "Authorization: Bearer x:y",
            "--header",
            "X-Empty:",
        ])?;
        assert_eq!(request.url, "http://127.0.0.1:3001/mcp");
        assert_eq!(
            request.headers.get("Authorization").map(String::as_str),
            Some("Bearer x:y")
        );
        assert_eq!(request.headers.get("X-Empty").map(String::as_str), Some(""));
        assert!(request.command.is_empty());
        Ok(())
    }

    #[test]
    fn malformed_env_and_headers_are_refused_without_echoing_them() {
        let url = ["mcp", "add", "a", "--url", "http://h", "--header"];
        for (args, flag) in [
            (
                vec!["mcp", "add", "a", "--env", "SECRETVALUE", "--", "x"],
                "--env",
            ),
            (
                vec!["mcp", "add", "a", "--env", "=SECRETVALUE", "--", "x"],
                "--env",
            ),
            ([&url[..], &["SECRETVALUE"]].concat(), "--header"),
            ([&url[..], &[": SECRETVALUE"]].concat(), "--header"),
        ] {
            match add(&args) {
                Err(text) => {
                    assert!(text.starts_with(&format!("invalid {flag}: ")), "{text}");
                    assert!(!text.contains("SECRETVALUE"), "{text}");
                    assert_eq!(text.lines().count(), 1, "{text}");
                }
                Ok(request) => panic!("{args:?} accepted: {request:?}"),
            }
        }
        assert!(parse_env("K=").is_ok());
        assert!(parse_header("K:").is_ok_and(|(k, v)| k == "K" && v.is_empty()));
    }

    #[test]
    fn add_needs_exactly_one_of_a_command_and_a_url() {
        for args in [
            &["mcp", "add", "a"][..],
            &["mcp", "add", "a", "--url", "http://h", "--", "x"][..],
            &["mcp", "add", "a", "--url", "http://h", "--env", "K=V"][..],
        ] {
            assert!(parse(args).is_err(), "{args:?}");
        }
        let headers_without_url = add(&["mcp", "add", "a", "--header", "K: V", "--", "x"]);
        assert!(
            headers_without_url.is_err_and(|text| text.contains("--url")),
            "headers are for a --url server"
        );
    }

    #[test]
    fn the_other_subcommands_take_a_name() {
        assert!(matches!(
            parse(&["mcp", "disable", "fs"]),
            Ok(McpCommand::Disable { name }) if name == "fs"
        ));
        assert!(matches!(parse(&["mcp", "list"]), Ok(McpCommand::List)));
        assert!(parse(&["mcp", "approve"]).is_err());
    }

    #[test]
    fn the_list_json_shows_names_not_secrets() {
        let server = v1::McpServerInfo {
            name: "fs".to_owned(),
            transport: "stdio".to_owned(),
            state: "failed".to_owned(),
            error: "cannot start".to_owned(),
            command: "server".to_owned(),
            env_names: vec!["TOKEN".to_owned()],
            ..v1::McpServerInfo::default()
        };
        let value = server_json(&server);
        assert_eq!(value["tools"], json!(0));
        assert_eq!(value["error"], json!("cannot start"));
        assert_eq!(value["env_names"], json!(["TOKEN"]));
        assert_eq!(value["url"], Value::Null);
        assert_eq!(value["protocol"], Value::Null);
        let table = servers_table(&[server]);
        assert_eq!(table.lines().count(), 2, "{table}");
        assert!(table.lines().nth(1).is_some_and(|l| l.starts_with("fs ")));
    }
}
