//! A turn that ends on an error keeps what the error is: the provider's kind, HTTP status,
//! retryability and wait, or the host's kind, up to `turn_ended`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use codaris_agent::{
    CallRequest, CapabilityAnswer, CapabilityRequest, Conversation, Decided, EndReason,
    EventStream, HostError, HostFuture, ModelProvider, ModelRequest, Permit, ProviderError,
    ProviderErrorKind, ProviderFailure, ProviderKind, Registry, ScriptedProvider, ToolDefinition,
    ToolIndex, ToolRun, TurnConfig, TurnError, TurnEvent, TurnHost, parse_script, run_turn,
};
use codaris_index::{KindFilter, SearchOutcome};
use codaris_policy::{Decision, Task};
use pretty_assertions::assert_eq;

use super::common::registry;

/// Decides nothing: every call fails with `decide_fails`; records the events.
struct FailingHost {
    events: Mutex<Vec<TurnEvent>>,
    registry: Arc<Registry>,
    decide_fails: HostError,
}

struct NoPermit(Decision, serde_json::Value);

impl Permit for NoPermit {
    fn decision(&self) -> &Decision {
        &self.0
    }

    fn args(&self) -> &serde_json::Value {
        &self.1
    }
}

impl ToolIndex for FailingHost {
    fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    fn search(&self, _query: &str, _kind: KindFilter, _limit: usize) -> SearchOutcome {
        SearchOutcome::EmptyQuery
    }
}

impl TurnHost for FailingHost {
    type Permit = NoPermit;

    fn spec(&self, _tool: &str) -> Option<ToolDefinition> {
        None
    }

    fn index(&self) -> &dyn ToolIndex {
        self
    }

    fn decide<'a>(
        &'a self,
        _call: &'a CallRequest,
    ) -> HostFuture<'a, Result<Decided<NoPermit>, HostError>> {
        let failed = self.decide_fails.clone();
        Box::pin(async move { Err(failed) })
    }

    fn run(&self, _permit: NoPermit) -> HostFuture<'_, ToolRun> {
        Box::pin(async { ToolRun::error("never runs") })
    }

    fn request_capability<'a>(
        &'a self,
        _request: &'a CapabilityRequest,
    ) -> HostFuture<'a, CapabilityAnswer> {
        Box::pin(async { CapabilityAnswer::Unanswered })
    }

    fn emit(&self, event: TurnEvent) {
        self.events.lock().unwrap().push(event);
    }
}

fn host() -> FailingHost {
    FailingHost {
        events: Mutex::default(),
        registry: Arc::new(registry()),
        decide_fails: HostError::NotRecorded {
            reason: "the disk is full".to_owned(),
        },
    }
}

/// A model API that answers every request with a 429 its retries could not outlast.
#[derive(Debug)]
struct RateLimited;

impl ModelProvider for RateLimited {
    fn name(&self) -> &str {
        "openai"
    }

    fn model(&self) -> &str {
        "busy-model"
    }

    fn stream(&self, _request: &ModelRequest) -> EventStream {
        let error = ProviderError::Status {
            provider: ProviderKind::OpenAi,
            model: "busy-model".to_owned(),
            status: 429,
            message: "rate_limit_exceeded: slow down".to_owned(),
            attempts: 4,
            retry_after: Some(Duration::from_secs(2)),
        };
        Box::pin(futures_util::stream::once(async move { Err(error) }))
    }
}

fn config() -> TurnConfig {
    TurnConfig {
        system: "You are Codaris.".to_owned(),
        max_rounds: 4,
        lean: true,
        tool_search_api: false,
        context: None,
    }
}

fn ended(host: &FailingHost) -> Option<(EndReason, Option<TurnError>)> {
    host.events
        .lock()
        .unwrap()
        .iter()
        .find_map(|event| match event {
            TurnEvent::TurnEnded { reason, error, .. } => Some((*reason, error.clone())),
            _ => None,
        })
}

#[tokio::test]
async fn a_429_ends_the_turn_with_its_status_retryability_and_wait() {
    let host = host();
    let mut conversation = Conversation::default();
    let reason = run_turn(
        &mut conversation,
        "hello",
        &Task::new("/w/proj"),
        &RateLimited,
        &host,
        &config(),
    )
    .await;
    assert_eq!(reason, EndReason::Error);
    let expected = TurnError::Provider(ProviderFailure {
        kind: ProviderErrorKind::Status,
        status: Some(429),
        retryable: true,
        retry_after: Some(Duration::from_secs(2)),
        message:
            "openai model `busy-model`: HTTP 429 after 4 attempt(s): rate_limit_exceeded: slow down"
                .to_owned(),
    });
    assert_eq!(ended(&host), Some((EndReason::Error, Some(expected))));
}

#[tokio::test]
async fn a_call_the_host_cannot_record_ends_the_turn_with_the_hosts_kind() {
    let host = host();
    let script = r#"{"turns": [{"rounds": [
        {"tool_calls": [{"name": "read_file", "args": {"path": "a"}}]},
        {"text": "never reached"}
    ]}]}"#;
    let provider = ScriptedProvider::new(parse_script(script).unwrap());
    let mut conversation = Conversation::default();
    let reason = run_turn(
        &mut conversation,
        "read a",
        &Task::new("/w/proj"),
        &provider,
        &host,
        &config(),
    )
    .await;
    assert_eq!(reason, EndReason::Error);
    let (_, error) = ended(&host).unwrap();
    let error = error.unwrap();
    assert_eq!(error, TurnError::Host(host.decide_fails.clone()));
    assert_eq!(error.kind(), "host_not_recorded");
    assert_eq!(
        error.to_string(),
        "the ledger could not record a decision, so the call did not run: the disk is full"
    );
    assert_eq!((error.http_status(), error.is_retryable()), (None, false));
}
