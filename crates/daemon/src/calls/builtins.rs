//! The built-in tools this daemon runs: their specs for the model, their index entries, and
//! running one inside the fence the policy checked.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use codaris_agent::{Picture, ToolDefinition, ToolRun};
use codaris_index::{Entry, Kind};
use codaris_policy::{Activity, BuiltinTool, ToolId};
use codaris_tools::files::human_size;
use codaris_tools::shell::{PoolConfig, ShellPools, TaskNotice};
use codaris_tools::{
    Content, Fence, OutputLimits, Tool, ToolContext, ToolError, ToolOutput, limit_text,
};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::calls::dispatch::Permit;
use crate::calls::prepare::Prepared;
use crate::calls::resolve::{Place, ResolvedPath};
pub use crate::calls::setup::{Setup, SkillsSetup};

/// What a session's model does with the pictures a tool returns (`read_file` of a PNG).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pictures {
    /// A multimodal model: they go to it as pictures, after the result's text.
    Shown,
    /// The model `model` takes none: a result with a picture is refused with its type and size.
    Refused { model: String },
}

/// Every built-in tool with a real implementation, by name.
#[derive(Clone)]
pub struct Builtins {
    tools: Vec<Arc<dyn Tool>>,
    /// The shell tools' per-session task pools, closed when a session ends.
    pools: Option<Arc<ShellPools>>,
    /// The tools this daemon runs, by their id: a call's typed id finds its tool.
    by_id: HashMap<BuiltinTool, Arc<dyn Tool>>,
    /// `tools.output_limits`, live: a committed configuration changes them.
    limits: codaris_tools::Live<OutputLimits>,
}

impl std::fmt::Debug for Builtins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.name()))
            .finish()
    }
}

/// The index entry of a catalogued tool (kind `core`).
fn entry_of(listed: &codaris_catalogue::CatalogueEntry) -> Entry {
    let mut entry = Entry::new(listed.name, Kind::Core, listed.description);
    entry.args = listed
        .schema()
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| props.keys().cloned().collect())
        .unwrap_or_default();
    entry.slash = codaris_policy::builtin(listed.name)
        .map(|spec| spec.slash.iter().map(|s| (*s).to_owned()).collect())
        .unwrap_or_default();
    entry
}

/// The index entries of the loop's own tools a search may find: `compact_context`, when
/// compaction is on (`[compaction] enable`). The always-on two are never searched for.
pub fn loop_entries(compaction: bool) -> Vec<Entry> {
    compaction
        .then(|| entry_of(&codaris_catalogue::COMPACT_CONTEXT))
        .into_iter()
        .collect()
}

impl Builtins {
    /// Cuts every result to `limits` before the model sees it.
    #[must_use]
    pub fn with_limits(mut self, limits: OutputLimits) -> Self {
        self.limits = codaris_tools::Live::new(limits);
        self
    }

    /// The output limits in force, shared: setting them changes every later result.
    pub fn output_limits(&self) -> codaris_tools::Live<OutputLimits> {
        self.limits.clone()
    }

    /// `run` with its text cut to the output limits: every result the model reads passes
    /// here, errors and the loop's own tools included.
    pub fn limit(&self, mut run: ToolRun) -> ToolRun {
        run.output = limit_text(&run.output, *self.limits.get());
        run
    }

    /// [`Builtins::limit`] with `over`'s limits where it sets them (an MCP server's own).
    pub fn limit_with(&self, mut run: ToolRun, over: codaris_mcp::OutputLimitOverrides) -> ToolRun {
        let base = *self.limits.get();
        let limits = OutputLimits {
            max_bytes: over.max_bytes.unwrap_or(base.max_bytes),
            max_lines: over.max_lines.unwrap_or(base.max_lines),
        };
        run.output = limit_text(&run.output, limits);
        run
    }

    /// The file, shell and web tools, set up as `setup` says.
    pub fn new(setup: Setup) -> (Self, mpsc::UnboundedReceiver<TaskNotice>) {
        let (pools, notices) = ShellPools::new(PoolConfig {
            background: setup.background,
            preview_server: setup.preview_server,
            limits: setup.session_limits,
            ..PoolConfig::default()
        });
        let pools = pools.with_sandbox(setup.sandbox_paths());
        let pools = match &setup.state_dir {
            Some(state_dir) => {
                let pools = pools.with_owner(&codaris_tools::shell::owner_of(state_dir));
                // What a killed daemon on this state left: its commands' cgroup (and every
                // process still in it) and their private temp dirs.
                let removed = pools.clean_leftovers();
                if removed > 0 {
                    tracing::info!(removed, "removed temp dirs a previous daemon left");
                }
                tracing::info!(containment = %pools.containment(), "command processes");
                tracing::info!(limits = %pools.limits(), "session limits");
                pools
            }
            None => pools,
        };
        let engines = if setup.engines.is_empty() {
            vec![
                codaris_tools::Engine::brave(),
                codaris_tools::Engine::bing(),
            ]
        } else {
            setup.engines
        };
        let pools = Arc::new(pools);
        let mut tools = codaris_tools::files::file_tools();
        tools.push(Arc::new(codaris_tools::Planner));
        tools.push(Arc::new(codaris_tools::PlanWrite));
        tools.push(Arc::new(codaris_tools::PlanList));
        tools.push(Arc::new(codaris_tools::PlanRead));
        tools.push(Arc::new(codaris_tools::PlanExit));
        let filing = setup
            .filing
            .clone()
            .unwrap_or_else(|| Arc::new(codaris_tools::filing::MemoryFiling::default()));
        tools.push(Arc::new(codaris_tools::filing::SessionDescribe::new(
            filing,
        )));
        tools.push(Arc::new(codaris_tools::SwitchModel));
        tools.push(Arc::new(codaris_tools::Question));
        tools.push(Arc::new(codaris_tools::SpawnAgent));
        if let Some(host) = &setup.scheduler {
            tools.extend(codaris_tools::scheduler::scheduler_tools(host));
        }
        tools.push(Arc::new(codaris_tools::docs::DocsSearch));
        tools.push(Arc::new(codaris_tools::docs::DocsRead));
        if setup.skills.load_skill {
            let tool = codaris_tools::LoadSkill::new(&setup.skills.dirs, &setup.skills.entries);
            tools.push(Arc::new(match setup.skills.switch.clone() {
                Some(switch) => tool.with_switch(switch),
                None => tool,
            }));
        }
        if let Some(editor) = &setup.config_editor {
            tools.extend(codaris_tools::config_tools::config_tools(editor));
        }
        // Registered whatever `[memory] enabled` says: the policy gives them to a memory
        // subagent's task alone, so the index and the registry stay the same either way.
        tools.extend(codaris_tools::memory::memory_tools(
            setup.memory_config_dir.clone(),
        ));
        tools.extend(codaris_tools::shell::tools(&pools));
        // The tool takes its headers as text; these were checked as names and values already,
        // so each one converts back.
        let headers = setup
            .http_default_headers
            .iter()
            .filter_map(|(name, value)| {
                Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
            })
            .collect();
        let eutils = match setup.ncbi.client() {
            Ok(client) => Some(client),
            Err(err) => {
                tracing::error!(%err, "the NCBI client cannot be built; search_pubmed, search_geo_sra and web_research's PubMed are off");
                None
            }
        };
        let literature = eutils.clone().map(|client| {
            Arc::new(codaris_tools::ncbi::PubmedLiterature::new(client))
                as Arc<dyn codaris_tools::Literature>
        });
        let research_engines = if setup.research_engines.is_empty() {
            engines.clone()
        } else {
            setup.research_engines.clone()
        };
        tools.extend(codaris_tools::web_tools_with_research(
            engines,
            headers,
            codaris_tools::WebResearch::new(research_engines, literature),
        ));
        let gates = setup
            .gates
            .clone()
            .unwrap_or_else(|| Arc::new(codaris_tools::nextflow::MemoryGates::default()));
        tools.extend(codaris_tools::nextflow::nextflow_tools(
            &pools,
            &setup.nextflow,
            gates,
        ));
        if let Some(client) = eutils {
            tools.extend(codaris_tools::ncbi_tools(client));
        }
        let mut builtins = Self::from_tools(tools);
        builtins.pools = Some(pools);
        (builtins, notices)
    }

    pub fn from_tools(tools: Vec<Arc<dyn Tool>>) -> Self {
        let by_id = tools.iter().map(|t| (t.id(), t.clone())).collect();
        Self {
            tools,
            pools: None,
            by_id,
            limits: codaris_tools::Live::new(OutputLimits::default()),
        }
    }

    /// What `codaris status` reports as `sandbox`: Landlock's state, the commands' mount
    /// namespace (`.git` read-only; refused by the kernel, commands are refused), then which
    /// mechanism keeps the sessions' processes, e.g. `landlock active (ABI v6): reads and
    /// writes confined, …; mount namespace: `.git` read-only, …; processes: cgroup v2 per
    /// session (…)`. It starts with Landlock's own sentence, as the field always did.
    pub fn sandbox_status(&self) -> String {
        let landlock = codaris_tools::shell::landlock_status();
        match &self.pools {
            Some(pools) => format!(
                "{landlock}; {}; processes: {}",
                codaris_tools::shell::mount_status(),
                pools.containment()
            ),
            None => landlock.to_string(),
        }
    }

    /// What `codaris status` reports as `limits`: each session's process and memory limits
    /// and what keeps them; `None` where commands do not run here.
    pub fn limits_status(&self) -> Option<codaris_tools::shell::LimitStatus> {
        self.pools.as_ref().map(|pools| pools.limits())
    }

    /// The shell tools' task pools, when commands run here.
    pub fn pools(&self) -> Option<Arc<ShellPools>> {
        self.pools.clone()
    }

    /// Stops the session's background commands and removes its temporary directory.
    pub fn close_session(&self, session_id: &str) {
        if let Some(pools) = &self.pools {
            pools.close(session_id);
        }
    }

    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.tools.iter().map(|t| t.name())
    }

    /// The index entries of the built-in tools (kind `core`), described as the catalogue
    /// describes them.
    pub fn entries(&self) -> Vec<Entry> {
        self.names()
            .filter_map(codaris_catalogue::entry)
            .map(entry_of)
            .collect()
    }

    /// The catalogue's spec of `name`, when this daemon runs it (the background tools only
    /// with background tasks on, …).
    pub fn spec(&self, name: &str) -> Option<ToolDefinition> {
        self.by_id.get(&BuiltinTool::parse(name)?)?;
        codaris_agent::catalogue_spec(name)
    }

    /// Runs the call a permit allows, inside the fence of the place it was decided in (its
    /// paths resolved when the call was prepared) widened by exactly the directories a grant
    /// opened for it; a picture in the result goes as `pictures` says. A write tool keeps what it
    /// changes in the turn's `checkpoint` first.
    pub async fn run(
        &self,
        session_id: &str,
        permit: &Permit,
        pictures: &Pictures,
        progress: codaris_tools::progress::ProgressSink,
        checkpoint: Option<&codaris_tools::files::Checkpoint>,
    ) -> Option<BuiltinRun> {
        let name = permit.tool().as_str();
        let args = permit.args();
        let id = permit.tool().builtin()?;
        let tool = self.by_id.get(&id)?;
        // `plan_exit` outside plan mode ran with no card: there is no mode to leave.
        let activity = permit.task().activity;
        if id == BuiltinTool::PlanExit && activity != Activity::Plan {
            return Some(BuiltinRun {
                run: ToolRun {
                    output: format!(
                        "the session is not in plan mode but in `{}` mode; nothing changed",
                        activity.as_str()
                    ),
                    ..ToolRun::default()
                },
                session_cwd: None,
                leaves_plan_mode: false,
                switch_model: None,
                question: None,
                spawn: None,
            });
        }
        let mut ctx = context(session_id, permit.place(), permit.opened());
        ctx.checkpoint = checkpoint.cloned();
        ctx.read = permit.read().clone();
        let mut session_cwd = None;
        let mut leaves_plan_mode = false;
        let mut switch_model = None;
        let mut question = None;
        let mut spawn = None;
        let run = match codaris_tools::progress::scope(progress, tool.call(&ctx, args)).await {
            Ok(output) => {
                session_cwd = output.session_cwd.clone();
                leaves_plan_mode = output.leaves_plan_mode;
                switch_model = output.switch_model.clone();
                question = output.question.clone();
                spawn = output.spawn.clone();
                run_of(name, args, output, pictures)
            }
            Err(ToolError::Model { message }) => ToolRun {
                output: message,
                is_error: true,
                ..ToolRun::default()
            },
            Err(err @ ToolError::Fatal { .. }) => {
                tracing::error!(tool = name, %err, "a tool failed");
                ToolRun {
                    output: format!("{name} failed inside Codaris: {err}"),
                    is_error: true,
                    ..ToolRun::default()
                }
            }
        };
        Some(BuiltinRun {
            run,
            session_cwd,
            leaves_plan_mode,
            switch_model,
            question,
            spawn,
        })
    }
}

impl Builtins {
    /// What a call of a built-in tool waiting on a card would do (a diff, a command line, a
    /// request), worked out in the fence the call would run in once the directories `opened`
    /// are granted, in the place its call was `prepared` in, on the arguments as its tool read
    /// them then.
    /// Reads files: call it off the async runtime. `None` for a tool with no preview or not
    /// run here. `Some(Err)` is the error the call would fail with for a tool that checks its
    /// arguments before a card (a pipeline launch): no card is shown for it.
    pub fn preview(
        &self,
        session_id: &str,
        id: &ToolId,
        args: &Value,
        prepared: &Prepared,
        opened: &[ResolvedPath],
    ) -> Option<Result<codaris_tools::preview::CallPreview, ToolRun>> {
        let name = id.as_str();
        let tool = self.by_id.get(&id.builtin()?)?;
        let mut ctx = context(session_id, prepared.place(), opened);
        ctx.read = prepared.read().clone();
        match tool.card_check(&ctx, args) {
            Some(Ok(preview)) => Some(Ok(preview)),
            Some(Err(ToolError::Model { message })) => Some(Err(ToolRun::error(message))),
            Some(Err(err @ ToolError::Fatal { .. })) => {
                tracing::error!(tool = name, %err, "a tool's check failed");
                Some(Err(ToolRun::error(format!(
                    "{name} failed inside Codaris: {err}"
                ))))
            }
            None => tool.preview(&ctx, args).map(Ok),
        }
    }
}

/// Where a call runs: inside the fence of the place it was decided in (its paths resolved when
/// the call was prepared, never again) widened by exactly the directories a grant `opened`.
pub(crate) fn context(session_id: &str, place: &Place, opened: &[ResolvedPath]) -> ToolContext {
    let owned = |path: &ResolvedPath| path.as_path().to_path_buf();
    let workspace = place.workspace.as_ref().map(owned).unwrap_or_default();
    let mut roots: Vec<PathBuf> = place.roots.iter().map(owned).collect();
    roots.push(workspace.clone());
    roots.extend(opened.iter().map(owned));
    let fence = Fence::new(roots)
        .with_secret(place.secret.iter().map(owned))
        .with_protected(place.protected.iter().map(owned));
    // The state directory is secret, all but the session's own workspace.
    let fence = match &place.state_dir {
        Some(state) => fence.with_state_dir(state.as_path(), &workspace),
        None => fence,
    };
    ToolContext {
        session_id: session_id.to_owned(),
        cwd: owned(&place.cwd),
        fence,
        workspace,
        checkpoint: None,
        read: Default::default(),
    }
}

/// What the model gets for a tool's output: its text, and its pictures as `pictures` says.
/// The text never holds the pictures' bytes.
/// What a built-in tool's call produced for the model, and a move of the session it asked for.
#[derive(Debug)]
pub struct BuiltinRun {
    pub run: ToolRun,
    /// The session's new working directory (`worktree_create`).
    pub session_cwd: Option<PathBuf>,
    /// The person agreed on `plan_exit`'s card: the session leaves plan mode.
    pub leaves_plan_mode: bool,
    /// `switch_model` asked for another model or reasoning level; the turn's host carries it
    /// out and answers in place of `run`.
    pub switch_model: Option<codaris_tools::ModelSwitch>,
    /// `question` asked the person; the turn's host asks on the turn's stream, waits and
    /// answers in place of `run`.
    pub question: Option<codaris_tools::Questions>,
    /// `spawn_agent` asked for a subagent; the turn's host starts it and answers with its
    /// report in place of `run`.
    pub spawn: Option<codaris_tools::SpawnRequest>,
}

fn run_of(tool: &str, args: &Value, output: ToolOutput, pictures: &Pictures) -> ToolRun {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for content in output.content {
        match content {
            Content::Text(text) => texts.push(text),
            Content::Image { media_type, data } => images.push((media_type, data)),
        }
    }
    picture_run(tool, args, texts.join("\n"), images, pictures)
}

/// A result of `text` and the pictures `images` (media type, bytes) as `pictures` says: shown
/// to a multimodal model, refused with their type and size to another.
pub(crate) fn picture_run(
    tool: &str,
    args: &Value,
    text: String,
    images: Vec<(String, Vec<u8>)>,
    pictures: &Pictures,
) -> ToolRun {
    match pictures {
        _ if images.is_empty() => ToolRun {
            output: text,
            ..ToolRun::default()
        },
        Pictures::Shown => ToolRun {
            output: text,
            pictures: images
                .iter()
                .map(|(media_type, data)| Picture::from_bytes(media_type.as_str(), data))
                .collect(),
            ..ToolRun::default()
        },
        Pictures::Refused { model } => {
            let what = images
                .iter()
                .map(|(media_type, data)| {
                    format!(
                        "{media_type}, {}",
                        human_size(u64::try_from(data.len()).unwrap_or(u64::MAX))
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            let subject = match args.get("path").and_then(Value::as_str) {
                Some(path) => format!("`{path}`"),
                None => "the result".to_owned(),
            };
            let noun = if images.len() == 1 {
                "a picture"
            } else {
                "pictures"
            };
            ToolRun {
                output: format!(
                    "{tool}: {subject} is {noun} ({what}); the model `{model}` does not take pictures (if it does, set `multimodal = true` in its `[[models]]` entry of the configuration)"
                ),
                is_error: true,
                ..ToolRun::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use codaris_tools::{Content, ToolOutput};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_state_the_configuration_and_the_keys_are_hidden_and_toolchains_read()
    -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let home = temp.path().to_path_buf();
        std::fs::create_dir(home.join(".cargo"))?;
        let setup = Setup {
            state_dir: Some(home.join(".local/state/codaris")),
            config_file: Some(home.join(".config/codaris/config.toml")),
            home: Some(home.clone()),
            sandbox_writable: vec![PathBuf::from("/w")],
            ..Setup::default()
        };
        let paths = setup.sandbox_paths();
        for hidden in [
            ".local/state/codaris",
            ".config/codaris/config.toml",
            // The ledger's chain key and published head (`chain_head.rs`).
            ".config/codaris/ledger.key",
            ".config/codaris/ledger.head",
            ".ssh",
            ".aws",
            ".gnupg",
        ] {
            assert!(
                paths.hidden.contains(&home.join(hidden)),
                "{hidden}: {paths:?}"
            );
        }
        assert_eq!(
            paths.carved,
            vec![home.join(".config/codaris"), home.join(".config")]
        );
        assert_eq!(paths.readable, vec![home.join(".cargo")]);
        assert_eq!(paths.writable, vec![PathBuf::from("/w")]);
        let configured = Setup {
            sandbox_readable: Some(vec![PathBuf::from("/opt/tools")]),
            ..setup
        };
        assert_eq!(
            configured.sandbox_paths().readable,
            vec![PathBuf::from("/opt/tools")]
        );
        Ok(())
    }

    /// An editor that refuses everything: the configuration tools are registered only with
    /// one, and this test is about registration, not editing.
    #[derive(Debug)]
    struct NoEditing;

    #[async_trait::async_trait]
    impl codaris_tools::config_tools::ConfigEditor for NoEditing {
        fn get(&self, _: &str) -> Result<String, ToolError> {
            Err(ToolError::model("no file"))
        }
        fn changes(&self) -> Result<String, ToolError> {
            Err(ToolError::model("no file"))
        }
        fn stage(&self, _: &str, _: &[String]) -> Result<String, ToolError> {
            Err(ToolError::model("no file"))
        }
        fn revert(&self, _: Option<&str>) -> Result<String, ToolError> {
            Err(ToolError::model("no file"))
        }
        fn check_commit(&self) -> Result<codaris_tools::preview::CallPreview, ToolError> {
            Err(ToolError::model("no file"))
        }
        fn check_rollback(&self) -> Result<codaris_tools::preview::CallPreview, ToolError> {
            Err(ToolError::model("no file"))
        }
        async fn commit(&self, _: &str) -> Result<String, ToolError> {
            Err(ToolError::model("no file"))
        }
        async fn rollback(&self, _: &str) -> Result<String, ToolError> {
            Err(ToolError::model("no file"))
        }
    }

    /// The catalogue is exactly the loop's two tools and what this daemon runs with every
    /// optional tool on, and each tool answers with its catalogue entry.
    #[test]
    fn every_registered_tool_is_catalogued_and_every_entry_runs_here() {
        /// The scheduler's tools are registered only with a scheduler to ask.
        #[derive(Debug)]
        struct NoJobs;
        #[async_trait::async_trait]
        impl codaris_tools::scheduler::JobsHost for NoJobs {
            async fn handle(
                &self,
                _: &str,
                _: &std::path::Path,
                _: codaris_tools::scheduler::JobRequest,
            ) -> Result<String, String> {
                Err("no scheduler".to_owned())
            }
        }
        let (builtins, _notices) = Builtins::new(Setup {
            scheduler: Some(Arc::new(NoJobs)),
            config_editor: Some(Arc::new(NoEditing)),
            ..Setup::default()
        });
        let mut names: Vec<&str> = codaris_catalogue::LOOP_TOOLS
            .iter()
            .map(|e| e.name)
            .collect();
        names.extend(builtins.names());
        let catalogued: Vec<&str> = codaris_catalogue::ALL.iter().map(|e| e.name).collect();
        assert_eq!(names, catalogued);
        for tool in &builtins.tools {
            let Some(listed) = codaris_catalogue::entry(tool.name()) else {
                unreachable!("{} has no catalogue entry", tool.name());
            };
            assert_eq!(tool.description(), listed.description, "{}", tool.name());
            assert_eq!(tool.schema(), listed.schema(), "{}", tool.name());
            assert!(builtins.spec(tool.name()).is_some(), "{}", tool.name());
        }
        assert_eq!(builtins.entries().len(), builtins.tools.len());
        for listed in codaris_catalogue::ALL {
            assert!(
                codaris_policy::builtin(listed.name).is_some(),
                "{} is not a policy builtin",
                listed.name
            );
        }
    }

    #[test]
    fn a_tool_switched_off_by_configuration_has_no_spec() {
        let (builtins, _notices) = Builtins::new(Setup {
            background: false,
            ..Setup::default()
        });
        assert!(builtins.spec("background_list").is_none());
        assert!(builtins.spec("preview_server").is_none());
        assert!(builtins.spec("run_command").is_some());
        // The loop's own tools are the agent's, not the daemon's.
        assert!(builtins.spec("search_tools").is_none());
    }

    /// `skills.auto_discovery` off: `load_skill` is not registered, the documentation is.
    #[test]
    fn load_skill_is_registered_only_while_auto_discovery_is_on() {
        let (on, _notices) = Builtins::new(Setup::default());
        assert!(on.spec("load_skill").is_some());
        let (off, _notices) = Builtins::new(Setup {
            skills: SkillsSetup {
                load_skill: false,
                ..SkillsSetup::default()
            },
            ..Setup::default()
        });
        assert!(off.spec("load_skill").is_none());
        assert!(!off.entries().iter().any(|e| e.name == "load_skill"));
        assert!(off.spec("codaris_docs_search").is_some());
        assert!(off.spec("codaris_docs_read").is_some());
    }

    fn picture_output() -> ToolOutput {
        ToolOutput {
            session_cwd: None,
            leaves_plan_mode: false,
            switch_model: None,
            question: None,
            spawn: None,
            content: vec![
                Content::Text("`plot.png`: image/png, 1x1".to_owned()),
                Content::Image {
                    media_type: "image/png".to_owned(),
                    data: b"\x89PNG".to_vec(),
                },
            ],
        }
    }

    #[test]
    fn a_multimodal_model_gets_the_text_and_the_picture_apart() {
        let run = run_of(
            "read_file",
            &json!({"path": "plot.png"}),
            picture_output(),
            &Pictures::Shown,
        );
        assert_eq!(
            run,
            ToolRun {
                output: "`plot.png`: image/png, 1x1".to_owned(),
                pictures: vec![Picture::from_bytes("image/png", b"\x89PNG")],
                ..ToolRun::default()
            }
        );
    }

    #[test]
    fn a_model_without_pictures_gets_one_line_with_the_type_and_size() {
        let run = run_of(
            "read_file",
            &json!({"path": "plot.png"}),
            picture_output(),
            &Pictures::Refused {
                model: "local-model".to_owned(),
            },
        );
        assert_eq!(
            run,
            ToolRun {
                output: "read_file: `plot.png` is a picture (image/png, 4 bytes); the model `local-model` does not take pictures (if it does, set `multimodal = true` in its `[[models]]` entry of the configuration)".to_owned(),
                is_error: true,
                ..ToolRun::default()
            }
        );
    }

    #[test]
    fn text_alone_is_the_same_on_every_route() {
        for pictures in [
            Pictures::Shown,
            Pictures::Refused {
                model: "m".to_owned(),
            },
        ] {
            let run = run_of("grep", &json!({}), ToolOutput::text("a\nb"), &pictures);
            assert_eq!(
                run,
                ToolRun {
                    output: "a\nb".to_owned(),
                    ..ToolRun::default()
                }
            );
        }
    }
}
