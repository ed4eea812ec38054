//! Launching `nextflow run` for a session: what the launch tools (`run_built_pipeline`,
//! `autopilot_pipeline`) check before a run starts and how it starts.
//!
//! Before: the pipeline is a directory under the fence with a `main.nf`; each profile is in
//! the operator's allowlist; every samplesheet the run is given (`input`, or a parameter whose
//! schema entry names a schema, from `params` or the params file) is a file under the fence
//! with a passing gate that still holds ([`gate_holds`]). The grant (`run_pipeline` for the
//! pipeline) is the policy's, decided before the call reaches here.
//!
//! How: in the session's task pool and sandbox like its commands (the roots writable, as a
//! pipeline writes its launch directory and results), one run at a time per pipeline and per
//! launch directory across the daemon ([`Launches`]), since Nextflow locks its launch
//! directory's cache and a second run there would fail or clobber the first.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use codaris_nextflow::executor::ExecutorSettings;
use codaris_nextflow::launch::{
    LaunchPlan, param_pairs, params_file_values, run_name, samplesheet_params,
};
use codaris_nextflow::parse::load_config;
use codaris_nextflow::runner::{Invocation, find_program, install_hint};
use serde_json::Value;

use super::NextflowSetup;
use super::args::{flag, input_file, located_file, new_dir, optional_string, pipeline_dir};
use super::gate::{GateRecord, GateStore, gate_holds};
use super::runner::command_line;
use super::work_dir::{RunWorkDir, WorkDir, run_work_dir};
use crate::context::ToolContext;
use crate::preview::{CallPreview, PreviewKind};
use crate::shell::{ShellPools, Started, TaskPool, TaskStatus};
use crate::tool::ToolError;

/// What the launch tools share: the sandboxes, the setup, the gates and the runs going on.
#[derive(Debug)]
pub(super) struct LaunchShared {
    pub pools: Arc<ShellPools>,
    pub setup: NextflowSetup,
    pub gates: Arc<dyn GateStore>,
    pub launches: Launches,
    pub names: ReservedNames,
}

/// Run names a permission card showed, kept so the run the card allowed is the one it showed
/// (`-name` is part of the command line). Keyed by session, tool and the call's arguments;
/// a run takes its name once, and a run no card showed gets a fresh one.
#[derive(Debug, Default)]
pub(super) struct ReservedNames(Mutex<Vec<(String, String)>>);

/// Names kept for cards not answered yet; an unanswered card's name is dropped past this.
const RESERVED_NAMES: usize = 64;

impl ReservedNames {
    fn key(ctx: &ToolContext, tool: &str, args: &Value) -> String {
        format!("{}\0{tool}\0{args}", ctx.session_id)
    }

    /// The name a card for this call shows: the one reserved already, else a fresh one.
    pub(super) fn reserve(&self, ctx: &ToolContext, tool: &str, args: &Value) -> String {
        let key = Self::key(ctx, tool, args);
        let mut names = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, name)) = names.iter().find(|(k, _)| *k == key) {
            return name.clone();
        }
        let name = fresh_run_name();
        names.push((key, name.clone()));
        if names.len() > RESERVED_NAMES {
            names.remove(0);
        }
        name
    }

    /// The name a card showed for this call, taken; else a fresh one.
    pub(super) fn take(&self, ctx: &ToolContext, tool: &str, args: &Value) -> String {
        let key = Self::key(ctx, tool, args);
        let mut names = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match names.iter().position(|(k, _)| *k == key) {
            Some(at) => names.remove(at).1,
            None => fresh_run_name(),
        }
    }
}

/// A run Codaris started that may still be going.
#[derive(Debug, Clone)]
pub(super) struct ActiveRun {
    pub run_name: String,
    pub pipeline: PathBuf,
    pub launch_dir: PathBuf,
    pub session_id: String,
    pub started: Started,
    /// The tool that started it.
    pub tool: &'static str,
}

/// Runs kept after they end, newest last, for their console (`analyze_run_log` reads it).
const KEPT_RUNS: usize = 32;
/// The most of a run's console kept for reading back, from its end.
const CONSOLE_BYTES: usize = 1024 * 1024;

/// The runs started in this daemon (the last [`KEPT_RUNS`] of them), one per pipeline and
/// launch directory running at a time.
#[derive(Debug, Default)]
pub(super) struct Launches(Mutex<Vec<ActiveRun>>);

impl Launches {
    /// Starts a run with `start` unless one is going on the same pipeline or in the same
    /// launch directory; the check and the start happen under one lock, so two calls at once
    /// cannot both start.
    pub fn start_exclusive(
        &self,
        tool: &'static str,
        plan: &LaunchPlan,
        session_id: &str,
        start: impl FnOnce() -> Result<Started, ToolError>,
    ) -> Result<ActiveRun, ToolError> {
        let mut runs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(refusal) = busy_in(&runs, tool, &plan.pipeline, &plan.launch_dir, session_id) {
            return Err(refusal);
        }
        let started = start()?;
        let run = ActiveRun {
            run_name: plan.run_name.clone(),
            pipeline: plan.pipeline.clone(),
            launch_dir: plan.launch_dir.clone(),
            session_id: session_id.to_owned(),
            started,
            tool,
        };
        runs.push(run.clone());
        while runs.len() > KEPT_RUNS {
            let Some(ended) = runs
                .iter()
                .position(|run| !run.started.task.status().is_running())
            else {
                break;
            };
            runs.remove(ended);
        }
        Ok(run)
    }

    /// The refusal of a test (or other run) of `pipeline` in `launch_dir` while a run Codaris
    /// started there is going; `None` when nothing runs there.
    pub fn busy(
        &self,
        tool: &'static str,
        pipeline: &Path,
        launch_dir: &Path,
        session_id: &str,
    ) -> Option<ToolError> {
        let runs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        busy_in(&runs, tool, pipeline, launch_dir, session_id)
    }

    /// The console (stdout, then stderr) of the newest run Codaris started in `launch_dir`
    /// (the one named `run`, when given), with its name.
    pub fn console(&self, launch_dir: &Path, run: Option<&str>) -> Option<(String, String)> {
        let runs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let found = runs
            .iter()
            .rev()
            .find(|r| r.launch_dir == launch_dir && run.is_none_or(|name| r.run_name == name))?;
        let captured = found.started.task.output(CONSOLE_BYTES, None);
        let mut text = captured.stdout;
        if !captured.stderr.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&captured.stderr);
        }
        Some((found.run_name.clone(), text))
    }
}

/// The newest run Codaris started in a launch directory, as `check_run_status` tells of it
/// before Nextflow has recorded it.
#[derive(Debug, Clone)]
pub(super) struct Launched {
    pub run_name: String,
    pub tool: &'static str,
    pub status: TaskStatus,
    pub elapsed: std::time::Duration,
}

impl Launches {
    /// The newest run Codaris started in `launch_dir`.
    pub fn newest(&self, launch_dir: &Path) -> Option<Launched> {
        let runs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let run = runs.iter().rev().find(|r| r.launch_dir == launch_dir)?;
        Some(Launched {
            run_name: run.run_name.clone(),
            tool: run.tool,
            status: run.started.task.status(),
            elapsed: run.started.task.elapsed(),
        })
    }
}

/// The refusal naming the run going on the same pipeline or in the same launch directory.
fn busy_in(
    runs: &[ActiveRun],
    tool: &'static str,
    pipeline: &Path,
    launch_dir: &Path,
    session_id: &str,
) -> Option<ToolError> {
    let busy = runs.iter().find(|run| {
        (run.pipeline == pipeline || run.launch_dir == launch_dir)
            && run.started.task.status().is_running()
    })?;
    let owner = if busy.session_id == session_id {
        "this session".to_owned()
    } else {
        format!("session {}", busy.session_id)
    };
    Some(ToolError::model(format!(
        "{tool}: run `{}` of `{}` is still running in `{}` (started by {} from {owner}, {} ago); wait for it, follow it with check_run_status, or stop it with background_stop",
        busy.run_name,
        busy.pipeline.display(),
        busy.launch_dir.display(),
        busy.tool,
        codaris_nextflow::runs::format_duration(
            u64::try_from(busy.started.task.elapsed().as_millis()).unwrap_or(u64::MAX)
        ),
    )))
}

/// A launch that passed every check, ready to start.
#[derive(Debug, Clone)]
pub(super) struct Prepared {
    pub plan: LaunchPlan,
    /// The `nextflow` program, found.
    pub program: PathBuf,
    /// The gates the run's samplesheets passed.
    pub gates: Vec<(String, GateRecord)>,
    /// Where its tasks write, checked against the session's roots.
    pub work_dir: RunWorkDir,
    /// The names `[nextflow] pass_env` gives it, as the configuration said at the check.
    pub pass_env: Vec<String>,
}

/// Checks a launch asked for by `args` and creates its launch directory; `resume` adds
/// `-resume` whatever the arguments say. The run takes the name a card showed for the call.
pub(super) fn prepare(
    shared: &LaunchShared,
    ctx: &ToolContext,
    tool: &'static str,
    args: &Value,
    resume: bool,
) -> Result<Prepared, ToolError> {
    let name = shared.names.take(ctx, tool, args);
    let prepared = check(shared, ctx, tool, args, resume, name)?;
    let dir = &prepared.plan.launch_dir;
    std::fs::create_dir_all(dir).map_err(|err| {
        ToolError::model(format!(
            "{tool}: cannot create the launch directory `{}`: {err}",
            dir.display()
        ))
    })?;
    Ok(prepared)
}

/// The card's preview of a launch, once every check [`prepare`] makes has passed: the exact
/// `nextflow run …` line (with the run name the run will take) and its launch directory. An
/// error is the one the call would fail with, so no card is shown for it.
pub(super) fn card_preview(
    shared: &LaunchShared,
    ctx: &ToolContext,
    tool: &'static str,
    args: &Value,
    resume: bool,
) -> Result<CallPreview, ToolError> {
    let name = shared.names.reserve(ctx, tool, args);
    let prepared = check(shared, ctx, tool, args, resume, name)?;
    let plan = &prepared.plan;
    // The start checks again under its lock; this spares a card for a run that must wait.
    if let Some(refusal) =
        shared
            .launches
            .busy(tool, &plan.pipeline, &plan.launch_dir, &ctx.session_id)
    {
        return Err(refusal);
    }
    let mut text = format!("$ {}\nin {}", plan.display(), plan.launch_dir.display());
    // Where its tasks go: a cluster's scheduler or a cloud service, with the queue and the
    // ceiling the chosen profiles set, read from the pipeline's config as the card is shown.
    if let Some(line) = load_config(&plan.pipeline, "nextflow.config")
        .ok()
        .and_then(|config| ExecutorSettings::of(&config, &plan.profiles).card_line())
    {
        text.push('\n');
        text.push_str(&line);
    }
    text.push('\n');
    text.push_str(&prepared.work_dir.line());
    text.push_str(&gate_lines(&prepared.gates));
    text.push('\n');
    Ok(CallPreview {
        kind: PreviewKind::Command,
        text,
        path: None,
        action: format!(
            "run the pipeline `{}` (run `{}`) in `{}`",
            plan.pipeline.display(),
            plan.run_name,
            plan.launch_dir.display()
        ),
    })
}

/// Every check of a launch, with no side effect: the pipeline, the launch directory (not
/// created), profiles, parameters, the params file, `outdir`, the work directory, each
/// samplesheet's gate and the `nextflow` program.
fn check(
    shared: &LaunchShared,
    ctx: &ToolContext,
    tool: &'static str,
    args: &Value,
    resume: bool,
    run_name: String,
) -> Result<Prepared, ToolError> {
    let pipeline = pipeline_dir(ctx, tool, args)?;
    if !pipeline.join("main.nf").is_file() {
        return Err(ToolError::model(format!(
            "{tool}: `{}` has no main.nf; give the pipeline's directory",
            pipeline.display()
        )));
    }
    let launch_dir = match optional_string(tool, args, "launch_dir")? {
        None => pipeline.clone(),
        Some(dir) => new_dir(ctx, tool, dir)?,
    };
    let mut plan = LaunchPlan::new(&pipeline, &launch_dir, &run_name);
    if let Some(profile) = optional_string(tool, args, "profile")? {
        plan.profiles = shared
            .setup
            .allowed_profiles(profile)
            .map_err(|why| ToolError::model(format!("{tool}: {why}")))?;
    }
    let params = match args.get("params") {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(params)) => params.clone(),
        Some(_) => {
            return Err(ToolError::model(format!(
                "{tool}: `params` must be an object of parameter names and values"
            )));
        }
    };
    plan.params = param_pairs(&params).map_err(|err| ToolError::model(format!("{tool}: {err}")))?;
    plan.params_file = input_file(ctx, tool, args, "params_file").map_err(|err| {
        let given = args
            .get("params_file")
            .and_then(Value::as_str)
            .unwrap_or("");
        resolved_against(err, given, "the working directory", &ctx.cwd)
    })?;
    plan.resume = resume || flag(tool, args, "resume")?;
    if let Some(outdir) = optional_string(tool, args, "outdir")? {
        plan.outdir = Some(new_dir(ctx, tool, outdir)?);
    }
    let work_dir = work_dir_of(ctx, tool, &plan.pipeline, &plan.launch_dir, &plan.profiles)?;
    let gates = check_samplesheets(shared, ctx, tool, &plan)?;
    let program = find_nextflow(&shared.setup, tool)?;
    Ok(Prepared {
        plan,
        program,
        gates,
        work_dir,
        pass_env: shared.setup.pass_env.get().to_vec(),
    })
}

/// The work directory a run of `pipeline` from `launch_dir` with `profiles` will use (see
/// `work_dir.rs`), with `NXF_WORK` and `NXF_HOME` as its command sees them: the daemon's own,
/// which pass to commands (`NXF_*`), with `NXF_HOME`'s default beside `HOME`, which passes too.
pub(super) fn work_dir_of(
    ctx: &ToolContext,
    tool: &'static str,
    pipeline: &Path,
    launch_dir: &Path,
    profiles: &[String],
) -> Result<RunWorkDir, ToolError> {
    let nxf_work = std::env::var_os("NXF_WORK");
    let nxf_home = std::env::var_os("NXF_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".nextflow")));
    run_work_dir(
        pipeline,
        launch_dir,
        profiles,
        nxf_work.as_deref(),
        nxf_home.as_deref(),
        ctx.fence.roots(),
    )
    .map_err(|why| ToolError::model(format!("{tool}: refused: {why}")))
}

/// Every samplesheet parameter the run gets, each a file under the fence whose gate holds.
fn check_samplesheets(
    shared: &LaunchShared,
    ctx: &ToolContext,
    tool: &'static str,
    plan: &LaunchPlan,
) -> Result<Vec<(String, GateRecord)>, ToolError> {
    let wanted = samplesheet_params(&plan.pipeline);
    let mut given: Vec<(String, String)> = match &plan.params_file {
        Some(file) => params_file_values(file, &wanted)
            .map_err(|err| ToolError::model(format!("{tool}: {err}")))?,
        None => Vec::new(),
    };
    // `--NAME` on the command line wins over the params file, as in Nextflow.
    for (name, value) in &plan.params {
        if wanted.contains(name) {
            given.retain(|(other, _)| other != name);
            given.push((name.clone(), value.clone()));
        }
    }
    let mut passed = Vec::new();
    for (name, value) in given {
        if value.contains("://") {
            return Err(ToolError::model(format!(
                "{tool}: the samplesheet `{name}` is a URL (`{value}`), which cannot be gated; download it (fetch_test_data) and check the local copy with prepare_samplesheet_gate"
            )));
        }
        // Nextflow reads a relative path against the launch directory.
        let at = plan.launch_dir.join(&value);
        let sheet = located_file(
            ctx,
            tool,
            &format!("samplesheet `{name}`"),
            &at.to_string_lossy(),
        )
        .map_err(|err| resolved_against(err, &value, "the launch directory", &plan.launch_dir))?;
        let gate = gate_holds(shared.gates.as_ref(), &plan.pipeline, &sheet)
            .map_err(|why| ToolError::model(format!("{tool}: refused: {why}")))?;
        passed.push((name, gate));
    }
    Ok(passed)
}

/// `err` about the path `value`, saying which directory a relative `value` was looked for in
/// (`base`, called `what`): a bare "is not a file" leaves the reader guessing.
fn resolved_against(err: ToolError, value: &str, what: &str, base: &Path) -> ToolError {
    match err {
        ToolError::Model { message } if !value.is_empty() && !Path::new(value).is_absolute() => {
            ToolError::model(format!(
                "{message} (relative paths are resolved against {what} `{}`)",
                base.display()
            ))
        }
        other => other,
    }
}

/// The configured `nextflow`, on the PATH the tools use.
fn find_nextflow(setup: &NextflowSetup, tool: &'static str) -> Result<PathBuf, ToolError> {
    let path = setup
        .search_path()
        .map(std::ffi::OsString::from)
        .or_else(|| std::env::var_os("PATH"));
    find_program(&setup.nextflow, path.as_deref()).ok_or_else(|| {
        ToolError::model(format!(
            "{tool}: `{}` is not installed or not on the daemon's PATH; {}",
            setup.nextflow,
            install_hint("nextflow")
        ))
    })
}

/// A name no earlier run of this daemon had, from the process's random hasher seed.
fn fresh_run_name() -> String {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    run_name(hasher.finish())
}

/// Starts `prepared` in `pool`: listed and announced when it ends (a background run), or
/// hidden (a foreground attempt the tool waits for).
pub(super) fn start(
    pool: &TaskPool,
    ctx: &ToolContext,
    tool: &'static str,
    prepared: &Prepared,
    background: bool,
) -> Result<Started, ToolError> {
    let plan = &prepared.plan;
    let mut invocation = Invocation::new("nextflow", plan.args(), &plan.launch_dir);
    for (key, value) in plan.env() {
        invocation = invocation.with_env(key, value);
    }
    let line = command_line(&prepared.program, &invocation)
        .map_err(|err| ToolError::model(format!("{tool}: {err}")))?;
    // `[nextflow] pass_env` as it is now (a commit changes it for the next launch), by the
    // environment alone: the line above is what the card showed.
    pool.start_pipeline_run(
        &line,
        &plan.launch_dir,
        ctx.fence.roots(),
        Some(&ctx.workspace),
        background,
        &prepared.pass_env,
    )
    .map_err(|err| ToolError::model(format!("{tool}: could not start nextflow: {err}")))
}

/// The lines every launch answer carries: where the run's files are.
pub(super) fn where_lines(plan: &LaunchPlan, work_dir: &RunWorkDir) -> String {
    let work = match &work_dir.dir {
        WorkDir::Cloud(url) => url.clone(),
        WorkDir::Local(dir) => dir.display().to_string(),
    };
    format!(
        "command: {}\nlaunch dir: {}\nwork dir: {work}\nlog: {}\ntrace: {}",
        plan.display(),
        plan.launch_dir.display(),
        plan.launch_dir.join(".nextflow.log").display(),
        plan.trace.display(),
    )
}

/// The gates line of an answer: which samplesheets passed and when.
pub(super) fn gate_lines(gates: &[(String, GateRecord)]) -> String {
    gates
        .iter()
        .map(|(name, gate)| {
            format!(
                "\nsamplesheet `{name}`: {} ({} rows, gate held: sha256 {})",
                gate.samplesheet.display(),
                gate.rows,
                gate.sheet_sha256.get(..12).unwrap_or(&gate.sheet_sha256)
            )
        })
        .collect()
}

/// The pool of the calling session.
pub(super) fn pool_of(
    shared: &LaunchShared,
    ctx: &ToolContext,
    tool: &'static str,
) -> Result<Arc<TaskPool>, ToolError> {
    shared
        .pools
        .pool(&ctx.session_id)
        .map_err(|err| ToolError::model(format!("{tool}: {err}")))
}
