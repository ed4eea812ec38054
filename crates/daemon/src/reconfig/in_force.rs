//! Putting a new configuration in force in the running daemon: every part that reads the
//! configuration at the moment it needs it sees the new one at once (a task's roots and
//! registries, the hooks, the model list, the search surface, the subagent depth); the parts
//! made once at start are told: the dispatcher's allowlists and shadow, the output limits,
//! the profile allowlist and the variables a pipeline run gets, the MCP servers. What is set
//! up once for the process (the socket, the sandbox, the log, the providers' clients, the
//! skills' index) waits for the next start, and a commit says which of its keys do.

use std::sync::Arc;

use codaris_tools::{Live, OutputLimits};

use crate::calls::dispatch::{Dispatcher, Operator};
use crate::config::Config;
use crate::mcp::McpHub;
use crate::mcp::reconfigure::Reconfigured;

/// The keys (patterns, or a prefix ending in `.`) a commit puts in force at once.
const AT_ONCE: &[&str] = &[
    "allowed_dirs",
    "subagents.max_depth",
    "daemon.detach_grace_seconds",
    "tools.lean_surface",
    "tools.tool_search_api",
    "tools.output_limits.",
    "tools.http_allowlist",
    "tools.command_allowlist",
    "models.",
    "mcp.servers.",
    "nextflow.profiles",
    // Read at each launch of a pipeline run.
    "nextflow.pass_env",
    "seqera.",
    "hooks.",
    "policy.shadow",
    // Read at each turn of a person's session.
    "memory.enabled",
];

/// Of `changed` (key patterns), those that take effect only at the daemon's next start.
pub fn at_next_start(changed: &[String]) -> Vec<String> {
    changed
        .iter()
        .filter(|key| {
            !AT_ONCE.iter().any(|at_once| {
                key.as_str() == *at_once || (at_once.ends_with('.') && key.starts_with(at_once))
            })
        })
        .cloned()
        .collect()
}

/// The handles of what was made once at start from the configuration.
#[derive(Debug)]
pub struct InForce {
    pub live: Live<Config>,
    /// A clone of the daemon's dispatcher: every session's shares its operator part.
    pub dispatcher: Dispatcher,
    pub limits: Live<OutputLimits>,
    /// The Nextflow tools' profile allowlist.
    pub profiles: Live<Vec<String>>,
    /// The variables a pipeline run gets (`[nextflow] pass_env`).
    pub pass_env: Live<Vec<String>>,
    pub hub: Arc<McpHub>,
}

impl InForce {
    /// Puts `new` in force (what the parts read live, and what they were told), and returns
    /// the MCP servers and roots to reconcile, which takes waiting: [`InForce::servers`].
    pub fn put(&self, mut new: Config) -> (Vec<codaris_mcp::ServerSpec>, Vec<std::path::PathBuf>) {
        let old = self.live.get();
        // Set by `main` after loading, not by the file.
        new.builtin_program.clone_from(&old.builtin_program);
        self.limits.set(OutputLimits {
            max_bytes: new.output_max_bytes,
            max_lines: new.output_max_lines,
        });
        self.profiles.set(new.nextflow.profiles.get().to_vec());
        // The configuration in force keeps naming the tools' own allowlist.
        new.nextflow.profiles = self.profiles.clone();
        self.pass_env.set(new.nextflow.pass_env.get().to_vec());
        new.nextflow.pass_env = self.pass_env.clone();
        self.dispatcher.reconfigure(Operator::of(&new));
        let servers = servers_of(&new);
        let roots = new.allowed_dirs.clone();
        self.live.set(new);
        (servers, roots)
    }

    /// Reconciles the MCP servers with the configuration just put in force.
    pub async fn servers(
        &self,
        servers: Vec<codaris_mcp::ServerSpec>,
        roots: Vec<std::path::PathBuf>,
    ) -> Option<Reconfigured> {
        match self.hub.reconfigure(servers, roots).await {
            Ok(done) => Some(done),
            Err(err) => {
                tracing::error!(%err, "the MCP servers of the committed configuration were not all put in force");
                None
            }
        }
    }
}

/// The servers a configuration runs: its own, then the built-in one.
pub fn servers_of(config: &Config) -> Vec<codaris_mcp::ServerSpec> {
    let mut servers = config.mcp_servers.clone();
    servers.extend(
        config
            .builtin_program
            .as_deref()
            .and_then(|program| crate::mcp::builtin::seqera_spec(program, &config.seqera)),
    );
    servers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_made_once_wait_for_the_next_start() {
        let changed: Vec<String> = [
            "allowed_dirs",
            "daemon.listen",
            "mcp.servers.*.url",
            "tools.output_limits.max_bytes",
            "tools.sandbox_writable",
            "hooks.pre_tool_use.command",
            "tools.http_allowlist",
            "nextflow.pass_env",
        ]
        .map(str::to_owned)
        .to_vec();
        assert_eq!(
            at_next_start(&changed),
            ["daemon.listen", "tools.sandbox_writable"]
        );
    }
}
