//! `session/prompt`: one turn of the daemon, its events streamed to the editor as
//! `session/update`s, its cards asked as `session/request_permission`, its end the prompt's
//! `stopReason`. It runs in a task of its own, so `session/cancel` and the editor's answers to
//! cards are never queued behind it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, PermissionOption, PermissionOptionKind, PromptRequest, PromptResponse,
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate,
    StopReason, ToolCall, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_client_protocol::{Client, Error, ErrorCode, RequestCancellationHandle};
use codaris_proto::v1;
use serde_json::Value;

use super::adapter::{Adapter, PROMPT_MAX_BYTES, rpc_error};
use super::{questions, updates};
use crate::commands::run::prost_to_json;

/// How many of a running call's latest output lines its card shows.
const PROGRESS_LINES: usize = 20;

/// The card's three answers, chosen by the editor by `kind`: the option id says which.
const ALLOW_ONCE: &str = "allow_once";
const ALLOW_SESSION: &str = "allow_session";
const DENY: &str = "deny";

/// The prompt's blocks as the one message a turn takes: text as written, a linked or embedded
/// resource by its path (the model reads it through its own tools, inside the fence).
pub fn prompt_text(prompt: &[ContentBlock]) -> Result<String, Error> {
    let mut text = String::new();
    for block in prompt {
        let piece = match block {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::ResourceLink(link) => format!("@{}", resource_path(&link.uri)),
            _ => {
                return Err(Error::new(
                    ErrorCode::INVALID_PARAMS,
                    "codaris takes text and resource links in a prompt, not images, audio or embedded resources",
                ));
            }
        };
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&piece);
        if text.len() > PROMPT_MAX_BYTES {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "the prompt is larger than {} MiB, the most one turn takes; link large files as resources instead of pasting them",
                    PROMPT_MAX_BYTES / (1024 * 1024)
                ),
            ));
        }
    }
    Ok(text)
}

/// A `file://` URI as its path; anything else as written.
fn resource_path(uri: &str) -> &str {
    uri.strip_prefix("file://").unwrap_or(uri)
}

/// Runs the prompt's turn and answers it; never fails itself (a failing task would end the
/// connection): what goes wrong is the prompt's JSON-RPC error.
pub async fn play(
    adapter: Arc<Adapter>,
    cx: ConnectionTo<Client>,
    request: PromptRequest,
) -> Result<PromptResponse, Error> {
    let id = request.session_id.0.to_string();
    let text = prompt_text(&request.prompt)?;
    let cwd = adapter.start_turn(&id)?;
    let played = stream(&adapter, &cx, &id, text, &cwd).await;
    let cancelled = adapter.end_turn(&id);
    match played {
        // The editor cancelled: the answer is `cancelled` whatever the stream said.
        _ if cancelled => Ok(PromptResponse::new(StopReason::Cancelled)),
        Ok(reason) => Ok(PromptResponse::new(reason)),
        Err(err) => Err(err),
    }
}

/// What the turn has shown so far: each call's arguments (for its result's diff) and output.
#[derive(Debug, Default)]
struct Shown {
    args: HashMap<String, Value>,
    output: HashMap<String, Vec<String>>,
    /// Open permission requests by the call they are about, withdrawn if the daemon moves on.
    asking: HashMap<String, RequestCancellationHandle>,
    /// Open questions by their `question` call; dropping one withdraws it.
    questions: HashMap<String, tokio::sync::oneshot::Sender<()>>,
}

async fn stream(
    adapter: &Arc<Adapter>,
    cx: &ConnectionTo<Client>,
    id: &str,
    text: String,
    cwd: &Path,
) -> Result<StopReason, Error> {
    let mut sessions = adapter.sessions()?;
    let mut events = sessions
        .turn(v1::TurnRequest {
            session_id: id.to_owned(),
            text,
        })
        .await
        .map_err(|status| rpc_error(&status))?
        .into_inner();
    let send = |update: SessionUpdate| {
        cx.send_notification(SessionNotification::new(id.to_owned(), update))
    };
    let mut shown = Shown::default();
    loop {
        let event = match events.message().await {
            Ok(Some(event)) => event,
            Ok(None) => {
                return Err(Error::new(
                    ErrorCode::INTERNAL_ERROR,
                    "codarisd closed the turn before it ended",
                ));
            }
            Err(status) => return Err(rpc_error(&status)),
        };
        use v1::turn_event::Event;
        match event.event {
            Some(Event::Text(piece)) if !piece.text.is_empty() => {
                send(updates::text_chunk(&piece.text))?;
            }
            Some(Event::ToolCall(call)) => {
                let args = call.args.as_ref().map_or(Value::Null, prost_to_json);
                shown.args.insert(call.id.clone(), args.clone());
                if call.tool != updates::PLANNER {
                    send(updates::tool_call(&call, args, cwd))?;
                }
            }
            Some(Event::ToolProgress(progress)) => {
                let lines = shown.output.entry(progress.id.clone()).or_default();
                lines.push(progress.message);
                let from = lines.len().saturating_sub(PROGRESS_LINES);
                lines.drain(..from);
                send(updates::progress(&progress.id, lines))?;
            }
            Some(Event::ToolResult(result)) => {
                if let Some(asking) = shown.asking.remove(&result.id) {
                    // The daemon moved on (the card lapsed): the editor's card goes away.
                    let _ = asking.cancel();
                }
                // Answered or lapsed: what the editor is still asked goes away.
                shown.questions.remove(&result.id);
                let args = shown.args.remove(&result.id).unwrap_or(Value::Null);
                shown.output.remove(&result.id);
                if result.tool == updates::PLANNER {
                    if !result.failed {
                        send(updates::plan(&result.output))?;
                    }
                } else {
                    send(updates::result(&result, &args, cwd))?;
                }
            }
            Some(Event::Card(card)) => {
                let asking = ask(adapter, cx, id, card)?;
                if let Some((call, handle)) = asking {
                    shown.asking.insert(call, handle);
                }
            }
            Some(Event::Question(question)) => {
                let call = question.tool_call_id.clone();
                let withdraw = questions::ask(adapter, cx, id, question)?;
                shown.questions.insert(call, withdraw);
            }
            Some(Event::TurnEnded(ended)) => {
                for (_, asking) in shown.asking.drain() {
                    let _ = asking.cancel();
                }
                shown.questions.clear();
                return match updates::stop_reason(&ended.reason) {
                    Some(reason) => Ok(reason),
                    None if ended.error.is_empty() => Err(Error::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!("the turn ended with `{}`", ended.reason),
                    )),
                    None => Err(Error::new(ErrorCode::INTERNAL_ERROR, ended.error)),
                };
            }
            Some(Event::Usage(usage)) => {
                if let Some(update) = updates::usage(&usage) {
                    send(update)?;
                }
            }
            // The schema lets only a client that advertised `session.compaction` have these.
            Some(Event::Compaction(compaction)) if adapter.traits().compaction => {
                send(updates::compaction(&compaction))?;
            }
            Some(Event::ProviderRetry(retry)) => {
                eprintln!(
                    "codaris acp: model API {}, retry {}/{} in {} ms",
                    retry.reason, retry.attempt, retry.max_attempts, retry.delay_ms
                );
            }
            _ => {}
        }
    }
}

/// Asks the editor about a card in a task of its own (the turn's events keep flowing, and
/// the daemon may time the card out meanwhile), answering the daemon by the option's kind.
/// Returns the call it is about and the handle that withdraws the editor's request.
fn ask(
    adapter: &Arc<Adapter>,
    cx: &ConnectionTo<Client>,
    id: &str,
    card: v1::Card,
) -> Result<Option<(String, RequestCancellationHandle)>, Error> {
    // v1 asks about a tool call: a card that has none (a capability asked for ahead of any
    // call) gets one of its own first.
    let call_id = if card.tool_call_id.is_empty() {
        let call_id = format!("card-{}", card.id);
        cx.send_notification(SessionNotification::new(
            id.to_owned(),
            SessionUpdate::ToolCall(
                ToolCall::new(call_id.clone(), card.sentence.clone()).kind(ToolKind::Other),
            ),
        ))?;
        call_id
    } else {
        card.tool_call_id.clone()
    };
    let mut fields = ToolCallUpdateFields::new().title(card.sentence.clone());
    if let Some(preview) = card.preview.as_ref().filter(|p| !p.text.is_empty()) {
        fields = fields.content(vec![
            agent_client_protocol::v1::schema::ToolCallContent::from(ContentBlock::from(
                preview.text.clone(),
            )),
        ]);
    }
    let options = vec![
        PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            ALLOW_SESSION,
            "Allow for this session",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(DENY, "Deny", PermissionOptionKind::RejectOnce),
    ];
    let sent = cx.send_request(RequestPermissionRequest::new(
        id.to_owned(),
        ToolCallUpdate::new(call_id.clone(), fields),
        options,
    ));
    let handle = sent.cancellation_handle();
    let adapter = Arc::clone(adapter);
    let session = id.to_owned();
    cx.spawn(async move {
        let answer = match sent.block_task().await {
            Ok(response) => match response.outcome {
                RequestPermissionOutcome::Selected(selected) => {
                    match selected.option_id.0.as_ref() {
                        ALLOW_ONCE => Some(v1::CardAnswer::AllowOnce),
                        ALLOW_SESSION => Some(v1::CardAnswer::AllowSession),
                        // Deny, and any id the card did not offer: nothing is granted.
                        _ => Some(v1::CardAnswer::Deny),
                    }
                }
                // Cancelled with the turn: the turn's cancellation closes the card. Dismissed
                // otherwise: this one call is refused, and the next asks again.
                RequestPermissionOutcome::Cancelled if adapter.is_cancelled(&session) => None,
                _ => Some(v1::CardAnswer::DenyOnce),
            },
            // Withdrawn (the card lapsed) or the editor is gone: nothing to answer.
            Err(_) => None,
        };
        // The call's own status follows from the turn's events (its result), in their order.
        if let Some(answer) = answer {
            answer_card(&adapter, &session, &card, answer).await;
        }
        Ok(())
    })?;
    Ok(Some((call_id, handle)))
}

/// Sends the editor's answer to the daemon, saying it came from the editor; a failure is
/// logged (the card then lapses as unanswered, which grants nothing).
async fn answer_card(adapter: &Adapter, session: &str, card: &v1::Card, answer: v1::CardAnswer) {
    let Ok(mut sessions) = adapter.sessions() else {
        return;
    };
    let reply = sessions
        .answer_card(v1::AnswerCardRequest {
            session_id: session.to_owned(),
            card_id: card.id.clone(),
            answer: answer.into(),
            answer_secret: card.answer_secret.clone(),
            answered_by: adapter.answered_by(),
        })
        .await;
    if let Err(status) = reply {
        eprintln!(
            "codaris acp: the answer to card `{}` was not taken: {}",
            card.id,
            status.message()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{ResourceLink, TextContent};

    #[test]
    fn a_prompt_is_its_text_and_its_links_and_a_huge_one_is_refused_with_a_sentence() {
        let prompt = vec![
            ContentBlock::Text(TextContent::new("fix")),
            ContentBlock::ResourceLink(ResourceLink::new("main.nf", "file:///p/main.nf")),
        ];
        assert_eq!(prompt_text(&prompt).unwrap(), "fix\n@/p/main.nf");
        let huge = vec![ContentBlock::Text(TextContent::new("x".repeat(10 << 20)))];
        let err = prompt_text(&huge).unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        assert!(err.message.starts_with("the prompt is larger than 1 MiB"));
    }
}
