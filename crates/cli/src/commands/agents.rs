//! `codaris agents list`: the agent definitions `spawn_agent` can name in a project — the
//! built-in `general`, the user's (`<config dir>/agents/*.md`) and the project's
//! (`<project>/.codaris/agents/*.md`, which win) — as the daemon reads them, and why any file
//! was left out.
//!
//! `--json` prints `{"agents": [{"name", "description", "source", "path", "tools",
//! "disallowed_tools", "model"}], "problems": ["path: reason"]}` (`tools` is null when the
//! definition keeps every tool; `path` and `model` null when none): a contract, extended by
//! adding fields only.

use std::path::PathBuf;

use codaris_proto::v1;
use serde_json::json;

use super::Outcome;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

pub async fn list(
    target: &Target,
    autostart: bool,
    json_out: bool,
    cwd: Option<PathBuf>,
) -> Result<Outcome, CliError> {
    let cwd = match cwd {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|source| CliError::Read {
            path: PathBuf::from("."),
            source,
        })?,
    };
    // Relative to where the person stands, as every other `--cwd` is read.
    let cwd = std::path::absolute(&cwd).unwrap_or(cwd);
    let mut sessions =
        v1::sessions_client::SessionsClient::new(client::open(target, autostart).await?);
    let listed = sessions
        .list_agents(v1::ListAgentsRequest {
            cwd: cwd.display().to_string(),
        })
        .await?
        .into_inner();
    if json_out {
        output::json(&to_json(&listed))?;
        return Ok(Outcome::Success);
    }
    for agent in &listed.agents {
        output::line(&line(agent))?;
    }
    for problem in &listed.problems {
        output::line(&format!("left out: {}", output::shown(problem)))?;
    }
    Ok(Outcome::Success)
}

/// `reviewer (project) — Reviews a change [tools: read_file, grep; not: run_command; model: m]`
fn line(agent: &v1::AgentDefinition) -> String {
    let mut limits = Vec::new();
    if agent.tools_listed {
        limits.push(format!("tools: {}", listed(&agent.tools)));
    }
    if !agent.disallowed_tools.is_empty() {
        limits.push(format!("not: {}", listed(&agent.disallowed_tools)));
    }
    if !agent.model.is_empty() {
        limits.push(format!("model: {}", agent.model));
    }
    let limits = if limits.is_empty() {
        String::new()
    } else {
        format!(" [{}]", limits.join("; "))
    };
    output::shown(&format!(
        "{} ({}) — {}{limits}",
        agent.name, agent.source, agent.description
    ))
    .into_owned()
}

fn listed(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

fn to_json(listed: &v1::ListAgentsResponse) -> serde_json::Value {
    let agents: Vec<serde_json::Value> = listed
        .agents
        .iter()
        .map(|a| {
            json!({
                "name": a.name,
                "description": a.description,
                "source": a.source,
                "path": (!a.path.is_empty()).then_some(&a.path),
                "tools": a.tools_listed.then_some(&a.tools),
                "disallowed_tools": a.disallowed_tools,
                "model": (!a.model.is_empty()).then_some(&a.model),
            })
        })
        .collect();
    json!({"agents": agents, "problems": listed.problems})
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_line_says_what_a_definition_keeps_and_removes() {
        let agent = v1::AgentDefinition {
            name: "reviewer".to_owned(),
            description: "Reviews a change".to_owned(),
            source: "project".to_owned(),
            tools: vec!["read_file".to_owned(), "grep".to_owned()],
            tools_listed: true,
            disallowed_tools: vec!["run_command".to_owned()],
            model: "gpt-5-mini".to_owned(),
            ..Default::default()
        };
        assert_eq!(
            line(&agent),
            "reviewer (project) — Reviews a change [tools: read_file, grep; not: run_command; model: gpt-5-mini]"
        );
        let general = v1::AgentDefinition {
            name: "general".to_owned(),
            description: "any task".to_owned(),
            source: "builtin".to_owned(),
            ..Default::default()
        };
        assert_eq!(line(&general), "general (builtin) — any task");
        let value = to_json(&v1::ListAgentsResponse {
            agents: vec![general],
            problems: vec!["/p/x.md: no front matter".to_owned()],
        });
        assert_eq!(
            value,
            json!({"agents": [{"name": "general", "description": "any task", "source": "builtin",
                               "path": null, "tools": null, "disallowed_tools": [], "model": null}],
                   "problems": ["/p/x.md: no front matter"]})
        );
    }
}
