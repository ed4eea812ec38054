//! The programs the Nextflow tools run (nf-core, nextflow, git), asked for their versions once,
//! in the background, when `Status` first wants them: not at start, where a program forked in
//! the moment the daemon is killed would hold its socket until it execs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use codaris_proto::v1::DomainProgram;
use codaris_tools::nextflow::{NextflowSetup, PoolRunner, probe_programs};
use codaris_tools::shell::ShellPools;

/// The session name the probe's task pool goes by.
const PROBE: &str = "codarisd-probe";

#[derive(Debug)]
pub struct ProgramProbe {
    setup: NextflowSetup,
    pools: Option<Arc<ShellPools>>,
    started: AtomicBool,
    found: Arc<RwLock<Vec<DomainProgram>>>,
}

impl ProgramProbe {
    pub fn new(setup: NextflowSetup, pools: Option<Arc<ShellPools>>) -> Self {
        Self {
            setup,
            pools,
            started: AtomicBool::new(false),
            found: Arc::new(RwLock::new(Vec::new())),
        }
    }

    /// What the probe found so far: empty until its first answer, and the first call starts
    /// it. Must be called within the daemon's runtime.
    pub fn current(&self) -> Vec<DomainProgram> {
        if !self.started.swap(true, Ordering::AcqRel) {
            self.start();
        }
        self.found
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The programs run the way the tools run them: in a task pool, sandboxed, seeing no root
    /// (the daemon reaps every child it did not register, so a plain wait would lose them).
    fn start(&self) {
        let Some(pools) = self.pools.clone() else {
            return;
        };
        let pool = match pools.pool(PROBE) {
            Ok(pool) => pool,
            Err(err) => {
                tracing::warn!(%err, "the domain programs cannot be probed");
                return;
            }
        };
        let workspace = pool.temp_dir().to_path_buf();
        let runner = PoolRunner::new(pool, Vec::new(), workspace, false);
        let (setup, into) = (self.setup.clone(), self.found.clone());
        tokio::task::spawn_blocking(move || {
            let programs: Vec<DomainProgram> = probe_programs(&setup, &runner)
                .into_iter()
                .map(|info| {
                    let note = match (&info.note, &info.version) {
                        (Some(note), _) => note.clone(),
                        (None, Some(version)) if version.contains("fake") => {
                            "a stand-in, not the real program".to_owned()
                        }
                        (None, _) => String::new(),
                    };
                    DomainProgram {
                        name: info.name.to_owned(),
                        path: info
                            .path
                            .map(|p| p.display().to_string())
                            .unwrap_or_default(),
                        version: info.version.unwrap_or_default(),
                        note,
                    }
                })
                .collect();
            for program in &programs {
                tracing::debug!(program = %program.name, path = %program.path, version = %program.version, note = %program.note, "domain program");
            }
            *into.write().unwrap_or_else(PoisonError::into_inner) = programs;
            drop(runner);
            pools.close(PROBE);
        });
    }
}
