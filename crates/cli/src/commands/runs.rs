//! `codaris runs`: the pipeline runs Codaris launched, local and on Seqera Platform, newest
//! first, each with where it went — read from the ledger's allowed decisions of the launch
//! tools (`run_built_pipeline`, `autopilot_pipeline`, `seqera__launch_pipeline`), so a run is
//! listed exactly when a recorded decision let it start.

use codaris_proto::v1;
use serde_json::{Value, json};

use super::Outcome;
use super::run::verdict_name;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

/// The tools that start a run, and where each sends it.
const LAUNCH_TOOLS: [&str; 3] = [
    "run_built_pipeline",
    "autopilot_pipeline",
    "seqera__launch_pipeline",
];

/// How many of the newest decisions are read to find them.
const DECISIONS_READ: u32 = 20_000;

/// One launch, from its decision.
fn launch_json(record: &v1::DecisionRecord) -> Value {
    let request: Value = serde_json::from_str(&record.input_json).unwrap_or(Value::Null);
    let args = &request["args"];
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    let remote = record.tool == "seqera__launch_pipeline";
    let place = if remote {
        codaris_policy::launch_target(args)
    } else {
        let mut place = text("path").unwrap_or_else(|| {
            request["task"]["cwd"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        });
        if let Some(profile) = text("profile") {
            place.push_str(&format!(" (profile {profile})"));
        }
        place
    };
    json!({
        "seq": record.seq,
        "session_id": record.session_id,
        "decided_at": record.decided_at.as_ref().map(|t| t.to_string()),
        "tool": record.tool,
        "where": if remote { "seqera_platform" } else { "local" },
        "pipeline": if remote { text("pipeline") } else { text("path") },
        "place": place,
        "launch_body_sha256": (!record.launch_body_sha256.is_empty()).then_some(&record.launch_body_sha256),
    })
}

pub async fn run(
    target: &Target,
    autostart: bool,
    json_out: bool,
    limit: usize,
) -> Result<Outcome, CliError> {
    let channel = client::open(target, autostart).await?;
    let mut ledger = v1::ledger_client::LedgerClient::new(channel);
    let decisions = ledger
        .list_decisions(v1::ListDecisionsRequest {
            session_id: String::new(),
            limit: DECISIONS_READ,
        })
        .await?
        .into_inner()
        .decisions;
    let launches: Vec<Value> = decisions
        .iter()
        .filter(|record| LAUNCH_TOOLS.contains(&record.tool.as_str()))
        .filter(|record| {
            record
                .decision
                .as_ref()
                .is_some_and(|d| verdict_name(d.verdict) == "allow")
        })
        .take(if limit == 0 { usize::MAX } else { limit })
        .map(launch_json)
        .collect();
    if json_out {
        for launch in &launches {
            output::json(launch)?;
        }
    } else if launches.is_empty() {
        output::line("no runs launched")?;
    } else {
        for launch in &launches {
            let place = launch["place"].as_str().unwrap_or_default();
            let line = match launch["where"].as_str() {
                Some("seqera_platform") => format!(
                    "#{} {} {}: Seqera Platform, {} ({place})",
                    launch["seq"],
                    launch["session_id"].as_str().unwrap_or_default(),
                    launch["decided_at"].as_str().unwrap_or_default(),
                    launch["pipeline"].as_str().unwrap_or_default(),
                ),
                _ => format!(
                    "#{} {} {}: local, {place}",
                    launch["seq"],
                    launch["session_id"].as_str().unwrap_or_default(),
                    launch["decided_at"].as_str().unwrap_or_default(),
                ),
            };
            output::line(&line)?;
        }
    }
    Ok(Outcome::Success)
}
