//! The Nextflow and nf-core domain of Codaris.
//!
//! Pure parts (the Nextflow parser, the samplesheet gate, the compliance rules, the readers of
//! nf-core's output) live in modules of their own and touch no process; running `nf-core` goes
//! through [`runner::Runner`], which the daemon provides, so the tools can be tested on
//! recorded output as well as on the real program.

pub mod audit;
pub mod executor;
pub mod files;
pub mod launch;
pub mod nfcore;
pub mod nftest;
pub mod parse;
pub mod rules;
pub mod runlog;
pub mod runner;
pub mod runs;
pub mod samplesheet;
pub mod test_datasets;
pub mod testrun;
