//! One module per command group; each turns parsed arguments into calls and printed lines.

pub mod agents;
pub mod audit;
pub mod audit_candidate;
pub mod card_view;
pub mod chat;
pub mod chat_commands;
pub mod chat_history;
pub mod completions;
pub mod config;
pub mod daemon;
pub mod demo;
pub mod doctor;
pub mod install;
pub mod ledger;
pub mod login;
pub mod mcp;
pub mod memory;
pub mod policy;
pub mod question_view;
pub mod result_view;
pub mod run;
pub mod run_event;
pub mod run_input;
pub mod runs;
pub mod scheduler;
pub mod session_model;
pub mod sessions;
pub mod shared;
pub mod status;
pub mod status_line;
pub mod surface;
pub mod tools;
pub mod tools_ledger;
pub mod tools_ledger_eval;
pub mod undo;

use crate::cli::{
    AgentsCommand, AuditCommand, Cli, Command, DaemonCommand, PolicyCommand, ToolsCommand,
};
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

/// Why `command` has no `--json` output, for the commands that have none; `None` for the
/// commands that honour it. Every command is one or the other (docs/cli.md tables them).
fn without_json(command: &Command) -> Option<(&'static str, &'static str)> {
    match command {
        Command::Acp(_) => Some(("acp", "it speaks ACP, JSON-RPC lines, on standard output")),
        Command::Chat(_) => Some((
            "chat",
            "it is interactive; `codaris run --json` streams events",
        )),
        Command::Completions { .. } => Some(("completions", "it prints a shell script")),
        Command::Man => Some(("man", "it prints a man page")),
        Command::Demo { .. } => Some(("demo", "it is a walk-through for people")),
        Command::Daemon(DaemonCommand::Logs { .. }) => Some((
            "daemon logs",
            "it prints the log as written; set `[daemon] log_format` for JSON lines",
        )),
        _ => None,
    }
}

/// When a session leaves the provider to the daemon while this environment names a base URL
/// (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`), asks the daemon which provider it has, so the
/// base URL that goes with it reaches the session.
async fn name_daemon_provider(
    target: &Target,
    autostart: bool,
    session: &mut crate::cli::SessionArgs,
) -> Result<(), CliError> {
    let env = |name: &str| std::env::var(name).ok();
    if !session_model::SessionModel::needs_daemon_provider(session, &env) {
        return Ok(());
    }
    let status = status::fetch(crate::client::open(target, autostart).await?).await?;
    if !status.provider.is_empty() {
        session.provider = Some(status.provider);
    }
    Ok(())
}

pub async fn run(cli: Cli) -> Result<Outcome, CliError> {
    let json = cli.global.json;
    let autostart = !cli.global.no_autostart;
    // `codaris` alone chats in the current directory, as `codaris chat` would.
    let command = match cli.command {
        Some(command) => command,
        None => Command::Chat(chat::default_args()?),
    };
    if json && let Some((command, why)) = without_json(&command) {
        return Err(CliError::JsonUnsupported { command, why });
    }
    match command {
        Command::Completions { shell } => completions::print(shell).map(|()| Outcome::Success),
        Command::Man => completions::man().map(|()| Outcome::Success),
        Command::Demo { keep } => demo::demo(keep).await,
        Command::Status => {
            let target = Target::resolve(cli.global.state_dir)?;
            status::show(&target, autostart, json)
                .await
                .map(|()| Outcome::Success)
        }
        Command::Agents(AgentsCommand::List { cwd }) => {
            let target = Target::resolve(cli.global.state_dir)?;
            agents::list(&target, autostart, json, cwd).await
        }
        Command::Memory(command) => {
            let target = Target::resolve(cli.global.state_dir)?;
            memory::run(&target, autostart, json, command).await
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
                ToolsCommand::Eval(args) => tools::eval(target, autostart, json, args).await,
            }
        }
        Command::Chat(mut args) => {
            let target = Target::resolve(cli.global.state_dir)?;
            name_daemon_provider(&target, autostart, &mut args.session).await?;
            chat::chat(&target, autostart, args).await
        }
        Command::Acp(args) => {
            crate::acp::lean_allocator();
            let target = Target::resolve(cli.global.state_dir)?;
            let mut session = args.session_args();
            name_daemon_provider(&target, autostart, &mut session).await?;
            let defaults = acp_defaults(&session)?;
            crate::acp::serve(target, autostart, defaults).await
        }
        // `--all` is the default now; it stays accepted so scripts that pass it still work.
        Command::Sessions {
            all: _,
            open,
            tags,
            limit,
        } => {
            let target = Target::resolve(cli.global.state_dir)?;
            let listing = sessions::Listing { open, tags, limit };
            sessions::list(&target, autostart, json, &listing).await
        }
        Command::Run(mut args) => {
            let target = Target::resolve(cli.global.state_dir)?;
            name_daemon_provider(&target, autostart, &mut args.session).await?;
            run::run(&target, autostart, json, args).await
        }
        Command::Undo(args) => {
            let target = Target::resolve(cli.global.state_dir)?;
            undo::undo(&target, autostart, json, args).await
        }
        Command::Login(args) => {
            let target = Target::resolve(cli.global.state_dir)?;
            login::login(&target, autostart, json, args).await
        }
        Command::Doctor { pipeline } => {
            let target = Target::resolve(cli.global.state_dir)?;
            // What a `codaris run` from this shell would ask for, resolved as `run` resolves it.
            let mut session = doctor::no_flags();
            name_daemon_provider(&target, autostart, &mut session).await?;
            doctor::doctor(&target, autostart, json, &session, pipeline.as_deref()).await
        }
        Command::Config(command) => {
            let target = Target::resolve(cli.global.state_dir)?;
            config::run(&target, autostart, json, command).await
        }
        Command::Mcp(command) => {
            let target = Target::resolve(cli.global.state_dir)?;
            mcp::run(&target, autostart, json, command).await
        }
        Command::Scheduler(command) => {
            let target = Target::resolve(cli.global.state_dir)?;
            let here = std::env::current_dir().map_err(|source| CliError::Read {
                path: std::path::PathBuf::from("."),
                source,
            })?;
            scheduler::run(&target, autostart, json, command, &here).await
        }
        Command::Ledger(command) => {
            let target = Target::resolve(cli.global.state_dir)?;
            ledger::run(&target, autostart, json, command).await
        }
        Command::Runs { limit } => {
            let target = Target::resolve(cli.global.state_dir)?;
            runs::run(&target, autostart, json, limit).await
        }
        Command::Shared(command) => {
            let target = Target::resolve(cli.global.state_dir)?;
            shared::run(&target, autostart, json, command).await
        }
        Command::Audit(AuditCommand::Replay {
            from,
            config: Some(candidate),
            ..
        }) => {
            let target = Target::resolve(cli.global.state_dir)?;
            audit_candidate::replay(&target, from.as_deref(), &candidate, json)
        }
        Command::Audit(AuditCommand::Replay {
            from,
            explain,
            show,
            config: None,
        }) => {
            let target = Target::resolve(cli.global.state_dir)?;
            audit::replay(&target, from.as_deref(), explain, show, json)
        }
        Command::Audit(AuditCommand::Shadow { from }) => {
            let target = Target::resolve(cli.global.state_dir)?;
            audit_candidate::shadow(&target, from.as_deref(), json)
        }
        Command::Audit(AuditCommand::Verify { show }) => {
            let target = Target::resolve(cli.global.state_dir)?;
            audit::replay(&target, None, false, show, json)
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

/// What `codaris acp` opens each session with, resolved as `run` resolves its flags.
fn acp_defaults(session: &crate::cli::SessionArgs) -> Result<crate::acp::Defaults, CliError> {
    use crate::cli::{Mode, PermissionModeArg};
    use codaris_proto::v1;
    let choice = session_model::SessionModel::from_args(session, &|name| std::env::var(name).ok())?;
    let script = match &session.script {
        Some(path) if path.is_absolute() => path.display().to_string(),
        Some(path) => std::env::current_dir()
            .map_err(|source| CliError::Read {
                path: path.clone(),
                source,
            })?
            .join(path)
            .display()
            .to_string(),
        None => String::new(),
    };
    Ok(crate::acp::Defaults {
        provider: choice.provider,
        model: choice.model,
        base_url: choice.base_url,
        script,
        activity: match session.mode {
            Mode::Agent => v1::Activity::Agent,
            Mode::Plan => v1::Activity::Plan,
            Mode::Ask => v1::Activity::Ask,
        },
        permission_mode: match session.permission_mode {
            PermissionModeArg::Ask => v1::PermissionMode::Ask,
            PermissionModeArg::AcceptEdits => v1::PermissionMode::AcceptEdits,
            PermissionModeArg::Bypass => v1::PermissionMode::Bypass,
        },
    })
}
