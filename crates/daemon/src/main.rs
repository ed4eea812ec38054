//! `codarisd`: parse the command line, load configuration, claim the state directory, serve.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use codaris_daemon::config::{self, Flags};
use codaris_daemon::server::keys::HeldKeys;
use codaris_daemon::{Shutdown, StartError, StateClaim, StateWatch};
use codaris_paths::StateLayout;

/// The Codaris daemon: serves the gRPC API on `<state>/codaris.sock`.
#[derive(Debug, Parser)]
#[command(name = "codarisd", version, about)]
struct Args {
    /// State directory [default: $CODARIS_STATE_DIR, else $XDG_STATE_HOME/codaris, else ~/.local/state/codaris]
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Configuration file [default: $CODARIS_CONFIG, else $XDG_CONFIG_HOME/codaris/config.toml]
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Also listen on this loopback TCP address, guarded by a bearer token in <state>/token
    #[arg(long, value_name = "127.0.0.1:PORT")]
    listen: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Serve one of Codaris's built-in MCP servers over stdin and stdout: runs its own program
    /// (`codaris-seqera-mcp`, beside this one), which the daemon starts directly; its settings
    /// arrive in the environment
    McpServer {
        /// The server: `seqera` (Wave container builds, `nextflow lint`, Seqera Platform)
        #[arg(value_parser = ["seqera"])]
        name: String,
    },
    /// Parse and resolve a configuration file offline (default: the one the daemon reads);
    /// prints `ok` or each error on a line of its own, exit 1 on error
    CheckConfig {
        /// The file to check
        file: Option<PathBuf>,
        /// On success print the file's operator inputs (roots, allowlists, registries) as
        /// JSON instead of `ok`: what `codaris audit replay --config` replays a candidate with
        #[arg(long)]
        operator_inputs: bool,
    },
}

fn main() -> ExitCode {
    // First, while this is the only thread: keys out of the environment block (this may exec).
    let keys = match codaris_daemon::server::keys::withdraw() {
        Ok(keys) => keys,
        Err(err) => {
            eprintln!("codarisd: cannot take the provider keys out of the environment: {err}");
            return ExitCode::FAILURE;
        }
    };
    std::panic::set_hook(Box::new(report_panic));
    let args = Args::parse();
    // Everything the daemon creates is private to its user unless it says otherwise.
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    // Orphans among the commands' descendants become the daemon's children (not init's), so
    // that they still count as its descendants; `reap_orphans` waits for them.
    if let Err(err) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
        eprintln!("codarisd: cannot become a child subreaper: {err}");
    }
    if let Some(Command::McpServer { name }) = &args.command {
        return mcp_server(name, &keys);
    }
    if let Some(Command::CheckConfig {
        file,
        operator_inputs: true,
    }) = &args.command
    {
        return match codaris_daemon::config::candidate_inputs(file.clone().or(args.config.clone()))
        {
            Ok(json) => {
                println!("{json}");
                ExitCode::SUCCESS
            }
            Err(lines) => {
                eprintln!("{lines}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(Command::CheckConfig { file, .. }) = args.command {
        return match codaris_daemon::config::check_file(file.or(args.config)) {
            Ok(path) => {
                println!("ok: {}", path.display());
                ExitCode::SUCCESS
            }
            Err(line) => {
                eprintln!("{line}");
                ExitCode::FAILURE
            }
        };
    }
    match run(args, &keys) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(%err, "codarisd failed");
            // Last, so the CLI that started this daemon relays this line and not the log's.
            eprintln!("codarisd: {err}");
            match err {
                // Its own code, so a service manager can tell "another daemon has it" from a
                // failure worth restarting for (`RestartPreventExitStatus=` in the unit).
                StartError::AlreadyRunning { .. } => {
                    ExitCode::from(codaris_daemon::server::state::EXIT_ALREADY_RUNNING)
                }
                StartError::LedgerWedged { .. } => {
                    ExitCode::from(codaris_daemon::server::state::EXIT_LEDGER_WEDGED)
                }
                _ => ExitCode::FAILURE,
            }
        }
    }
}

fn run(args: Args, keys: &HeldKeys) -> Result<(), StartError> {
    let flags = Flags {
        listen: args.listen,
    };
    let inputs = config::LoadInputs::gather(args.state_dir, args.config, flags, keys)?;
    let mut config = inputs.load()?;
    // The built-in MCP server is a program of its own, beside this one. When it is missing the
    // server is still registered, so `codaris mcp list` shows it failed; the log says why.
    let builtin = std::env::current_exe()
        .ok()
        .map(|exe| codaris_daemon::mcp::builtin::seqera_program(&exe));
    let mut builtin_missing = None;
    if let Some((program, missing)) = builtin {
        config.builtin_program = Some(program);
        builtin_missing = missing;
    }
    let claim = StateClaim::acquire(StateLayout::new(&config.state_dir))?;
    let watch = match StateWatch::new(claim.layout()) {
        Ok(watch) => watch,
        Err(source) => {
            let path = claim.layout().dir().to_path_buf();
            claim.release();
            return Err(StartError::StateDir { path, source });
        }
    };
    let telemetry = codaris_daemon::server::logging::init(
        claim.layout().dir(),
        &config.logging,
        config.telemetry.as_ref(),
    );
    if let Some(missing) = builtin_missing {
        tracing::warn!("{missing}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| StartError::Listen {
            what: "the async runtime".to_owned(),
            source,
        })?;
    let served = runtime.block_on(async {
        tokio::spawn(codaris_tools::shell::reap_orphans());
        let shutdown = Shutdown::new();
        codaris_daemon::server::shutdown::on_signals(shutdown.clone()).map_err(|source| {
            StartError::Listen {
                what: "signals".to_owned(),
                source,
            }
        })?;
        // A daemon whose state directory is deleted or replaced stops.
        codaris_daemon::server::watch::spawn(watch, shutdown.clone());
        codaris_daemon::serve_reloading(config, inputs, claim, shutdown).await
    });
    // Outside the runtime: the exporter's blocking client must not be dropped on it.
    drop(runtime);
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    served
}

/// `codarisd mcp-server seqera`: becomes the built-in server's own program (`exec`), for
/// whoever starts the server by this name; the daemon starts that program directly. The token
/// `keys::withdraw` took out of this image goes back into the environment the program starts
/// with, and that program takes it out of its own block again.
fn mcp_server(name: &str, keys: &HeldKeys) -> ExitCode {
    use std::os::unix::process::CommandExt;

    let Ok(exe) = std::env::current_exe() else {
        eprintln!("codarisd mcp-server {name}: cannot find this program's own path");
        return ExitCode::FAILURE;
    };
    let (program, missing) = codaris_daemon::mcp::builtin::seqera_program(&exe);
    if let Some(missing) = missing {
        eprintln!("codarisd mcp-server {name}: {missing}");
        return ExitCode::FAILURE;
    }
    let mut command = std::process::Command::new(&program);
    // The pipe this image's keys came on is read and closed: the program must not look for it.
    command.env_remove(codaris_daemon::server::keys::KEYS_FD_VAR);
    let token = codaris_daemon::config::seqera::TOWER_TOKEN_VAR;
    if let Some(value) = keys.get(token) {
        command.env(token, value);
    }
    let err = command.exec();
    eprintln!(
        "codarisd mcp-server {name}: cannot run `{}`: {err}",
        program.display()
    );
    ExitCode::FAILURE
}

/// A panic is a bug: one line naming it and where, for the log and for the CLI to relay.
fn report_panic(info: &std::panic::PanicHookInfo<'_>) {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic");
    let place = info
        .location()
        .map(|l| format!(" at {}:{}", l.file(), l.line()))
        .unwrap_or_default();
    let line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    tracing::error!(place = %place, "internal error: {line}");
    eprintln!("codarisd: internal error (a bug, please report it): {line}{place}");
}
