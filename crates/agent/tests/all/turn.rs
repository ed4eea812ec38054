//! The turn loop with the scripted provider, the real policy deciding, and a recording host.

use std::sync::Mutex;

use codaris_agent::{
    CallRequest, Conversation, EndReason, HostFuture, Message, Picture, ScriptedProvider,
    ToolResult, ToolRun, ToolSpec, ToolTier, TurnConfig, TurnEvent, TurnHost, parse_script,
    run_turn,
};
use codaris_policy::{Code, Decision, GrantSet, Task, Verdict};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::registry;

/// Decides with the real policy and no grants; "runs" a call by describing it; a search binds
/// `lint_pipeline`; a `.png` path comes back as a picture.
#[derive(Default)]
struct Host {
    events: Mutex<Vec<TurnEvent>>,
    decided: Mutex<Vec<CallRequest>>,
}

impl TurnHost for Host {
    fn spec(&self, tool: &str) -> Option<ToolSpec> {
        Some(ToolSpec {
            name: tool.to_owned(),
            description: format!("the {tool} tool"),
            input_schema: json!({"type": "object"}),
            tier: ToolTier::AlwaysOn,
        })
    }

    fn decide<'a>(&'a self, call: &'a CallRequest) -> HostFuture<'a, Result<Decision, String>> {
        self.decided.lock().unwrap().push(call.clone());
        let decision = codaris_policy::evaluate(
            &codaris_policy::Call {
                tool: &call.tool,
                args: &call.args,
                spec: None,
            },
            &GrantSet::new(),
            &call.task,
        );
        Box::pin(async move { Ok(decision) })
    }

    fn run<'a>(&'a self, call: &'a CallRequest) -> HostFuture<'a, ToolRun> {
        let run = if call.tool == "search_tools" {
            ToolRun {
                output: "Matches for \"lint\":\n- lint_pipeline [core] — lint\nBound for your next step: lint_pipeline".to_owned(),
                is_error: false,
                bound: vec!["lint_pipeline".to_owned()],
                pictures: Vec::new(),
            }
        } else if call.args["path"]
            .as_str()
            .is_some_and(|p| p.ends_with(".png"))
        {
            ToolRun {
                output: "`plot.png`: image/png, 1x1".to_owned(),
                pictures: vec![Picture::from_bytes("image/png", b"\x89PNG")],
                ..ToolRun::default()
            }
        } else {
            ToolRun {
                output: format!("ran {}", call.tool),
                ..ToolRun::default()
            }
        };
        Box::pin(async move { run })
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
    }
}

fn task() -> Task {
    Task::new("/w/proj")
}

async fn play(script: &str, prompts: &[&str]) -> (Vec<EndReason>, Host) {
    let provider = ScriptedProvider::new(parse_script(script).unwrap());
    let host = Host::default();
    let registry = registry();
    let mut conversation = Conversation::default();
    let mut reasons = Vec::new();
    for prompt in prompts {
        reasons.push(
            run_turn(
                &mut conversation,
                prompt,
                &task(),
                &registry,
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
        .filter(|e| matches!(e, TurnEvent::ToolResult { decision: None, .. }))
        .count();
    assert_eq!(refused, 4, "three refusals, then the fourth ends the turn");
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
    let registry = registry();
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
            &registry,
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
        &registry(),
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
    let provider = ScriptedProvider::new(parse_script(script).unwrap());
    let host = Host::default();
    let mut conversation = Conversation::default();
    let reason = run_turn(
        &mut conversation,
        "show me",
        &task(),
        &registry(),
        &provider,
        &host,
        &config(),
    )
    .await;
    assert_eq!(reason, EndReason::EndTurn);
    let results: Vec<&ToolResult> = conversation
        .messages
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
