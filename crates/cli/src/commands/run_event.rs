//! One turn event of `codaris run` as it is printed: the JSON line of `--json` (a contract,
//! extended by adding fields) and the line for people.

use codaris_proto::v1;
use serde_json::{Value, json};

use super::result_view;
use super::run::{approve_name, verdict_name};
use super::status_line::retry_line;
use crate::cli::Approve;
use crate::output;

/// The event as a JSON line and as lines for people (`verbose`: with an allowed call's
/// decision code). JSON counts turns from 0, people from 1 ([`output::turn_for_people`]).
pub fn describe(event: &v1::turn_event::Event, approve: Approve, verbose: bool) -> (Value, String) {
    use v1::turn_event::Event;
    match event {
        Event::TurnStarted(e) => (
            json!({"type": "turn_started", "turn": e.turn}),
            format!("── turn {}", output::turn_for_people(e.turn)),
        ),
        Event::Binding(b) => (
            json!({"type": "binding", "turn": b.turn, "round": b.round, "tools": b.tools,
                   "always_on": b.always_on, "forced": b.forced, "found": b.found,
                   "filtered_from": b.filtered_from, "line": b.line}),
            format!("   {}", b.line),
        ),
        Event::Text(t) => (json!({"type": "text", "text": t.text}), t.text.clone()),
        Event::ToolCall(c) => {
            let args = c.args.as_ref().map_or(Value::Null, prost_to_json);
            let mut event = json!({"type": "tool_call", "id": c.id, "tool": c.tool, "args": args});
            if !c.action.is_empty() {
                event["action"] = json!(c.action);
            }
            let line = if c.action.is_empty() {
                format!("→ {} {}", c.tool, args)
            } else {
                format!("→ {}", c.action)
            };
            (event, line)
        }
        Event::ToolResult(r) => {
            let decision = r.decision.clone().unwrap_or_default();
            let verdict = verdict_name(decision.verdict);
            let line = result_view::result_text(r, verdict, &decision.code, verbose);
            (
                json!({"type": "tool_result", "id": r.id, "tool": r.tool,
                       "decision": {"verdict": verdict, "code": decision.code, "sentence": decision.sentence},
                       "output": r.output, "failed": r.failed}),
                line,
            )
        }
        Event::ToolProgress(p) => (
            json!({"type": "progress", "kind": "tool", "id": p.id, "tool": p.tool, "message": p.message}),
            format!("  … {}: {}", p.tool, p.message),
        ),
        // The contract: what the status line shows is a `progress` event in JSON.
        Event::ProviderRetry(r) => (
            json!({"type": "progress", "kind": "provider_retry", "attempt": r.attempt,
                   "max_attempts": r.max_attempts, "delay_ms": r.delay_ms, "reason": r.reason,
                   "message": retry_line(r)}),
            format!("  … {}", retry_line(r)),
        ),
        Event::Card(c) => {
            let capability = c.capability.clone().unwrap_or_default();
            let preview = c.preview.as_ref().map(
                |p| json!({"kind": p.kind, "text": p.text, "path": (!p.path.is_empty()).then_some(&p.path)}),
            );
            // A subagent's card is the session's own all the same; the line says whose call
            // raised it, so the person knows who asks.
            let raised = if c.raised_in.is_empty() {
                String::new()
            } else {
                format!("[subagent {} · {}] ", c.raised_in, c.raised_in_agent)
            };
            (
                json!({"type": "card", "id": c.id,
                       "capability": {"name": capability.name, "path": (!capability.path.is_empty()).then_some(&capability.path)},
                       "programs": c.programs,
                       "sentence": c.sentence, "preview": preview, "answer": approve_name(approve),
                       "raised_in": (!c.raised_in.is_empty()).then_some(&c.raised_in),
                       "raised_in_agent": (!c.raised_in_agent.is_empty()).then_some(&c.raised_in_agent)}),
                format!("? {raised}{} → {}", c.sentence, approve_name(approve)),
            )
        }
        Event::Question(q) => super::question_view::describe(q),
        Event::Usage(u) => (usage_json(u), format!("   {}", u.line)),
        Event::Eviction(e) => (
            json!({"type": "eviction", "turn": e.turn, "round": e.round, "results": e.results,
                   "tokens_before": e.tokens_before, "tokens_after": e.tokens_after}),
            format!(
                "   context: {} old result(s) evicted ({} → {} tokens)",
                e.results, e.tokens_before, e.tokens_after
            ),
        ),
        Event::Compaction(c) => (
            json!({"type": "compaction", "turn": c.turn, "round": c.round, "trigger": c.trigger,
                   "folded": c.folded, "tokens_before": c.tokens_before,
                   "tokens_after": c.tokens_after}),
            format!(
                "   context compacted ({}): {} earlier events folded into a summary ({} → {} tokens)",
                c.trigger, c.folded, c.tokens_before, c.tokens_after
            ),
        ),
        Event::TurnEnded(e) => (
            turn_ended_json(e),
            if e.error.is_empty() {
                format!(
                    "── turn {} ended: {}",
                    output::turn_for_people(e.turn),
                    e.reason
                )
            } else {
                format!(
                    "── turn {} ended: {} ({})",
                    output::turn_for_people(e.turn),
                    e.reason,
                    e.error
                )
            },
        ),
    }
}

/// `usage` as a JSON line: the token counts and the line as always; with a context budget,
/// also `context_tokens`, `context_window` and `context_percent` (the request's share of the
/// window).
fn usage_json(u: &v1::Usage) -> Value {
    let mut line = json!({"type": "usage", "turn": u.turn, "input_tokens": u.input_tokens,
                          "output_tokens": u.output_tokens, "cache_read_tokens": u.cache_read_tokens,
                          "cache_write_tokens": u.cache_write_tokens, "line": u.line});
    if let (true, Some(fields)) = (u.context_window > 0, line.as_object_mut()) {
        let share = codaris_agent::ContextShare {
            tokens: u.context_tokens,
            window: u.context_window,
        };
        fields.insert("context_tokens".to_owned(), json!(share.tokens));
        fields.insert("context_window".to_owned(), json!(share.window));
        fields.insert("context_percent".to_owned(), json!(share.percent()));
    }
    line
}

/// `turn_ended` as a JSON line: `turn`, `reason` and `error` as always; with an error whose
/// kind the daemon sent, also `error_kind`, `http_status` (`null` when the model API gave
/// none), `retryable` and `retry_after_ms` (`null` when it asked for no wait). A turn that
/// ended without an error has exactly the first four fields.
fn turn_ended_json(e: &v1::TurnEnded) -> Value {
    let mut line = json!({"type": "turn_ended", "turn": e.turn, "reason": e.reason,
                          "error": (!e.error.is_empty()).then_some(&e.error)});
    if let (false, Some(fields)) = (e.error_kind.is_empty(), line.as_object_mut()) {
        fields.insert("error_kind".to_owned(), json!(e.error_kind));
        fields.insert(
            "http_status".to_owned(),
            json!((e.http_status != 0).then_some(e.http_status)),
        );
        fields.insert("retryable".to_owned(), json!(e.retryable));
        fields.insert("retry_after_ms".to_owned(), json!(e.retry_after_ms));
    }
    line
}

pub(crate) fn prost_to_json(value: &prost_types::Value) -> Value {
    use prost_types::value::Kind;
    match &value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(*b),
        Some(Kind::NumberValue(n)) => {
            // Integers the model sent come back as integers, not `1.0`.
            if n.fract() == 0.0 && n.abs() < 9.0e15 {
                json!(*n as i64)
            } else {
                json!(n)
            }
        }
        Some(Kind::StringValue(s)) => Value::String(s.clone()),
        Some(Kind::ListValue(list)) => {
            Value::Array(list.values.iter().map(prost_to_json).collect())
        }
        Some(Kind::StructValue(s)) => Value::Object(
            s.fields
                .iter()
                .map(|(k, v)| (k.clone(), prost_to_json(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn result(
        failed: bool,
        verdict: v1::Verdict,
        code: &str,
        output: &str,
    ) -> v1::turn_event::Event {
        v1::turn_event::Event::ToolResult(v1::ToolResult {
            id: "c1".to_owned(),
            tool: "edit".to_owned(),
            decision: Some(v1::Decision {
                verdict: verdict.into(),
                code: code.to_owned(),
                ..v1::Decision::default()
            }),
            output: output.to_owned(),
            failed,
        })
    }

    #[test]
    fn a_failed_call_reads_as_an_error_and_a_refusal_names_its_code() {
        let (value, line) = describe(
            &result(
                true,
                v1::Verdict::Allow,
                "allowed_by_mode",
                "edit: `oldString` is required\nmore",
            ),
            Approve::Deny,
            false,
        );
        assert_eq!(line, "  ✗ edit: `oldString` is required");
        assert_eq!(value["failed"], json!(true));
        let (_, line) = describe(
            &result(
                true,
                v1::Verdict::Deny,
                "denied_by_user",
                "the user refused this call",
            ),
            Approve::Deny,
            false,
        );
        assert_eq!(
            line,
            "  ✗ edit refused (denied_by_user): the user refused this call"
        );
        let (value, line) = describe(
            &result(false, v1::Verdict::Allow, "allowed_by_grant", "edited `a`"),
            Approve::Deny,
            false,
        );
        assert_eq!(line, "  ✓ edit: edited `a`");
        assert_eq!(value["failed"], json!(false));
    }

    #[test]
    fn turns_are_counted_from_one_for_people_and_from_zero_in_json() {
        let started = v1::turn_event::Event::TurnStarted(v1::TurnStarted { turn: 0 });
        let (value, line) = describe(&started, Approve::Deny, false);
        assert_eq!(value["turn"], json!(0));
        assert_eq!(line, "── turn 1");
        let ended = v1::turn_event::Event::TurnEnded(v1::TurnEnded {
            turn: 2,
            reason: "end_turn".to_owned(),
            ..v1::TurnEnded::default()
        });
        let (value, line) = describe(&ended, Approve::Deny, false);
        assert_eq!(value["turn"], json!(2));
        assert_eq!(line, "── turn 3 ended: end_turn");
    }

    #[test]
    fn a_turn_ended_by_an_error_adds_its_kind_and_status_and_a_clean_end_adds_nothing() {
        let clean = v1::TurnEnded {
            turn: 0,
            reason: "end_turn".to_owned(),
            ..v1::TurnEnded::default()
        };
        assert_eq!(
            turn_ended_json(&clean),
            json!({"type": "turn_ended", "turn": 0, "reason": "end_turn", "error": null})
        );
        let limited = v1::TurnEnded {
            turn: 1,
            reason: "error".to_owned(),
            error: "openai model `m`: HTTP 429 after 3 attempt(s): slow down".to_owned(),
            error_kind: "provider_status".to_owned(),
            http_status: 429,
            retryable: true,
            retry_after_ms: Some(0),
        };
        assert_eq!(
            turn_ended_json(&limited),
            json!({"type": "turn_ended", "turn": 1, "reason": "error",
                   "error": "openai model `m`: HTTP 429 after 3 attempt(s): slow down",
                   "error_kind": "provider_status", "http_status": 429, "retryable": true,
                   "retry_after_ms": 0})
        );
        let host = v1::TurnEnded {
            error: "the ledger could not record a decision, so the call did not run: full"
                .to_owned(),
            error_kind: "host_not_recorded".to_owned(),
            ..limited
        };
        let line = turn_ended_json(&v1::TurnEnded {
            http_status: 0,
            retryable: false,
            retry_after_ms: None,
            ..host
        });
        assert_eq!(line["http_status"], Value::Null);
        assert_eq!(line["retry_after_ms"], Value::Null);
        assert_eq!(line["retryable"], json!(false));
    }

    #[test]
    fn a_provider_retry_is_a_progress_line_of_its_own_kind() {
        let event = v1::turn_event::Event::ProviderRetry(v1::ProviderRetry {
            attempt: 1,
            max_attempts: 4,
            delay_ms: 2000,
            reason: "busy (429)".to_owned(),
        });
        let (value, line) = describe(&event, Approve::Deny, false);
        assert_eq!(
            value,
            json!({"type": "progress", "kind": "provider_retry", "attempt": 1, "max_attempts": 4,
                   "delay_ms": 2000, "reason": "busy (429)",
                   "message": "model API busy (429), retry 1/4 in 2 s"})
        );
        assert_eq!(line, "  … model API busy (429), retry 1/4 in 2 s");
    }

    #[test]
    fn a_card_carries_its_preview_or_null() {
        let card = v1::Card {
            sentence: "Codaris wants to edit `a` (1 line changed)".to_owned(),
            preview: Some(v1::CardPreview {
                kind: "diff".to_owned(),
                text: "-a\n+b\n".to_owned(),
                path: "a".to_owned(),
            }),
            ..v1::Card::default()
        };
        let (value, line) = describe(&v1::turn_event::Event::Card(card), Approve::Once, false);
        assert_eq!(
            value["preview"],
            json!({"kind": "diff", "text": "-a\n+b\n", "path": "a"})
        );
        assert_eq!(line, "? Codaris wants to edit `a` (1 line changed) → once");
        let (value, _) = describe(
            &v1::turn_event::Event::Card(v1::Card::default()),
            Approve::Once,
            false,
        );
        assert_eq!(value["preview"], Value::Null);
    }
}
