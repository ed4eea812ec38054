//! `codaris login` (also `codaris setup`): a provider, model, base URL and key handed to the
//! daemon, which stores them (the key in a 0600 file in its state directory) and uses them from
//! the next session on, without a restart.
//!
//! The key is read from the terminal with echo off (or one line of standard input with
//! `--key-stdin` or when it is not a terminal), sent once over the socket, and never printed.

use std::io::{BufRead, IsTerminal, Write};

use codaris_proto::v1;
use serde_json::json;

use super::Outcome;
use crate::cli::LoginArgs;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

pub async fn login(
    target: &Target,
    autostart: bool,
    json_out: bool,
    args: LoginArgs,
) -> Result<Outcome, CliError> {
    let provider = match args.provider {
        Some(provider) => provider,
        None if std::io::stdin().is_terminal() => ask("provider (anthropic or openai): ")?,
        None => {
            return Err(CliError::InvalidFlag {
                flag: "--provider",
                reason: "name the provider: anthropic or openai".to_owned(),
            });
        }
    };
    let kind = match codaris_agent::ProviderChoice::parse(provider.trim()) {
        Some(codaris_agent::ProviderChoice::Api(kind)) => kind,
        _ => {
            return Err(CliError::InvalidFlag {
                flag: "--provider",
                reason: format!("must be anthropic or openai, not `{provider}`"),
            });
        }
    };
    let api_key = if args.keep_key {
        String::new()
    } else {
        let key = if args.key_stdin || !std::io::stdin().is_terminal() {
            read_line_stdin()?
        } else {
            read_hidden(&format!("{} key (not shown): ", kind.api_key_env()))?
        };
        if key.is_empty() {
            return Err(CliError::InvalidFlag {
                flag: "key",
                reason: "none was given; pass --keep-key to keep the stored one".to_owned(),
            });
        }
        key
    };
    let channel = client::open(target, autostart).await?;
    let mut daemon = v1::daemon_client::DaemonClient::new(channel);
    let answer = daemon
        .login(v1::LoginRequest {
            provider: kind.as_str().to_owned(),
            model: args.model.unwrap_or_default(),
            base_url: args.base_url.unwrap_or_default(),
            api_key,
        })
        .await?
        .into_inner();
    // What still overrides the login: the daemon's own environment.
    let config = daemon
        .get_config(v1::GetConfigRequest {})
        .await?
        .into_inner();
    let shadowed: Vec<String> = config
        .entries
        .iter()
        .filter(|entry| entry.source == "environment")
        .filter_map(|entry| {
            let var = match entry.key.as_str() {
                "provider.name" => "CODARIS_PROVIDER",
                "provider.model" => "CODARIS_MODEL",
                key if key == format!("{}.api_key", kind.as_str()) => kind.api_key_env(),
                key if key == format!("{}.base_url", kind.as_str()) => kind.base_url_env(),
                _ => return None,
            };
            Some(var.to_owned())
        })
        .collect();
    if json_out {
        output::json(&json!({
            "provider": answer.provider,
            "model": (!answer.model.is_empty()).then_some(&answer.model),
            "base_url": answer.base_url,
            "key_file": answer.key_file,
            "overridden_by_environment": shadowed,
        }))?;
    } else {
        let model = if answer.model.is_empty() {
            "no model yet (pass --model)".to_owned()
        } else {
            format!("model {}", answer.model)
        };
        output::line(&format!(
            "logged in: new sessions use {}, {model}, at {}\nstored in {} (0600)",
            answer.provider, answer.base_url, answer.key_file
        ))?;
        for var in &shadowed {
            eprintln!(
                "codaris: note: the daemon's environment sets {var}, which wins over what was stored; restart it without {var} for the login to count"
            );
        }
    }
    Ok(Outcome::Success)
}

/// One line from the terminal, echoed (a provider's name is no secret).
fn ask(prompt: &str) -> Result<String, CliError> {
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    read_line_stdin()
}

/// One line of standard input, without its line ending.
fn read_line_stdin() -> Result<String, CliError> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|err| CliError::Terminal {
            message: format!("cannot read standard input: {err}"),
        })?;
    Ok(line.trim_end_matches(['\r', '\n']).trim().to_owned())
}

/// Restores the terminal's echo however the read ends.
struct EchoOff {
    saved: rustix::termios::Termios,
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        let _ = rustix::termios::tcsetattr(
            std::io::stdin(),
            rustix::termios::OptionalActions::Now,
            &self.saved,
        );
    }
}

/// A line typed at the terminal with echo off: nothing of it appears on the screen.
fn read_hidden(prompt: &str) -> Result<String, CliError> {
    let terminal = |err: rustix::io::Errno| CliError::Terminal {
        message: format!("cannot turn the terminal's echo off: {err}"),
    };
    let saved = rustix::termios::tcgetattr(std::io::stdin()).map_err(terminal)?;
    let mut quiet = saved.clone();
    quiet.local_modes.remove(rustix::termios::LocalModes::ECHO);
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let guard = EchoOff { saved };
    rustix::termios::tcsetattr(
        std::io::stdin(),
        rustix::termios::OptionalActions::Now,
        &quiet,
    )
    .map_err(terminal)?;
    let line = read_line_stdin();
    drop(guard);
    eprintln!();
    line
}
