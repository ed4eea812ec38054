//! Wire ↔ domain conversions for the gRPC API. Libraries never see generated types.

use std::time::{Duration, UNIX_EPOCH};

use codaris_proto::v1;

use crate::sessions::{SessionRecord, SessionState};

pub fn timestamp_ms(ms: u64) -> prost_types::Timestamp {
    prost_types::Timestamp::from(UNIX_EPOCH + Duration::from_millis(ms))
}

pub fn activity_name(activity: i32) -> Option<&'static str> {
    match v1::Activity::try_from(activity).ok()? {
        v1::Activity::Unspecified | v1::Activity::Agent => Some("agent"),
        v1::Activity::Plan => Some("plan"),
        v1::Activity::Ask => Some("ask"),
        v1::Activity::Review => Some("review"),
        v1::Activity::Research => Some("research"),
        v1::Activity::Audit => Some("audit"),
    }
}

fn activity_wire(name: &str) -> v1::Activity {
    match name {
        "plan" => v1::Activity::Plan,
        "ask" => v1::Activity::Ask,
        "review" => v1::Activity::Review,
        "research" => v1::Activity::Research,
        "audit" => v1::Activity::Audit,
        _ => v1::Activity::Agent,
    }
}

pub fn permission_mode_name(mode: i32) -> Option<&'static str> {
    match v1::PermissionMode::try_from(mode).ok()? {
        v1::PermissionMode::Unspecified | v1::PermissionMode::Ask => Some("ask"),
        v1::PermissionMode::AcceptEdits => Some("accept_edits"),
        v1::PermissionMode::Bypass => Some("bypass"),
    }
}

fn permission_mode_wire(name: &str) -> v1::PermissionMode {
    match name {
        "accept_edits" => v1::PermissionMode::AcceptEdits,
        "bypass" => v1::PermissionMode::Bypass,
        _ => v1::PermissionMode::Ask,
    }
}

impl From<SessionRecord> for v1::Session {
    fn from(record: SessionRecord) -> Self {
        Self {
            id: record.id,
            state: match record.state {
                SessionState::Active => v1::SessionState::Active,
                SessionState::Ended => v1::SessionState::Ended,
            }
            .into(),
            created_at: Some(timestamp_ms(record.created_at_ms)),
            ended_at: record.ended_at_ms.map(timestamp_ms),
            cwd: record.cwd.display().to_string(),
            workspace: record.workspace.display().to_string(),
            activity: activity_wire(&record.activity).into(),
            permission_mode: permission_mode_wire(&record.permission_mode).into(),
            provider: record.provider,
            model: record.model.unwrap_or_default(),
            turns: record.turns,
        }
    }
}

pub fn verdict_wire(verdict: codaris_policy::Verdict) -> v1::Verdict {
    match verdict {
        codaris_policy::Verdict::Allow => v1::Verdict::Allow,
        codaris_policy::Verdict::Ask => v1::Verdict::Ask,
        codaris_policy::Verdict::Deny => v1::Verdict::Deny,
    }
}

pub fn capability_wire(capability: &codaris_policy::Capability) -> v1::Capability {
    v1::Capability {
        name: capability.name.as_str().to_owned(),
        path: capability.path.clone().unwrap_or_default(),
    }
}

pub fn decision_wire(decision: &codaris_policy::Decision) -> v1::Decision {
    v1::Decision {
        verdict: verdict_wire(decision.verdict).into(),
        code: decision.code.as_str().to_owned(),
        sentence: decision.sentence.clone(),
        capability: decision.capability.as_ref().map(capability_wire),
        rules: decision
            .rules
            .iter()
            .map(|r| r.as_str().to_owned())
            .collect(),
    }
}

pub fn grant_wire(record: &codaris_ledger::GrantRecord) -> v1::Grant {
    let grant = &record.grant;
    v1::Grant {
        id: record.id.clone(),
        session_id: record.session_id.clone(),
        capability: Some(v1::Capability {
            name: grant.capability.as_str().to_owned(),
            path: grant.path.clone().unwrap_or_default(),
        }),
        lifetime: match grant.lifetime {
            codaris_policy::Lifetime::Once => v1::GrantLifetime::Once,
            codaris_policy::Lifetime::Session => v1::GrantLifetime::Session,
            codaris_policy::Lifetime::Deny => v1::GrantLifetime::Deny,
        }
        .into(),
        granted_at: Some(timestamp_ms(record.granted_at_ms)),
        consumed: record.consumed_at_ms.is_some(),
        revoked: record.revoked_at_ms.is_some(),
    }
}

pub fn decision_record_wire(record: &codaris_ledger::DecisionRecord) -> v1::DecisionRecord {
    v1::DecisionRecord {
        seq: record.seq,
        session_id: record.session_id.clone(),
        tool: record.request.tool.clone(),
        decision: Some(decision_wire(&record.decision)),
        decided_at: Some(timestamp_ms(record.decided_at_ms)),
        input_json: serde_json::to_string(&record.request).unwrap_or_default(),
        policy_version: record.policy_version.clone(),
    }
}
