//! The providers against fake servers on loopback that speak each wire format event by event.
//! No test leaves 127.0.0.1.
mod anthropic;
mod fake;
mod openai;
mod robustness;

use futures_util::StreamExt;
use serde_json::json;

use super::{EventStream, ModelRequest, ProviderError, StreamEvent, ToolDefinition, ToolTier};
use crate::provider::CacheHints;

/// Drains a stream (within the fake server's patience): its events, and the error that ended it.
pub(crate) async fn drain(mut stream: EventStream) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let collect = async {
        let mut events = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => events.push(event),
                Err(error) => {
                    assert!(stream.next().await.is_none(), "nothing may follow an error");
                    return (events, Some(error));
                }
            }
        }
        (events, None)
    };
    tokio::time::timeout(fake::PATIENCE, collect).await.unwrap()
}

/// A tool with a one-property schema.
pub(crate) fn tool(name: &str, tier: ToolTier) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("The {name} tool."),
        input_schema: json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "A path."}},
            "required": ["path"]
        }),
        tier,
    }
}

/// A request with the given tools and one user message.
pub(crate) fn request(tools: Vec<ToolDefinition>, text: &str) -> ModelRequest {
    ModelRequest {
        system: "You are Codaris.".into(),
        messages: vec![super::Message::user(text)],
        tools,
        cache: CacheHints::default(),
        max_tokens: Some(1024),
        server_compaction: None,
    }
}

/// The text of all text deltas.
pub(crate) fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
