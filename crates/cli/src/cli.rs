//! The command line, as clap types. Parsing only; `commands` runs them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Codaris: a local agent daemon whose every permission decision is explained, recorded and
/// replayable. This is its command line.
#[derive(Debug, Parser)]
#[command(name = "codaris", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// State directory of the daemon to talk to [default: $CODARIS_STATE_DIR, else $XDG_STATE_HOME/codaris, else ~/.local/state/codaris]
    #[arg(long, global = true, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Fail instead of starting codarisd in the background when it is not running
    #[arg(long, global = true)]
    pub no_autostart: bool,
    /// Print machine-readable JSON instead of text
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the daemon's version, uptime, pid, state directory, socket, sessions and tools
    Status,
    /// Start, stop and inspect the daemon
    #[command(subcommand)]
    Daemon(DaemonCommand),
    /// Print a shell completion script
    Completions {
        /// The shell to complete for
        shell: Shell,
    },
}

#[derive(Debug, Subcommand)]
pub enum DaemonCommand {
    /// Start codarisd in the background (does nothing if it is already running)
    Start,
    /// Stop the running codarisd gracefully
    Stop,
    /// Say whether codarisd is running; exit code 3 when it is not
    Status,
    /// Print the daemon's log
    Logs {
        /// How many lines from the end to print
        #[arg(short = 'n', long, default_value_t = 50)]
        lines: usize,
        /// Keep printing lines as they are written, until interrupted
        #[arg(short, long)]
        follow: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}
