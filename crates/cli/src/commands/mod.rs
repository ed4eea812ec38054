//! One module per command group; each turns parsed arguments into calls and printed lines.

pub mod audit;
pub mod chat;
pub mod completions;
pub mod daemon;
pub mod demo;
pub mod install;
pub mod ledger;
pub mod mcp;
pub mod policy;
pub mod run;
pub mod shared;
pub mod status;
pub mod surface;
pub mod tools;

use crate::cli::{AuditCommand, Cli, Command, DaemonCommand, PolicyCommand, ToolsCommand};
use crate::client::Target;
use crate::error::CliError;

/// What the process should exit with when the command itself succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// `codaris daemon status` when no daemon runs (LSB's "not running").
    NotRunning,
    /// The command ran and reported a failure it already printed (a replay with differences,
    /// an unreadable request): exit 1 without another message.
    Failed,
    /// SIGINT stopped it after it cleaned up (`codaris run`): exit 130.
    Interrupted,
    /// SIGTERM stopped it after it cleaned up: exit 143.
    Terminated,
}

pub async fn run(cli: Cli) -> Result<Outcome, CliError> {
    let json = cli.global.json;
    let autostart = !cli.global.no_autostart;
    match cli.command {
        Command::Completions { shell } => completions::print(shell).map(|()| Outcome::Success),
        Command::Demo { keep } => demo::demo(keep).await,
        Command::Status => {
            let target = Target::resolve(cli.global.state_dir)?;
            status::show(&target, autostart, json)
                .await
                .map(|()| Outcome::Success)
        }
        Command::Tools(command) => {
            let target = || Target::resolve(cli.global.state_dir.clone());
            match command {
                ToolsCommand::Search(args) => tools::search(target, autostart, json, args).await,
                ToolsCommand::List => tools::list(&target()?, autostart, json).await,
                ToolsCommand::Surface => surface::print(json),
                ToolsCommand::Enable { name } => {
                    tools::set_enabled(&target()?, autostart, json, name, true).await
                }
                ToolsCommand::Disable { name } => {
                    tools::set_enabled(&target()?, autostart, json, name, false).await
                }
                ToolsCommand::Eval(args) => tools::eval(json, args),
            }
        }
        Command::Chat(args) => {
            let target = Target::resolve(cli.global.state_dir)?;
            chat::chat(&target, autostart, args).await
        }
        Command::Run(args) => {
            let target = Target::resolve(cli.global.state_dir)?;
            run::run(&target, autostart, json, args).await
        }
        Command::Mcp(command) => {
            let target = Target::resolve(cli.global.state_dir)?;
            mcp::run(&target, autostart, json, command).await
        }
        Command::Ledger(command) => {
            let target = Target::resolve(cli.global.state_dir)?;
            ledger::run(&target, autostart, json, command).await
        }
        Command::Shared(command) => {
            let target = Target::resolve(cli.global.state_dir)?;
            shared::run(&target, autostart, json, command).await
        }
        Command::Audit(AuditCommand::Replay {
            from,
            explain,
            show,
        }) => {
            let target = Target::resolve(cli.global.state_dir)?;
            audit::replay(&target, from.as_deref(), explain, show, json)
        }
        Command::Policy(PolicyCommand::Eval) => policy::eval(),
        Command::Daemon(command) => {
            let target = Target::resolve(cli.global.state_dir)?;
            match command {
                DaemonCommand::Start => daemon::start(&target, json).await,
                DaemonCommand::Stop => daemon::stop(&target, json).await,
                DaemonCommand::Status => daemon::status(&target, json).await,
                DaemonCommand::Logs { lines, follow } => daemon::logs(&target, lines, follow).await,
                DaemonCommand::Install { systemd, launchd } => {
                    install::run(install::Manager::chosen(systemd, launchd), json)
                }
            }
        }
    }
}
