//! `codaris doctor`: asks the daemon to check each configured model provider with one cheap
//! request, and prints what is missing or wrong; exit 1 when any check fails (or none is
//! configured). Then, for each runtime commands start through (java, python3) that the sandbox
//! keeps them from, the key to set: a warning, not a failure.

use codaris_proto::v1;
use serde_json::json;

use super::Outcome;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

/// What to do when no provider is configured at all.
const NONE_SET_UP: &str = "no model provider is set up: run `codaris login` (or set CODARIS_PROVIDER and ANTHROPIC_API_KEY or OPENAI_API_KEY for the daemon)";

pub async fn doctor(target: &Target, autostart: bool, json_out: bool) -> Result<Outcome, CliError> {
    let channel = client::open(target, autostart).await?;
    let mut daemon = v1::daemon_client::DaemonClient::new(channel);
    let answer = daemon
        .check_providers(v1::CheckProvidersRequest {})
        .await?
        .into_inner();
    let (checks, runtimes) = (answer.checks, answer.runtimes);
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
            })).collect::<Vec<_>>(),
            "runtimes": runtimes.iter().map(|check| json!({
                "program": check.program,
                "path": check.path,
                "ok": check.ok,
                "problem": non_empty(&check.problem),
            })).collect::<Vec<_>>(),
        }))?;
    } else if checks.is_empty() {
        output::line(&format!("fail  {NONE_SET_UP}"))?;
    } else {
        for check in &checks {
            output::line(&check_line(check))?;
        }
    }
    // Only what needs doing is printed; `--json` lists every runtime.
    if !json_out {
        for check in runtimes.iter().filter(|check| !check.ok) {
            output::line(&format!("warn  {}: {}", check.program, check.problem))?;
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
