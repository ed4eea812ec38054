//! The configuration file's shape as serde reads it: every key optional, unknown keys
//! refused. What the values mean, and how they combine with the environment and the command
//! line, is `super::resolve`'s.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The file as written: every key optional, unknown keys refused.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigToml {
    /// Directories file and command tools may act in, absolute.
    pub allowed_dirs: Option<Vec<PathBuf>>,
    /// Directories of skills (`<dir>/<skill>/SKILL.md`), absolute; default `<config dir>/skills`.
    pub skills_dirs: Option<Vec<PathBuf>>,
    pub daemon: Option<DaemonToml>,
    pub tools: Option<ToolsToml>,
    pub provider: Option<ProviderToml>,
    pub anthropic: Option<ApiToml>,
    pub openai: Option<ApiToml>,
    /// `[[models]]`: what Codaris knows about a model by name.
    pub models: Option<Vec<ModelToml>>,
    /// `[mcp.servers.NAME]`: the MCP servers the daemon starts.
    pub mcp: Option<crate::mcp::config::McpToml>,
    /// `[nextflow]`: the programs the Nextflow tools run, the operator's compliance rules.
    pub nextflow: Option<crate::nextflow::NextflowToml>,
    /// `[ncbi]`: the E-utilities endpoint, the email NCBI asks for, the API key.
    pub ncbi: Option<crate::research::NcbiToml>,
    /// `[research]`: the engines `web_research` asks.
    pub research: Option<crate::research::ResearchToml>,
    /// `[seqera]`: Wave, Seqera Platform, the token, the registries pushes may go to.
    pub seqera: Option<crate::research::SeqeraToml>,
    /// `[telemetry]`: OpenTelemetry export over OTLP/HTTP, off unless an endpoint is named.
    pub telemetry: Option<crate::telemetry::TelemetryToml>,
}

#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonToml {
    /// Loopback TCP address to listen on besides the socket, e.g. `127.0.0.1:7457`.
    pub listen: Option<String>,
    /// How long a running turn waits for a client to re-attach after its last stream went
    /// away, before it is cancelled.
    pub detach_grace_seconds: Option<u64>,
    /// How long a permission card waits for its answer before it grants nothing.
    pub card_timeout_seconds: Option<u64>,
    /// The ledger's sled page cache, in MiB (default [`DEFAULT_LEDGER_CACHE_MB`]).
    pub ledger_cache_mb: Option<u64>,
    /// The log file's lines: `text` (default) or `json`.
    pub log_format: Option<String>,
    /// Dated log files kept (default [`crate::logging::DEFAULT_LOG_MAX_FILES`]).
    pub log_max_files: Option<usize>,
}

/// The ledger's page cache when `daemon.ledger_cache_mb` is unset: reads stay proportional to
/// what is asked, so a small cache serves them; sled's own default would be 1 GiB.
pub const DEFAULT_LEDGER_CACHE_MB: u64 = 64;

/// The largest `daemon.ledger_cache_mb` accepted (64 GiB): anything above is a typo.
pub const MAX_LEDGER_CACHE_MB: u64 = 64 * 1024;

#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsToml {
    /// Bind the lean nine-tool surface (true) or the whole registry (false).
    pub lean_surface: Option<bool>,
    /// Send the long tail as deferred tools on the Anthropic route.
    pub tool_search_api: Option<bool>,
    /// How much of a tool's result reaches the model.
    pub output_limits: Option<OutputLimitsToml>,
    /// Origins `http_request` may reach without a card, e.g. `https://api.github.com`.
    pub http_allowlist: Option<Vec<String>>,
    /// Command prefixes `run_command` runs without a card, e.g. `cargo test`, `git status`.
    pub command_allowlist: Option<Vec<String>>,
    /// Directories outside the allowed roots that commands may write to under Landlock
    /// (a tool's cache such as `~/.cargo`), as absolute paths.
    pub sandbox_writable: Option<Vec<PathBuf>>,
    /// Directories and files outside the allowed roots that commands may read (and execute)
    /// under Landlock, as absolute paths; unset, the toolchains under `$HOME` that exist
    /// (`codaris_tools::shell::HOME_TOOLCHAINS`).
    pub sandbox_readable: Option<Vec<PathBuf>>,
    /// Variables of the daemon's environment that commands get beyond the allowlist
    /// (`PATH`, `HOME`, the locale, the toolchains': `codaris_tools::shell::env`), by name.
    pub env_passthrough: Option<Vec<String>>,
    /// The engines `websearch` asks, in order: `brave`, `bing`, `duckduckgo`,
    /// `searxng:<base URL>`.
    pub websearch_engines: Option<Vec<String>>,
    /// Headers `http_request` sends on every request (a call's own header of the same name
    /// wins), e.g. `{ "User-Agent" = "…" }`.
    pub http_default_headers: Option<BTreeMap<String, String>>,
    /// Background tasks and the `background_*` tools (default on).
    pub background: Option<bool>,
    /// `preview_server` (default on; needs `background`).
    pub preview_server: Option<bool>,
    /// The most processes one session's commands may have at once (default 4096).
    pub session_pids_max: Option<u64>,
    /// The most memory (swap included) one session's commands may use: bytes or `8G`
    /// (default three quarters of physical memory).
    pub session_memory_max: Option<crate::session_limits::SizeToml>,
}

#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutputLimitsToml {
    pub max_bytes: Option<usize>,
    pub max_lines: Option<usize>,
}

#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderToml {
    pub name: Option<String>,
    pub model: Option<String>,
}

#[derive(Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApiToml {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The most tokens one answer may have (`[openai] max_output_tokens`); read signed so that
    /// a negative value is named as such rather than as a type error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<i64>,
}

impl std::fmt::Debug for ApiToml {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiToml")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("max_output_tokens", &self.max_output_tokens)
            .finish()
    }
}

/// One `[[models]]` entry.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModelToml {
    /// The model name as the provider spells it (`CODARIS_MODEL`, `[provider] model`).
    pub name: Option<String>,
    /// Whether it takes pictures; unset, the guess by name ([`codaris_agent::multimodal_by_name`]).
    pub multimodal: Option<bool>,
}
