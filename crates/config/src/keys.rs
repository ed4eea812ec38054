//! Every key of the configuration file, dotted, with the kind of value it takes. A new key is
//! one line here (and its meaning in the daemon's `ConfigToml`; a daemon test fails until both
//! name it).

/// What a key's value must be. The checks are the ones that need nothing but the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    /// A whole number from `min` to `max`.
    Integer {
        min: u64,
        max: u64,
    },
    /// A number of seconds, whole or not, above zero.
    Seconds,
    /// A share of a whole, from 0.05 to 1 (`0.6`).
    Share,
    Text,
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// A list of text.
    Texts,
    /// A table of names to text (headers, an environment).
    TextMap,
    /// A path starting at `/`.
    AbsolutePath,
    /// A list of paths, each starting at `/`.
    AbsolutePaths,
    /// An `http://` or `https://` URL with a host.
    Url,
    /// A loopback address with a port, such as `127.0.0.1:7457`.
    Loopback,
    /// A number of bytes, or text such as `8G` or `512M`.
    Size,
    /// Search engines: `brave`, `bing`, `duckduckgo`, `searxng:<http(s) URL>`, at least one.
    Engines,
    /// Names of environment variables.
    VariableNames,
    /// A PreToolUse hook's `matcher`: a regular expression over tool names
    /// ([`crate::hook_matcher`]).
    Matcher,
    /// A program and its arguments, not a shell line: a list of text whose first entry names
    /// the program.
    Argv,
}

/// One key: its dotted name (`*` stands for a name of [`MAPS`]' tables; an entry of
/// [`TABLE_ARRAYS`] adds nothing) and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub name: &'static str,
    pub kind: Kind,
}

/// Tables whose keys are names the person chooses (`[mcp.servers.docs]`).
pub const MAPS: &[&str] = &["mcp.servers"];

/// Arrays of tables (`[[models]]`, `[[hooks.pre_tool_use]]`).
pub const TABLE_ARRAYS: &[&str] = &["models", "hooks.pre_tool_use"];

/// The keys each entry of an array of tables must set.
pub const REQUIRED: &[(&str, &[&str])] = &[("hooks.pre_tool_use", &["command"])];

const fn key(name: &'static str, kind: Kind) -> Key {
    Key { name, kind }
}

const ANY: u64 = u64::MAX;

/// Every key the file may set, in the order the documentation lists them.
pub const KEYS: &[Key] = &[
    key("allowed_dirs", Kind::AbsolutePaths),
    key("skills_dirs", Kind::AbsolutePaths),
    key("skills.auto_discovery", Kind::Bool),
    key("subagents.max_depth", Kind::Integer { min: 0, max: 8 }),
    key("memory.enabled", Kind::Bool),
    key("daemon.listen", Kind::Loopback),
    key(
        "daemon.detach_grace_seconds",
        Kind::Integer { min: 0, max: ANY },
    ),
    key(
        "daemon.card_timeout_seconds",
        Kind::Integer { min: 1, max: ANY },
    ),
    key(
        "daemon.ledger_cache_mb",
        Kind::Integer {
            min: 1,
            max: 64 * 1024,
        },
    ),
    key("daemon.log_format", Kind::OneOf(&["text", "json"])),
    key("daemon.log_max_files", Kind::Integer { min: 1, max: 1000 }),
    key("tools.lean_surface", Kind::Bool),
    key("tools.tool_search_api", Kind::Bool),
    key(
        "tools.output_limits.max_bytes",
        Kind::Integer { min: 1, max: ANY },
    ),
    key(
        "tools.output_limits.max_lines",
        Kind::Integer { min: 1, max: ANY },
    ),
    key("tools.http_allowlist", Kind::Texts),
    key("tools.command_allowlist", Kind::Texts),
    key("tools.sandbox_writable", Kind::AbsolutePaths),
    key("tools.sandbox_readable", Kind::AbsolutePaths),
    key("tools.env_passthrough", Kind::VariableNames),
    key("tools.websearch_engines", Kind::Engines),
    key("tools.http_default_headers", Kind::TextMap),
    key("tools.background", Kind::Bool),
    key("tools.preview_server", Kind::Bool),
    key(
        "tools.session_pids_max",
        Kind::Integer { min: 16, max: ANY },
    ),
    key("tools.session_memory_max", Kind::Size),
    key(
        "provider.name",
        Kind::OneOf(&["scripted", "anthropic", "openai"]),
    ),
    key("provider.model", Kind::Text),
    key("anthropic.api_key", Kind::Text),
    key("anthropic.base_url", Kind::Url),
    key(
        "anthropic.max_output_tokens",
        Kind::Integer {
            min: 1,
            max: u32::MAX as u64,
        },
    ),
    key(
        "anthropic.context_window",
        Kind::Integer {
            min: 4_096,
            max: i64::MAX as u64,
        },
    ),
    key("openai.api_key", Kind::Text),
    key("openai.base_url", Kind::Url),
    key(
        "openai.max_output_tokens",
        Kind::Integer {
            min: 1,
            max: u32::MAX as u64,
        },
    ),
    key(
        "openai.context_window",
        Kind::Integer {
            min: 4_096,
            max: i64::MAX as u64,
        },
    ),
    key("models.name", Kind::Text),
    key("models.multimodal", Kind::Bool),
    key("mcp.servers.*.command", Kind::Text),
    key("mcp.servers.*.args", Kind::Texts),
    key("mcp.servers.*.env", Kind::TextMap),
    key("mcp.servers.*.cwd", Kind::AbsolutePath),
    key("mcp.servers.*.url", Kind::Url),
    key("mcp.servers.*.headers", Kind::TextMap),
    key("mcp.servers.*.keywords", Kind::Texts),
    key("mcp.servers.*.trust", Kind::Bool),
    key("mcp.servers.*.enabled", Kind::Bool),
    key("mcp.servers.*.approval", Kind::OneOf(&["never", "ask"])),
    key("mcp.servers.*.share_roots", Kind::Bool),
    key("mcp.servers.*.startup_timeout_seconds", Kind::Seconds),
    key("mcp.servers.*.tool_timeout_seconds", Kind::Seconds),
    key(
        "mcp.servers.*.output_limits.max_bytes",
        Kind::Integer { min: 1, max: ANY },
    ),
    key(
        "mcp.servers.*.output_limits.max_lines",
        Kind::Integer { min: 1, max: ANY },
    ),
    key("nextflow.bin", Kind::Text),
    key("nextflow.nf_core", Kind::Text),
    key("nextflow.nf_test", Kind::Text),
    key("nextflow.rules_dir", Kind::AbsolutePath),
    key("nextflow.profiles", Kind::Texts),
    key("nextflow.pass_env", Kind::VariableNames),
    key("nextflow.test_datasets", Kind::Text),
    key("ncbi.base_url", Kind::Url),
    key("ncbi.email", Kind::Text),
    key("ncbi.api_key", Kind::Text),
    key("research.engines", Kind::Engines),
    key("scheduler.enabled", Kind::Bool),
    key("seqera.wave_url", Kind::Url),
    key("seqera.platform_url", Kind::Url),
    key("seqera.token", Kind::Text),
    key("seqera.registries", Kind::Texts),
    key("seqera.compute_envs", Kind::Texts),
    key("telemetry.otlp_endpoint", Kind::Url),
    key("telemetry.service_name", Kind::Text),
    key("telemetry.headers", Kind::TextMap),
    key("compaction.enable", Kind::Bool),
    key("compaction.evict_at", Kind::Share),
    key("compaction.evict_to", Kind::Share),
    key("compaction.compact_at", Kind::Share),
    key("compaction.server_side", Kind::Bool),
    key("hooks.pre_tool_use.matcher", Kind::Matcher),
    key("hooks.pre_tool_use.command", Kind::Argv),
    key("hooks.pre_tool_use.timeout_seconds", Kind::Seconds),
    key("policy.shadow", Kind::AbsolutePath),
];

/// Variables no command or run ever gets, whatever a configuration lists: the model
/// providers' keys; `CODARIS_KEYS_FD`, the pipe the keys crossed `codarisd`'s re-exec on;
/// `NOTIFY_SOCKET`, through which a command would speak for the daemon to its service manager.
/// The commands' environment (`codaris-tools`' `shell::env`) withholds them, and
/// `nextflow.pass_env` listing one is a problem of the file.
pub const WITHHELD_VARIABLES: [&str; 4] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "CODARIS_KEYS_FD",
    "NOTIFY_SOCKET",
];

/// The key named `name` (dotted, `*` for a name of a map), if there is one.
pub fn key_named(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|key| key.name == name)
}
