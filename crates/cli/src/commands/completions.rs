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
