//! `codaris login` (also `codaris setup`): a provider, model, base URL and key handed to the
//! daemon, which stores them (the key in a 0600 file in its state directory) and uses them from
//! the next session on, without a restart.
//!
//! The key is read from the terminal with echo off (or one line of standard input with
//! `--key-stdin` or when it is not a terminal), sent once over the socket, and never printed. No
//! key is a login too when the base URL is on this machine (a local server such as llama.cpp's
//! needs none): the daemon then stores none, and requests carry no `authorization` header.
//!
//! At a terminal, what the flags leave out is asked: the provider, the base URL (the one in force
//! shown as the default), the key, and the model, offering the server's model list; then the
//! daemon checks the provider as `codaris doctor` does and the answer is shown. Without a
//! terminal nothing is asked beyond the key line, so scripts keep working with flags alone.

use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use codaris_agent::ProviderKind;
use codaris_proto::v1;
use serde_json::json;

use super::Outcome;
use crate::cli::LoginArgs;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

/// How long listing the server's models may take before the model is asked by name alone.
const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// The most model names listed to choose from; a longer list says how many more there are.
const MAX_LISTED: usize = 30;

/// What the login does with the key.
enum KeyAnswer {
    Keep,
    Set(String),
    /// None given, for a server on this machine.
    None,
}

pub async fn login(
    target: &Target,
    autostart: bool,
    json_out: bool,
    args: LoginArgs,
) -> Result<Outcome, CliError> {
    // Questions only for a person at a terminal: `--key-stdin` says standard input is a pipe's.
    let interactive = std::io::stdin().is_terminal() && !args.key_stdin;
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
    let channel = client::open(target, autostart).await?;
    let mut daemon = v1::daemon_client::DaemonClient::new(channel);
    let before = InForce::of(
        &daemon
            .get_config(v1::GetConfigRequest {})
            .await?
            .into_inner(),
        kind,
    );
    let base_url = match args.base_url {
        Some(url) => Some(url.trim().to_owned()),
        None if interactive => {
            let shown = before.base_url(kind);
            let answer = ask(&format!("base URL [{shown}]: "))?;
            (!answer.is_empty()).then_some(answer)
        }
        None => None,
    };
    // The base URL the login leaves in force, which decides whether no key is acceptable.
    let target_url = base_url.clone().unwrap_or_else(|| before.base_url(kind));
    let local = codaris_agent::is_loopback_url(&target_url);
    let key = if args.keep_key {
        KeyAnswer::Keep
    } else {
        let key = if interactive {
            let prompt = if local {
                format!(
                    "{} (not shown; empty for none, the server is on this machine): ",
                    kind.api_key_env()
                )
            } else {
                format!("{} key (not shown): ", kind.api_key_env())
            };
            read_hidden(&prompt)?
        } else {
            read_line_stdin()?
        };
        match (key.is_empty(), local) {
            (false, _) => KeyAnswer::Set(key),
            (true, true) => KeyAnswer::None,
            (true, false) => {
                return Err(CliError::InvalidFlag {
                    flag: "key",
                    reason: format!(
                        "none was given; pass --keep-key to keep the stored one (only a server on this machine, 127.0.0.1, ::1 or localhost, may go without a key; `{target_url}` is not one)"
                    ),
                });
            }
        }
    };
    let model = match args.model {
        Some(model) => Some(model),
        None if interactive => ask_model(kind, &target_url, &key, &before).await?,
        None => None,
    };
    let (api_key, no_key) = match key {
        KeyAnswer::Keep => (String::new(), false),
        KeyAnswer::Set(key) => (key, false),
        KeyAnswer::None => (String::new(), true),
    };
    let answer = daemon
        .login(v1::LoginRequest {
            provider: kind.as_str().to_owned(),
            model: model.unwrap_or_default(),
            base_url: base_url.unwrap_or_default(),
            api_key,
            no_key,
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
    // A person is told at once whether what they set up answers; a script runs `doctor`.
    let check = if interactive {
        daemon
            .check_providers(v1::CheckProvidersRequest::default())
            .await?
            .into_inner()
            .checks
            .into_iter()
            .find(|check| check.provider == kind.as_str())
    } else {
        None
    };
    if json_out {
        let mut shown = json!({
            "provider": answer.provider,
            "model": (!answer.model.is_empty()).then_some(&answer.model),
            "base_url": answer.base_url,
            "key_file": answer.key_file,
            "overridden_by_environment": shadowed,
        });
        if let (Some(check), Some(fields)) = (&check, shown.as_object_mut()) {
            fields.insert(
                "check".to_owned(),
                json!({"ok": check.ok, "problem": (!check.problem.is_empty()).then_some(&check.problem)}),
            );
        }
        output::json(&shown)?;
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
        if no_key {
            output::line("no key: requests carry no authorization header")?;
        }
        for var in &shadowed {
            eprintln!(
                "codaris: note: the daemon's environment sets {var}, which wins over what was stored; restart it without {var} for the login to count"
            );
        }
        if let Some(check) = &check {
            output::line(&format!("check: {}", super::doctor::check_line(check)))?;
        }
    }
    Ok(Outcome::Success)
}

/// What the daemon had in force before the login, as `config show` lists it.
struct InForce {
    provider: Option<String>,
    model: Option<String>,
    base_url: Option<String>,
}

impl InForce {
    fn of(config: &v1::GetConfigResponse, kind: ProviderKind) -> Self {
        let value = |key: &str| {
            config
                .entries
                .iter()
                .find(|entry| entry.key == key)
                .and_then(|entry| serde_json::from_str::<serde_json::Value>(&entry.value).ok())
                .and_then(|value| value.as_str().map(str::to_owned))
        };
        Self {
            provider: value("provider.name"),
            model: value("provider.model"),
            base_url: value(&format!("{}.base_url", kind.as_str())),
        }
    }

    /// The base URL `kind` has now: the one in force, else its public endpoint.
    fn base_url(&self, kind: ProviderKind) -> String {
        self.base_url
            .clone()
            .unwrap_or_else(|| kind.default_base_url().to_owned())
    }

    /// The model in force, when it is `kind`'s.
    fn model_of(&self, kind: ProviderKind) -> Option<&str> {
        (self.provider.as_deref() == Some(kind.as_str()))
            .then_some(self.model.as_deref())
            .flatten()
    }
}

/// Asks for the model, offering what the server at `base_url` lists (asked with the key just
/// typed, else none: a kept key stays in the daemon). `None`: keep the stored one.
async fn ask_model(
    kind: ProviderKind,
    base_url: &str,
    key: &KeyAnswer,
    before: &InForce,
) -> Result<Option<String>, CliError> {
    let secret = match key {
        KeyAnswer::Set(key) => Some(codaris_agent::Secret::new(key.clone())),
        KeyAnswer::Keep | KeyAnswer::None => None,
    };
    let listed =
        match codaris_agent::list_models(kind, Some(base_url), secret.as_ref(), LIST_TIMEOUT).await
        {
            Ok(listed) => listed,
            Err(problem) => {
                eprintln!("codaris: cannot list the models: {problem}");
                Vec::new()
            }
        };
    let default = before
        .model_of(kind)
        .map(str::to_owned)
        .or_else(|| listed.first().cloned());
    if !listed.is_empty() {
        eprintln!("models at {base_url}:");
        for (number, name) in listed.iter().take(MAX_LISTED).enumerate() {
            eprintln!("  {:>2}) {name}", number + 1);
        }
        if listed.len() > MAX_LISTED {
            eprintln!("  … and {} more (type a name)", listed.len() - MAX_LISTED);
        }
    }
    let prompt = match &default {
        Some(default) => format!("model (a number or a name) [{default}]: "),
        None => "model (a name): ".to_owned(),
    };
    let answer = ask(&prompt)?;
    Ok(choose_model(&answer, &listed, default.as_deref()))
}

/// The model an answer names: a listed number, else the name typed, else (empty) the default.
fn choose_model(answer: &str, listed: &[String], default: Option<&str>) -> Option<String> {
    let answer = answer.trim();
    if answer.is_empty() {
        return default.map(str::to_owned);
    }
    match answer.parse::<usize>() {
        Ok(number) if (1..=listed.len().min(MAX_LISTED)).contains(&number) => {
            listed.get(number - 1).cloned()
        }
        _ => Some(answer.to_owned()),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_model_is_chosen_by_number_by_name_or_by_default() {
        let listed = names(&["qwen2.5-coder", "llama3.1:8b"]);
        assert_eq!(
            choose_model("2", &listed, Some("qwen2.5-coder")).as_deref(),
            Some("llama3.1:8b")
        );
        assert_eq!(
            choose_model(" my-model ", &listed, None).as_deref(),
            Some("my-model")
        );
        assert_eq!(
            choose_model("", &listed, Some("qwen2.5-coder")).as_deref(),
            Some("qwen2.5-coder")
        );
        assert_eq!(choose_model("", &[], None), None);
        // A number that lists nothing is a name (some models are numbers).
        assert_eq!(choose_model("3", &listed, None).as_deref(), Some("3"));
        assert_eq!(choose_model("0", &listed, None).as_deref(), Some("0"));
    }
}
