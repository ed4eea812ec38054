//! The scripted provider: the embedded default model for the demo and for tests.
//!
//! It plays a [`Script`] through the same [`ModelProvider`] interface as a real API. Which turn a
//! call belongs to is read from the request itself — the number of person messages in it — so
//! the provider keeps no notion of sessions beyond the cursor.

use std::sync::{Mutex, PoisonError};

use futures_util::stream;

use crate::provider::{
    EventStream, Message, ModelProvider, ModelRequest, StopReason, StreamEvent, ToolCall,
};
use crate::script::{Script, ScriptCursor, ScriptStep};

/// Plays a script, one round per model call.
#[derive(Debug)]
pub struct ScriptedProvider {
    cursor: Mutex<ScriptCursor>,
}

impl ScriptedProvider {
    pub fn new(script: Script) -> Self {
        Self {
            cursor: Mutex::new(ScriptCursor::new(script)),
        }
    }
}

/// True when a stop reason is the scripted provider's "no round left".
pub fn is_script_exhausted(reason: &StopReason) -> bool {
    *reason == StopReason::ScriptExhausted
}

impl ModelProvider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "script"
    }

    fn stream(&self, request: &ModelRequest) -> EventStream {
        let turn = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::User { .. }))
            .count()
            .saturating_sub(1);
        let mut cursor = self.cursor.lock().unwrap_or_else(PoisonError::into_inner);
        let events = match cursor.next_round(turn) {
            ScriptStep::Round {
                round,
                index,
                ends_turn,
            } => {
                let mut events = Vec::new();
                if !round.text.is_empty() {
                    events.push(StreamEvent::TextDelta {
                        text: round.text.clone(),
                    });
                }
                for (i, call) in round.tool_calls.iter().enumerate() {
                    events.push(StreamEvent::ToolCall(ToolCall {
                        id: format!("call_{turn}_{index}_{i}"),
                        name: call.name.clone(),
                        arguments: call.args.clone(),
                    }));
                }
                if let Some(usage) = &round.usage {
                    events.push(StreamEvent::Usage(*usage));
                }
                events.push(StreamEvent::Stop {
                    reason: if ends_turn {
                        StopReason::EndTurn
                    } else {
                        StopReason::ToolUse
                    },
                });
                events
            }
            ScriptStep::Exhausted => vec![StreamEvent::Stop {
                reason: StopReason::ScriptExhausted,
            }],
        };
        Box::pin(stream::iter(events.into_iter().map(Ok)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::parse_script;
    use futures_util::StreamExt;

    fn request(users: usize) -> ModelRequest {
        ModelRequest {
            system: String::new(),
            messages: (0..users)
                .map(|i| Message::user(format!("turn {i}")))
                .collect(),
            tools: Vec::new(),
            cache: Default::default(),
            max_tokens: None,
            server_compaction: None,
        }
    }

    async fn events(provider: &ScriptedProvider, users: usize) -> Vec<StreamEvent> {
        provider
            .stream(&request(users))
            .filter_map(|e| async move { e.ok() })
            .collect()
            .await
    }

    #[tokio::test]
    async fn plays_each_turns_rounds_then_says_exhausted() -> Result<(), crate::AgentError> {
        let script = parse_script(
            r#"{"turns": [
                {"rounds": [{"text": "looking", "tool_calls": [{"name": "glob", "args": {"pattern": "*.nf"}}]},
                            {"text": "done"}]},
                {"rounds": []}
            ]}"#,
        )?;
        let provider = ScriptedProvider::new(script);
        let first = events(&provider, 1).await;
        assert_eq!(first.len(), 3);
        assert!(
            matches!(&first[1], StreamEvent::ToolCall(call) if call.name == "glob" && call.id == "call_0_0_0")
        );
        assert_eq!(
            first[2],
            StreamEvent::Stop {
                reason: StopReason::ToolUse
            }
        );
        let second = events(&provider, 1).await;
        assert_eq!(
            second.last(),
            Some(&StreamEvent::Stop {
                reason: StopReason::EndTurn
            })
        );
        let third = events(&provider, 1).await;
        assert!(matches!(&third[0], StreamEvent::Stop { reason } if is_script_exhausted(reason)));
        let next_turn = events(&provider, 2).await;
        assert!(
            matches!(&next_turn[0], StreamEvent::Stop { reason } if is_script_exhausted(reason))
        );
        Ok(())
    }
}
