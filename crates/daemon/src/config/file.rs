//! The configuration file's shape as serde reads it: every key optional, unknown keys
//! refused. What the values mean, and how they combine with the environment and the command
//! line, is `super::resolve`'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::providers::{ApiToml, ProviderToml};
use super::values::OutputLimitsToml;
use crate::error::ConfigError;

/// The file as written: every key optional, unknown keys refused.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigToml {
    /// Directories file and command tools may act in, absolute.
    pub allowed_dirs: Option<Vec<PathBuf>>,
    /// Directories of skills (`<dir>/<skill>/SKILL.md`), absolute; default `<config dir>/skills`.
    pub skills_dirs: Option<Vec<PathBuf>>,
    /// `[skills]`: how the model reaches the skills.
    pub skills: Option<SkillsToml>,
    /// `[subagents]`: the children `spawn_agent` starts.
    pub subagents: Option<SubagentsToml>,
    /// `[memory]`: the memory subagent each user turn starts.
    pub memory: Option<super::memory::MemoryToml>,
    pub daemon: Option<DaemonToml>,
    pub tools: Option<ToolsToml>,
    pub provider: Option<ProviderToml>,
    pub anthropic: Option<ApiToml>,
    pub openai: Option<ApiToml>,
    /// `[[models]]`: what Codaris knows about a model by name.
    pub models: Option<Vec<ModelToml>>,
    /// `[mcp.servers.NAME]`: the MCP servers the daemon starts.
    pub mcp: Option<super::mcp::McpToml>,
    /// `[nextflow]`: the programs the Nextflow tools run, the operator's compliance rules.
    pub nextflow: Option<super::nextflow::NextflowToml>,
    /// `[ncbi]`: the E-utilities endpoint, the email NCBI asks for, the API key.
    pub ncbi: Option<super::ncbi::NcbiToml>,
    /// `[research]`: the engines `web_research` asks.
    pub research: Option<super::research::ResearchToml>,
    /// `[scheduler]`: jobs that run while nobody watches.
    pub scheduler: Option<super::scheduler::SchedulerToml>,
    /// `[seqera]`: Wave, Seqera Platform, the token, the registries pushes may go to.
    pub seqera: Option<super::seqera::SeqeraToml>,
    /// `[telemetry]`: OpenTelemetry export over OTLP/HTTP, off unless an endpoint is named.
    pub telemetry: Option<super::telemetry::TelemetryToml>,
    /// `[compaction]`: result eviction and compaction as a session outgrows its window.
    pub compaction: Option<super::compaction::CompactionToml>,
    /// `[[hooks.pre_tool_use]]`: the operator's programs that see each call before the gate.
    pub hooks: Option<super::hooks::HooksToml>,
    /// `[policy]`: a shadow configuration every live call is also decided under.
    pub policy: Option<super::policy::PolicyToml>,
}

/// `[skills]` as written.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsToml {
    /// `load_skill`, the model loading a catalogued skill by name (default true).
    pub auto_discovery: Option<bool>,
}

/// `[subagents]` as written.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SubagentsToml {
    /// How deep children may nest: a session this deep spawns no child (default
    /// [`crate::config::DEFAULT_SUBAGENT_DEPTH`]; 0: no subagents at all).
    pub max_depth: Option<u32>,
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
    /// Dated log files kept (default [`crate::server::logging::DEFAULT_LOG_MAX_FILES`]).
    pub log_max_files: Option<usize>,
}

/// The ledger's page cache when `daemon.ledger_cache_mb` is unset: reads stay proportional to
/// what is asked, so a small cache serves them; sled's own default would be 1 GiB.
pub const DEFAULT_LEDGER_CACHE_MB: u64 = 64;

/// The largest `daemon.ledger_cache_mb` accepted (64 GiB): anything above is a typo.
pub const MAX_LEDGER_CACHE_MB: u64 = 64 * 1024;

/// How deep subagents nest by default: a person's session, its children and theirs.
pub const DEFAULT_SUBAGENT_DEPTH: u32 = 2;

/// The deepest `subagents.max_depth` may go (what the key check also says).
pub const MAX_SUBAGENT_DEPTH: u32 = 8;

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
    pub session_memory_max: Option<super::session_limits::SizeToml>,
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

/// Parses the text of a configuration file, naming the file and the key in any error.
pub fn parse_file(path: &Path, text: &str) -> Result<ConfigToml, ConfigError> {
    toml::from_str(text).map_err(|err| {
        let offset = err.span().map(|span| span.start);
        let message = one_line(err.message());
        // Type errors name only the expected type; add the key the user wrote there.
        let message = match offset.and_then(|at| key_at(text, at)) {
            Some(key) if !message.contains(&key) => format!("`{key}`: {message}"),
            _ => message,
        };
        ConfigError::Parse {
            file: path.to_path_buf(),
            message,
            line: offset.map(|at| line_of(text, at)),
        }
    })
}

/// The dotted key (`table.key`) assigned on the line that holds byte `offset`, if any.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text.get(line_start..)?.lines().next()?;
    let key = line.split_once('=')?.0.trim().trim_matches('"');
    if key.is_empty() || key.starts_with('[') {
        return None;
    }
    // `[table]`, or `[[table]]` for an entry of an array of tables.
    let table = before[..line_start].lines().rev().find_map(|l| {
        let l = l.trim();
        l.strip_prefix('[')?
            .strip_suffix(']')
            .map(|t| t.trim_start_matches('[').trim_end_matches(']').trim())
    });
    Some(match table {
        Some(table) => format!("{table}.{key}"),
        None => key.to_owned(),
    })
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(0, |prefix| prefix.matches('\n').count())
        + 1
}
