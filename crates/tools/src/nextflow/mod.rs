//! The Nextflow and nf-core tools (`codaris-nextflow` does the work): each takes the model's
//! arguments, holds every path to the fence the way the file tools do, runs nf-core in the
//! session's sandbox ([`runner::PoolRunner`]) from a blocking task, and answers with the
//! report's text.

mod args;
mod compliance;
mod nfcore;
mod review;
mod runner;

use std::path::PathBuf;
use std::sync::Arc;

pub use compliance::PLAN_FILE;
pub use runner::PoolRunner;

use crate::shell::ShellPools;
use crate::tool::Tool;

/// What the configuration says about the Nextflow tools (`[nextflow]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextflowSetup {
    /// The `nf-core` program: a name on PATH or a path (`[nextflow] nf_core`).
    pub nf_core: String,
    /// The `nextflow` program nf-core calls (`[nextflow] bin`): a name on PATH or a path, whose
    /// directory then goes first on the PATH nf-core sees.
    pub nextflow: String,
    /// The operator's compliance rule files (`*.toml`), beside the built-in rules.
    pub rules_dir: Option<PathBuf>,
}

impl Default for NextflowSetup {
    fn default() -> Self {
        Self {
            nf_core: "nf-core".to_owned(),
            nextflow: "nextflow".to_owned(),
            rules_dir: None,
        }
    }
}

impl NextflowSetup {
    /// The environment every nf-core run gets beside nf-core's own settings: a PATH on which
    /// `nextflow` is the configured program.
    fn nfcore_env(&self) -> codaris_nextflow::nfcore::NfCoreEnv {
        let mut env = codaris_nextflow::nfcore::NfCoreEnv {
            program: self.nf_core.clone(),
            ..codaris_nextflow::nfcore::NfCoreEnv::default()
        };
        let nextflow = PathBuf::from(&self.nextflow);
        if let Some(dir) = nextflow.parent().filter(|d| d.is_absolute()) {
            let rest = std::env::var("PATH").unwrap_or_default();
            env.env
                .push(("PATH".to_owned(), format!("{}:{rest}", dir.display())));
        }
        env
    }
}

/// The Nextflow authoring tools, their nf-core runs in `pools`' sandboxes.
pub fn nextflow_tools(pools: &Arc<ShellPools>, setup: &NextflowSetup) -> Vec<Arc<dyn Tool>> {
    let rules = compliance::Rules {
        dir: setup.rules_dir.clone(),
    };
    let mut tools = nfcore::tools(pools, setup);
    tools.extend(compliance::tools(&rules));
    tools.push(Arc::new(review::ReviewPipeline {
        pools: pools.clone(),
        env: setup.nfcore_env(),
        rules,
    }));
    tools
}
