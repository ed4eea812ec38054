//! nf-core tools (`nf-core` 4.2.1 from PyPI) run offline through a [`Runner`], and what they
//! print read into findings.
//!
//! - [`create`]: `nf-core pipelines create`, non-interactive, with the features that need the
//!   network skipped (`clone_nfcore_base`).
//! - [`lint`]: `nf-core pipelines lint --json`, with the three tests that crash offline
//!   switched off for the run only and reported as skipped offline (`lint_pipeline`).
//! - [`schema`]: `nf-core pipelines schema lint` and `schema validate` (`validate_pipeline`).
//!
//! Every run goes through [`Runner`]; the parsers ([`lint::parse_lint_json`],
//! [`schema::parse_schema_output`], [`console::error_blocks`]) are pure and tested on output
//! recorded from the real program. Non-goals: installing nf-core, running Nextflow, and any
//! nf-core command that needs the network (`modules`, `download`, `test-datasets`).

pub mod console;
pub mod create;
pub mod lint;
pub mod schema;
mod tools_config;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::runner::{Invocation, RunError, Runner};

/// How an nf-core tool failed: "tell the model" errors, each a one-line sentence.
#[derive(Debug, thiserror::Error)]
pub enum NfCoreError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("`{}` is not a directory", path.display())]
    NotADirectory { path: PathBuf },
    #[error("`{}` is not an nf-core pipeline: `{file}` is missing", path.display())]
    NotAPipeline { path: PathBuf, file: &'static str },
    #[error("`{}` already exists and is not empty", path.display())]
    OutdirNotEmpty { path: PathBuf },
    #[error("`{}` cannot be used: {reason}", path.display())]
    UnsafePath { path: PathBuf, reason: &'static str },
    #[error("the {field} must not be empty or span lines")]
    BadField { field: &'static str },
    #[error("`{feature}` is not a template feature nf-core {version} knows", version = crate::runner::NFCORE_VERSION)]
    UnknownFeature { feature: String },
    #[error("`{test}` is not an nf-core pipeline lint test")]
    UnknownTest { test: String },
    #[error("nf-core {command} failed ({exit}): {message}")]
    Fatal {
        command: &'static str,
        exit: String,
        /// The `ERROR` line nf-core printed, or the last line it wrote.
        message: String,
    },
    #[error("nf-core {command} answered in a form Codaris does not read: {detail}")]
    Unreadable {
        command: &'static str,
        detail: String,
    },
    #[error("{action} `{}` failed: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{}` changed while nf-core ran; the lint settings Codaris added for the run were left in it",
        path.display()
    )]
    ToolsConfigChanged { path: PathBuf },
    #[error("`{}` is a symbolic link; Codaris does not edit it for a lint run", path.display())]
    ToolsConfigSymlink { path: PathBuf },
    #[error("`{}` has its `lint:` settings in a form Codaris cannot extend for an offline run", path.display())]
    ToolsConfigForm { path: PathBuf },
}

/// What every nf-core run needs besides its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NfCoreEnv {
    /// The `nf-core` program: a name looked up on PATH, or a path.
    pub program: String,
    /// Extra environment for the run (PATH with `nextflow` on it, HOME, NXF_HOME…).
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
}

impl Default for NfCoreEnv {
    fn default() -> Self {
        Self {
            program: "nf-core".to_owned(),
            env: Vec::new(),
            timeout: Duration::from_secs(600),
        }
    }
}

impl NfCoreEnv {
    /// The invocation of `nf-core ARGS` in `cwd`: offline, without colour, progress bars or
    /// the update check, and wide enough that messages are not wrapped.
    pub(crate) fn invocation(&self, args: Vec<String>, cwd: &Path) -> Invocation {
        let mut inv = Invocation::new(&self.program, args, cwd).with_timeout(self.timeout);
        for (key, value) in [
            ("NXF_OFFLINE", "true"),
            ("NFCORE_NO_VERSION_CHECK", "1"),
            ("NO_COLOR", "1"),
            ("HIDE_PROGRESS", "1"),
            ("COLUMNS", "10000"),
            ("TERM", "dumb"),
        ] {
            inv = inv.with_env(key, value);
        }
        for (key, value) in &self.env {
            inv = inv.with_env(key, value);
        }
        inv
    }

    pub(crate) fn run(
        &self,
        runner: &dyn Runner,
        args: Vec<String>,
        cwd: &Path,
    ) -> Result<crate::runner::Outcome, NfCoreError> {
        Ok(runner.run(&self.invocation(args, cwd))?)
    }
}

/// Whether nf-core can be given `path`: it passes a pipeline's resolved path to
/// `nextflow config` through a shell-style split, so whitespace or quotes break the run
/// half-way with a misleading error.
pub(crate) fn shell_safe(path: &Path) -> Result<(), NfCoreError> {
    if path
        .to_string_lossy()
        .contains(|c: char| c.is_whitespace() || "'\"\\".contains(c))
    {
        return Err(NfCoreError::UnsafePath {
            path: path.to_path_buf(),
            reason: "nf-core cannot work on a path with spaces or quotes (it splits the path when it calls `nextflow config`)",
        });
    }
    Ok(())
}

/// The pipeline at `path`, checked to hold what nf-core needs, as an absolute path with its
/// symlinks resolved (nf-core resolves them too).
pub(crate) fn pipeline_dir(path: &Path) -> Result<PathBuf, NfCoreError> {
    if !path.is_dir() {
        return Err(NfCoreError::NotADirectory {
            path: path.to_path_buf(),
        });
    }
    let path = &std::fs::canonicalize(path).map_err(|source| NfCoreError::Io {
        action: "resolving",
        path: path.to_path_buf(),
        source,
    })?;
    shell_safe(path)?;
    for file in ["nextflow.config", "main.nf"] {
        if !path.join(file).is_file() {
            return Err(NfCoreError::NotAPipeline {
                path: path.to_path_buf(),
                file,
            });
        }
    }
    Ok(path.to_path_buf())
}

/// The nf-core documentation page of a pipeline lint test.
pub fn lint_test_doc(version: &str, test: &str) -> String {
    format!(
        "https://nf-co.re/docs/nf-core-tools/api_reference/{version}/pipeline_lint_tests/{test}"
    )
}
