//! The editor's MCP servers (`mcpServers` of `session/new`, `session/load` and
//! `session/resume`) as the daemon takes a session's own servers: each an `AddServer`
//! registration, checked by the daemon as `codaris mcp add` is (name, command, URL, headers).
//! Their environment and header values go to the daemon only to start the server; it never
//! writes them down.

use agent_client_protocol::v1::schema::McpServer;
use agent_client_protocol::{Error, ErrorCode};
use codaris_proto::v1;

/// The daemon's registrations of the editor's servers, a stdio one started in the editor's
/// project `cwd` (as the editor would start it); an SSE one (which codaris does not speak) or
/// a command that is not UTF-8 is refused with a sentence.
pub fn registrations(
    servers: &[McpServer],
    cwd: &std::path::Path,
) -> Result<Vec<v1::AddServerRequest>, Error> {
    servers.iter().map(|s| registration(s, cwd)).collect()
}

fn registration(server: &McpServer, cwd: &std::path::Path) -> Result<v1::AddServerRequest, Error> {
    let refused = |name: &str, why: &str| {
        Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("the editor's MCP server `{}` {why}", name.escape_debug()),
        )
    };
    match server {
        McpServer::Stdio(stdio) => Ok(v1::AddServerRequest {
            name: stdio.name.clone(),
            command: stdio
                .command
                .to_str()
                .ok_or_else(|| refused(&stdio.name, "has a command that is not UTF-8"))?
                .to_owned(),
            args: stdio.args.clone(),
            env: stdio
                .env
                .iter()
                .map(|var| format!("{}={}", var.name, var.value))
                .collect(),
            // The daemon refuses one that is not absolute, as `codaris mcp add` does.
            cwd: cwd
                .to_str()
                .ok_or_else(|| refused(&stdio.name, "would start in a folder that is not UTF-8"))?
                .to_owned(),
            ..Default::default()
        }),
        McpServer::Http(http) => Ok(v1::AddServerRequest {
            name: http.name.clone(),
            url: http.url.clone(),
            headers: http
                .headers
                .iter()
                .map(|h| (h.name.clone(), h.value.clone()))
                .collect(),
            ..Default::default()
        }),
        McpServer::Sse(sse) => Err(refused(
            &sse.name,
            "speaks SSE, which codaris does not; give it as an `http` server",
        )),
        _ => Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            "an editor's MCP server is `stdio` or `http` for codaris",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EnvVariable, HttpHeader, McpServerHttp, McpServerSse, McpServerStdio,
    };

    #[test]
    fn stdio_and_http_servers_become_registrations_and_sse_is_refused() {
        let stdio = McpServer::Stdio(
            McpServerStdio::new("fx", "/bin/fx")
                .args(vec!["--a".to_owned()])
                .env(vec![EnvVariable::new("TZ", "UTC=1")]),
        );
        let http = McpServer::Http(
            McpServerHttp::new("web", "http://127.0.0.1:9/mcp")
                .headers(vec![HttpHeader::new("Authorization", "Bearer t")]),
        );
        let Ok(got) = registrations(&[stdio, http], std::path::Path::new("/proj")) else {
            panic!("both convert");
        };
        assert_eq!(got[0].command, "/bin/fx");
        assert_eq!(got[0].env, ["TZ=UTC=1"]);
        assert_eq!(got[0].cwd, "/proj");
        assert_eq!(got[1].cwd, "");
        assert_eq!(got[1].url, "http://127.0.0.1:9/mcp");
        assert_eq!(
            got[1].headers.get("Authorization").map(String::as_str),
            Some("Bearer t")
        );
        let sse = McpServer::Sse(McpServerSse::new("old", "http://127.0.0.1:9/sse"));
        let Err(err) = registrations(&[sse], std::path::Path::new("/proj")) else {
            panic!("sse is refused");
        };
        assert!(err.message.contains("`old` speaks SSE"), "{}", err.message);
    }
}
