//! Configuration as data: the file's options ([`ConfigToml`]), resolved together with the
//! environment and the command line by [`resolve`], a pure function, into the [`Config`] the
//! daemon runs with. [`load`] is the only I/O.
//!
//! One file per section of the file (`[mcp]`, `[nextflow]`, `[ncbi]`, `[research]`, `[seqera]`,
//! `[telemetry]`, the providers, the log, the session limits); what runs on the resolved values
//! (the log writer, the exporter, a login) lives with the daemon, not here. Within this folder
//! a file imports the file that defines what it uses, never this one, so no two files import
//! each other.

pub mod compaction;
mod file;
pub mod hooks;
mod inputs;
mod load;
pub mod logging;
pub mod mcp;
pub mod memory;
pub mod ncbi;
pub mod nextflow;
pub mod policy;
pub mod providers;
mod record;
pub mod research;
mod resolve;
pub mod scheduler;
pub mod seqera;
pub mod session_limits;
mod show;
pub mod telemetry;
mod values;

pub use file::{
    ConfigToml, DEFAULT_LEDGER_CACHE_MB, DEFAULT_SUBAGENT_DEPTH, DaemonToml, MAX_LEDGER_CACHE_MB,
    MAX_SUBAGENT_DEPTH, ModelToml, ToolsToml, parse_file,
};
pub use inputs::{Flags, Sources};
pub use load::{LoadInputs, candidate_inputs, check_file, load, operator_inputs, resolve_file};
pub use providers::{ApiConfig, ApiToml, ProviderToml};
pub use record::{REDACTED, Recorded, record};
pub use resolve::{Config, ModelConfig, env_vars, opens_home, resolve};
pub use show::{Entry, entries};
pub(crate) use values::http_url;
pub use values::{OutputLimitsToml, Source};
