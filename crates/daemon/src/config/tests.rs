use super::*;
use std::collections::BTreeMap;
use std::ffi::OsString;

use crate::config::{Flags, parse_file};
use codaris_agent::ProviderChoice;
use pretty_assertions::assert_eq;

fn sources() -> Sources {
    Sources {
        state_dir: PathBuf::from("/state"),
        home: Some(PathBuf::from("/home/me")),
        file: None,
        config_dir: None,
        env: BTreeMap::new(),
        flags: Flags::default(),
    }
}

fn with_env(pairs: &[(&str, &str)]) -> Sources {
    let mut s = sources();
    s.env = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
        .collect();
    s
}

fn with_file(text: &str) -> Result<Sources, ConfigError> {
    let path = PathBuf::from("/etc/codaris/config.toml");
    let toml = parse_file(&path, text)?;
    let mut s = sources();
    s.file = Some((path, toml));
    Ok(s)
}

#[test]
fn defaults_name_no_allowed_dir_beyond_each_session_s_own() -> Result<(), ConfigError> {
    let config = resolve(sources())?;
    assert_eq!(
        config,
        Config {
            state_dir: PathBuf::from("/state"),
            config_file: None,
            config_path: None,
            allowed_dirs: Vec::new(),
            home: Some(PathBuf::from("/home/me")),
            warnings: Vec::new(),
            skills_dirs: Vec::new(),
            skills_auto_discovery: true,
            agents_dir: None,
            subagents_max_depth: 2,
            memory: Default::default(),
            listen: None,
            card_timeout: std::time::Duration::from_secs(300),
            detach_grace: std::time::Duration::from_secs(10),
            ledger_cache_bytes: 64 * 1024 * 1024,
            output_max_bytes: 64 * 1024,
            output_max_lines: 2000,
            http_allowlist: Vec::new(),
            command_allowlist: Vec::new(),
            sandbox_writable: Vec::new(),
            sandbox_readable: None,
            env_passthrough: Vec::new(),
            websearch_engines: vec![Engine::brave(), Engine::bing()],
            http_default_headers: http::HeaderMap::new(),
            background: true,
            preview_server: true,
            session_limits: codaris_tools::shell::SessionLimits::default(),
            lean_surface: true,
            tool_search_api: false,
            providers: crate::config::providers::ProviderSettings::default(),
            provider_inputs: crate::config::providers::ProviderInputs::default(),
            recorded: crate::config::record::record(
                &ConfigToml::default(),
                &BTreeMap::new(),
                &Flags::default()
            ),
            models: Vec::new(),
            mcp_servers: Vec::new(),
            nextflow: codaris_tools::nextflow::NextflowSetup::default(),
            ncbi: crate::config::ncbi::NcbiConfig {
                base_url: crate::config::ncbi::DEFAULT_EUTILS_URL.to_owned(),
                email: None,
                api_key: None,
            },
            research_engines: vec![Engine::brave(), Engine::bing()],
            scheduler: crate::config::scheduler::SchedulerConfig {
                enabled: false,
                user_dir: None,
            },
            seqera: codaris_seqera::SeqeraSetup::default(),
            builtin_program: None,
            logging: crate::config::logging::LogSettings::default(),
            telemetry: None,
            compaction: crate::config::compaction::CompactionConfig::default(),
            pre_tool_use: Vec::new(),
            shadow_path: None,
            shadow: None,
        }
    );
    Ok(())
}

#[test]
fn environment_overrides_the_file() -> Result<(), ConfigError> {
    let mut s = with_file(
        "allowed_dirs = [\"/a\"]\n[provider]\nname = \"openai\"\nmodel = \"m1\"\n[tools]\nlean_surface = true\n",
    )?;
    s.env = [
        ("CODARIS_ALLOWED_DIRS", "/x:/y"),
        ("CODARIS_PROVIDER", "anthropic"),
        ("CODARIS_LEAN_7_TOOLS", "0"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
    .collect();
    let config = resolve(s)?;
    assert_eq!(
        config.allowed_dirs,
        vec![PathBuf::from("/x"), PathBuf::from("/y")]
    );
    assert_eq!(
        config.providers.provider,
        Some(ProviderChoice::Api(ProviderKind::Anthropic))
    );
    assert_eq!(config.providers.model.as_deref(), Some("m1"));
    assert!(!config.lean_surface);
    Ok(())
}

#[test]
fn unknown_key_names_the_key_the_file_and_the_line() {
    let err = with_file("allowed_dirs = []\ncolour = \"blue\"\n").err();
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("/etc/codaris/config.toml"), "{message}");
    assert!(message.contains("colour"), "{message}");
    assert!(message.contains("line 2"), "{message}");
}

#[test]
fn bad_values_name_their_key() -> Result<(), ConfigError> {
    let cases = [
        ("[provider]\nname = \"gpt\"\n", "provider.name"),
        ("[daemon]\nlisten = \"0.0.0.0:7000\"\n", "daemon.listen"),
        ("[daemon]\nlisten = \"nonsense\"\n", "daemon.listen"),
        (
            "[daemon]\ncard_timeout_seconds = 0\n",
            "daemon.card_timeout_seconds",
        ),
        ("allowed_dirs = [\"relative\"]\n", "allowed_dirs"),
        ("skills_dirs = [\"/abs\", \"skills\"]\n", "skills_dirs"),
        ("[openai]\nbase_url = \"ftp://x\"\n", "openai.base_url"),
        (
            "[tools]\ncommand_allowlist = [\"cargo test; rm -rf ~\"]\n",
            "tools.command_allowlist",
        ),
        (
            "[tools]\ncommand_allowlist = [\"\"]\n",
            "tools.command_allowlist",
        ),
        (
            "[tools]\nsandbox_writable = [\".cargo\"]\n",
            "tools.sandbox_writable",
        ),
        (
            "[tools]\nsandbox_readable = [\"~/.cargo\"]\n",
            "tools.sandbox_readable",
        ),
        (
            "[tools]\nenv_passthrough = [\"MY-TOKEN\"]\n",
            "tools.env_passthrough",
        ),
        (
            "[tools]\nwebsearch_engines = [\"google\"]\n",
            "tools.websearch_engines",
        ),
        (
            "[tools]\nwebsearch_engines = [\"searxng:localhost:8888\"]\n",
            "tools.websearch_engines",
        ),
        (
            "[tools]\nwebsearch_engines = []\n",
            "tools.websearch_engines",
        ),
        (
            "[tools]\nhttp_default_headers = { \"Bad Name\" = \"x\" }\n",
            "tools.http_default_headers",
        ),
        (
            "[tools]\nhttp_default_headers = { \"X-A\" = \"line\\nbreak\" }\n",
            "tools.http_default_headers",
        ),
    ];
    for (text, key) in cases {
        let message = resolve(with_file(text)?)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.contains(key), "{text:?} gave {message:?}");
        assert!(message.contains("/etc/codaris/config.toml"), "{message}");
    }
    Ok(())
}

#[test]
fn the_ledger_cache_size_is_read_and_a_bad_one_refused_in_one_line() -> Result<(), ConfigError> {
    let config = resolve(with_file("[daemon]\nledger_cache_mb = 16\n")?)?;
    assert_eq!(config.ledger_cache_bytes, 16 * 1024 * 1024);
    for text in [
        "[daemon]\nledger_cache_mb = 0\n",
        "[daemon]\nledger_cache_mb = 10000000\n",
    ] {
        let message = resolve(with_file(text)?)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            message.contains("daemon.ledger_cache_mb") && message.contains("must be from 1 to"),
            "{text:?} gave {message:?}"
        );
        assert!(!message.contains('\n'), "not one line: {message:?}");
    }
    // Not a number: refused while reading the file, naming the key.
    let message = with_file("[daemon]\nledger_cache_mb = \"64MB\"\n")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(message.contains("ledger_cache_mb"), "{message}");
    Ok(())
}

#[test]
fn a_wrong_type_is_a_parse_error() {
    let message = with_file("[tools]\nlean_surface = \"yes\"\n")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(message.contains("lean_surface"), "{message}");
}

#[test]
fn bad_environment_values_name_the_variable() {
    for (name, value) in [
        ("CODARIS_LEAN_7_TOOLS", "maybe"),
        ("CODARIS_PROVIDER", "nope"),
        ("CODARIS_ALLOWED_DIRS", "rel:/abs"),
        ("ANTHROPIC_BASE_URL", "localhost:8080"),
    ] {
        let message = resolve(with_env(&[(name, value)]))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.contains(name), "{name}={value} gave {message:?}");
    }
}

#[test]
fn listen_flag_must_be_loopback() {
    let mut s = sources();
    s.flags.listen = Some("192.168.1.4:80".to_owned());
    let message = resolve(s).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("--listen"), "{message}");
    let mut s = sources();
    s.flags.listen = Some("[::1]:7000".to_owned());
    assert!(resolve(s).is_ok());
}

#[test]
fn skills_default_beside_the_configuration_file() -> Result<(), ConfigError> {
    let mut s = sources();
    s.config_dir = Some(PathBuf::from("/home/me/.config/codaris"));
    assert_eq!(
        resolve(s)?.skills_dirs,
        vec![PathBuf::from("/home/me/.config/codaris/skills")]
    );
    // No configuration directory (as in tests): no default, so nothing is scanned.
    assert_eq!(resolve(sources())?.skills_dirs, Vec::<PathBuf>::new());
    Ok(())
}

#[test]
fn skills_dirs_in_the_file_replace_the_default() -> Result<(), ConfigError> {
    let mut s = with_file("skills_dirs = [\"/srv/skills\", \"/home/me/skills\"]\n")?;
    s.config_dir = Some(PathBuf::from("/etc/codaris"));
    assert_eq!(
        resolve(s)?.skills_dirs,
        vec![
            PathBuf::from("/srv/skills"),
            PathBuf::from("/home/me/skills")
        ]
    );
    let mut s = with_file("skills_dirs = []\n")?;
    s.config_dir = Some(PathBuf::from("/etc/codaris"));
    assert_eq!(resolve(s)?.skills_dirs, Vec::<PathBuf>::new());
    Ok(())
}

#[test]
fn api_keys_are_redacted_in_debug() {
    let api = ApiConfig {
        api_key: Some("sk-secret".to_owned()),
        ..ApiConfig::default()
    };
    assert!(!format!("{api:?}").contains("sk-secret"));
}

#[test]
fn allowlists_and_sandbox_dirs_are_read() -> Result<(), ConfigError> {
    let config = resolve(with_file(
        "[tools]\ncommand_allowlist = [\"cargo test\", \"git 'status'\"]\nsandbox_writable = [\"/home/u/.cargo\"]\n",
    )?)?;
    assert_eq!(config.command_allowlist, ["cargo test", "git 'status'"]);
    assert_eq!(config.sandbox_writable, [PathBuf::from("/home/u/.cargo")]);
    let config = resolve(with_file(
        "[tools]\nsandbox_readable = [\"/home/u/.nextflow\", \"/home/u/.gitconfig\"]\n",
    )?)?;
    assert_eq!(
        config.sandbox_readable,
        Some(vec![
            PathBuf::from("/home/u/.nextflow"),
            PathBuf::from("/home/u/.gitconfig")
        ])
    );
    let config = resolve(with_file(
        "[tools]\nwebsearch_engines = [\"searxng:http://127.0.0.1:8888/\", \"duckduckgo\"]\n",
    )?)?;
    assert_eq!(
        config.websearch_engines,
        [
            Engine::searxng("http://127.0.0.1:8888/"),
            Engine::duckduckgo()
        ]
    );
    let config = resolve(with_file(
        "[tools]\nbackground = false\npreview_server = false\n",
    )?)?;
    assert!(!config.background && !config.preview_server);
    let config = resolve(with_file(
        "[tools]\nhttp_default_headers = { \"User-Agent\" = \"Mozilla/5.0\", \"Accept-Language\" = \"en\" }\n",
    )?)?;
    let headers: Vec<(&str, &[u8])> = config
        .http_default_headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_bytes()))
        .collect();
    assert_eq!(
        headers,
        [
            ("accept-language", &b"en"[..]),
            ("user-agent", &b"Mozilla/5.0"[..])
        ]
    );
    Ok(())
}

#[test]
fn models_entries_say_which_models_take_pictures() -> Result<(), ConfigError> {
    let config = resolve(with_file(
        "[[models]]\nname = \"llava:13b\"\nmultimodal = true\n\n[[models]]\nname = \"claude-haiku-text-only\"\nmultimodal = false\n\n[[models]]\nname = \"gpt-4o-mini\"\n",
    )?)?;
    assert_eq!(
        config.models,
        vec![
            ModelConfig {
                name: "llava:13b".to_owned(),
                multimodal: true,
            },
            ModelConfig {
                name: "claude-haiku-text-only".to_owned(),
                multimodal: false,
            },
            // No `multimodal`: guessed by name.
            ModelConfig {
                name: "gpt-4o-mini".to_owned(),
                multimodal: true,
            },
        ]
    );
    assert!(config.multimodal("llava:13b"));
    assert!(!config.multimodal("claude-haiku-text-only"));
    // Without an entry: the guess by name.
    assert!(config.multimodal("claude-sonnet-4-5"));
    assert!(!config.multimodal("qwen2.5-coder"));
    Ok(())
}

#[test]
fn bad_models_entries_name_their_key() -> Result<(), ConfigError> {
    let cases = [
        (
            "[[models]]\nmultimodal = true\n",
            "`models[1].name`",
            "is missing",
        ),
        ("[[models]]\nname = \" \"\n", "`models[1].name`", "is empty"),
        (
            "[[models]]\nname = \"m\"\n[[models]]\nname = \"m\"\n",
            "`models[2].name`",
            "a second time",
        ),
    ];
    for (text, key, reason) in cases {
        let message = resolve(with_file(text)?)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.contains(key), "{text:?} gave {message:?}");
        assert!(message.contains(reason), "{text:?} gave {message:?}");
        assert!(message.contains("/etc/codaris/config.toml"), "{message}");
        assert_eq!(message.lines().count(), 1, "{message}");
    }
    Ok(())
}

#[test]
fn a_models_entry_of_the_wrong_type_names_the_key_the_file_and_the_line() {
    for (text, key) in [
        (
            "[[models]]\nname = \"m\"\nmultimodal = \"yes\"\n",
            "models.multimodal",
        ),
        ("[[models]]\nname = \"m\"\nvision = true\n", "vision"),
        ("models = \"m\"\n", "models"),
    ] {
        let message = with_file(text)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.contains(key), "{text:?} gave {message:?}");
        assert!(message.contains("/etc/codaris/config.toml"), "{message}");
        if key != "models" {
            assert!(message.contains("line 3"), "{text:?} gave {message:?}");
        }
        assert_eq!(message.lines().count(), 1, "{message}");
    }
}

#[test]
fn an_allowed_dir_opening_the_disk_or_the_home_directory_is_warned_about() -> Result<(), ConfigError>
{
    let config = resolve(with_env(&[(
        "CODARIS_ALLOWED_DIRS",
        "/data:/:/home/me/:/home:/home/me/proj",
    )]))?;
    assert_eq!(
        config.allowed_dirs.len(),
        5,
        "an explicit configuration may still name them"
    );
    let warned: Vec<bool> = ["`/`", "`/home/me/`", "`/home`"]
        .iter()
        .map(|dir| config.warnings.iter().any(|w| w.contains(dir)))
        .collect();
    assert_eq!(warned, [true, true, true], "{:?}", config.warnings);
    assert_eq!(config.warnings.len(), 3, "{:?}", config.warnings);
    assert!(config.warnings[0].contains("CODARIS_ALLOWED_DIRS"));
    assert!(config.warnings[0].contains("the whole disk"));

    let file = resolve(with_file("allowed_dirs = [\"/home/me/..\"]\n")?)?;
    assert_eq!(file.warnings.len(), 1, "{:?}", file.warnings);
    assert!(file.warnings[0].contains("`allowed_dirs` in /etc/codaris/config.toml"));
    Ok(())
}

#[test]
fn each_provider_s_output_cap_is_read_and_a_bad_one_named_in_one_line() -> Result<(), ConfigError> {
    let config = resolve(sources())?;
    for kind in ProviderKind::ALL {
        assert_eq!(
            config.api(kind).max_output_tokens,
            codaris_agent::DEFAULT_MAX_OUTPUT_TOKENS
        );
    }
    let config = resolve(with_file(
        "[openai]\nmax_output_tokens = 512\n[anthropic]\nmax_output_tokens = 32000\n",
    )?)?;
    assert_eq!(config.api(ProviderKind::OpenAi).max_output_tokens, 512);
    assert_eq!(config.api(ProviderKind::Anthropic).max_output_tokens, 32000);
    for bad in ["0", "-5", "4294967296"] {
        let err = resolve(with_file(&format!(
            "[openai]\nmax_output_tokens = {bad}\n"
        ))?)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert_eq!(
            err,
            format!(
                "invalid configuration: `openai.max_output_tokens` in /etc/codaris/config.toml must be a positive number of tokens such as 8192, not `{bad}`"
            )
        );
    }
    let text = with_file("[openai]\nmax_output_tokens = \"lots\"\n")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(text.contains("max_output_tokens"), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    Ok(())
}

#[test]
fn a_context_window_and_the_compaction_shares_are_read_and_bad_ones_named()
-> Result<(), ConfigError> {
    let config = resolve(sources())?;
    assert_eq!(config.api(ProviderKind::OpenAi).context_window, None);
    assert!(config.compaction.enable && !config.compaction.server_side);
    let config = resolve(with_file(
        "[openai]\ncontext_window = 16384\n[compaction]\nevict_at = 0.5\nevict_to = 0.3\nserver_side = true\n",
    )?)?;
    assert_eq!(
        config.api(ProviderKind::OpenAi).context_window,
        Some(16_384)
    );
    assert_eq!(config.api(ProviderKind::Anthropic).context_window, None);
    assert_eq!(
        (config.compaction.evict_at, config.compaction.evict_to),
        (500, 300)
    );
    assert!(config.compaction.server_side);
    for bad in ["0", "100", "-1"] {
        let err = resolve(with_file(&format!(
            "[anthropic]\ncontext_window = {bad}\n"
        ))?)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert_eq!(
            err,
            format!(
                "invalid configuration: `anthropic.context_window` in /etc/codaris/config.toml must be a number of tokens of at least 4096, such as 200000, not `{bad}`"
            )
        );
    }
    let err = resolve(with_file("[compaction]\ncompact_at = 1.5\n")?)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("`compaction.compact_at` in /etc/codaris/config.toml must be a share"),
        "{err}"
    );
    Ok(())
}
