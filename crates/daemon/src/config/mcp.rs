//! `[mcp.servers.NAME]` in the configuration file, resolved into the servers the daemon starts.
//!
//! ```toml
//! [mcp.servers.time]
//! command = "mcp-server-time"
//! args = ["--local-timezone", "UTC"]
//! keywords = ["clock", "timezone"]
//! trust = true
//!
//! [mcp.servers.docs]
//! url = "http://127.0.0.1:3001/mcp"
//! headers = { Authorization = "Bearer …" }
//! tool_timeout_seconds = 30
//! share_roots = true
//! output_limits = { max_bytes = 20000 }
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use codaris_mcp::{Approval, OutputLimitOverrides, ServerName, ServerSpec, Transport};
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// `[mcp]`.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpToml {
    pub servers: Option<BTreeMap<String, ServerToml>>,
}

/// One `[mcp.servers.NAME]` table: `command` (with `args`, `env`, `cwd`) or `url` (with
/// `headers`), and how far the server is trusted.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerToml {
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub env: Option<BTreeMap<String, String>>,
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
    pub headers: Option<BTreeMap<String, String>>,
    pub keywords: Option<Vec<String>>,
    pub trust: Option<bool>,
    pub enabled: Option<bool>,
    /// `never` (default) or `ask`: a card before every call of the server's tools.
    pub approval: Option<String>,
    /// Answer the server's `roots/list` with the daemon's `allowed_dirs`.
    pub share_roots: Option<bool>,
    pub startup_timeout_seconds: Option<f64>,
    pub tool_timeout_seconds: Option<f64>,
    pub output_limits: Option<super::values::OutputLimitsToml>,
}

/// The servers the file declares, in name order; every bad value named with its key.
pub fn resolve(
    toml: Option<McpToml>,
    origin: &dyn Fn(&str) -> String,
) -> Result<Vec<ServerSpec>, ConfigError> {
    let servers = toml.and_then(|t| t.servers).unwrap_or_default();
    servers
        .into_iter()
        .map(|(name, server)| server_spec(&name, server, origin))
        .collect()
}

fn server_spec(
    name: &str,
    server: ServerToml,
    origin: &dyn Fn(&str) -> String,
) -> Result<ServerSpec, ConfigError> {
    let key = |field: &str| origin(&format!("mcp.servers.{name}.{field}"));
    let invalid = |field: &str, reason: String| ConfigError::Invalid {
        key: key(field),
        reason,
    };
    let parsed = ServerName::parse(name).map_err(|err| ConfigError::Invalid {
        key: origin(&format!("mcp.servers.{name}")),
        reason: err.to_string(),
    })?;
    if crate::mcp::builtin::is_builtin(&parsed) {
        return Err(ConfigError::Invalid {
            key: origin(&format!("mcp.servers.{name}")),
            reason: "is the name of Codaris's built-in server; configure it under [seqera] or choose another name".to_owned(),
        });
    }
    let transport = match (server.command, server.url) {
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err(invalid("command", "is empty".to_owned()));
            }
            if server.headers.is_some() {
                return Err(invalid("headers", "is for a `url` server".to_owned()));
            }
            if let Some(cwd) = &server.cwd
                && !cwd.is_absolute()
            {
                return Err(invalid("cwd", "must be an absolute path".to_owned()));
            }
            Transport::Stdio {
                command,
                args: server.args.unwrap_or_default(),
                env: server.env.unwrap_or_default(),
                cwd: server.cwd,
            }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(invalid("url", format!("`{url}` is not an http(s) URL")));
            }
            for (field, set) in [
                ("args", server.args.is_some()),
                ("env", server.env.is_some()),
                ("cwd", server.cwd.is_some()),
            ] {
                if set {
                    return Err(invalid(field, "is for a `command` server".to_owned()));
                }
            }
            Transport::Http {
                url,
                headers: server.headers.unwrap_or_default(),
            }
        }
        (Some(_), Some(_)) => {
            return Err(invalid(
                "url",
                "a server has a `command` or a `url`, not both".to_owned(),
            ));
        }
        (None, None) => {
            return Err(ConfigError::Invalid {
                key: origin(&format!("mcp.servers.{name}")),
                reason: "needs a `command` or a `url`".to_owned(),
            });
        }
    };
    let approval = match server.approval.as_deref() {
        None => Approval::Never,
        Some(text) => Approval::parse(text).map_err(|reason| invalid("approval", reason))?,
    };
    let seconds = |field: &str, value: Option<f64>| {
        value
            .map(codaris_mcp::timeout_seconds)
            .transpose()
            .map_err(|reason| invalid(field, reason))
    };
    let limits = match server.output_limits {
        None => None,
        Some(limits) => {
            for (field, value) in [
                ("max_bytes", limits.max_bytes),
                ("max_lines", limits.max_lines),
            ] {
                if value == Some(0) {
                    return Err(invalid(
                        &format!("output_limits.{field}"),
                        "must be at least 1".to_owned(),
                    ));
                }
            }
            Some(OutputLimitOverrides {
                max_bytes: limits.max_bytes,
                max_lines: limits.max_lines,
            })
        }
    };
    let mut spec = match transport {
        Transport::Stdio { .. } => ServerSpec::stdio(parsed, String::new(), Vec::new()),
        Transport::Http { .. } => ServerSpec::http(parsed, String::new()),
    };
    spec.transport = transport;
    spec.keywords = server.keywords.unwrap_or_default();
    spec.trust = server.trust.unwrap_or(false);
    spec.enabled = server.enabled.unwrap_or(true);
    spec.approval = approval;
    spec.share_roots = server.share_roots.unwrap_or(false);
    spec.startup_timeout = seconds("startup_timeout_seconds", server.startup_timeout_seconds)?;
    spec.tool_timeout = seconds("tool_timeout_seconds", server.tool_timeout_seconds)?;
    spec.output_limits = limits;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn parse(text: &str) -> Result<Vec<ServerSpec>, ConfigError> {
        #[derive(Deserialize)]
        struct File {
            mcp: Option<McpToml>,
        }
        let file: File = toml::from_str(text).map_err(|err| ConfigError::Invalid {
            key: "file".to_owned(),
            reason: err.to_string(),
        })?;
        resolve(file.mcp, &|key| format!("`{key}`"))
    }

    #[test]
    fn stdio_and_http_servers_resolve_with_their_settings() -> Result<(), ConfigError> {
        let servers = parse(
            r#"
            [mcp.servers.time]
            command = "mcp-server-time"
            args = ["--local-timezone", "UTC"]
            env = { TZ = "UTC" }
            keywords = ["clock"]
            trust = true
            tool_timeout_seconds = 5
            output_limits = { max_bytes = 100 }

            [mcp.servers.docs]
            url = "http://127.0.0.1:3001/mcp"
            headers = { Authorization = "Bearer x" }
            enabled = false
            approval = "ask"
            share_roots = true
            "#,
        )?;
        assert_eq!(servers.len(), 2);
        let docs = &servers[0];
        assert_eq!(docs.name.as_str(), "docs");
        assert_eq!(docs.transport.kind(), "http");
        assert!(!docs.enabled);
        assert_eq!(docs.approval, Approval::Ask);
        assert!(docs.share_roots);
        let time = &servers[1];
        assert!(time.trust && !time.share_roots);
        assert_eq!(time.tool_timeout(), Duration::from_secs(5));
        assert_eq!(
            time.output_limits,
            Some(OutputLimitOverrides {
                max_bytes: Some(100),
                max_lines: None
            })
        );
        Ok(())
    }

    #[test]
    fn bad_servers_are_refused_with_their_key() {
        for (text, key) in [
            ("[mcp.servers.a__b]\ncommand = \"x\"", "mcp.servers.a__b"),
            ("[mcp.servers.a]\n", "mcp.servers.a"),
            (
                "[mcp.servers.a]\ncommand = \"x\"\nurl = \"http://h\"",
                "mcp.servers.a.url",
            ),
            ("[mcp.servers.a]\nurl = \"ftp://h\"", "mcp.servers.a.url"),
            (
                "[mcp.servers.a]\ncommand = \"x\"\ncwd = \"rel\"",
                "mcp.servers.a.cwd",
            ),
            (
                "[mcp.servers.a]\ncommand = \"x\"\napproval = \"maybe\"",
                "mcp.servers.a.approval",
            ),
            (
                "[mcp.servers.a]\ncommand = \"x\"\ntool_timeout_seconds = 0",
                "mcp.servers.a.tool_timeout_seconds",
            ),
            (
                "[mcp.servers.a]\nurl = \"http://h\"\nenv = {}",
                "mcp.servers.a.env",
            ),
        ] {
            match parse(text) {
                Err(ConfigError::Invalid { key: found, .. }) => {
                    assert_eq!(found, format!("`{key}`"), "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(parse("[mcp.servers.a]\ncommand = \"x\"\nbogus = 1").is_err());
    }
}
