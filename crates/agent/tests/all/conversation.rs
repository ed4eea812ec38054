//! What a session keeps of its conversation: the exact bytes the daemon stores after each turn
//! (a restored session, and an older daemon reading a newer store, depend on them), and that a
//! stored conversation read back continues exactly as the one never stored.
//!
//! The snapshot was written by the loop that kept three lists, before the conversation became
//! one log; it must not change.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use codaris_agent::{
    CallRequest, CapabilityAnswer, CapabilityRequest, Conversation, Decided, EndReason,
    EventStream, HostError, HostFuture, Message, ModelProvider, ModelRequest, Permit, Picture,
    Registry, StopReason, StreamEvent, ToolCall, ToolDefinition, ToolIndex, ToolRun, TurnConfig,
    TurnEvent, TurnHost, run_turn,
};
use codaris_index::{Entry, Index, Kind, KindFilter, SearchOutcome, SearchRequest, Searcher};
use codaris_policy::{Decision, Task, Verdict};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{any_spec, decide_without_grants, registry};

/// Decides with the real policy; a `.png` read returns one picture (two for `…2.png`); a read
/// of `fail` cannot be recorded.
struct Host {
    registry: Arc<Registry>,
    index: Index,
}

struct HostPermit(Decision, serde_json::Value);

impl Permit for HostPermit {
    fn decision(&self) -> &Decision {
        &self.0
    }

    fn args(&self) -> &serde_json::Value {
        &self.1
    }
}

impl ToolIndex for Host {
    fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    fn search(&self, query: &str, kind: KindFilter, limit: usize) -> SearchOutcome {
        Searcher::new().search(
            &self.index,
            &SearchRequest::new(query).kind(kind).limit(limit),
        )
    }
}

impl TurnHost for Host {
    type Permit = HostPermit;

    fn spec(&self, tool: &str) -> Option<ToolDefinition> {
        any_spec(tool)
    }

    fn index(&self) -> &dyn ToolIndex {
        self
    }

    fn decide<'a>(
        &'a self,
        call: &'a CallRequest,
    ) -> HostFuture<'a, Result<Decided<HostPermit>, HostError>> {
        if call.args["path"] == "fail" {
            let failed = HostError::NotRecorded {
                reason: "the disk is full".to_owned(),
            };
            return Box::pin(async move { Err(failed) });
        }
        let decision = decide_without_grants(call);
        let decided = if decision.verdict == Verdict::Allow {
            Decided::Run(HostPermit(decision, call.args.clone()))
        } else {
            Decided::Refused(decision)
        };
        Box::pin(async move { Ok(decided) })
    }

    fn run(&self, permit: HostPermit) -> HostFuture<'_, ToolRun> {
        let path = permit.1["path"].as_str().unwrap_or_default().to_owned();
        let pictures = if path.ends_with("2.png") {
            2
        } else {
            usize::from(path.ends_with(".png"))
        };
        let run = ToolRun {
            output: format!("read {path}"),
            pictures: (0..pictures)
                .map(|n| Picture::from_bytes("image/png", format!("{path}#{n}").as_bytes()))
                .collect(),
            ..ToolRun::default()
        };
        Box::pin(async move { run })
    }

    fn request_capability<'a>(
        &'a self,
        _request: &'a CapabilityRequest,
    ) -> HostFuture<'a, CapabilityAnswer> {
        Box::pin(async { CapabilityAnswer::Unanswered })
    }

    fn emit(&self, _event: TurnEvent) {}
}

fn host() -> Host {
    Host {
        registry: Arc::new(registry()),
        index: Index::build(vec![Entry::new(
            "lint_pipeline",
            Kind::Core,
            "lint a pipeline",
        )]),
    }
}

/// Answers each request with the next prepared answer, and keeps the messages it was sent.
#[derive(Debug, Default)]
struct Playlist {
    answers: Mutex<VecDeque<Vec<StreamEvent>>>,
    sent: Mutex<Vec<Vec<Message>>>,
}

impl ModelProvider for Playlist {
    fn name(&self) -> &str {
        "openai"
    }

    fn model(&self) -> &str {
        "playlist"
    }

    fn stream(&self, request: &ModelRequest) -> EventStream {
        self.sent.lock().unwrap().push(request.messages.clone());
        let events = self.answers.lock().unwrap().pop_front().unwrap_or_default();
        Box::pin(futures_util::stream::iter(events.into_iter().map(Ok)))
    }
}

fn text(text: &str) -> StreamEvent {
    StreamEvent::TextDelta {
        text: text.to_owned(),
    }
}

fn read(id: &str, path: &str) -> StreamEvent {
    StreamEvent::ToolCall(ToolCall {
        id: id.to_owned(),
        name: "read_file".to_owned(),
        arguments: json!({"path": path}),
    })
}

fn capped() -> StreamEvent {
    StreamEvent::Stop {
        reason: StopReason::MaxTokens,
    }
}

/// Every shape a turn leaves: a note riding with a message, a search that binds, calls with
/// pictures retired once and twice, a refusal, an answer cut at its cap with and without text,
/// and a turn ended by a call the host could not record (one call dispatched unanswered, one
/// never dispatched).
fn answers() -> Vec<Vec<StreamEvent>> {
    vec![
        // Turn 0.
        vec![
            StreamEvent::ToolCall(ToolCall {
                id: "s1".to_owned(),
                name: "search_tools".to_owned(),
                arguments: json!({"query": "lint"}),
            }),
            read("a", "/w/proj/a.png"),
            read("b", "/w/proj/b.png"),
        ],
        vec![
            text("Two plots."),
            read("c", "/w/proj/c.png"),
            read("d", "/w/proj/d.png"),
            read("e", "/w/proj/e.png"),
        ],
        vec![text("done")],
        // Turn 1.
        vec![
            StreamEvent::ToolCall(ToolCall {
                id: "w".to_owned(),
                name: "write_file".to_owned(),
                arguments: json!({"path": "/w/proj/x", "content": "y"}),
            }),
            read("x", "/w/proj/x2.png"),
        ],
        vec![text("partial"), read("cut", "/w/proj/cut"), capped()],
        // Turn 2.
        vec![read("cut2", "/w/proj/cut"), capped()],
        // Turn 3.
        vec![
            read("y", "/w/proj/y.png"),
            read("z", "/w/proj/z.png"),
            read("v", "/w/proj/v.png"),
            read("u", "/w/proj/u.png"),
            read("ok", "/w/proj/ok.txt"),
            read("f", "fail"),
            read("never", "/w/proj/never.txt"),
        ],
    ]
}

fn config() -> TurnConfig {
    TurnConfig {
        system: "You are Codaris.".to_owned(),
        max_rounds: 8,
        lean: true,
        tool_search_api: false,
        context: None,
    }
}

/// Plays the four turns on `conversation`; the reasons they ended.
async fn play(conversation: &mut Conversation, provider: &Playlist) -> Vec<EndReason> {
    let host = host();
    let task = Task::new("/w/proj");
    let mut reasons = Vec::new();
    for (n, prompt) in ["look at the plots", "write it", "again", "boom"]
        .into_iter()
        .enumerate()
    {
        if n == 0 {
            conversation
                .notes
                .push("[background task `bg-1` finished: exit 0]".to_owned());
        }
        reasons.push(run_turn(conversation, prompt, &task, provider, &host, &config()).await);
    }
    reasons
}

fn playlist() -> Playlist {
    Playlist {
        answers: Mutex::new(answers().into()),
        ..Playlist::default()
    }
}

#[tokio::test]
async fn the_stored_conversation_keeps_its_exact_bytes() {
    let mut conversation = Conversation::default();
    let reasons = play(&mut conversation, &playlist()).await;
    assert_eq!(
        reasons,
        [
            EndReason::EndTurn,
            EndReason::MaxTokens,
            EndReason::MaxTokens,
            EndReason::Error
        ]
    );
    let stored = serde_json::to_string_pretty(&conversation).unwrap();
    insta::assert_snapshot!("stored_conversation", stored);
    // What the daemon does: through a `Value` and back.
    let value = serde_json::to_value(&conversation).unwrap();
    let restored: Conversation = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(serde_json::to_value(&restored).unwrap(), value);
    assert_eq!(restored, conversation);
}

#[tokio::test]
async fn a_restored_conversation_continues_as_the_one_never_stored() {
    let mut kept = Conversation::default();
    play(&mut kept, &playlist()).await;
    let mut restored: Conversation =
        serde_json::from_str(&serde_json::to_string(&kept).unwrap()).unwrap();
    let next = || Playlist {
        answers: Mutex::new(
            vec![vec![read("again", "/w/proj/again.png")], vec![text("fine")]].into(),
        ),
        ..Playlist::default()
    };
    let (first, second) = (next(), next());
    let task = Task::new("/w/proj");
    run_turn(&mut kept, "more", &task, &first, &host(), &config()).await;
    run_turn(&mut restored, "more", &task, &second, &host(), &config()).await;
    let sent = |p: &Playlist| p.sent.lock().unwrap().clone();
    assert_eq!(sent(&first), sent(&second));
    assert_eq!(kept, restored);
}
