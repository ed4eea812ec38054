//! What the configuration says about the built-in tools (`Setup`), read once when the daemon
//! starts and handed to [`Builtins`](super::builtins::Builtins) to make them.

use std::path::PathBuf;
use std::sync::Arc;

use codaris_index::Entry;
use codaris_tools::shell::SandboxPaths;

/// What the configuration says about the built-in tools.
#[derive(Debug)]
pub struct Setup {
    /// Background tasks and the `background_*` tools.
    pub background: bool,
    /// `preview_server`, when `background` is on too.
    pub preview_server: bool,
    /// `tools.session_pids_max`, `tools.session_memory_max`.
    pub session_limits: codaris_tools::shell::SessionLimits,
    /// More directories commands may write to under Landlock.
    pub sandbox_writable: Vec<PathBuf>,
    /// More locations commands may read under Landlock; `None`: the toolchains under `home`.
    pub sandbox_readable: Option<Vec<PathBuf>>,
    /// Variables commands get beyond the allowlist (`tools.env_passthrough`).
    pub env_passthrough: Vec<String>,
    /// The installations of the runtimes commands start through (the launcher's Java,
    /// `python3`) wherever the daemon's `JAVA_HOME` and `PATH` find them: readable.
    pub runtimes: Vec<PathBuf>,
    /// The daemon's state directory: hidden from commands but for the session workspaces,
    /// and the name of its commands' cgroup and temp dirs.
    pub state_dir: Option<PathBuf>,
    /// The configuration file (hidden from commands) and its directory (carved out of any
    /// root that contains it), read or not.
    pub config_file: Option<PathBuf>,
    /// `$HOME`: its secrets (`~/.ssh`, `~/.aws`, `~/.gnupg`, …) are hidden and `~/.config`
    /// carved out of a root that contains it.
    pub home: Option<PathBuf>,
    /// The engines `websearch` asks, in order; empty: Brave then Bing, the catalogue's default.
    pub engines: Vec<codaris_tools::Engine>,
    /// Headers `http_request` sends unless a call names its own.
    pub http_default_headers: http::HeaderMap,
    /// `[nextflow]`: the programs the Nextflow tools run, the operator's compliance rules.
    pub nextflow: codaris_tools::nextflow::NextflowSetup,
    /// Where samplesheet gates are kept: the ledger's store; `None` keeps them in memory.
    pub gates: Option<Arc<dyn codaris_tools::nextflow::GateStore>>,
    /// Where `session_describe` files sessions: the session records; `None` keeps them in
    /// memory.
    pub filing: Option<Arc<dyn codaris_tools::filing::FilingStore>>,
    /// The configuration file's editor (the six `config_*` tools): `None` registers none.
    pub config_editor: Option<Arc<dyn codaris_tools::config_tools::ConfigEditor>>,
    /// `[ncbi]`: the one E-utilities client every session's searches share (and its limit).
    pub ncbi: crate::config::ncbi::NcbiConfig,
    /// The engines `web_research` asks; empty: those of `websearch`.
    pub research_engines: Vec<codaris_tools::Engine>,
    /// The skills `load_skill` loads, and whether it is offered.
    pub skills: SkillsSetup,
    /// The scheduler its eleven tools ask, when `[scheduler] enabled`; `None`: not offered.
    pub scheduler: Option<Arc<dyn codaris_tools::scheduler::JobsHost>>,
    /// Where the memory tools keep the user scope's notes (`<config dir>/memory`): the
    /// configuration directory; `None`: that scope has none.
    pub memory_config_dir: Option<PathBuf>,
}

/// What `load_skill` is made of.
#[derive(Clone)]
pub struct SkillsSetup {
    /// `skills.auto_discovery`: the tool is registered (default true).
    pub load_skill: bool,
    /// The skills directories (`skills_dirs`): the only places a skill is read from.
    pub dirs: Vec<PathBuf>,
    /// The skills catalogued from them (the skills scan's entries).
    pub entries: Vec<Entry>,
    /// Whether a skill is switched on now (the tool registry's state); `None`: all are.
    pub switch: Option<codaris_tools::SkillSwitch>,
}

impl std::fmt::Debug for SkillsSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillsSetup")
            .field("load_skill", &self.load_skill)
            .field("dirs", &self.dirs)
            .field("entries", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl Default for SkillsSetup {
    fn default() -> Self {
        Self {
            load_skill: true,
            dirs: Vec::new(),
            entries: Vec::new(),
            switch: None,
        }
    }
}

impl Default for Setup {
    /// The catalogue's defaults: everything on, Brave then Bing, no extra headers or dirs.
    fn default() -> Self {
        Self {
            background: true,
            preview_server: true,
            session_limits: codaris_tools::shell::SessionLimits::default(),
            sandbox_writable: Vec::new(),
            sandbox_readable: None,
            env_passthrough: Vec::new(),
            runtimes: Vec::new(),
            state_dir: None,
            config_file: None,
            home: None,
            engines: Vec::new(),
            http_default_headers: http::HeaderMap::new(),
            nextflow: codaris_tools::nextflow::NextflowSetup::default(),
            gates: None,
            filing: None,
            config_editor: None,
            ncbi: crate::config::ncbi::NcbiConfig::default(),
            research_engines: Vec::new(),
            skills: SkillsSetup::default(),
            scheduler: None,
            memory_config_dir: None,
        }
    }
}

impl Setup {
    pub fn from_config(config: &crate::config::Config) -> Self {
        Self {
            background: config.background,
            preview_server: config.preview_server,
            session_limits: config.session_limits,
            sandbox_writable: config.sandbox_writable.clone(),
            sandbox_readable: config.sandbox_readable.clone(),
            env_passthrough: config.env_passthrough.clone(),
            runtimes: codaris_tools::shell::daemon_runtimes()
                .into_iter()
                .map(|runtime| runtime.home)
                .collect(),
            state_dir: Some(config.state_dir.clone()),
            // Where the file would be read from when there is none: it may appear later.
            config_file: config.config_file.clone().or_else(|| {
                codaris_paths::resolve_config_file(&|name: &str| std::env::var_os(name))
                    .ok()
                    .map(|(file, _)| file)
            }),
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|home| home.is_absolute()),
            engines: config.websearch_engines.clone(),
            http_default_headers: config.http_default_headers.clone(),
            nextflow: config.nextflow.clone(),
            gates: None,
            filing: None,
            config_editor: None,
            ncbi: config.ncbi.clone(),
            research_engines: config.research_engines.clone(),
            skills: SkillsSetup {
                load_skill: config.skills_auto_discovery,
                dirs: config.skills_dirs.clone(),
                entries: Vec::new(),
                switch: None,
            },
            scheduler: None,
            memory_config_dir: config.memory.config_dir.clone(),
        }
    }
}

impl Setup {
    /// What commands may never touch and what they may read and write beyond the fence.
    pub fn sandbox_paths(&self) -> SandboxPaths {
        let mut hidden: Vec<PathBuf> = self.state_dir.iter().cloned().collect();
        hidden.extend(self.config_file.iter().cloned());
        // The ledger's chain key and published head, beside the file (`chain_head.rs`).
        hidden.extend(
            self.config_file
                .iter()
                .filter_map(|file| file.parent())
                .flat_map(|dir| {
                    [codaris_ledger::KEY_FILE, codaris_ledger::HEAD_FILE].map(|name| dir.join(name))
                }),
        );
        hidden.extend(
            self.home
                .iter()
                .flat_map(|home| codaris_tools::shell::home_secrets(home)),
        );
        let mut carved: Vec<PathBuf> = self
            .config_file
            .iter()
            .filter_map(|file| file.parent().map(PathBuf::from))
            .collect();
        carved.extend(
            self.home
                .iter()
                .flat_map(|home| codaris_tools::shell::home_carved(home)),
        );
        let mut readable = match (&self.sandbox_readable, &self.home) {
            (Some(paths), _) => paths.clone(),
            (None, Some(home)) => codaris_tools::shell::default_readable(home),
            (None, None) => Vec::new(),
        };
        // The programs the Nextflow tools run (nf-core's virtual environment, the configured
        // `nextflow`) must be readable where they run, in the sessions' sandbox.
        readable.extend(self.nextflow.install_dirs());
        readable.extend(self.runtimes.iter().cloned());
        SandboxPaths {
            hidden,
            carved,
            readable,
            writable: self.sandbox_writable.clone(),
            env_passthrough: self.env_passthrough.clone(),
        }
    }
}
