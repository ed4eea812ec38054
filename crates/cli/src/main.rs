//! `codaris`: parse the command line, run the command, map the result to an exit code.

mod acp;
mod cli;
mod client;
mod commands;
mod error;
mod output;
mod service;
mod stop;

use std::process::ExitCode;

use clap::Parser;

use crate::commands::Outcome;
use crate::error::CliError;

/// mimalloc rather than the system allocator: `codaris audit replay` decodes every record of a
/// ledger and frees it again, where glibc's `free` alone cost a fifth of reading and replaying a
/// decision (docs/performance.md). The daemon keeps the system allocator: under mimalloc it
/// held 20-60 MB more when idle.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)
        .and_then(|runtime| runtime.block_on(commands::run(cli)));
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::NotRunning) => ExitCode::from(3),
        Ok(Outcome::Failed) => ExitCode::FAILURE,
        // 128 + the signal's number, as a shell reports a program a signal ended.
        Ok(Outcome::Interrupted) => ExitCode::from(130),
        Ok(Outcome::Terminated) => ExitCode::from(143),
        Err(CliError::BrokenPipe) => ExitCode::SUCCESS,
        Err(err) => {
            output::error_line(&format!("codaris: {err}"));
            ExitCode::from(err.exit_code())
        }
    }
}
