//! `codaris-seqera-mcp`: the built-in MCP server `seqera` on stdin and stdout, a program of its
//! own beside `codarisd`, which starts it like any other stdio server.
//!
//! Its own program rather than `codarisd` in another mode: the child holds only what serves
//! the protocol (a few MiB resident, not the daemon's image), and the daemon's binary links none
//! of it. Its settings come from the environment the daemon gives it ([`SeqeraSetup::from_env`]);
//! the token among them is taken out of the environment block first (`codaris-keys`), as the
//! daemon does with its own keys. Logs go to stderr, which the daemon relays to its log line by
//! line; stdout carries the protocol only.

use std::process::ExitCode;

use codaris_seqera::SeqeraSetup;
use codaris_seqera::setup::ENV_TOKEN;
use tracing_subscriber::EnvFilter;

/// How this program names itself in its one-line errors.
const NAME: &str = "codaris-seqera-mcp";

fn main() -> ExitCode {
    // First, while this is the only thread: the token out of the environment block (this may
    // exec this program again without it).
    if let Err(err) = codaris_keys::deny_inspection() {
        eprintln!("{NAME}: warning: could not mark the server non-dumpable: {err}");
    }
    let keys = match codaris_keys::withdraw(&[ENV_TOKEN]) {
        Ok(keys) => keys,
        Err(err) => {
            eprintln!("{NAME}: cannot take the token out of the environment: {err}");
            return ExitCode::FAILURE;
        }
    };
    std::panic::set_hook(Box::new(report_panic));
    if let Some(arg) = std::env::args_os().nth(1) {
        eprintln!(
            "{NAME}: takes no arguments, got `{}` (codarisd starts it; its settings arrive in the environment)",
            arg.to_string_lossy()
        );
        return ExitCode::from(2);
    }
    // What `nextflow lint` writes in its private directory is this user's only.
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .init();
    let get = |var: &str| {
        keys.get(var)
            .and_then(|value| value.to_str().map(str::to_owned))
            .or_else(|| std::env::var(var).ok())
    };
    let setup = match SeqeraSetup::from_env(get) {
        Ok(setup) => setup,
        Err(err) => {
            eprintln!("{NAME}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("{NAME}: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(codaris_seqera::serve_stdio(setup)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{NAME}: {err}");
            ExitCode::FAILURE
        }
    }
}

/// A panic is a bug: one line naming it and where, for the daemon's log.
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
    eprintln!("{NAME}: internal error (a bug, please report it): {line}{place}");
}
