//! `codaris ledger`: grants, decisions and exports through the daemon.

use std::io::Write;

use codaris_proto::v1;
use serde_json::json;

use super::Outcome;
use super::run::verdict_name;
use crate::cli::LedgerCommand;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

pub async fn run(
    target: &Target,
    autostart: bool,
    json: bool,
    command: LedgerCommand,
) -> Result<Outcome, CliError> {
    let channel = client::open(target, autostart).await?;
    let mut ledger = v1::ledger_client::LedgerClient::new(channel);
    match command {
        LedgerCommand::Grants { session, all } => {
            let grants = ledger
                .list_grants(v1::ListGrantsRequest {
                    session_id: session.unwrap_or_default(),
                    include_inactive: all,
                })
                .await?
                .into_inner()
                .grants;
            if json {
                for grant in &grants {
                    output::json(&grant_json(grant))?;
                }
            } else if grants.is_empty() {
                output::line("no grants")?;
            } else {
                for grant in &grants {
                    output::line(&grant_line(grant))?;
                }
            }
        }
        LedgerCommand::Decisions { session, limit } => {
            let decisions = ledger
                .list_decisions(v1::ListDecisionsRequest {
                    session_id: session.unwrap_or_default(),
                    limit,
                })
                .await?
                .into_inner()
                .decisions;
            if json {
                for record in &decisions {
                    output::json(&decision_json(record))?;
                }
            } else if decisions.is_empty() {
                output::line("no decisions")?;
            } else {
                for record in &decisions {
                    let decision = record.decision.clone().unwrap_or_default();
                    output::line(&format!(
                        "#{} {} {}: {} {}: {}",
                        record.seq,
                        record.session_id,
                        record.tool,
                        verdict_name(decision.verdict),
                        decision.code,
                        decision.sentence
                    ))?;
                }
            }
        }
        LedgerCommand::Export {
            session,
            output: file,
        } => {
            let mut stream = ledger
                .export_ledger(v1::ExportLedgerRequest {
                    session_id: session.unwrap_or_default(),
                })
                .await?
                .into_inner();
            let mut sink: Box<dyn Write> = match &file {
                Some(path) => {
                    Box::new(
                        std::fs::File::create(path).map_err(|source| CliError::Write {
                            path: path.clone(),
                            source,
                        })?,
                    )
                }
                None => Box::new(std::io::stdout().lock()),
            };
            while let Some(chunk) = stream.message().await? {
                sink.write_all(&chunk.jsonl)?;
            }
            sink.flush()?;
        }
        LedgerCommand::Revoke { id } => {
            let grant = ledger
                .revoke_grant(v1::RevokeGrantRequest { id })
                .await?
                .into_inner();
            if json {
                output::json(&grant_json(&grant))?;
            } else {
                output::line(&format!("revoked {}", grant_line(&grant)))?;
            }
        }
    }
    Ok(Outcome::Success)
}

fn lifetime_name(lifetime: i32) -> &'static str {
    match v1::GrantLifetime::try_from(lifetime) {
        Ok(v1::GrantLifetime::Once) => "once",
        Ok(v1::GrantLifetime::Session) => "session",
        Ok(v1::GrantLifetime::Deny) => "deny",
        _ => "unspecified",
    }
}

fn grant_line(grant: &v1::Grant) -> String {
    let capability = grant.capability.clone().unwrap_or_default();
    let state = if grant.revoked {
        " (revoked)"
    } else if grant.consumed {
        " (spent)"
    } else {
        ""
    };
    format!(
        "{} {} {} {}{} [{}]{state}",
        grant.id,
        grant.session_id,
        lifetime_name(grant.lifetime),
        capability.name,
        if capability.path.is_empty() {
            String::new()
        } else {
            format!(" {}", capability.path)
        },
        grant
            .granted_at
            .as_ref()
            .map(|t| t.to_string())
            .unwrap_or_default()
    )
}

fn grant_json(grant: &v1::Grant) -> serde_json::Value {
    let capability = grant.capability.clone().unwrap_or_default();
    json!({
        "id": grant.id,
        "session_id": grant.session_id,
        "capability": capability.name,
        "path": (!capability.path.is_empty()).then_some(capability.path),
        "lifetime": lifetime_name(grant.lifetime),
        "granted_at": grant.granted_at.as_ref().map(|t| t.to_string()),
        "consumed": grant.consumed,
        "revoked": grant.revoked,
    })
}

fn decision_json(record: &v1::DecisionRecord) -> serde_json::Value {
    let decision = record.decision.clone().unwrap_or_default();
    let input: serde_json::Value =
        serde_json::from_str(&record.input_json).unwrap_or(serde_json::Value::Null);
    json!({
        "seq": record.seq,
        "session_id": record.session_id,
        "tool": record.tool,
        "decided_at": record.decided_at.as_ref().map(|t| t.to_string()),
        "policy_version": record.policy_version,
        "decision": {
            "verdict": verdict_name(decision.verdict),
            "code": decision.code,
            "sentence": decision.sentence,
            "capability": decision.capability.map(|c| json!({
                "name": c.name,
                "path": (!c.path.is_empty()).then_some(c.path),
            })),
            "rules": decision.rules,
        },
        "request": input,
        // Added with subagents: a child's decision names its parent and whose grants it used.
        "parent_session_id": (!record.parent_session_id.is_empty()).then_some(&record.parent_session_id),
        "grants_of": (!record.grants_of.is_empty()).then_some(&record.grants_of),
        // Added with launches on Seqera Platform: the digest of the body the launch sent.
        "launch_body_sha256": (!record.launch_body_sha256.is_empty()).then_some(&record.launch_body_sha256),
    })
}
