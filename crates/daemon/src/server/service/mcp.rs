//! `codaris.v1.Mcp`: list, add, remove, restart, switch and approve the daemon's MCP servers,
//! and list their tools. Each handler checks the request, asks the [`McpHub`], and encodes the
//! answer; environment and header values never leave the daemon, only their names.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use codaris_mcp::{Approval, ServerName, ServerSpec, Transport};
use codaris_proto::v1;
use codaris_proto::v1::mcp_server::Mcp;
use tonic::{Request, Response, Status};

use crate::error::DaemonError;
use crate::mcp::{McpHub, Origin, ServerInfo, ToolInfo};

#[derive(Debug, Clone)]
pub struct McpService {
    pub hub: Arc<McpHub>,
}

impl McpService {
    /// The server `name` as `ListServers` shows it now.
    fn server(&self, name: &str) -> Result<v1::McpServerInfo, DaemonError> {
        self.hub
            .list()
            .iter()
            .find(|info| info.view.spec.name.as_str() == name)
            .map(server_message)
            .ok_or_else(|| DaemonError::McpUnknown {
                name: name.to_owned(),
            })
    }
}

#[tonic::async_trait]
impl Mcp for McpService {
    async fn list_servers(
        &self,
        _request: Request<v1::ListServersRequest>,
    ) -> Result<Response<v1::ListServersResponse>, Status> {
        Ok(Response::new(v1::ListServersResponse {
            servers: self.hub.list().iter().map(server_message).collect(),
        }))
    }

    async fn add_server(
        &self,
        request: Request<v1::AddServerRequest>,
    ) -> Result<Response<v1::McpServerInfo>, Status> {
        let spec = spec_of(request.into_inner())?;
        let name = spec.name.to_string();
        let transport = spec.transport.kind();
        self.hub.add(spec)?;
        tracing::info!(server = %name, transport, "MCP server added");
        Ok(Response::new(self.server(&name)?))
    }

    async fn remove_server(
        &self,
        request: Request<v1::RemoveServerRequest>,
    ) -> Result<Response<v1::RemoveServerResponse>, Status> {
        let name = request.into_inner().name;
        self.hub.remove(&name).await?;
        tracing::info!(server = %name, "MCP server removed");
        Ok(Response::new(v1::RemoveServerResponse {}))
    }

    async fn restart_server(
        &self,
        request: Request<v1::RestartServerRequest>,
    ) -> Result<Response<v1::McpServerInfo>, Status> {
        let name = request.into_inner().name;
        self.hub.restart(&name)?;
        tracing::info!(server = %name, "MCP server restarted");
        Ok(Response::new(self.server(&name)?))
    }

    async fn set_server_enabled(
        &self,
        request: Request<v1::SetServerEnabledRequest>,
    ) -> Result<Response<v1::McpServerInfo>, Status> {
        let request = request.into_inner();
        self.hub.set_enabled(&request.name, request.enabled).await?;
        tracing::info!(server = %request.name, enabled = request.enabled, "MCP server switched");
        Ok(Response::new(self.server(&request.name)?))
    }

    async fn approve_server(
        &self,
        request: Request<v1::ApproveServerRequest>,
    ) -> Result<Response<v1::ApproveServerResponse>, Status> {
        let approved = self.hub.approve(&request.into_inner().name)?;
        Ok(Response::new(v1::ApproveServerResponse {
            approved: count(approved),
        }))
    }

    async fn list_server_tools(
        &self,
        request: Request<v1::ListServerToolsRequest>,
    ) -> Result<Response<v1::ListServerToolsResponse>, Status> {
        let tools = self.hub.tools_of(&request.into_inner().name)?;
        Ok(Response::new(v1::ListServerToolsResponse {
            tools: tools.iter().map(tool_message).collect(),
        }))
    }
}

fn invalid(field: &'static str, reason: impl Into<String>) -> DaemonError {
    DaemonError::InvalidArgument {
        field,
        reason: reason.into(),
    }
}

/// The registration an `AddServer` request asks for, every field checked before the hub sees it.
pub(crate) fn spec_of(request: v1::AddServerRequest) -> Result<ServerSpec, DaemonError> {
    let name = ServerName::parse(&request.name).map_err(|err| invalid("name", err.to_string()))?;
    let transport = match (request.command.trim().is_empty(), request.url.is_empty()) {
        (false, true) => {
            if !request.headers.is_empty() {
                return Err(invalid("headers", "are for a `url` server"));
            }
            let cwd = match request.cwd.as_str() {
                "" => None,
                cwd if cwd.contains('\0') => return Err(invalid("cwd", "holds a NUL byte")),
                cwd if !cwd.starts_with('/') => {
                    return Err(invalid("cwd", format!("`{cwd}` is not an absolute path")));
                }
                cwd => Some(PathBuf::from(cwd)),
            };
            Transport::Stdio {
                command: request.command,
                args: request.args,
                env: env_of(&request.env)?,
                cwd,
            }
        }
        (true, false) => {
            let url = request.url;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(invalid("url", format!("`{url}` is not an http(s) URL")));
            }
            for (field, set) in [
                ("args", !request.args.is_empty()),
                ("env", !request.env.is_empty()),
                ("cwd", !request.cwd.is_empty()),
            ] {
                if set {
                    return Err(invalid(field, "is for a `command` server"));
                }
            }
            if let Some(bad) = request.headers.keys().find(|k| !header_name(k)) {
                return Err(invalid(
                    "headers",
                    format!("`{bad}` is not an HTTP header name"),
                ));
            }
            Transport::Http {
                url,
                headers: request.headers.into_iter().collect(),
            }
        }
        (false, false) => {
            return Err(invalid(
                "url",
                "a server has a `command` or a `url`, not both",
            ));
        }
        (true, true) => return Err(invalid("command", "a server needs a `command` or a `url`")),
    };
    let mut spec = ServerSpec::http(name, String::new());
    spec.transport = transport;
    spec.keywords = request
        .keywords
        .into_iter()
        .map(|k| k.trim().to_owned())
        .filter(|k| !k.is_empty())
        .collect();
    spec.trust = request.trust;
    spec.share_roots = request.share_roots;
    spec.approval = match request.approval.as_str() {
        "" => Approval::Never,
        text => Approval::parse(text).map_err(|reason| invalid("approval", reason))?,
    };
    let seconds = |field: &'static str, value: f64| {
        if value == 0.0 {
            Ok(None)
        } else {
            codaris_mcp::timeout_seconds(value)
                .map(Some)
                .map_err(|reason| invalid(field, reason))
        }
    };
    spec.startup_timeout = seconds("startup_timeout_seconds", request.startup_timeout_seconds)?;
    spec.tool_timeout = seconds("tool_timeout_seconds", request.tool_timeout_seconds)?;
    Ok(spec)
}

/// `KEY=VALUE` entries as a map; a key is non-empty and holds neither `=` nor a NUL byte.
fn env_of(entries: &[String]) -> Result<BTreeMap<String, String>, DaemonError> {
    let mut env = BTreeMap::new();
    for entry in entries {
        let Some((key, value)) = entry.split_once('=') else {
            return Err(invalid(
                "env",
                format!("`{entry}` is not of the form KEY=VALUE"),
            ));
        };
        if key.is_empty() || key.contains('\0') || value.contains('\0') {
            return Err(invalid(
                "env",
                format!("`{key}=…` needs a name without NUL bytes, and a value without"),
            ));
        }
        env.insert(key.to_owned(), value.to_owned());
    }
    Ok(env)
}

/// An HTTP header name: one or more visible ASCII characters other than separators.
fn header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn server_message(info: &ServerInfo) -> v1::McpServerInfo {
    let view = &info.view;
    let spec = &view.spec;
    let mut server = v1::McpServerInfo {
        name: spec.name.to_string(),
        transport: view.transport().to_owned(),
        state: view.state.as_str().to_owned(),
        tools: count(view.tools.len()),
        error: view.error.clone().unwrap_or_default(),
        origin: match info.origin {
            Origin::Config => "config",
            Origin::Runtime => "runtime",
        }
        .to_owned(),
        held: count(info.held),
        protocol: view.protocol.clone(),
        server_info: view.server_info.clone(),
        keywords: spec.keywords.clone(),
        trust: spec.trust,
        enabled: spec.enabled,
        approval: match spec.approval {
            Approval::Never => "never",
            Approval::Ask => "ask",
        }
        .to_owned(),
        restarts: view.restarts,
        share_roots: spec.share_roots,
        list_changed: view.list_changed,
        listings: view.listings,
        ..v1::McpServerInfo::default()
    };
    match &spec.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            server.command.clone_from(command);
            server.args.clone_from(args);
            server.env_names = env.keys().cloned().collect();
            server.cwd = cwd
                .as_ref()
                .map(|c| c.display().to_string())
                .unwrap_or_default();
        }
        Transport::Http { url, headers } => {
            server.url.clone_from(url);
            server.header_names = headers.keys().cloned().collect();
        }
    }
    server
}

fn tool_message(info: &ToolInfo) -> v1::McpToolInfo {
    v1::McpToolInfo {
        name: info.name.clone(),
        description: info.tool.description.clone(),
        enabled: info.enabled,
        held: info.held.clone().unwrap_or_default(),
        read_only: info.read_only,
        input_schema: info.tool.input_schema.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(name: &str, command: &str) -> v1::AddServerRequest {
        v1::AddServerRequest {
            name: name.to_owned(),
            command: command.to_owned(),
            ..v1::AddServerRequest::default()
        }
    }

    fn field(result: Result<ServerSpec, DaemonError>) -> &'static str {
        match result {
            Err(DaemonError::InvalidArgument { field, .. }) => field,
            other => panic!("not refused as an invalid argument: {other:?}"),
        }
    }

    #[test]
    fn a_stdio_request_becomes_its_spec() -> Result<(), DaemonError> {
        let mut request = stdio("time", "mcp-server-time");
        request.args = vec!["--utc".to_owned()];
        request.env = vec!["TZ=UTC".to_owned(), "EMPTY=".to_owned(), "A=b=c".to_owned()];
        request.cwd = "/tmp".to_owned();
        request.keywords = vec![" clock ".to_owned(), String::new()];
        request.trust = true;
        request.approval = "ask".to_owned();
        request.startup_timeout_seconds = 5.0;
        request.share_roots = true;
        let spec = spec_of(request)?;
        assert_eq!(spec.name.as_str(), "time");
        assert!(spec.trust && spec.enabled && spec.share_roots);
        assert_eq!(spec.approval, Approval::Ask);
        assert_eq!(spec.startup_timeout(), std::time::Duration::from_secs(5));
        assert_eq!(spec.tool_timeout(), codaris_mcp::DEFAULT_TOOL_TIMEOUT);
        assert_eq!(spec.keywords, vec!["clock".to_owned()]);
        let Transport::Stdio { env, cwd, args, .. } = &spec.transport else {
            panic!("not stdio: {spec:?}");
        };
        assert_eq!(args, &vec!["--utc".to_owned()]);
        assert_eq!(env.get("A").map(String::as_str), Some("b=c"));
        assert_eq!(env.get("EMPTY").map(String::as_str), Some(""));
        assert_eq!(cwd.as_deref(), Some(std::path::Path::new("/tmp")));
        Ok(())
    }

    #[test]
    fn bad_requests_name_their_field() {
        assert_eq!(field(spec_of(stdio("a__b", "x"))), "name");
        assert_eq!(field(spec_of(stdio("mcp", "x"))), "name");
        assert_eq!(field(spec_of(stdio("a", ""))), "command");
        let mut both = stdio("a", "x");
        both.url = "http://127.0.0.1:1/mcp".to_owned();
        assert_eq!(field(spec_of(both)), "url");
        let mut env = stdio("a", "x");
        env.env = vec!["NOEQUALS".to_owned()];
        assert_eq!(field(spec_of(env)), "env");
        let mut env = stdio("a", "x");
        env.env = vec!["=v".to_owned()];
        assert_eq!(field(spec_of(env)), "env");
        let mut cwd = stdio("a", "x");
        cwd.cwd = "relative".to_owned();
        assert_eq!(field(spec_of(cwd)), "cwd");
        let mut headers = stdio("a", "x");
        headers.headers.insert("K".to_owned(), "V".to_owned());
        assert_eq!(field(spec_of(headers)), "headers");
        let url = |url: &str| v1::AddServerRequest {
            name: "a".to_owned(),
            url: url.to_owned(),
            ..v1::AddServerRequest::default()
        };
        assert_eq!(field(spec_of(url("ftp://h"))), "url");
        let mut http_env = url("http://h");
        http_env.env = vec!["K=V".to_owned()];
        assert_eq!(field(spec_of(http_env)), "env");
        let mut bad_header = url("http://h");
        bad_header
            .headers
            .insert("Bad Name".to_owned(), "v".to_owned());
        assert_eq!(field(spec_of(bad_header)), "headers");
        let mut approval = stdio("a", "x");
        approval.approval = "sometimes".to_owned();
        assert_eq!(field(spec_of(approval)), "approval");
        for seconds in [-1.0, f64::NAN, 100_000.0] {
            let mut timeout = stdio("a", "x");
            timeout.tool_timeout_seconds = seconds;
            assert_eq!(field(spec_of(timeout)), "tool_timeout_seconds");
            let mut timeout = stdio("a", "x");
            timeout.startup_timeout_seconds = seconds;
            assert_eq!(field(spec_of(timeout)), "startup_timeout_seconds");
        }
    }

    #[test]
    fn an_http_request_keeps_its_headers() -> Result<(), DaemonError> {
        let mut request = v1::AddServerRequest {
            name: "docs".to_owned(),
            url: "https://example.test/mcp".to_owned(),
            ..v1::AddServerRequest::default()
        };
        request
            .headers
            .insert("Authorization".to_owned(), "Bearer x".to_owned());
        let spec = spec_of(request)?;
        assert_eq!(
            spec.transport,
            Transport::Http {
                url: "https://example.test/mcp".to_owned(),
                headers: BTreeMap::from([("Authorization".to_owned(), "Bearer x".to_owned())]),
            }
        );
        Ok(())
    }
}
