//! Long sessions through the turn loop: eviction keeping marked results and shrinking the
//! request, automatic compaction and what survives it, `compact_context`, and a restored
//! session after a compaction. The model is a recording stand-in; the policy is the real one.

use std::sync::{Arc, Mutex};

use codaris_agent::{
    CallRequest, CapabilityAnswer, CapabilityRequest, ContextBudget, ContextSection, Conversation,
    Decided, EventStream, HostError, HostFuture, Message, ModelProvider, ModelRequest, Registry,
    StopReason, StreamEvent, ToolCall, ToolDefinition, ToolIndex, ToolRun, TurnConfig, TurnEvent,
    TurnHost, run_turn,
};
use codaris_index::{Entry, Index, Kind, KindFilter, SearchOutcome, SearchRequest, Searcher};
use codaris_policy::{Task, Verdict};
use serde_json::{Value, json};

use super::common::{TestPermit, any_spec, decide_without_grants, registry};

const SUMMARISER: &str = "You summarise";

/// What the stand-in answers the `n`-th request of the turn loop.
type Answer = Box<dyn Fn(&ModelRequest, usize) -> Vec<StreamEvent> + Send + Sync>;

/// Answers each request with what `answer` says for it, and keeps every request.
struct Recording {
    requests: Mutex<Vec<ModelRequest>>,
    answer: Answer,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Recording")
    }
}

impl Recording {
    fn new(
        answer: impl Fn(&ModelRequest, usize) -> Vec<StreamEvent> + Send + Sync + 'static,
    ) -> Self {
        Self {
            requests: Mutex::default(),
            answer: Box::new(answer),
        }
    }

    /// The requests of the turn loop (not the summariser's).
    fn turn_requests(&self) -> Vec<ModelRequest> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| !r.system.starts_with(SUMMARISER))
            .cloned()
            .collect()
    }

    fn summariser_requests(&self) -> Vec<ModelRequest> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.system.starts_with(SUMMARISER))
            .cloned()
            .collect()
    }
}

impl ModelProvider for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    fn model(&self) -> &str {
        "recording-model"
    }

    fn stream(&self, request: &ModelRequest) -> EventStream {
        let mut requests = self.requests.lock().unwrap();
        let turn_requests = requests
            .iter()
            .filter(|r| !r.system.starts_with(SUMMARISER))
            .count();
        requests.push(request.clone());
        let events = if request.system.starts_with(SUMMARISER) {
            vec![
                StreamEvent::TextDelta {
                    text: format!("<summary>SUMMARY #{}</summary>", requests.len()),
                },
                StreamEvent::Stop {
                    reason: StopReason::EndTurn,
                },
            ]
        } else {
            (self.answer)(request, turn_requests)
        };
        Box::pin(futures_util::stream::iter(events.into_iter().map(Ok)))
    }
}

fn call(id: String, name: &str, arguments: Value) -> Vec<StreamEvent> {
    vec![
        StreamEvent::ToolCall(ToolCall {
            id,
            name: name.to_owned(),
            arguments,
        }),
        StreamEvent::Stop {
            reason: StopReason::ToolUse,
        },
    ]
}

fn text(text: &str) -> Vec<StreamEvent> {
    vec![
        StreamEvent::TextDelta {
            text: text.to_owned(),
        },
        StreamEvent::Stop {
            reason: StopReason::EndTurn,
        },
    ]
}

/// Reads come back as 6 KB of numbered lines naming the file; everything else as a line.
struct Host {
    events: Mutex<Vec<TurnEvent>>,
    index: Index,
    registry: Arc<Registry>,
}

impl Default for Host {
    fn default() -> Self {
        Host {
            events: Mutex::default(),
            index: Index::build(vec![Entry::new(
                "compact_context",
                Kind::Core,
                "fold the older conversation into a summary to fit the context window",
            )]),
            registry: Arc::new(registry()),
        }
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

/// The text a read of `path` returns.
fn contents(path: &str) -> String {
    (1..=60)
        .map(|n| {
            format!(
                "{n}\t{path}: line {n} of a file that is read whole {}\n",
                "~".repeat(40)
            )
        })
        .collect()
}

impl TurnHost for Host {
    type Permit = TestPermit;

    fn spec(&self, tool: &str) -> Option<ToolDefinition> {
        any_spec(tool)
    }

    fn index(&self) -> &dyn ToolIndex {
        self
    }

    fn decide<'a>(
        &'a self,
        call: &'a CallRequest,
    ) -> HostFuture<'a, Result<Decided<TestPermit>, HostError>> {
        let decision = decide_without_grants(call);
        let decided = if decision.verdict == Verdict::Allow {
            Decided::Run(TestPermit(decision, call.clone()))
        } else {
            Decided::Refused(decision)
        };
        Box::pin(async move { Ok(decided) })
    }

    fn run(&self, permit: TestPermit) -> HostFuture<'_, ToolRun> {
        let call = permit.1;
        let output = match call.args["path"].as_str() {
            Some(path) if call.tool == "read_file" => contents(path),
            _ => format!("{} ran", call.tool),
        };
        Box::pin(async move { ToolRun::ok(output) })
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

    fn survivors(&self) -> HostFuture<'_, Vec<ContextSection>> {
        Box::pin(async {
            vec![ContextSection {
                title: "Plan `release`".to_owned(),
                body: "# Release plan\n1. tag".to_owned(),
            }]
        })
    }
}

fn config(budget: ContextBudget) -> TurnConfig {
    TurnConfig {
        system: "You are Codaris.".to_owned(),
        max_rounds: 30,
        lean: true,
        tool_search_api: false,
        context: Some(budget),
    }
}

/// A request as sent, in bytes of JSON: the measure a server would see.
fn sent_bytes(request: &ModelRequest) -> usize {
    serde_json::to_string(request).unwrap().len()
}

/// The text of every message of a request, one string.
fn all_text(request: &ModelRequest) -> String {
    request
        .messages
        .iter()
        .map(|m| match m {
            Message::User { text } => text.clone(),
            Message::Assistant { text, tool_calls } => format!("{text} {tool_calls:?}"),
            Message::ToolResult(r) => r.content.clone(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Plays `turns` turns of `rounds` reads each (the third read of the session marked `keep`),
/// each turn ending with a text answer.
async fn reads(
    budget: ContextBudget,
    turns: usize,
    rounds: usize,
) -> (Recording, Host, Conversation) {
    let provider = Recording::new(move |_, n| {
        let in_turn = n % (rounds + 1);
        if in_turn == rounds {
            return text("done");
        }
        let file = n - n / (rounds + 1);
        let mut args = json!({"path": format!("f{file}.txt")});
        if file == 3 {
            args["keep"] = json!(true);
        }
        call(format!("call_{n}"), "read_file", args)
    });
    let host = Host::default();
    let mut conversation = Conversation::default();
    for turn in 0..turns {
        run_turn(
            &mut conversation,
            &format!("read the next files ({turn})"),
            &Task::new("/w/proj"),
            &provider,
            &host,
            &config(budget),
        )
        .await;
    }
    (provider, host, conversation)
}

#[tokio::test]
async fn eviction_keeps_marked_results_and_every_request_stays_under_the_budget() {
    let budget = ContextBudget::new(40_000, 4_000);
    // 30 turns of 5 reads, 6 KB each: about 900 KB of results, 7 times the window.
    let (provider, host, conversation) = reads(budget, 30, 5).await;
    let requests = provider.turn_requests();
    assert_eq!(requests.len(), 30 * 6);
    // A breakpoint on the conversation's last block: the rounds between two batches read the
    // prefix the one before wrote.
    assert!(
        requests
            .iter()
            .all(|r| r.cache.conversation && r.cache.tools)
    );
    for (n, request) in requests.iter().enumerate() {
        let tokens = sent_bytes(request) / 3;
        assert!(
            tokens as u64 <= budget.room(),
            "request {n} is about {tokens} tokens, over the room of {}",
            budget.room()
        );
    }
    let last = requests.last().unwrap();
    let text = all_text(last);
    // The kept read of round 3 is still there, whole, at the end of the session.
    assert!(
        text.contains(&contents("f3.txt")),
        "the kept result was evicted"
    );
    assert!(
        !text.contains(&contents("f0.txt")),
        "an old result was not evicted"
    );
    assert!(text.contains("[result evicted to keep the context under its budget: `read_file` {\"path\":\"f0.txt\"}; call it again with the same arguments to see it]"));
    // The current turn's results are all there.
    for file in 145..150 {
        assert!(text.contains(&contents(&format!("f{file}.txt"))), "f{file}");
    }
    // The conversation keeps every result.
    let kept = conversation
        .events()
        .iter()
        .filter(|e| matches!(e, codaris_agent::Event::ToolResult { .. }))
        .count();
    assert_eq!(kept, 150);
    let stored = serde_json::to_string(&conversation).unwrap();
    assert!(stored.contains("f0.txt: line 60"));
    // Batches, not one eviction per round: the cache is rewritten rarely.
    let batches = host
        .events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, TurnEvent::Evicted { .. }))
        .count();
    assert!((2..=30).contains(&batches), "{batches} eviction batches");
    // Without an eviction between them, a round's request extends the one before it.
    let evicting_rounds: Vec<(u32, u32)> = host
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            TurnEvent::Evicted { turn, round, .. } => Some((*turn, *round)),
            _ => None,
        })
        .collect();
    let mut extended = 0;
    for (n, pair) in requests.windows(2).enumerate() {
        let (turn, round) = ((n + 1) / 6, (n + 1) % 6);
        if evicting_rounds.contains(&(turn as u32, round as u32)) {
            continue;
        }
        assert_eq!(
            pair[1].messages[..pair[0].messages.len()],
            pair[0].messages[..],
            "request {} changed what request {n} sent",
            n + 1
        );
        extended += 1;
    }
    assert!(extended > 100);
    // The usage event says the share of the window.
    let share = host
        .events
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find_map(|e| match e {
            TurnEvent::Usage { context, .. } => *context,
            _ => None,
        });
    let share = share.expect("a context share");
    assert_eq!(share.window, 40_000);
    assert!(share.tokens > 0 && share.tokens <= budget.room());
}

#[tokio::test]
async fn a_turn_that_outgrows_the_window_is_compacted_and_what_survives_is_sent() {
    let budget = ContextBudget::new(20_000, 2_000);
    // One turn of 25 reads: its own results are 5 times the window, and none may be evicted.
    let (provider, host, conversation) = reads(budget, 1, 25).await;
    let requests = provider.turn_requests();
    assert_eq!(requests.len(), 26, "the turn ran to its end");
    for (n, request) in requests.iter().enumerate() {
        assert!(
            (sent_bytes(request) / 3) as u64 <= budget.room(),
            "request {n} over the room"
        );
    }
    let compactions: Vec<TurnEvent> = host
        .events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, TurnEvent::Compacted { .. }))
        .cloned()
        .collect();
    assert!(!compactions.is_empty());
    assert_eq!(provider.summariser_requests().len(), compactions.len());
    // The summariser read the folded transcript.
    let first = &provider.summariser_requests()[0];
    assert!(
        all_text(first).contains("f0.txt: line 1 "),
        "{}",
        all_text(first)
    );
    assert!(first.tools.is_empty(), "the summariser is offered no tools");
    // After it, the request opens with the summary and what survives, item by item.
    let last = requests.last().unwrap();
    let Message::User { text: opening } = &last.messages[0] else {
        panic!("the request opens with {:?}", last.messages[0]);
    };
    assert!(opening.contains("was compacted"), "{opening}");
    assert!(opening.contains("SUMMARY #"), "{opening}");
    assert!(
        opening.contains("### The person's latest request\nread the next files (0)"),
        "{opening}"
    );
    assert!(
        opening.contains("### Plan `release`\n# Release plan\n1. tag"),
        "{opening}"
    );
    assert!(
        opening.contains("### Kept result of `read_file` {\"path\":\"f3.txt\",\"keep\":true}"),
        "{opening}"
    );
    assert!(
        opening.contains(&contents("f3.txt")),
        "the kept result survives whole"
    );
    let recent = opening
        .split("### Files read or edited most recently\n")
        .nth(1)
        .expect("the recent files");
    let listed: Vec<&str> = recent.lines().take_while(|l| l.starts_with("- ")).collect();
    assert_eq!(listed.len(), 5, "{recent}");
    assert!(opening.contains("### Last read of `f"), "{opening}");
    // The log still holds every read.
    let stored = serde_json::to_string(&conversation).unwrap();
    assert!(stored.contains("f0.txt: line 60"));
    assert!(stored.contains("\"type\":\"compaction\""));
}

#[tokio::test]
async fn compact_context_folds_what_came_before_with_the_instructions_given() {
    let budget = ContextBudget::new(200_000, 8_000);
    let provider = Recording::new(|_, n| match n {
        0 | 1 => call(
            format!("r{n}"),
            "read_file",
            json!({"path": format!("a{n}.txt")}),
        ),
        2 => call(
            "s".to_owned(),
            "search_tools",
            json!({"query": "compact the context"}),
        ),
        3 => call(
            "c".to_owned(),
            "compact_context",
            json!({"instructions": "keep the sample counts"}),
        ),
        _ => text("carrying on"),
    });
    let host = Host::default();
    let mut conversation = Conversation::default();
    run_turn(
        &mut conversation,
        "look at the samples",
        &Task::new("/w/proj"),
        &provider,
        &host,
        &config(budget),
    )
    .await;
    let summariser = provider.summariser_requests();
    assert_eq!(summariser.len(), 1);
    assert!(all_text(&summariser[0]).contains("keep the sample counts"));
    let requests = provider.turn_requests();
    let after = requests.last().unwrap();
    // The summary, then the answer that asked for it and its result; nothing older.
    assert_eq!(after.messages.len(), 3, "{:#?}", after.messages);
    assert!(matches!(&after.messages[0], Message::User { text } if text.contains("SUMMARY #")));
    assert!(
        matches!(&after.messages[1], Message::Assistant { tool_calls, .. } if tool_calls[0].name == "compact_context")
    );
    assert!(
        matches!(&after.messages[2], Message::ToolResult(r) if r.content.starts_with("compacted: "))
    );
    // What the reads returned comes back only as a recent file, after the summary.
    assert!(
        matches!(&after.messages[0], Message::User { text } if text.contains("- `a1.txt`\n- `a0.txt`"))
    );

    // Restored from its stored form, the session sends the same thing and goes on from it.
    let stored = serde_json::to_value(&conversation).unwrap();
    let restored: Conversation = serde_json::from_value(stored.clone()).unwrap();
    assert_eq!(restored.sent_messages(), conversation.sent_messages());
    assert_eq!(serde_json::to_value(&restored).unwrap(), stored);
    let mut restored = restored;
    let next = Recording::new(|_, _| text("still here"));
    run_turn(
        &mut restored,
        "and now?",
        &Task::new("/w/proj"),
        &next,
        &host,
        &config(budget),
    )
    .await;
    let resumed = &next.turn_requests()[0];
    assert!(matches!(&resumed.messages[0], Message::User { text } if text.contains("SUMMARY #")));
    let results: Vec<&str> = resumed
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results, ["c"], "the folded history is not sent");
    assert!(matches!(resumed.messages.last(), Some(Message::User { text }) if text == "and now?"));
}

#[tokio::test]
async fn a_server_side_compaction_folds_what_came_before_its_answer() {
    let budget = ContextBudget {
        server_side: true,
        ..ContextBudget::new(200_000, 8_000)
    };
    let provider = Recording::new(|_, n| match n {
        0 => call("r0".to_owned(), "read_file", json!({"path": "a.txt"})),
        1 => {
            let mut events = vec![StreamEvent::Compacted {
                summary: "the API's own summary".to_owned(),
            }];
            events.extend(call("r1".to_owned(), "read_file", json!({"path": "b.txt"})));
            events
        }
        _ => text("done"),
    });
    let host = Host::default();
    let mut conversation = Conversation::default();
    run_turn(
        &mut conversation,
        "read two files",
        &Task::new("/w/proj"),
        &provider,
        &host,
        &config(budget),
    )
    .await;
    let requests = provider.turn_requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[0].server_compaction,
        Some(budget.at(budget.compact_at))
    );
    assert!(
        provider.summariser_requests().is_empty(),
        "no local summary"
    );
    let last = &requests[2];
    let Message::User { text: opening } = &last.messages[0] else {
        panic!("{:?}", last.messages[0]);
    };
    assert!(
        opening.contains("<summary>\nthe API's own summary\n</summary>"),
        "{opening}"
    );
    assert!(
        matches!(&last.messages[1], Message::Assistant { tool_calls, .. } if tool_calls[0].id == "r1")
    );
    assert!(host.events.lock().unwrap().iter().any(|e| matches!(
        e,
        TurnEvent::Compacted {
            trigger: codaris_agent::CompactionTrigger::Server,
            ..
        }
    )));
}

#[tokio::test]
async fn with_the_scripted_provider_the_summary_is_the_script_s_next_round() {
    let script = r#"{"turns": [{"rounds": [
        {"tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]},
        {"tool_calls": [{"name": "search_tools", "args": {"query": "compact the context"}}]},
        {"tool_calls": [{"name": "compact_context", "args": {}}]},
        {"text": "<summary>the scripted summary</summary>"},
        {"text": "done"}
    ]}]}"#;
    let provider =
        codaris_agent::ScriptedProvider::new(codaris_agent::parse_script(script).unwrap());
    let host = Host::default();
    let mut conversation = Conversation::default();
    let reason = run_turn(
        &mut conversation,
        "read and fold",
        &Task::new("/w/proj"),
        &provider,
        &host,
        &config(ContextBudget::new(200_000, 8_000)),
    )
    .await;
    assert_eq!(reason, codaris_agent::EndReason::EndTurn);
    let sent = conversation.sent_messages();
    assert!(
        matches!(&sent[0], Message::User { text } if text.contains("<summary>\nthe scripted summary\n</summary>")),
        "{sent:?}"
    );
    assert!(matches!(sent.last(), Some(Message::Assistant { text, .. }) if text == "done"));
}
