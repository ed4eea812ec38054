//! What the shell and `man` learn from the clap definitions: completion scripts and the man
//! page, both generated, so neither can drift from the command line.

use clap::CommandFactory;

use crate::cli::{Cli, Shell};
use crate::error::CliError;

pub fn print(shell: Shell) -> Result<(), CliError> {
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "codaris", &mut script);
    crate::output::line(String::from_utf8_lossy(&script).trim_end())
}

/// `codaris man`: the man page of `codaris` in roff, its subcommands listed with their help.
pub fn man() -> Result<(), CliError> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(CliError::Output)?;
    crate::output::line(String::from_utf8_lossy(&page).trim_end())
}
