//! What a server is: how to reach it and how far it is trusted. The daemon reads these from
//! `[mcp.servers.NAME]` in its configuration or from a run-time registration (kept in the
//! ledger's store), and hands them to the [`ServerRegistry`](crate::ServerRegistry).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::names::ServerName;

/// How long a server may take from start to its tool list, unless its registration says.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one call may take, unless its registration says.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// How the daemon reaches a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "snake_case")]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on its stdin and stdout.
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        /// Variables the child gets beside the fixed allowlist (see `env.rs`).
        #[serde(default)]
        env: BTreeMap<String, String>,
        #[serde(default)]
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    /// `stdio` or `http`, as `codaris mcp list` shows it.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

/// When a call of the server's tools asks the person first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Starting the server was the trust decision: no card (the policy still decides).
    #[default]
    Never,
    /// A card before every call.
    Ask,
}

impl Approval {
    /// `never` or `ask`, as the configuration and the CLI spell it.
    pub fn parse(text: &str) -> Result<Approval, String> {
        match text {
            "never" => Ok(Approval::Never),
            "ask" => Ok(Approval::Ask),
            other => Err(format!("`{other}` is neither `never` nor `ask`")),
        }
    }
}

/// One server as registered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSpec {
    pub name: ServerName,
    #[serde(flatten)]
    pub transport: Transport,
    /// Words search ranks the server's tools by, beside their names and descriptions. A server
    /// whose keywords include `url` offers the fetcher a pasted link binds.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Its tools' annotations are believed (`readOnlyHint`); otherwise each tool counts as one
    /// that changes things.
    #[serde(default)]
    pub trust: bool,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub approval: Approval,
    /// Tell the server the host's roots (the daemon's allowed folders) when it asks
    /// (`roots/list`). Off by default: a filesystem server that is told roots serves those
    /// instead of the directories on its command line. Not part of the launch digest: the
    /// roots are the person's own fence, not something the server chose.
    #[serde(default)]
    pub share_roots: bool,
    #[serde(default, with = "seconds")]
    pub startup_timeout: Option<Duration>,
    #[serde(default, with = "seconds")]
    pub tool_timeout: Option<Duration>,
    /// How much of a result the model reads, for this server instead of the daemon's
    /// `tools.output_limits`.
    #[serde(default)]
    pub output_limits: Option<OutputLimitOverrides>,
}

/// A server's own output limits, overriding `tools.output_limits` (`codaris_tools::OutputLimits`);
/// an unset one keeps the daemon's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OutputLimitOverrides {
    #[serde(default)]
    pub max_bytes: Option<usize>,
    #[serde(default)]
    pub max_lines: Option<usize>,
}

fn yes() -> bool {
    true
}

impl ServerSpec {
    /// A stdio server with every other setting at its default.
    pub fn stdio(name: ServerName, command: impl Into<String>, args: Vec<String>) -> ServerSpec {
        ServerSpec::new(
            name,
            Transport::Stdio {
                command: command.into(),
                args,
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A streamable-HTTP server with every other setting at its default.
    pub fn http(name: ServerName, url: impl Into<String>) -> ServerSpec {
        ServerSpec::new(
            name,
            Transport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
        )
    }

    fn new(name: ServerName, transport: Transport) -> ServerSpec {
        ServerSpec {
            name,
            transport,
            keywords: Vec::new(),
            trust: false,
            enabled: true,
            approval: Approval::Never,
            share_roots: false,
            startup_timeout: None,
            tool_timeout: None,
            output_limits: None,
        }
    }

    pub fn startup_timeout(&self) -> Duration {
        self.startup_timeout.unwrap_or(DEFAULT_STARTUP_TIMEOUT)
    }

    pub fn tool_timeout(&self) -> Duration {
        self.tool_timeout.unwrap_or(DEFAULT_TOOL_TIMEOUT)
    }

    /// SHA-256 (hex) of what the server runs as: its command, arguments, environment and
    /// directory, or its URL and headers. A change of any of them holds its tools back until
    /// they are approved again, as a changed tool definition does.
    pub fn launch_digest(&self) -> String {
        let launch = serde_json::to_vec(&self.transport).unwrap_or_default();
        crate::tool::hex(&Sha256::digest(&launch))
    }
}

/// `seconds` as a timeout: a finite number above 0 and at most a day; else why not.
pub fn timeout_seconds(seconds: f64) -> Result<Duration, String> {
    if seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0 {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(format!(
            "{seconds} is not a number of seconds between 0 and 86400"
        ))
    }
}

/// Durations as seconds in configuration and storage.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?
            .map(super::timeout_seconds)
            .transpose()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_spec_round_trips_and_defaults() {
        let parsed: ServerSpec = serde_json::from_value(json!({
            "name": "time",
            "transport": "stdio",
            "command": "mcp-server-time",
            "args": ["--local-timezone", "UTC"],
            "tool_timeout": 5
        }))
        .unwrap_or_else(|err| panic!("{err}"));
        assert!(parsed.enabled && !parsed.trust);
        assert_eq!(parsed.tool_timeout(), Duration::from_secs(5));
        assert_eq!(parsed.startup_timeout(), DEFAULT_STARTUP_TIMEOUT);
        let again: ServerSpec = serde_json::to_value(&parsed)
            .and_then(serde_json::from_value)
            .unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(again, parsed);
    }

    #[test]
    fn a_bad_name_or_timeout_is_refused() {
        let bad_name = serde_json::from_value::<ServerSpec>(json!({
            "name": "a__b", "transport": "http", "url": "http://127.0.0.1:1/mcp"
        }));
        assert!(bad_name.is_err());
        let bad_timeout = serde_json::from_value::<ServerSpec>(json!({
            "name": "a", "transport": "http", "url": "http://x", "tool_timeout": -1
        }));
        assert!(bad_timeout.is_err());
    }

    #[test]
    fn the_launch_digest_follows_command_env_and_url() {
        let name = ServerName::parse("s").unwrap_or_else(|err| panic!("{err}"));
        let a = ServerSpec::stdio(name.clone(), "srv", vec![]);
        let mut b = a.clone();
        b.keywords.push("files".to_owned());
        assert_eq!(
            a.launch_digest(),
            b.launch_digest(),
            "keywords are not launch"
        );
        if let Transport::Stdio { env, .. } = &mut b.transport {
            env.insert("K".to_owned(), "V".to_owned());
        }
        assert_ne!(a.launch_digest(), b.launch_digest());
        assert_ne!(
            ServerSpec::http(name.clone(), "http://a").launch_digest(),
            ServerSpec::http(name, "http://b").launch_digest()
        );
    }
}
