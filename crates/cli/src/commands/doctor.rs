//! `codaris doctor`: asks the daemon to check what a `codaris run` from this shell would use
//! (the provider, model and base URL this command's environment names, `CODARIS_PROVIDER`,
//! `CODARIS_MODEL`, `OPENAI_BASE_URL`/`ANTHROPIC_BASE_URL`, resolved as `run` resolves them,
//! the daemon's own settings for the rest), then each other configured model provider, with one
//! cheap request each, and prints what is missing or wrong and where each setting of the first
//! came from; exit 1 when any check fails (or none is configured). Then, for each runtime
//! commands start through (java, python3) that the sandbox keeps them from, the key to set: a
//! warning, not a failure. Never a key: keys stay with the daemon.

use codaris_proto::v1;
use serde_json::{Value, json};

use super::Outcome;
use super::session_model::SessionModel;
use crate::cli::{Mode, PermissionModeArg, SessionArgs};
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

/// What to do when no provider is configured at all.
const NONE_SET_UP: &str = "no model provider is set up: run `codaris login` (or set CODARIS_PROVIDER and ANTHROPIC_API_KEY or OPENAI_API_KEY for the daemon)";

/// The session flags of a `codaris run` given none: doctor checks what the environment and the
/// daemon choose.
pub fn no_flags() -> SessionArgs {
    SessionArgs {
        provider: None,
        model: None,
        base_url: None,
        script: None,
        cwd: None,
        mode: Mode::Agent,
        permission_mode: PermissionModeArg::Ask,
    }
}

/// The request for what a run with `session` (its provider perhaps named by the daemon
/// already, as `run` has it named) would ask for, and the variable each asked value came from.
fn asked(
    session: &SessionArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(v1::CheckProvidersRequest, [Option<String>; 3]), CliError> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    let choice = SessionModel::from_args(session, env)?;
    // The base URL came from the variable of the provider chosen (`run` takes no other).
    let url_var = codaris_agent::ProviderChoice::parse(&choice.provider).and_then(|p| match p {
        codaris_agent::ProviderChoice::Api(kind) => Some(kind.base_url_env()),
        codaris_agent::ProviderChoice::Scripted => None,
    });
    // A provider the daemon named is the daemon's: left to it, it says where it came from.
    let provider = if set("CODARIS_PROVIDER").is_some() {
        choice.provider
    } else {
        String::new()
    };
    let vars = [
        (!provider.is_empty()).then(|| "CODARIS_PROVIDER".to_owned()),
        (!choice.model.is_empty()).then(|| "CODARIS_MODEL".to_owned()),
        url_var
            .filter(|_| !choice.base_url.is_empty())
            .map(str::to_owned),
    ];
    Ok((
        v1::CheckProvidersRequest {
            provider,
            model: choice.model,
            base_url: choice.base_url,
            pipeline: String::new(),
        },
        vars,
    ))
}

/// Where each of the provider, model and base URL of the new session's check came from: the
/// variable of this shell that set it, else what the daemon said.
fn sources(check: &v1::ProviderCheck, vars: &[Option<String>; 3]) -> [String; 3] {
    let daemon = [
        &check.provider_source,
        &check.model_source,
        &check.base_url_source,
    ];
    std::array::from_fn(|i| match (&vars[i], daemon[i].as_str()) {
        (Some(var), "request" | "") => format!("env {var}"),
        (_, "") => "-".to_owned(),
        (_, said) => said.to_owned(),
    })
}

pub async fn doctor(
    target: &Target,
    autostart: bool,
    json_out: bool,
    session: &SessionArgs,
    pipeline: Option<&std::path::Path>,
) -> Result<Outcome, CliError> {
    let (mut request, vars) = asked(session, &|name| std::env::var(name).ok())?;
    if let Some(dir) = pipeline {
        // The daemon reads it, so it gets the path as this shell means it.
        request.pipeline = std::path::absolute(dir)
            .map_err(|source| CliError::Read {
                path: dir.to_path_buf(),
                source,
            })?
            .display()
            .to_string();
    }
    let channel = client::open(target, autostart).await?;
    let mut daemon = v1::daemon_client::DaemonClient::new(channel);
    let answer = daemon.check_providers(request).await?.into_inner();
    let (checks, runtimes, executors) = (answer.checks, answer.runtimes, answer.executors);
    let ok = !checks.is_empty() && checks.iter().all(|check| check.ok);
    if json_out {
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        output::json(&json!({
            "ok": ok,
            "problem": checks.is_empty().then_some(NONE_SET_UP),
            "checks": checks.iter().map(|check| json!({
                "provider": check.provider,
                "model": non_empty(&check.model),
                "base_url": check.base_url,
                "ok": check.ok,
                "problem": non_empty(&check.problem),
                "for_new_session": check.for_new_session,
                "sources": check.for_new_session.then(|| {
                    let [provider, model, base_url] = sources(check, &vars);
                    json!({"provider": provider, "model": model, "base_url": base_url})
                }),
            })).collect::<Vec<Value>>(),
            "runtimes": runtimes.iter().map(|check| json!({
                "program": check.program,
                "path": check.path,
                "ok": check.ok,
                "problem": non_empty(&check.problem),
            })).collect::<Vec<_>>(),
            // Added with executor profiles: what a run with each needs from this machine.
            "executors": executors.iter().map(|check| json!({
                "profile": check.profile,
                "executor": check.executor,
                "ok": check.ok,
                "problem": non_empty(&check.problem),
                "found": check.found,
            })).collect::<Vec<_>>(),
        }))?;
    } else if checks.is_empty() {
        output::line(&format!("fail  {NONE_SET_UP}"))?;
    } else {
        for check in &checks {
            output::line(&check_line(check))?;
            if check.for_new_session {
                let [provider, model, base_url] = sources(check, &vars);
                output::line(&format!(
                    "      a new session from this shell: provider from {provider}, model from {model}, base URL from {base_url}"
                ))?;
            }
        }
    }
    // Only what needs doing is printed; `--json` lists every runtime.
    if !json_out {
        for check in runtimes.iter().filter(|check| !check.ok) {
            output::line(&format!("warn  {}: {}", check.program, check.problem))?;
        }
        for check in &executors {
            if !check.ok {
                let mut line = format!(
                    "warn  executor profile `{}` ({}): {}",
                    check.profile, check.executor, check.problem
                );
                // Asked about a pipeline: what it would use is part of the answer.
                if pipeline.is_some() && !check.found.is_empty() {
                    line.push_str(&format!(" (found: {})", check.found.join("; ")));
                }
                output::line(&line)?;
            } else if pipeline.is_some() {
                // Asked about a pipeline: what it would use is the answer, not only what fails.
                output::line(&format!(
                    "ok    executor profile `{}` ({}): {}",
                    check.profile,
                    check.executor,
                    check.found.join("; ")
                ))?;
            }
        }
    }
    Ok(if ok {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

/// One provider's check as a line: `ok    openai (M) at URL`, or `fail  …: the problem`.
pub fn check_line(check: &v1::ProviderCheck) -> String {
    let model = if check.model.is_empty() {
        String::new()
    } else {
        format!(" ({})", check.model)
    };
    if check.ok {
        format!("ok    {}{model} at {}", check.provider, check.base_url)
    } else {
        format!(
            "fail  {}{model} at {}: {}",
            check.provider, check.base_url, check.problem
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::session_model::tests::env;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_shell_s_variables_are_asked_as_run_asks_them_and_never_a_key() -> Result<(), CliError> {
        let shell = env(&[
            ("CODARIS_PROVIDER", "openai"),
            ("CODARIS_MODEL", "local-model"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
            ("ANTHROPIC_BASE_URL", "http://wrong.example"),
            ("OPENAI_API_KEY", "sk-never-sent"),
        ]);
        let (request, vars) = asked(&no_flags(), &shell)?;
        assert_eq!(
            request,
            v1::CheckProvidersRequest {
                provider: "openai".to_owned(),
                model: "local-model".to_owned(),
                base_url: "http://127.0.0.1:8080/v1".to_owned(),
                pipeline: String::new(),
            }
        );
        assert!(!format!("{request:?}").contains("sk-never-sent"));
        let check = v1::ProviderCheck {
            provider_source: "request".to_owned(),
            model_source: "request".to_owned(),
            base_url_source: "request".to_owned(),
            ..Default::default()
        };
        assert_eq!(
            sources(&check, &vars),
            [
                "env CODARIS_PROVIDER",
                "env CODARIS_MODEL",
                "env OPENAI_BASE_URL"
            ]
        );
        Ok(())
    }

    #[test]
    fn a_provider_the_daemon_named_is_left_to_it_with_the_shell_s_base_url() -> Result<(), CliError>
    {
        let shell = env(&[("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")]);
        // As `name_daemon_provider` leaves it when the daemon's provider is openai.
        let mut session = no_flags();
        session.provider = Some("openai".to_owned());
        let (request, vars) = asked(&session, &shell)?;
        assert_eq!(request.provider, "");
        assert_eq!(request.base_url, "http://127.0.0.1:8080/v1");
        let check = v1::ProviderCheck {
            provider_source: "codaris login".to_owned(),
            model_source: "daemon file".to_owned(),
            base_url_source: "request".to_owned(),
            ..Default::default()
        };
        assert_eq!(
            sources(&check, &vars),
            ["codaris login", "daemon file", "env OPENAI_BASE_URL"]
        );
        Ok(())
    }
}
