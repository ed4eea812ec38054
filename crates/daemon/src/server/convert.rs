//! Wire ↔ domain conversions for the gRPC API. Libraries never see generated types.

use std::time::{Duration, UNIX_EPOCH};

use codaris_policy::{Activity, PermissionMode};
use codaris_proto::v1;

use crate::sessions::store::{SessionRecord, SessionState};

pub fn timestamp_ms(ms: u64) -> prost_types::Timestamp {
    prost_types::Timestamp::from(UNIX_EPOCH + Duration::from_millis(ms))
}

/// The activity a request names; unspecified is `agent`, an unknown number `None`.
pub fn activity_from_wire(activity: i32) -> Option<Activity> {
    Some(match v1::Activity::try_from(activity).ok()? {
        v1::Activity::Unspecified | v1::Activity::Agent => Activity::Agent,
        v1::Activity::Plan => Activity::Plan,
        v1::Activity::Ask => Activity::Ask,
        v1::Activity::Review => Activity::Review,
        v1::Activity::Research => Activity::Research,
        v1::Activity::Audit => Activity::Audit,
    })
}

pub fn activity_wire(activity: Activity) -> v1::Activity {
    match activity {
        Activity::Agent => v1::Activity::Agent,
        Activity::Plan => v1::Activity::Plan,
        Activity::Ask => v1::Activity::Ask,
        Activity::Review => v1::Activity::Review,
        Activity::Research => v1::Activity::Research,
        Activity::Audit => v1::Activity::Audit,
    }
}

/// The permission mode a request names; unspecified is `ask`, an unknown number `None`.
pub fn permission_mode_from_wire(mode: i32) -> Option<PermissionMode> {
    Some(match v1::PermissionMode::try_from(mode).ok()? {
        v1::PermissionMode::Unspecified | v1::PermissionMode::Ask => PermissionMode::Ask,
        v1::PermissionMode::AcceptEdits => PermissionMode::AcceptEdits,
        v1::PermissionMode::Bypass => PermissionMode::Bypass,
    })
}

pub fn permission_mode_wire(mode: PermissionMode) -> v1::PermissionMode {
    match mode {
        PermissionMode::Ask => v1::PermissionMode::Ask,
        PermissionMode::AcceptEdits => v1::PermissionMode::AcceptEdits,
        PermissionMode::Bypass => v1::PermissionMode::Bypass,
    }
}

impl From<SessionRecord> for v1::Session {
    fn from(record: SessionRecord) -> Self {
        let last_activity_ms = record.last_activity_ms();
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
            activity: activity_wire(record.activity).into(),
            permission_mode: permission_mode_wire(record.permission_mode).into(),
            provider: record.provider.as_str().to_owned(),
            model: record.model.unwrap_or_default(),
            turns: record.turns,
            title: record.title,
            last_activity_at: Some(timestamp_ms(last_activity_ms)),
            base_url: record.base_url.unwrap_or_default(),
            script: record
                .script
                .as_ref()
                .map(|path| path.display().to_string())
                .unwrap_or_default(),
            instructions: record
                .instructions
                .into_iter()
                .map(|file| v1::InstructionFile {
                    path: file.path.display().to_string(),
                    bytes: file.bytes,
                })
                .collect(),
            tags: record.tags,
            reasoning: record
                .reasoning
                .map(|level| level.as_str().to_owned())
                .unwrap_or_default(),
            additional_dirs: record
                .additional_dirs
                .iter()
                .map(|dir| dir.display().to_string())
                .collect(),
            parent_session_id: record
                .child
                .as_ref()
                .map(|child| child.parent.clone())
                .unwrap_or_default(),
            agent: record
                .child
                .as_ref()
                .map(|child| format!("{}: {}", child.agent, child.description))
                .unwrap_or_default(),
            children: record.children,
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
        tool: record.request.tool.to_string(),
        decision: Some(decision_wire(&record.decision)),
        decided_at: Some(timestamp_ms(record.decided_at_ms)),
        input_json: serde_json::to_string(&record.request).unwrap_or_default(),
        policy_version: record.policy_version.clone(),
        parent_session_id: record.parent_session.clone().unwrap_or_default(),
        grants_of: record.grants_of.clone().unwrap_or_default(),
        launch_body_sha256: record.launch_body_sha256.clone().unwrap_or_default(),
    }
}

/// A JSON value as protobuf's `google.protobuf.Value`.
pub fn json_to_prost(value: &serde_json::Value) -> prost_types::Value {
    use prost_types::value::Kind;
    let kind = match value {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.iter().map(json_to_prost).collect(),
        }),
        serde_json::Value::Object(map) => Kind::StructValue(prost_types::Struct {
            fields: map
                .iter()
                .map(|(k, v)| (k.clone(), json_to_prost(v)))
                .collect(),
        }),
    };
    prost_types::Value { kind: Some(kind) }
}

/// A turn-loop event on the wire.
pub fn turn_event_wire(event: codaris_agent::TurnEvent) -> Option<v1::turn_event::Event> {
    use codaris_agent::TurnEvent;
    use v1::turn_event::Event;
    Some(match event {
        TurnEvent::TurnStarted { turn } => Event::TurnStarted(v1::TurnStarted { turn }),
        TurnEvent::Binding {
            turn,
            round,
            surface,
        } => {
            let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
            Event::Binding(v1::Binding {
                turn,
                round,
                line: surface.line(),
                always_on: count(surface.always_on),
                forced: count(surface.forced),
                found: count(surface.found),
                filtered_from: count(surface.filtered_from),
                tools: surface.tools,
            })
        }
        TurnEvent::Text { text } => Event::Text(v1::TextDelta { text }),
        TurnEvent::ToolCall { id, tool, args } => Event::ToolCall(v1::ToolCall {
            action: tool
                .mcp()
                .and_then(|t| crate::mcp::McpHub::action(t, &args))
                .unwrap_or_default(),
            id,
            tool: tool.to_string(),
            args: Some(json_to_prost(&args)),
        }),
        TurnEvent::ToolResult {
            id,
            tool,
            decision,
            output,
            failed,
        } => Event::ToolResult(v1::ToolResult {
            failed,
            id,
            // Only the loop guard refuses before the policy, and only a repeated search.
            decision: Some(match decision {
                Some(decision) => decision_wire(&decision),
                None => v1::Decision {
                    verdict: v1::Verdict::Deny.into(),
                    code: "repeated_search".to_owned(),
                    sentence: output.clone(),
                    capability: None,
                    rules: vec!["loop_guard".to_owned()],
                },
            }),
            tool,
            output,
        }),
        TurnEvent::ProviderRetry(retry) => Event::ProviderRetry(v1::ProviderRetry {
            attempt: retry.attempt,
            max_attempts: retry.max_attempts,
            delay_ms: retry.delay_ms,
            reason: retry.reason,
        }),
        TurnEvent::Usage {
            turn,
            usage,
            context,
        } => Event::Usage(v1::Usage {
            turn,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_tokens: usage.cache_read_tokens,
            cache_write_tokens: usage.cache_write_tokens,
            line: match &context {
                Some(context) => format!("{} {}", usage.line(), context.sentence()),
                None => usage.line(),
            },
            context_tokens: context.map_or(0, |c| c.tokens),
            context_window: context.map_or(0, |c| c.window),
        }),
        TurnEvent::Evicted {
            turn,
            round,
            results,
            tokens_before,
            tokens_after,
        } => Event::Eviction(v1::Eviction {
            turn,
            round,
            results,
            tokens_before,
            tokens_after,
        }),
        TurnEvent::Compacted {
            turn,
            round,
            trigger,
            folded,
            tokens_before,
            tokens_after,
        } => Event::Compaction(v1::Compaction {
            turn,
            round,
            trigger: trigger.as_str().to_owned(),
            folded,
            tokens_before,
            tokens_after,
        }),
        TurnEvent::TurnEnded {
            turn,
            reason,
            error,
        } => Event::TurnEnded(turn_ended_wire(turn, reason, error.as_ref())),
    })
}

/// A turn's end on the wire: the error's line as it always was, and beside it what the error
/// is (its kind, the model API's HTTP status, whether trying again may help, the wait asked for).
pub fn turn_ended_wire(
    turn: u32,
    reason: codaris_agent::EndReason,
    error: Option<&codaris_agent::TurnError>,
) -> v1::TurnEnded {
    let Some(error) = error else {
        return v1::TurnEnded {
            turn,
            reason: reason.as_str().to_owned(),
            ..v1::TurnEnded::default()
        };
    };
    v1::TurnEnded {
        turn,
        reason: reason.as_str().to_owned(),
        error: error.to_string(),
        error_kind: error.kind().to_owned(),
        http_status: error.http_status().map_or(0, u32::from),
        retryable: error.is_retryable(),
        retry_after_ms: error
            .retry_after()
            .map(|wait| u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)),
    }
}

#[cfg(test)]
mod tests {
    use codaris_agent::{ProviderChoice, ProviderKind};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    /// A session as the daemon stored it while these fields were strings.
    fn stored() -> serde_json::Value {
        json!({
            "schema": 1, "id": "s000007", "state": "ended",
            "created_at_ms": 1_700_000_000_000_u64, "ended_at_ms": 1_700_000_060_000_u64,
            "cwd": "/w/proj", "workspace": "/s/sessions/s000007",
            "activity": "plan", "permission_mode": "accept_edits", "provider": "anthropic",
            "model": "claude-sonnet-4-5", "script": null, "turns": 3
        })
    }

    #[test]
    fn a_record_stored_with_string_fields_loads_and_stores_the_same_strings()
    -> Result<(), Box<dyn std::error::Error>> {
        let record: SessionRecord = serde_json::from_value(stored())?;
        assert_eq!(record.activity, Activity::Plan);
        assert_eq!(record.permission_mode, PermissionMode::AcceptEdits);
        assert_eq!(
            record.provider,
            ProviderChoice::Api(ProviderKind::Anthropic)
        );
        assert_eq!(serde_json::to_value(&record)?, stored());
        let session = v1::Session::from(record);
        assert_eq!(session.activity, i32::from(v1::Activity::Plan));
        assert_eq!(
            session.permission_mode,
            i32::from(v1::PermissionMode::AcceptEdits)
        );
        assert_eq!(session.provider, "anthropic");
        // Written before titles and last activity were kept: no title, and the creation
        // time stands in for the last activity.
        assert_eq!(session.title, "");
        assert!(session.tags.is_empty(), "written before tags were kept");
        assert_eq!(
            session.last_activity_at,
            Some(timestamp_ms(1_700_000_000_000))
        );
        Ok(())
    }

    #[test]
    fn every_value_is_stored_by_its_wire_name() -> Result<(), Box<dyn std::error::Error>> {
        for activity in [
            Activity::Agent,
            Activity::Plan,
            Activity::Ask,
            Activity::Review,
            Activity::Research,
            Activity::Audit,
        ] {
            assert_eq!(serde_json::to_value(activity)?, json!(activity.as_str()));
            assert_eq!(
                activity_from_wire(activity_wire(activity).into()),
                Some(activity)
            );
        }
        for mode in [
            PermissionMode::Ask,
            PermissionMode::AcceptEdits,
            PermissionMode::Bypass,
        ] {
            assert_eq!(serde_json::to_value(mode)?, json!(mode.as_str()));
            assert_eq!(
                permission_mode_from_wire(permission_mode_wire(mode).into()),
                Some(mode)
            );
        }
        for provider in ProviderChoice::ALL {
            let mut record = stored();
            record["provider"] = json!(provider.as_str());
            let loaded: SessionRecord = serde_json::from_value(record)?;
            assert_eq!(loaded.provider, provider);
        }
        Ok(())
    }

    #[test]
    fn unspecified_is_the_default_and_an_unknown_number_is_refused() {
        assert_eq!(activity_from_wire(0), Some(Activity::Agent));
        assert_eq!(permission_mode_from_wire(0), Some(PermissionMode::Ask));
        assert_eq!(activity_from_wire(99), None);
        assert_eq!(permission_mode_from_wire(-1), None);
    }

    #[test]
    fn a_stored_record_naming_an_unknown_provider_does_not_load() {
        let mut record = stored();
        record["provider"] = json!("gemini");
        assert!(serde_json::from_value::<SessionRecord>(record).is_err());
    }
}
