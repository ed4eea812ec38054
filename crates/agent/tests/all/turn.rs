//! The turn loop with the scripted provider, the real policy deciding, and a recording host.

use std::sync::{Arc, Mutex};

use codaris_agent::{
    CallRequest, CapabilityAnswer, CapabilityRequest, Conversation, Decided, EndReason, HostError,
    HostFuture, Message, Picture, Registry, ScriptedProvider, ToolDefinition, ToolIndex,
    ToolResult, ToolRun, ToolTier, TurnConfig, TurnEvent, TurnHost, parse_script, run_turn,
};
use codaris_index::{Entry, Index, Kind, KindFilter, SearchOutcome, SearchRequest, Searcher};
use codaris_policy::{Code, Task, Verdict};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{TestPermit, any_spec, decide_without_grants, registry};

/// Decides with the real policy and no grants; "runs" a call by describing it; a search finds
/// `lint_pipeline` in a one-entry index; a `.png` path comes back as a picture.
struct Host {
    events: Mutex<Vec<TurnEvent>>,
    decided: Mutex<Vec<CallRequest>>,
    index: FakeIndex,
    /// A tool the first run switches off, as `codaris tools disable` would mid-turn.
    switch_off_after_run: Mutex<Option<String>>,
}

impl Default for Host {
    fn default() -> Self {
        Host {
            events: Mutex::default(),
            decided: Mutex::default(),
            switch_off_after_run: Mutex::default(),
            index: FakeIndex {
                registry: Mutex::new(Arc::new(registry())),
                index: Index::build(vec![Entry::new(
                    "lint_pipeline",
                    Kind::Core,
                    "lint a pipeline",
                )]),
            },
        }
    }
}

struct FakeIndex {
    registry: Mutex<Arc<Registry>>,
    index: Index,
}

impl ToolIndex for FakeIndex {
    fn registry(&self) -> Arc<Registry> {
        self.registry.lock().unwrap().clone()
    }

    fn search(&self, query: &str, kind: KindFilter, limit: usize) -> SearchOutcome {
        Searcher::new().search(
            &self.index,
            &SearchRequest::new(query).kind(kind).limit(limit),
        )
    }
}

impl TurnHost for Host {
    type Permit = TestPermit;

    fn spec(&self, tool: &str) -> Option<ToolDefinition> {
        any_spec(tool)
    }

    fn index(&self) -> &dyn ToolIndex {
        &self.index
    }

    fn decide<'a>(
        &'a self,
        call: &'a CallRequest,
    ) -> HostFuture<'a, Result<Decided<TestPermit>, HostError>> {
        self.decided.lock().unwrap().push(call.clone());
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
        if let Some(off) = self.switch_off_after_run.lock().unwrap().take() {
            let mut registry = (*self.index.registry()).clone();
            let tools = registry.tools().iter().cloned().map(|mut t| {
                t.enabled &= t.name != off;
                t
            });
            registry = Registry::new(tools.collect::<Vec<_>>(), &[]);
            *self.index.registry.lock().unwrap() = Arc::new(registry);
        }
        let run = if call.args["path"]
            .as_str()
            .is_some_and(|p| p.ends_with(".png"))
        {
            ToolRun {
                output: "`plot.png`: image/png, 1x1".to_owned(),
                pictures: vec![Picture::from_bytes("image/png", b"\x89PNG")],
                ..ToolRun::default()
            }
        } else if call.tool == "glob" && call.args["pattern"] == "move" {
            ToolRun {
                output: "moved".to_owned(),
                moved_to: Some("/w/tree".into()),
                ..ToolRun::default()
            }
        } else {
            ToolRun::ok(format!("ran {}", call.tool))
        };
        Box::pin(async move { run })
    }

    fn request_capability<'a>(
        &'a self,
        _request: &'a CapabilityRequest,
    ) -> HostFuture<'a, CapabilityAnswer> {
        Box::pin(async { CapabilityAnswer::GrantedSession })
    }

    fn emit(&self, event: TurnEvent) {
        self.events.lock().unwrap().push(event);
    }
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

fn task() -> Task {
    Task::new("/w/proj")
}

/// One turn of `prompt` in `task`, played on `host`; the conversation it left.
async fn play_on(
    host: &Host,
    script: &str,
    prompt: &str,
    task: &Task,
) -> (EndReason, Conversation) {
    let provider = ScriptedProvider::new(parse_script(script).unwrap());
    let mut conversation = Conversation::default();
    let reason = run_turn(&mut conversation, prompt, task, &provider, host, &config()).await;
    (reason, conversation)
}

async fn play(script: &str, prompts: &[&str]) -> (Vec<EndReason>, Host) {
    let provider = ScriptedProvider::new(parse_script(script).unwrap());
    let host = Host::default();
    let mut conversation = Conversation::default();
    let mut reasons = Vec::new();
    for prompt in prompts {
        reasons.push(
            run_turn(
                &mut conversation,
                prompt,
                &task(),
                &provider,
                &host,
                &config(),
            )
            .await,
        );
    }
    (reasons, host)
}

fn bindings(host: &Host) -> Vec<(u32, u32, Vec<String>)> {
    host.events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            TurnEvent::Binding {
                turn,
                round,
                surface,
            } => Some((*turn, *round, surface.tools[9..].to_vec())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_search_binds_from_the_next_round_and_the_found_tool_runs() {
    let script = r#"{"turns": [{"rounds": [
        {"text": "searching", "tool_calls": [{"name": "search_tools", "args": {"query": "lint"}}]},
        {"tool_calls": [{"name": "lint_pipeline", "args": {}}]},
        {"text": "clean"}
    ]}]}"#;
    let (reasons, host) = play(script, &["lint it"]).await;
    assert_eq!(reasons, vec![EndReason::EndTurn]);
    assert_eq!(
        bindings(&host),
        vec![
            (0, 0, vec![]),
            (0, 1, vec!["lint_pipeline".to_owned()]),
            (0, 2, vec!["lint_pipeline".to_owned()]),
        ]
    );
    let decided = host.decided.lock().unwrap();
    assert_eq!(decided[1].tool, "lint_pipeline");
    assert!(
        decided[1]
            .task
            .bound
            .as_ref()
            .unwrap()
            .contains(&"lint_pipeline".to_owned())
    );
    let events = host.events.lock().unwrap();
    let ended = events.last().unwrap();
    assert_eq!(
        ended,
        &TurnEvent::TurnEnded {
            turn: 0,
            reason: EndReason::EndTurn,
            error: None
        }
    );
}

#[tokio::test]
async fn a_refused_call_goes_back_to_the_model_as_its_result() {
    let script = r#"{"turns": [{"rounds": [
        {"tool_calls": [{"name": "write", "args": {"path": "/etc/hosts", "content": "x"}},
                        {"name": "read_file", "args": "{\"path\": \"a\"}"}]},
        {"text": "I cannot write there."}
    ]}]}"#;
    let (reasons, host) = play(script, &["edit hosts"]).await;
    assert_eq!(reasons, vec![EndReason::EndTurn]);
    let events = host.events.lock().unwrap();
    let results: Vec<(String, Verdict, Code)> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ToolResult {
                tool,
                decision: Some(decision),
                ..
            } => Some((tool.clone(), decision.verdict, decision.code)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        vec![
            ("write".to_owned(), Verdict::Deny, Code::MutateOutsideFence),
            ("read_file".to_owned(), Verdict::Deny, Code::ArgsNotObject),
        ]
    );
    // A refused call is reported as failed, for a person's client to show as an error.
    let failed: Vec<bool> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ToolResult { failed, .. } => Some(*failed),
            _ => None,
        })
        .collect();
    assert_eq!(failed, [true, true]);
}

#[tokio::test]
async fn the_same_search_four_times_ends_the_turn() {
    let search = r#"{"name": "search_tools", "args": {"query": "Lint NEXTFLOW"}}"#;
    let again = r#"{"name": "search_tools", "args": {"query": "nextflow lint"}}"#;
    let script = format!(
        r#"{{"turns": [{{"rounds": [
            {{"tool_calls": [{search}]}}, {{"tool_calls": [{again}]}}, {{"tool_calls": [{again}]}},
            {{"tool_calls": [{again}]}}, {{"tool_calls": [{again}]}}, {{"text": "never reached"}}
        ]}}]}}"#
    );
    let (reasons, host) = play(&script, &["lint"]).await;
    assert_eq!(reasons, vec![EndReason::LoopGuard]);
    let refused = host
        .events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| {
            matches!(e, TurnEvent::ToolResult { decision: Some(d), .. } if d.code == Code::RepeatedSearch)
        })
        .count();
    assert_eq!(refused, 4, "three refusals, then the fourth ends the turn");
    assert_eq!(
        host.decided.lock().unwrap().len(),
        5,
        "every search was decided"
    );
}

#[tokio::test]
async fn turns_end_by_exhaustion_and_the_round_limit() {
    let script = r#"{"turns": [
        {"rounds": [{"tool_calls": [{"name": "glob", "args": {"pattern": "*.nf"}}]}]},
        {"rounds": [{"tool_calls": [{"name": "glob", "args": {"pattern": "a"}}]},
                    {"tool_calls": [{"name": "glob", "args": {"pattern": "b"}}]},
                    {"tool_calls": [{"name": "glob", "args": {"pattern": "c"}}]},
                    {"tool_calls": [{"name": "glob", "args": {"pattern": "d"}}]},
                    {"tool_calls": [{"name": "glob", "args": {"pattern": "e"}}]},
                    {"tool_calls": [{"name": "glob", "args": {"pattern": "f"}}]},
                    {"tool_calls": [{"name": "glob", "args": {"pattern": "g"}}]},
                    {"tool_calls": [{"name": "glob", "args": {"pattern": "h"}}]},
                    {"text": "too late"}]}
    ]}"#;
    let (reasons, _) = play(script, &["first", "second"]).await;
    assert_eq!(
        reasons,
        vec![EndReason::ScriptExhausted, EndReason::MaxRounds]
    );
}

/// Records every request, then answers like the scripted provider.
#[derive(Debug)]
struct Recording {
    inner: ScriptedProvider,
    requests: Mutex<Vec<codaris_agent::ModelRequest>>,
}

impl codaris_agent::ModelProvider for Recording {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn model(&self) -> &str {
        "recorded"
    }

    fn stream(&self, request: &codaris_agent::ModelRequest) -> codaris_agent::EventStream {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.stream(request)
    }
}

#[tokio::test]
async fn with_the_tool_search_api_the_tools_array_never_changes() {
    let script = r#"{"turns": [{"rounds": [
        {"tool_calls": [{"name": "search_tools", "args": {"query": "lint"}}]},
        {"tool_calls": [{"name": "lint_pipeline", "args": {}}]},
        {"text": "clean"}
    ]}, {"rounds": [{"text": "again"}]}]}"#;
    let provider = Recording {
        inner: ScriptedProvider::new(parse_script(script).unwrap()),
        requests: Mutex::new(Vec::new()),
    };
    let host = Host::default();
    let mut conversation = Conversation::default();
    let config = TurnConfig {
        tool_search_api: true,
        ..config()
    };
    for prompt in ["lint it", "and now"] {
        run_turn(
            &mut conversation,
            prompt,
            &task(),
            &provider,
            &host,
            &config,
        )
        .await;
    }
    let requests = provider.requests.lock().unwrap();
    assert_eq!(requests.len(), 4);
    let first = serde_json::to_string(&requests[0].tools).unwrap();
    for request in requests.iter() {
        assert_eq!(serde_json::to_string(&request.tools).unwrap(), first);
    }
    let tiers: Vec<ToolTier> = requests[0].tools.iter().map(|t| t.tier).collect();
    assert!(tiers[..9].iter().all(|t| *t == ToolTier::AlwaysOn));
    assert!(tiers[9..].iter().all(|t| *t == ToolTier::Deferred));
    assert!(requests[0].tools.iter().any(|t| t.name == "lint_pipeline"));
    // The search result binds by reference instead.
    let binds: Vec<&Vec<String>> = requests[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            codaris_agent::Message::ToolResult(result) => Some(&result.binds),
            _ => None,
        })
        .collect();
    assert_eq!(binds, [&vec!["lint_pipeline".to_owned()]]);
}

#[tokio::test]
async fn notes_ride_with_the_next_message_but_do_not_count_as_typed() {
    let script = r#"{"turns": [{"rounds": [{"text": "ok"}]}]}"#;
    let provider = Recording {
        inner: ScriptedProvider::new(parse_script(script).unwrap()),
        requests: Mutex::new(Vec::new()),
    };
    let host = Host::default();
    let mut conversation = Conversation::default();
    conversation
        .notes
        .push("[background task `bg-1` (`ls /review`) finished after 2 s: exit 0]".to_owned());
    run_turn(
        &mut conversation,
        "hello",
        &task(),
        &provider,
        &host,
        &config(),
    )
    .await;
    let requests = provider.requests.lock().unwrap();
    assert_eq!(
        requests[0].messages[0],
        codaris_agent::Message::user(
            "hello\n\n[background task `bg-1` (`ls /review`) finished after 2 s: exit 0]"
        )
    );
    assert!(conversation.notes.is_empty());
    // The `/review` inside the note is not a slash command: the turn stayed an agent turn.
    let decided = host.decided.lock().unwrap();
    assert!(decided.is_empty());
    let bindings = bindings(&host);
    assert_eq!(bindings, vec![(0, 0, vec![])], "nothing forced by the note");
}

#[tokio::test]
async fn the_pictures_a_run_returns_ride_in_its_tool_result() {
    let script = r#"{"turns": [{"rounds": [
        {"tool_calls": [{"name": "read_file", "args": {"path": "/w/proj/plot.png"}}]},
        {"text": "a plot"}
    ]}]}"#;
    let host = Host::default();
    let (reason, conversation) = play_on(&host, script, "show me", &task()).await;
    assert_eq!(reason, EndReason::EndTurn);
    let messages = conversation.messages();
    let results: Vec<&ToolResult> = messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].content, "`plot.png`: image/png, 1x1");
    assert_eq!(
        results[0].pictures,
        vec![Picture {
            media_type: "image/png".to_owned(),
            data_base64: "iVBORw==".to_owned(),
        }]
    );
    // The text the client sees carries no base64.
    let events = host.events.lock().unwrap();
    assert!(events.iter().any(|e| matches!(
        e,
        TurnEvent::ToolResult { output, .. } if output == "`plot.png`: image/png, 1x1"
    )));
}

fn results(host: &Host) -> Vec<(String, Option<Code>, String)> {
    host.events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ToolResult {
                tool,
                decision,
                output,
                ..
            } => Some((
                tool.clone(),
                decision.as_ref().map(|d| d.code),
                output.clone(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_tool_switched_off_mid_turn_is_gone_and_refused_from_the_next_round() {
    let script = r#"{"turns": [{"rounds": [
        {"tool_calls": [{"name": "read_file", "args": {"path": "a"}}]},
        {"tool_calls": [{"name": "read_file", "args": {"path": "b"}}]},
        {"text": "done"}
    ]}]}"#;
    let host = Host::default();
    *host.switch_off_after_run.lock().unwrap() = Some("read_file".to_owned());
    let (reason, _) = play_on(&host, script, "read", &task()).await;
    assert_eq!(reason, EndReason::EndTurn);
    let surfaces: Vec<Vec<String>> = host
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            TurnEvent::Binding { surface, .. } => Some(surface.tools.clone()),
            _ => None,
        })
        .collect();
    assert!(surfaces[0].contains(&"read_file".to_owned()));
    assert!(
        !surfaces[1].contains(&"read_file".to_owned()),
        "{:?}",
        surfaces[1]
    );
    let results = results(&host);
    assert_eq!(results[0].1, Some(Code::AllowedByDefault));
    assert_eq!(results[1].1, Some(Code::ToolWithheld), "{results:?}");
    let decided = host.decided.lock().unwrap();
    assert_eq!(decided[1].task.withheld, ["read_file", "demo__off"]);
}

#[tokio::test]
async fn an_ask_turn_offers_only_the_ask_allowlist() {
    let script = r#"{"turns": [{"rounds": [
        {"tool_calls": [{"name": "search_tools", "args": {"query": "write a file"}}]},
        {"text": "done"}
    ]}]}"#;
    let host = Host::default();
    let mut ask = task();
    ask.activity = codaris_policy::Activity::Ask;
    play_on(&host, script, "what is here?", &ask).await;
    let allowlist: Vec<String> = codaris_policy::ALWAYS_ON
        .iter()
        .filter(|name| {
            codaris_policy::builtin(name)
                .is_some_and(|s| s.modes.allows(codaris_policy::OperatingMode::Ask))
        })
        .map(|name| (*name).to_owned())
        .collect();
    assert_eq!(
        allowlist,
        [
            "search_tools",
            "request_capability",
            "read_file",
            "glob",
            "grep"
        ]
    );
    for event in host.events.lock().unwrap().iter() {
        if let TurnEvent::Binding { surface, .. } = event {
            assert_eq!(surface.tools, allowlist);
            assert!(surface.held_back.contains(&"write".to_owned()));
        }
    }
}

#[tokio::test]
async fn a_repeated_search_is_decided_and_recorded_with_the_guard_s_finding() {
    let script = r#"{"turns": [{"rounds": [
        {"tool_calls": [{"name": "search_tools", "args": {"query": "lint"}}]},
        {"tool_calls": [{"name": "search_tools", "args": {"query": "LINT"}}]},
        {"text": "done"}
    ]}]}"#;
    let (reasons, host) = play(script, &["lint it"]).await;
    assert_eq!(reasons, vec![EndReason::EndTurn]);
    let decided = host.decided.lock().unwrap();
    assert_eq!(decided.len(), 2, "both searches reached the host");
    assert_eq!(decided[0].task.repeated_search, None);
    let finding = decided[1].task.repeated_search.clone().unwrap();
    assert_eq!((finding.query.as_str(), finding.repeat), ("lint", 1));
    assert_eq!(finding.bound, ["lint_pipeline"]);
    let results = results(&host);
    assert_eq!(results[1].1, Some(Code::RepeatedSearch));
    assert_eq!(results[1].2, finding.sentence());
}

#[tokio::test]
async fn a_tool_that_moves_the_session_moves_the_rest_of_the_turn() {
    let script = r#"{"turns": [{"rounds": [
        {"tool_calls": [{"name": "glob", "args": {"pattern": "move"}},
                        {"name": "grep", "args": {"pattern": "x"}}]},
        {"text": "done"}
    ]}]}"#;
    let (_, host) = play(script, &["go"]).await;
    let decided = host.decided.lock().unwrap();
    assert_eq!(decided[0].task.cwd, "/w/proj");
    assert_eq!(decided[1].task.cwd, "/w/tree");
    // The host gets the directory itself too, not only its text.
    assert_eq!(decided[0].cwd, None);
    assert_eq!(decided[1].cwd, Some(std::path::PathBuf::from("/w/tree")));
}

/// A model whose every answer is cut at a cap of 64 tokens: some text, then the start of a
/// tool call the cap cut off.
#[derive(Debug)]
struct CappedModel;

impl codaris_agent::ModelProvider for CappedModel {
    fn name(&self) -> &str {
        "openai"
    }

    fn model(&self) -> &str {
        "small-local"
    }

    fn max_output_tokens(&self) -> Option<u32> {
        Some(64)
    }

    fn stream(&self, _request: &codaris_agent::ModelRequest) -> codaris_agent::EventStream {
        use codaris_agent::{StopReason, StreamEvent, ToolCall};
        let events = vec![
            StreamEvent::TextDelta {
                text: "Hello there, here is a long ".to_owned(),
            },
            StreamEvent::TextDelta {
                text: "answer that".to_owned(),
            },
            StreamEvent::ToolCall(ToolCall {
                id: "call_cut".to_owned(),
                name: "read_file".to_owned(),
                arguments: json!({"path": "a"}),
            }),
            StreamEvent::Stop {
                reason: StopReason::MaxTokens,
            },
        ];
        Box::pin(futures_util::stream::iter(events.into_iter().map(Ok)))
    }
}

#[tokio::test]
async fn an_answer_cut_at_its_cap_ends_the_turn_with_max_tokens_keeping_its_text() {
    let host = Host::default();
    let mut conversation = Conversation::default();
    let reason = run_turn(
        &mut conversation,
        "say hello in five words",
        &task(),
        &CappedModel,
        &host,
        &config(),
    )
    .await;
    assert_eq!(reason, EndReason::MaxTokens);
    // The partial text is kept; the cut call is neither run nor left unanswered.
    assert_eq!(
        conversation.messages().last(),
        Some(&Message::assistant(
            "Hello there, here is a long answer that"
        ))
    );
    assert!(host.decided.lock().unwrap().is_empty());
    let events = host.events.lock().unwrap();
    let ended = events.last().map(|event| match event {
        TurnEvent::TurnEnded {
            turn,
            reason,
            error,
        } => (*turn, *reason, error.as_ref().map(ToString::to_string)),
        other => panic!("the last event is not turn_ended: {other:?}"),
    });
    assert_eq!(
        ended,
        Some((
            0,
            EndReason::MaxTokens,
            Some(
                "the model hit the output cap of 64 tokens; its partial answer is kept; raise `openai.max_output_tokens` for longer answers"
                    .to_owned()
            ),
        ))
    );
}
