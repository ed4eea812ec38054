//! `codaris config show`: every value in force and where it came from.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::providers::ProviderSettings;
use super::record::REDACTED;
use super::resolve::Config;
use super::values::Source;

/// One effective value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    pub value: Value,
    pub source: Source,
    /// The line of the file that sets it, when `source` is the file and the line is known.
    pub line: Option<usize>,
}

/// Every value in force, in key order: the keys Codaris resolves itself with their effective
/// values, then whatever else the file sets (`[mcp]`, `[nextflow]`, …) as written.
pub fn entries(config: &Config, providers: &ProviderSettings) -> Vec<Entry> {
    let recorded = &config.recorded;
    let from = |key: &str, var: Option<&str>, flag: Option<&str>| {
        if flag.is_some_and(|f| recorded.flags.contains(f)) {
            Source::Flag
        } else if var.is_some_and(|v| recorded.env.contains(v)) {
            Source::Environment
        } else if recorded
            .file
            .keys()
            .any(|k| k == key || k.starts_with(&format!("{key}.")))
        {
            Source::File
        } else {
            Source::Default
        }
    };
    let paths = |dirs: &[std::path::PathBuf]| {
        json!(
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
        )
    };
    let secret = |value: &Option<String>| match value {
        Some(_) => json!(REDACTED),
        None => Value::Null,
    };
    let headers: BTreeMap<String, String> = config
        .http_default_headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                value.to_str().unwrap_or("<not text>").to_owned(),
            )
        })
        .collect();
    let engines = |engines: &[codaris_tools::Engine]| {
        json!(
            engines
                .iter()
                .map(codaris_tools::Engine::name)
                .collect::<Vec<_>>()
        )
    };
    let mut list: Vec<Entry> = Vec::new();
    let mut push = |key: &str, value: Value, source: Source| {
        list.push(Entry {
            key: key.to_owned(),
            value,
            source,
            line: None,
        });
    };
    push(
        "allowed_dirs",
        paths(&config.allowed_dirs),
        from("allowed_dirs", Some("CODARIS_ALLOWED_DIRS"), None),
    );
    push(
        "skills_dirs",
        paths(&config.skills_dirs),
        from("skills_dirs", None, None),
    );
    push(
        "skills.auto_discovery",
        json!(config.skills_auto_discovery),
        from("skills.auto_discovery", None, None),
    );
    push(
        "subagents.max_depth",
        json!(config.subagents_max_depth),
        from("subagents.max_depth", None, None),
    );
    push(
        "scheduler.enabled",
        json!(config.scheduler.enabled),
        from("scheduler.enabled", None, None),
    );
    push(
        "memory.enabled",
        json!(config.memory.enabled),
        from("memory.enabled", None, None),
    );
    push(
        "daemon.listen",
        json!(config.listen.map(|a| a.to_string())),
        from("daemon.listen", None, Some("listen")),
    );
    push(
        "daemon.detach_grace_seconds",
        json!(config.detach_grace.as_secs()),
        from("daemon.detach_grace_seconds", None, None),
    );
    push(
        "daemon.card_timeout_seconds",
        json!(config.card_timeout.as_secs()),
        from("daemon.card_timeout_seconds", None, None),
    );
    push(
        "daemon.ledger_cache_mb",
        json!(config.ledger_cache_bytes / (1024 * 1024)),
        from("daemon.ledger_cache_mb", None, None),
    );
    let tools: [(&str, Value, Option<&str>); 15] = [
        (
            "tools.lean_surface",
            json!(config.lean_surface),
            Some("CODARIS_LEAN_7_TOOLS"),
        ),
        (
            "tools.tool_search_api",
            json!(config.tool_search_api),
            Some("CODARIS_TOOL_SEARCH_API"),
        ),
        (
            "tools.output_limits.max_bytes",
            json!(config.output_max_bytes),
            None,
        ),
        (
            "tools.output_limits.max_lines",
            json!(config.output_max_lines),
            None,
        ),
        ("tools.http_allowlist", json!(config.http_allowlist), None),
        (
            "tools.command_allowlist",
            json!(config.command_allowlist),
            None,
        ),
        (
            "tools.sandbox_writable",
            paths(&config.sandbox_writable),
            None,
        ),
        (
            "tools.sandbox_readable",
            config
                .sandbox_readable
                .as_deref()
                .map_or(Value::Null, paths),
            None,
        ),
        ("tools.env_passthrough", json!(config.env_passthrough), None),
        (
            "tools.websearch_engines",
            engines(&config.websearch_engines),
            None,
        ),
        ("tools.http_default_headers", json!(headers), None),
        ("tools.background", json!(config.background), None),
        ("tools.preview_server", json!(config.preview_server), None),
        (
            "tools.session_pids_max",
            json!(config.session_limits.pids_max),
            None,
        ),
        (
            "tools.session_memory_max",
            json!(config.session_limits.memory_max),
            None,
        ),
    ];
    for (key, value, var) in tools {
        push(key, value, from(key, var, None));
    }
    let provider = |key: &str| providers.source(key);
    push(
        "provider.name",
        json!(providers.provider.map(|p| p.as_str())),
        provider("provider.name"),
    );
    push(
        "provider.model",
        json!(providers.model),
        provider("provider.model"),
    );
    for kind in codaris_agent::ProviderKind::ALL {
        let api = providers.api(kind);
        let section = kind.as_str();
        let key = format!("{section}.api_key");
        push(&key, secret(&api.api_key), provider(&key));
        let key = format!("{section}.base_url");
        push(&key, json!(api.base_url), provider(&key));
        let key = format!("{section}.max_output_tokens");
        push(&key, json!(api.max_output_tokens), provider(&key));
        let key = format!("{section}.context_window");
        push(&key, json!(api.context_window), provider(&key));
    }
    push(
        "ncbi.api_key",
        secret(&config.ncbi.api_key),
        from("ncbi.api_key", Some(super::ncbi::NCBI_API_KEY_VAR), None),
    );
    push(
        "seqera.token",
        if recorded.env.contains(super::seqera::TOWER_TOKEN_VAR)
            || recorded.file.contains_key("seqera.token")
        {
            json!(REDACTED)
        } else {
            Value::Null
        },
        from("seqera.token", Some(super::seqera::TOWER_TOKEN_VAR), None),
    );
    push(
        "daemon.log_format",
        json!(match config.logging.format {
            super::logging::LogFormat::Text => "text",
            super::logging::LogFormat::Json => "json",
        }),
        from("daemon.log_format", None, None),
    );
    push(
        "daemon.log_max_files",
        json!(config.logging.max_files),
        from("daemon.log_max_files", None, None),
    );
    let nextflow = &config.nextflow;
    let seqera = &config.seqera;
    let rest: [(&str, Value, Option<&str>); 15] = [
        ("nextflow.bin", json!(nextflow.nextflow), None),
        ("nextflow.nf_core", json!(nextflow.nf_core), None),
        ("nextflow.nf_test", json!(nextflow.nf_test), None),
        (
            "nextflow.rules_dir",
            json!(nextflow.rules_dir.as_ref().map(|d| d.display().to_string())),
            None,
        ),
        ("nextflow.profiles", json!(*nextflow.profiles.get()), None),
        ("nextflow.pass_env", json!(*nextflow.pass_env.get()), None),
        (
            "nextflow.test_datasets",
            json!(nextflow.test_datasets),
            None,
        ),
        ("ncbi.base_url", json!(config.ncbi.base_url), None),
        ("ncbi.email", json!(config.ncbi.email), None),
        ("research.engines", engines(&config.research_engines), None),
        ("seqera.wave_url", json!(seqera.wave_url), None),
        ("seqera.platform_url", json!(seqera.platform_url), None),
        ("seqera.registries", json!(seqera.registries), None),
        ("seqera.compute_envs", json!(seqera.compute_envs), None),
        (
            "telemetry.service_name",
            json!(
                config
                    .telemetry
                    .as_ref()
                    .map_or(super::telemetry::DEFAULT_SERVICE_NAME, |t| t
                        .service_name
                        .as_str())
            ),
            None,
        ),
    ];
    for (key, value, var) in rest {
        push(key, value, from(key, var, None));
    }
    let share = |per_mille: u16| json!(f64::from(per_mille) / 1000.0);
    let compaction = &config.compaction;
    for (key, value) in [
        ("compaction.enable", json!(compaction.enable)),
        ("compaction.evict_at", share(compaction.evict_at)),
        ("compaction.evict_to", share(compaction.evict_to)),
        ("compaction.compact_at", share(compaction.compact_at)),
        ("compaction.server_side", json!(compaction.server_side)),
        (
            "policy.shadow",
            json!(config.shadow_path.as_ref().map(|p| p.display().to_string())),
        ),
    ] {
        push(key, value, from(key, None, None));
    }
    // Each hook resolved (its default timeout filled in), in the order they run their answers in.
    let hooks: Vec<Value> = config
        .pre_tool_use
        .iter()
        .map(|hook| {
            json!({
                "matcher": hook.matcher,
                "command": hook.command,
                "timeout_seconds": hook.timeout.as_secs_f64(),
            })
        })
        .collect();
    push(
        "hooks.pre_tool_use",
        json!(hooks),
        from("hooks.pre_tool_use", None, None),
    );
    // Unset (no export) unless the file names a collector; then the file's entries below say it.
    for key in ["telemetry.otlp_endpoint", "telemetry.headers"] {
        if !recorded
            .file
            .keys()
            .any(|k| k == key || k.starts_with(&format!("{key}.")))
        {
            push(key, Value::Null, Source::Default);
        }
    }
    let shown: BTreeSet<String> = list.iter().map(|e| e.key.clone()).collect();
    // The rest of the file as written: what it sets beyond the keys above.
    for (key, value) in &recorded.file {
        let covered = shown
            .iter()
            .any(|s| key == s || key.starts_with(&format!("{s}.")));
        if !covered
            && !key.starts_with("provider.")
            && !key.starts_with("anthropic.")
            && !key.starts_with("openai.")
        {
            list.push(Entry {
                key: key.clone(),
                value: value.clone(),
                source: Source::File,
                line: None,
            });
        }
    }
    for entry in &mut list {
        if entry.source == Source::File {
            entry.line = recorded.line_of(&entry.key);
        }
    }
    list.sort_by(|a, b| a.key.cmp(&b.key));
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    use crate::config::{ConfigToml, Flags, Sources, parse_file, resolve};
    use pretty_assertions::assert_eq;
    use std::path::PathBuf;

    fn source_of(entries: &[Entry], key: &str) -> Option<(Value, Source)> {
        entries
            .iter()
            .find(|e| e.key == key)
            .map(|e| (e.value.clone(), e.source))
    }

    #[test]
    fn each_value_names_the_file_the_environment_the_flag_or_the_default()
    -> Result<(), crate::ConfigError> {
        let path = PathBuf::from("/etc/codaris/config.toml");
        let text = "[tools]\nhttp_allowlist = [\"https://api.github.com\"]\n[openai]\napi_key = \"sk-file-secret\"\n[mcp.servers.docs]\nurl = \"http://127.0.0.1:1/mcp\"\nheaders = { Authorization = \"Bearer hidden\" }\n[nextflow]\nbin = \"nextflow\"\n[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\nheaders = { authorization = \"Bearer collector-secret\" }\n";
        let toml = parse_file(&path, text)?;
        let config = resolve(Sources {
            state_dir: PathBuf::from("/state"),
            home: None,
            file: Some((path, toml)),
            config_dir: None,
            env: [
                ("CODARIS_MODEL", "env-model"),
                ("CODARIS_LEAN_7_TOOLS", "0"),
            ]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect(),
            flags: Flags {
                listen: Some("127.0.0.1:7457".to_owned()),
            },
        })?;
        let entries = entries(&config, &config.providers);
        assert_eq!(
            source_of(&entries, "tools.http_allowlist"),
            Some((json!(["https://api.github.com"]), Source::File))
        );
        assert_eq!(
            source_of(&entries, "provider.model"),
            Some((json!("env-model"), Source::Environment))
        );
        assert_eq!(
            source_of(&entries, "tools.lean_surface"),
            Some((json!(false), Source::Environment))
        );
        assert_eq!(
            source_of(&entries, "daemon.listen"),
            Some((json!("127.0.0.1:7457"), Source::Flag))
        );
        assert_eq!(
            source_of(&entries, "daemon.card_timeout_seconds"),
            Some((json!(300), Source::Default))
        );
        assert_eq!(
            source_of(&entries, "openai.api_key"),
            Some((json!(REDACTED), Source::File))
        );
        assert_eq!(
            source_of(&entries, "nextflow.bin"),
            Some((json!("nextflow"), Source::File))
        );
        let all = format!("{entries:?}");
        assert!(!all.contains("sk-file-secret"), "{all}");
        assert!(!all.contains("Bearer hidden"), "{all}");
        assert!(!all.contains("collector-secret"), "{all}");
        let keys: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
        Ok(())
    }

    /// The documented example, and the same with its `#: ` settings switched on.
    const EXAMPLE: &str = include_str!("../../../../docs/config.example.toml");

    fn switched_on(text: &str) -> String {
        text.lines()
            .map(|line| line.strip_prefix("#: ").unwrap_or(line))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The fields serde expects where a probe key was refused as unknown, else `None`.
    fn expected_fields(text: &str) -> Option<Vec<String>> {
        let err = toml::from_str::<ConfigToml>(text).err()?;
        let message = err.message().to_owned();
        if !message.contains("unknown field `zz_probe`") {
            return None;
        }
        let (_, after) = message.split_once("expected")?;
        Some(
            after
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect(),
        )
    }

    /// Every key `ConfigToml` takes, dotted, found by asking serde (each table refuses unknown
    /// fields and names the ones it knows); `*` stands for a name of a map (`mcp.servers.*`).
    fn walk(path: &[String], out: &mut Vec<String>) {
        let header = path
            .iter()
            .map(|p| if p == "*" { "zz_name" } else { p.as_str() })
            .collect::<Vec<_>>()
            .join(".");
        let probe = |form: String| expected_fields(&format!("{form}\nzz_probe = 1\n"));
        let (fields, star) = if path.is_empty() {
            (expected_fields("zz_probe = 1\n"), false)
        } else if let Some(fields) = probe(format!("[{header}]")) {
            (Some(fields), false)
        } else if let Some(fields) = probe(format!("[[{header}]]")) {
            (Some(fields), false)
        } else {
            (probe(format!("[{header}.zz_name]")), true)
        };
        match fields {
            Some(fields) => {
                for field in fields {
                    let mut next = path.to_vec();
                    if star {
                        next.push("*".to_owned());
                    }
                    next.push(field);
                    walk(&next, out);
                }
            }
            None => out.push(path.join(".")),
        }
    }

    fn present(prefix: &str, value: &toml::Value, out: &mut Vec<String>) {
        match value {
            toml::Value::Table(table) => {
                for (name, inner) in table {
                    let name = if prefix == "mcp.servers" { "*" } else { name };
                    let key = if prefix.is_empty() {
                        name.to_owned()
                    } else {
                        format!("{prefix}.{name}")
                    };
                    present(&key, inner, out);
                }
            }
            toml::Value::Array(items)
                if items.iter().all(toml::Value::is_table) && !items.is_empty() =>
            {
                for item in items {
                    present(prefix, item, out);
                }
            }
            _ => out.push(prefix.to_owned()),
        }
    }

    #[test]
    fn the_example_file_resolves_and_shows_every_key() -> Result<(), Box<dyn std::error::Error>> {
        for text in [EXAMPLE.to_owned(), switched_on(EXAMPLE)] {
            // The offline check is never stricter than the daemon on the documented file.
            assert_eq!(codaris_config::check(&text), Vec::new());
            let path = PathBuf::from("/etc/codaris/config.toml");
            let toml = parse_file(&path, &text)?;
            resolve(Sources {
                state_dir: PathBuf::from("/state"),
                home: None,
                file: Some((path, toml)),
                config_dir: None,
                env: BTreeMap::new(),
                flags: Flags::default(),
            })?;
        }
        let mut keys = Vec::new();
        walk(&[], &mut keys);
        // The probe found the tables it must have: a sanity check of the probe itself.
        for known in [
            "daemon.listen",
            "tools.output_limits.max_lines",
            "mcp.servers.*.url",
            "models.multimodal",
        ] {
            assert!(keys.contains(&known.to_owned()), "{known} not in {keys:?}");
        }
        let mut shown = Vec::new();
        present(
            "",
            &toml::from_str::<toml::Value>(&switched_on(EXAMPLE))?,
            &mut shown,
        );
        let missing: Vec<&String> = keys
            .iter()
            .filter(|key| {
                !shown
                    .iter()
                    .any(|s| s == *key || s.starts_with(&format!("{key}.")))
            })
            .collect();
        assert!(
            missing.is_empty(),
            "docs/config.example.toml lacks {missing:?}"
        );
        Ok(())
    }

    /// `codaris config check` judges a file by `codaris_config::KEYS`, with no daemon at hand:
    /// the list names exactly the keys `ConfigToml` takes. A key added to one and not the other
    /// fails here, naming it.
    #[test]
    fn the_offline_key_list_is_the_keys_the_daemon_takes() {
        let mut taken = Vec::new();
        walk(&[], &mut taken);
        taken.sort();
        let mut listed: Vec<String> = codaris_config::KEYS
            .iter()
            .map(|key| key.name.to_owned())
            .collect();
        listed.sort();
        assert_eq!(listed, taken);
    }

    /// Every key `codaris config show` lists, a default included: nothing the file may set is
    /// left out because it was left at its default.
    #[test]
    fn show_lists_every_key_with_no_file() -> Result<(), crate::ConfigError> {
        let config = resolve(Sources {
            state_dir: PathBuf::from("/state"),
            home: None,
            file: None,
            config_dir: None,
            env: BTreeMap::new(),
            flags: Flags::default(),
        })?;
        let entries = entries(&config, &config.providers);
        let shown: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
        let missing: Vec<&str> = codaris_config::KEYS
            .iter()
            .map(|key| key.name)
            .filter(|name| {
                !name.starts_with("mcp.servers.*.")
                    && !name.starts_with("models.")
                    && !name.starts_with("hooks.pre_tool_use.")
            })
            .filter(|name| !shown.contains(name))
            .collect();
        assert_eq!(missing, Vec::<&str>::new());
        for (key, value) in [
            ("daemon.log_format", json!("text")),
            ("daemon.log_max_files", json!(7)),
            ("nextflow.bin", json!("nextflow")),
            ("telemetry.otlp_endpoint", Value::Null),
        ] {
            assert_eq!(
                source_of(&entries, key),
                Some((value, Source::Default)),
                "{key}"
            );
        }
        Ok(())
    }
}
