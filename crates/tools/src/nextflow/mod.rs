//! The Nextflow and nf-core tools (`codaris-nextflow` does the work): each takes the model's
//! arguments, holds every path to the fence the way the file tools do, runs nf-core in the
//! session's sandbox ([`runner::PoolRunner`]) from a blocking task, and answers with the
//! report's text.

mod args;
mod autopilot;
mod compliance;
mod copy;
mod fetch_test_data;
mod gate;
mod launch;
mod nfcore;
mod pipeline_tests;
mod review;
mod review_pack;
mod run;
mod runner;
mod runs;
mod scheduler;
pub mod work_dir;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use compliance::PLAN_FILE;
pub use gate::{GateRecord, GateStore, MemoryGates, gate_holds, gate_key};
pub use runner::PoolRunner;

use crate::shell::ShellPools;
use crate::tool::Tool;

/// What the configuration says about the Nextflow tools (`[nextflow]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextflowSetup {
    /// The `nf-core` program: a name on PATH or a path (`[nextflow] nf_core`).
    pub nf_core: String,
    /// The `nf-test` program test_pipeline runs: a name on PATH or a path (`[nextflow] nf_test`).
    pub nf_test: String,
    /// The `nextflow` program nf-core calls (`[nextflow] bin`): a name on PATH or a path, whose
    /// directory then goes first on the PATH nf-core sees.
    pub nextflow: String,
    /// The operator's compliance rule files (`*.toml`), beside the built-in rules.
    pub rules_dir: Option<PathBuf>,
    /// The profiles a run or a test may use (`[nextflow] profiles`): live, so a committed
    /// configuration changes them for the launches that follow.
    pub profiles: crate::Live<Vec<String>>,
    /// Variables of the daemon's environment a pipeline run's `nextflow` gets beyond the
    /// commands' allowlist (`[nextflow] pass_env`: a cloud executor's credentials), and
    /// nothing else gets: live, read at each launch. The providers' keys and Codaris's own
    /// secrets never pass, listed or not (`shell::env::WITHHELD`).
    pub pass_env: crate::Live<Vec<String>>,
    /// Where nf-core's test-datasets are downloaded from (`[nextflow] test_datasets`): the
    /// URL the branches hang off, ending in `/`.
    pub test_datasets: String,
}

/// The profiles allowed when the configuration names none: nf-core's test profiles, its
/// debugging aid and the container and package engines that run on the machine itself
/// (not `wave`, which sends the environment to Seqera, nor cloud or cluster profiles).
pub const DEFAULT_PROFILES: [&str; 9] = [
    "test",
    "test_full",
    "debug",
    "docker",
    "singularity",
    "apptainer",
    "podman",
    "conda",
    "mamba",
];

/// nf-core's test data, a branch per pipeline.
pub const DEFAULT_TEST_DATASETS: &str = "https://raw.githubusercontent.com/nf-core/test-datasets/";

impl Default for NextflowSetup {
    fn default() -> Self {
        Self {
            nf_core: "nf-core".to_owned(),
            nf_test: "nf-test".to_owned(),
            nextflow: "nextflow".to_owned(),
            rules_dir: None,
            profiles: crate::Live::new(DEFAULT_PROFILES.map(str::to_owned).to_vec()),
            pass_env: crate::Live::new(Vec::new()),
            test_datasets: DEFAULT_TEST_DATASETS.to_owned(),
        }
    }
}

impl NextflowSetup {
    /// The profiles of a `profile` argument (`test,docker`), each checked against the
    /// operator's allowlist; the error is the model's sentence.
    pub fn allowed_profiles(&self, profile: &str) -> Result<Vec<String>, String> {
        let allowed = self.profiles.get();
        let mut chosen = Vec::new();
        for name in profile.split(',').map(str::trim) {
            if name.is_empty() {
                return Err(format!(
                    "`profile` `{profile}` has an empty name in its list"
                ));
            }
            if !allowed.iter().any(|allowed| allowed == name) {
                return Err(format!(
                    "profile `{name}` is not in the operator's allowlist ([nextflow] profiles: {})",
                    allowed.join(", ")
                ));
            }
            chosen.push(name.to_owned());
        }
        Ok(chosen)
    }

    /// Where the configured programs are installed, for the sandbox to let them be read and
    /// run: the virtual environment a Python program lives in (and the Python it was made
    /// from), else the program's own directory. A program not found adds nothing (its tool
    /// then says what to install).
    pub fn install_dirs(&self) -> Vec<PathBuf> {
        let path = std::env::var_os("PATH");
        let mut dirs = Vec::new();
        for program in [&self.nf_core, &self.nextflow, &self.nf_test] {
            let Some(found) = codaris_nextflow::runner::find_program(program, path.as_deref())
            else {
                continue;
            };
            let real = std::fs::canonicalize(&found).unwrap_or(found);
            let venv = real
                .ancestors()
                .skip(1)
                .find(|dir| dir.join("pyvenv.cfg").is_file());
            match venv {
                Some(venv) => {
                    dirs.push(venv.to_path_buf());
                    let python = std::fs::canonicalize(venv.join("bin/python3")).ok();
                    if let Some(prefix) = python
                        .as_deref()
                        .and_then(Path::parent)
                        .and_then(Path::parent)
                    {
                        dirs.push(prefix.to_path_buf());
                    }
                }
                None => dirs.extend(real.parent().map(Path::to_path_buf)),
            }
        }
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// The daemon's PATH with the directories of the programs configured by absolute path
    /// first (`nextflow`'s, then `nf-core`'s, then `nf-test`'s), so each is found as the
    /// configuration names it (nf-core and nf-test call `nextflow`); `None` when none is a
    /// path.
    fn search_path(&self) -> Option<String> {
        let mut dirs: Vec<PathBuf> = [&self.nextflow, &self.nf_core, &self.nf_test]
            .iter()
            .filter_map(|program| Path::new(program.as_str()).parent())
            .filter(|dir| dir.is_absolute())
            .map(Path::to_path_buf)
            .collect();
        if dirs.is_empty() {
            return None;
        }
        dirs.extend(
            std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths),
        );
        std::env::join_paths(dirs)
            .ok()
            .map(|path| path.to_string_lossy().into_owned())
    }

    /// The environment every nf-core run gets beside nf-core's own settings: a PATH on which
    /// `nextflow` is the configured program.
    fn nfcore_env(&self) -> codaris_nextflow::nfcore::NfCoreEnv {
        let mut env = codaris_nextflow::nfcore::NfCoreEnv {
            program: self.nf_core.clone(),
            ..codaris_nextflow::nfcore::NfCoreEnv::default()
        };
        if let Some(path) = self.search_path() {
            env.env.push(("PATH".to_owned(), path));
        }
        env
    }
}

/// nf-core, nextflow and git as the tools would find them (the configured programs first),
/// each asked for its version through `runner` (a task pool's: the daemon reaps every child
/// it did not register): what `codaris status` shows. Blocks for up to ten seconds a
/// program; run it off the async threads.
pub fn probe_programs(
    setup: &NextflowSetup,
    runner: &dyn codaris_nextflow::runner::Runner,
) -> Vec<codaris_nextflow::runner::ProgramInfo> {
    let path = setup
        .search_path()
        .map(std::ffi::OsString::from)
        .or_else(|| std::env::var_os("PATH"));
    codaris_nextflow::runner::probe(runner, path.as_deref(), Path::new("/"))
}

/// The Nextflow authoring tools, their nf-core runs in `pools`' sandboxes, the samplesheet
/// gates kept in `gates`.
pub fn nextflow_tools(
    pools: &Arc<ShellPools>,
    setup: &NextflowSetup,
    gates: Arc<dyn GateStore>,
) -> Vec<Arc<dyn Tool>> {
    let rules = compliance::Rules {
        dir: setup.rules_dir.clone(),
    };
    let mut tools = nfcore::tools(pools, setup);
    tools.push(Arc::new(gate::PrepareSamplesheetGate {
        gates: gates.clone(),
    }));
    tools.extend(compliance::tools(&rules));
    tools.push(Arc::new(review::ReviewPipeline {
        pools: pools.clone(),
        env: setup.nfcore_env(),
        rules,
    }));
    // In the catalogue's order (codaris_catalogue::ALL), which the registry keeps.
    let launch = Arc::new(launch::LaunchShared {
        pools: pools.clone(),
        setup: setup.clone(),
        gates,
        launches: launch::Launches::default(),
        names: launch::ReservedNames::default(),
    });
    tools.extend(runs::tools(&launch));
    tools.push(Arc::new(run::RunBuiltPipeline(launch.clone())));
    tools.push(Arc::new(autopilot::AutopilotPipeline::new(launch.clone())));
    tools.extend(pipeline_tests::tools(&launch));
    tools.push(Arc::new(fetch_test_data::FetchTestData {
        base: setup.test_datasets.clone(),
    }));
    tools
}
