//! [`resolve`], a pure function: the file's options, the environment and the command line
//! combined into the [`Config`] the daemon runs with, every bad value named with its origin.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use codaris_agent::ProviderKind;
use codaris_tools::Engine;

use super::file::{
    ConfigToml, DEFAULT_LEDGER_CACHE_MB, DEFAULT_SUBAGENT_DEPTH, MAX_LEDGER_CACHE_MB,
    MAX_SUBAGENT_DEPTH, ModelToml,
};
use super::inputs::Sources;
use super::providers::ApiConfig;
use crate::error::ConfigError;

/// What the configuration says about one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    pub name: String,
    /// Shown pictures (`read_file` of a PNG) as pictures; else such a result is refused.
    pub multimodal: bool,
}

/// The resolved configuration the daemon runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub state_dir: PathBuf,
    /// The file that was read, when one was.
    pub config_file: Option<PathBuf>,
    /// The file the daemon reads, whether or not it exists (`load` sets it; else the one read).
    pub config_path: Option<PathBuf>,
    /// `allowed_dirs`: roots every session has besides its own project directory and workspace.
    pub allowed_dirs: Vec<PathBuf>,
    /// `$HOME`: never a session's implicit root.
    pub home: Option<PathBuf>,
    /// What `codaris status` warns about (an allowed dir that opens `/` or the home directory).
    pub warnings: Vec<String>,
    /// Where skills are looked for, in order; an earlier directory wins a name.
    pub skills_dirs: Vec<PathBuf>,
    /// `skills.auto_discovery`: `load_skill` is offered (default true).
    pub skills_auto_discovery: bool,
    /// The user's agent definitions (`<config dir>/agents`); `None` without a config directory.
    pub agents_dir: Option<PathBuf>,
    /// `subagents.max_depth`: a session this deep spawns no child.
    pub subagents_max_depth: u32,
    /// `[memory]`: the memory subagent, and where the user scope's notes are.
    pub memory: super::memory::Memory,
    pub listen: Option<SocketAddr>,
    /// How long a permission card waits for its answer (default 300 s).
    pub card_timeout: std::time::Duration,
    /// How long a turn with no client attached runs on before it is cancelled.
    pub detach_grace: std::time::Duration,
    /// `daemon.ledger_cache_mb`, in bytes: the ledger's sled page cache.
    pub ledger_cache_bytes: u64,
    /// `tools.output_limits`: bytes and lines of a tool result the model sees (64 KiB, 2000).
    pub output_max_bytes: usize,
    pub output_max_lines: usize,
    /// `tools.http_allowlist`: origins reached without a card.
    pub http_allowlist: Vec<String>,
    /// `tools.command_allowlist`: command prefixes run without a card, each one simple command.
    pub command_allowlist: Vec<String>,
    /// `tools.sandbox_writable`: more directories commands may write to under Landlock.
    pub sandbox_writable: Vec<PathBuf>,
    /// `tools.sandbox_readable`: more locations commands may read under Landlock; `None`
    /// when unset, for the default the daemon finds at start (`shell::default_readable`).
    pub sandbox_readable: Option<Vec<PathBuf>>,
    /// `tools.env_passthrough`: variable names commands get beyond the allowlist.
    pub env_passthrough: Vec<String>,
    /// `tools.websearch_engines`: the engines `websearch` asks, in order.
    pub websearch_engines: Vec<Engine>,
    /// `tools.http_default_headers`: checked header names and values, in name order.
    pub http_default_headers: http::HeaderMap,
    /// `tools.background`: commands may run on in the background.
    pub background: bool,
    /// `tools.preview_server`: the preview server is offered (with `background` only).
    pub preview_server: bool,
    /// `tools.session_pids_max`, `tools.session_memory_max`.
    pub session_limits: codaris_tools::shell::SessionLimits,
    pub lean_surface: bool,
    pub tool_search_api: bool,
    /// What answers a session that names none, its model, each API's key and base URL, as
    /// the daemon started with them (a login swaps them: `providers::LiveProviders`).
    pub providers: super::providers::ProviderSettings,
    /// What those were resolved from, so a login can resolve them again.
    pub provider_inputs: super::providers::ProviderInputs,
    /// Where each value came from, for `codaris config show`.
    pub recorded: super::record::Recorded,
    /// `[[models]]`, in file order, names unique.
    pub models: Vec<ModelConfig>,
    /// `[mcp.servers.NAME]`, in name order.
    pub mcp_servers: Vec<codaris_mcp::ServerSpec>,
    /// `[nextflow]`, resolved.
    pub nextflow: codaris_tools::nextflow::NextflowSetup,
    /// `[ncbi]`, resolved.
    pub ncbi: super::ncbi::NcbiConfig,
    /// `[research] engines`, else `tools.websearch_engines`.
    pub research_engines: Vec<Engine>,
    /// `[scheduler]`, resolved.
    pub scheduler: super::scheduler::SchedulerConfig,
    /// `[seqera]`, resolved, with `[nextflow] bin` for `lint_nextflow`.
    pub seqera: super::seqera::SeqeraConfig,
    /// The program that serves the built-in MCP server (`<it> mcp-server seqera`): `codarisd`
    /// itself, set by its `main`. `None` (a daemon inside another program, as in tests): the
    /// built-in server is not run.
    pub builtin_program: Option<PathBuf>,
    /// `daemon.log_format`, `daemon.log_max_files`.
    pub logging: super::logging::LogSettings,
    /// `[telemetry]`, when an endpoint is configured.
    pub telemetry: Option<super::telemetry::TelemetryConfig>,
    /// `[compaction]`, resolved.
    pub compaction: super::compaction::CompactionConfig,
    /// `[[hooks.pre_tool_use]]`, in file order.
    pub pre_tool_use: Vec<super::hooks::PreToolUseHook>,
    /// `policy.shadow`: the shadow configuration's file.
    pub shadow_path: Option<PathBuf>,
    /// That file's operator inputs, read and judged by `load` (resolving reads no file).
    pub shadow: Option<super::policy::Shadow>,
}

impl Config {
    /// The key and base URL of `kind`'s API.
    pub fn api(&self, kind: ProviderKind) -> &ApiConfig {
        self.providers.api(kind)
    }

    /// Whether `model` takes pictures: its `[[models]]` entry says, else the guess by name.
    pub fn multimodal(&self, model: &str) -> bool {
        self.models
            .iter()
            .find(|entry| entry.name == model)
            .map_or_else(
                || codaris_agent::multimodal_by_name(model),
                |entry| entry.multimodal,
            )
    }
}

/// The environment variables that override the file: Codaris's own, then each API's key and
/// base URL as the agent names them.
pub fn env_vars() -> Vec<&'static str> {
    let mut vars = vec![
        "CODARIS_ALLOWED_DIRS",
        "CODARIS_LEAN_7_TOOLS",
        "CODARIS_TOOL_SEARCH_API",
        "CODARIS_PROVIDER",
        "CODARIS_MODEL",
        super::ncbi::NCBI_API_KEY_VAR,
        super::seqera::TOWER_TOKEN_VAR,
    ];
    for kind in ProviderKind::ALL {
        vars.extend([kind.api_key_env(), kind.base_url_env()]);
    }
    vars
}

/// File, then environment, then flags; every bad value is named with where it came from.
pub fn resolve(sources: Sources) -> Result<Config, ConfigError> {
    let Sources {
        state_dir,
        home,
        file,
        config_dir,
        env,
        flags,
    } = sources;
    let (config_file, toml) = match file {
        Some((path, toml)) => (Some(path), toml),
        None => (None, ConfigToml::default()),
    };
    let recorded = super::record::record(&toml, &env, &flags);
    let origin = |key: &str| match &config_file {
        Some(path) => format!("`{key}` in {}", path.display()),
        None => format!("`{key}`"),
    };
    let env_str = |name: &str| -> Result<Option<String>, ConfigError> {
        match env.get(name) {
            None => Ok(None),
            Some(value) if value.is_empty() => Ok(None),
            Some(value) => {
                value
                    .to_str()
                    .map(|v| Some(v.to_owned()))
                    .ok_or_else(|| ConfigError::Invalid {
                        key: format!("environment variable `{name}`"),
                        reason: "is not valid UTF-8".to_owned(),
                    })
            }
        }
    };

    // No implicit directory: each session's own project directory and workspace are its roots
    // (see `Turns::task`); these are the extra ones the person names.
    let (allowed_dirs, allowed_from) = match env_str("CODARIS_ALLOWED_DIRS")? {
        Some(list) => {
            let key = "environment variable `CODARIS_ALLOWED_DIRS`".to_owned();
            let dirs = absolute_dirs(
                &key,
                list.split(':').filter(|s| !s.is_empty()).map(PathBuf::from),
            )?;
            (dirs, key)
        }
        None => match toml.allowed_dirs {
            Some(dirs) => (
                absolute_dirs(&origin("allowed_dirs"), dirs.into_iter())?,
                origin("allowed_dirs"),
            ),
            None => (Vec::new(), String::new()),
        },
    };
    let warnings = fence_warnings(&allowed_dirs, &allowed_from, home.as_deref());

    let skills_dirs = match toml.skills_dirs {
        Some(dirs) => absolute_dirs(&origin("skills_dirs"), dirs.into_iter())?,
        None => config_dir
            .as_ref()
            .map(|dir| vec![dir.join("skills")])
            .unwrap_or_default(),
    };
    let skills_auto_discovery = toml
        .skills
        .and_then(|skills| skills.auto_discovery)
        .unwrap_or(true);
    let scheduler = super::scheduler::resolve(toml.scheduler.clone(), config_dir.as_deref());
    let memory = super::memory::Memory::resolve(toml.memory, config_dir.as_deref());
    let agents_dir = config_dir.map(|dir| dir.join("agents"));
    let subagents_max_depth = match toml.subagents.and_then(|s| s.max_depth) {
        None => DEFAULT_SUBAGENT_DEPTH,
        Some(depth @ 0..=MAX_SUBAGENT_DEPTH) => depth,
        Some(_) => {
            return Err(ConfigError::Invalid {
                key: origin("subagents.max_depth"),
                reason: format!("must be at most {MAX_SUBAGENT_DEPTH}"),
            });
        }
    };

    let tools = toml.tools.unwrap_or_default();
    let limits = tools.output_limits.clone().unwrap_or_default();
    let positive = |key: &str, value: Option<usize>, default: usize| match value {
        Some(0) => Err(ConfigError::Invalid {
            key: origin(key),
            reason: "must be at least 1".to_owned(),
        }),
        Some(n) => Ok(n),
        None => Ok(default),
    };
    let output_max_bytes = positive("tools.output_limits.max_bytes", limits.max_bytes, 64 * 1024)?;
    let output_max_lines = positive("tools.output_limits.max_lines", limits.max_lines, 2000)?;
    let http_allowlist = tools.http_allowlist.clone().unwrap_or_default();
    if let Some(bad) = http_allowlist.iter().find(|o| o.trim().is_empty()) {
        return Err(ConfigError::Invalid {
            key: origin("tools.http_allowlist"),
            reason: format!("holds an empty origin `{bad}`"),
        });
    }
    let command_allowlist = tools.command_allowlist.clone().unwrap_or_default();
    if let Some(bad) = command_allowlist
        .iter()
        .find(|entry| codaris_policy::prefix_words(entry).is_none())
    {
        return Err(ConfigError::Invalid {
            key: origin("tools.command_allowlist"),
            reason: format!(
                "entry `{bad}` must be one plain command such as `cargo test` (no `;`, `&&`, `|`, `$(…)`, redirections or leading `NAME=value`)"
            ),
        });
    }
    let sandbox_writable = match tools.sandbox_writable.clone() {
        Some(dirs) => absolute_dirs(&origin("tools.sandbox_writable"), dirs.into_iter())?,
        None => Vec::new(),
    };
    let sandbox_readable = match tools.sandbox_readable.clone() {
        Some(paths) => Some(absolute_dirs(
            &origin("tools.sandbox_readable"),
            paths.into_iter(),
        )?),
        None => None,
    };
    let env_passthrough = tools.env_passthrough.clone().unwrap_or_default();
    if let Some(bad) = env_passthrough
        .iter()
        .find(|name| !codaris_tools::shell::is_variable_name(name))
    {
        return Err(ConfigError::Invalid {
            key: origin("tools.env_passthrough"),
            reason: format!("`{bad}` is not a variable name"),
        });
    }
    let websearch_engines = match tools.websearch_engines.clone() {
        Some(names) if names.is_empty() => {
            return Err(ConfigError::Invalid {
                key: origin("tools.websearch_engines"),
                reason: "names no engine; leave it out for brave and bing".to_owned(),
            });
        }
        Some(names) => names
            .iter()
            .map(|name| {
                Engine::from_name(name).ok_or_else(|| ConfigError::Invalid {
                    key: origin("tools.websearch_engines"),
                    reason: format!(
                        "`{name}` is not an engine: use brave, bing, duckduckgo or searxng:<http(s) URL>"
                    ),
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => vec![Engine::brave(), Engine::bing()],
    };
    let mut http_default_headers = http::HeaderMap::new();
    // A TOML table is in name order, so the map is too.
    for (name, value) in tools.http_default_headers.clone().unwrap_or_default() {
        let invalid = |what: &str| ConfigError::Invalid {
            key: origin("tools.http_default_headers"),
            reason: format!("header `{name}` has an invalid {what}"),
        };
        let header = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid("name"))?;
        let value = http::HeaderValue::from_str(&value).map_err(|_| invalid("value"))?;
        http_default_headers.insert(header, value);
    }
    let lean_surface = match env_str("CODARIS_LEAN_7_TOOLS")? {
        Some(value) => flag("environment variable `CODARIS_LEAN_7_TOOLS`", &value)?,
        None => tools.lean_surface.unwrap_or(true),
    };
    let tool_search_api = match env_str("CODARIS_TOOL_SEARCH_API")? {
        Some(value) => flag("environment variable `CODARIS_TOOL_SEARCH_API`", &value)?,
        None => tools.tool_search_api.unwrap_or(false),
    };

    // Provider settings have a layer of their own (a login), so they resolve apart.
    let provider_inputs = super::providers::ProviderInputs::gather(
        config_file.clone(),
        toml.provider.unwrap_or_default(),
        toml.anthropic.unwrap_or_default(),
        toml.openai.unwrap_or_default(),
        &env_str,
    )?;
    let providers = super::providers::resolve(&provider_inputs, None)?;

    let models = models(toml.models.unwrap_or_default(), &origin)?;

    let daemon_toml = toml.daemon.clone().unwrap_or_default();
    let card_timeout = match daemon_toml.card_timeout_seconds {
        None => std::time::Duration::from_secs(300),
        Some(0) => {
            return Err(ConfigError::Invalid {
                key: origin("daemon.card_timeout_seconds"),
                reason: "must be at least 1".to_owned(),
            });
        }
        Some(seconds) => std::time::Duration::from_secs(seconds),
    };

    // Zero is allowed: a turn whose client went away is cancelled at once.
    let detach_grace =
        std::time::Duration::from_secs(daemon_toml.detach_grace_seconds.unwrap_or(10));

    let ledger_cache_mb = match daemon_toml.ledger_cache_mb {
        None => DEFAULT_LEDGER_CACHE_MB,
        Some(mb @ 1..=MAX_LEDGER_CACHE_MB) => mb,
        Some(mb) => {
            return Err(ConfigError::Invalid {
                key: origin("daemon.ledger_cache_mb"),
                reason: format!("must be from 1 to {MAX_LEDGER_CACHE_MB} (MiB), not {mb}"),
            });
        }
    };

    let logging = super::logging::resolve(
        daemon_toml.log_format.as_deref(),
        daemon_toml.log_max_files,
        &origin,
    )?;
    let telemetry = super::telemetry::resolve(toml.telemetry, &origin)?;
    let compaction = super::compaction::resolve(toml.compaction, &origin)?;
    let pre_tool_use = super::hooks::resolve(toml.hooks, &origin)?;
    let shadow_path = super::policy::resolve(toml.policy, &origin)?;
    let session_limits = super::session_limits::resolve(
        tools.session_pids_max,
        tools.session_memory_max.as_ref(),
        &origin,
    )?;

    let listen = match flags.listen {
        Some(addr) => Some(loopback("--listen", &addr)?),
        None => match toml.daemon.and_then(|d| d.listen) {
            Some(addr) => Some(loopback(&origin("daemon.listen"), &addr)?),
            None => None,
        },
    };

    let mcp_servers = super::mcp::resolve(toml.mcp, &origin)?;
    let nextflow = super::nextflow::resolve(toml.nextflow, config_file.as_deref(), &origin)?;
    let ncbi =
        super::ncbi::resolve_ncbi(toml.ncbi, env_str(super::ncbi::NCBI_API_KEY_VAR)?, &origin)?;
    let research_engines = super::research::resolve_research_engines(toml.research, &origin)?
        .unwrap_or_else(|| websearch_engines.clone());
    let seqera = super::seqera::resolve_seqera(
        toml.seqera,
        env_str(super::seqera::TOWER_TOKEN_VAR)?,
        &nextflow.nextflow,
        &origin,
    )?;

    Ok(Config {
        state_dir,
        config_path: config_file.clone(),
        config_file,
        allowed_dirs,
        home,
        warnings,
        skills_dirs,
        skills_auto_discovery,
        agents_dir,
        subagents_max_depth,
        memory,
        listen,
        card_timeout,
        detach_grace,
        ledger_cache_bytes: ledger_cache_mb * 1024 * 1024,
        output_max_bytes,
        output_max_lines,
        http_allowlist,
        command_allowlist,
        sandbox_writable,
        sandbox_readable,
        env_passthrough,
        websearch_engines,
        http_default_headers,
        background: tools.background.unwrap_or(true),
        preview_server: tools.preview_server.unwrap_or(true),
        session_limits,
        lean_surface,
        tool_search_api,
        providers,
        provider_inputs,
        recorded,
        models,
        mcp_servers,
        nextflow,
        ncbi,
        research_engines,
        scheduler,
        seqera,
        builtin_program: None,
        logging,
        telemetry,
        compaction,
        pre_tool_use,
        shadow_path,
        shadow: None,
    })
}

/// The `[[models]]` entries: each named once, `multimodal` guessed by name when unset.
fn models(
    entries: Vec<ModelToml>,
    origin: &dyn Fn(&str) -> String,
) -> Result<Vec<ModelConfig>, ConfigError> {
    let mut models: Vec<ModelConfig> = Vec::with_capacity(entries.len());
    for (index, entry) in entries.into_iter().enumerate() {
        let key = format!("models[{}].name", index + 1);
        let name = match entry.name.map(|name| name.trim().to_owned()) {
            Some(name) if !name.is_empty() => name,
            Some(_) => {
                return Err(ConfigError::Invalid {
                    key: origin(&key),
                    reason: "is empty; name the model as the provider spells it".to_owned(),
                });
            }
            None => {
                return Err(ConfigError::Invalid {
                    key: origin(&key),
                    reason: "is missing; each `[[models]]` entry names its model".to_owned(),
                });
            }
        };
        if models.iter().any(|model| model.name == name) {
            return Err(ConfigError::Invalid {
                key: origin(&key),
                reason: format!("names `{name}` a second time"),
            });
        }
        let multimodal = entry
            .multimodal
            .unwrap_or_else(|| codaris_agent::multimodal_by_name(&name));
        models.push(ModelConfig { name, multimodal });
    }
    Ok(models)
}

/// True when `dir` would open the home directory or more: `/`, `$HOME`, or a parent of it.
/// Such a directory is never a session's root unless the person configured it.
pub fn opens_home(dir: &Path, home: Option<&Path>) -> bool {
    let dir = codaris_tools::normalize(dir).unwrap_or_else(|| dir.to_path_buf());
    dir == Path::new("/")
        || home
            .and_then(codaris_tools::normalize)
            .is_some_and(|home| home.starts_with(&dir))
}

/// One warning per configured allowed dir that opens the whole disk or the home directory.
fn fence_warnings(dirs: &[PathBuf], from: &str, home: Option<&Path>) -> Vec<String> {
    dirs.iter()
        .filter(|dir| opens_home(dir, home))
        .map(|dir| {
            let what = if codaris_tools::normalize(dir).as_deref() == Some(Path::new("/")) {
                "the whole disk"
            } else {
                "the home directory"
            };
            format!(
                "{from} names `{}`: every session's tools may read and change {what} (secrets and Codaris's state excepted)",
                dir.display()
            )
        })
        .collect()
}

fn absolute_dirs(
    key: &str,
    dirs: impl Iterator<Item = PathBuf>,
) -> Result<Vec<PathBuf>, ConfigError> {
    dirs.map(|dir| {
        if dir.is_absolute() {
            Ok(dir)
        } else {
            Err(ConfigError::Invalid {
                key: key.to_owned(),
                reason: format!("must hold absolute paths, not `{}`", dir.display()),
            })
        }
    })
    .collect()
}

fn flag(key: &str, value: &str) -> Result<bool, ConfigError> {
    match value {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        other => Err(ConfigError::Invalid {
            key: key.to_owned(),
            reason: format!("must be 0 or 1, not `{other}`"),
        }),
    }
}

fn loopback(key: &str, addr: &str) -> Result<SocketAddr, ConfigError> {
    let parsed: SocketAddr = addr.parse().map_err(|_| ConfigError::Invalid {
        key: key.to_owned(),
        reason: format!(
            "must be a loopback address with a port such as 127.0.0.1:7457, not `{addr}`"
        ),
    })?;
    if parsed.ip().is_loopback() {
        Ok(parsed)
    } else {
        Err(ConfigError::Invalid {
            key: key.to_owned(),
            reason: format!("must be a loopback address (127.0.0.0/8 or ::1), not `{addr}`"),
        })
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
