//! Sessions that outgrow their model's context window, through `codaris run --json` against a
//! stand-in for OpenAI's Chat Completions API on loopback that records every request: result
//! eviction keeping marked results over 300 rounds, automatic compaction and what survives it,
//! `compact_context` with instructions, and a session resumed after a compaction.
//!
//! The stand-in plays a model by the request it gets: a summariser's request (its system
//! prompt) is answered with a summary; otherwise the test's `next` says what to call next.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use codaris_test_support::fake_http::{FakeHttp, Reply, Seen};
use codaris_test_support::sandbox::{Sandbox, events, stderr, stdout};
use serde_json::{Value, json};

const MODEL: &str = "local-model";

fn sse(chunks: &[Value]) -> Reply {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    Reply::new(200, "text/event-stream", body)
}

fn chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "1", "object": "chat.completion.chunk", "model": MODEL,
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn say(text: &str) -> Reply {
    sse(&[
        chunk(json!({"role": "assistant", "content": text}), Value::Null),
        chunk(json!({}), json!("stop")),
    ])
}

fn call(id: &str, tool: &str, args: &Value) -> Reply {
    sse(&[
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
                   "function": {"name": tool, "arguments": args.to_string()}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
    ])
}

/// Whether a request is the summariser's.
fn summarising(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with("You summarise"))
}

/// Whether a request starts a turn: its last message is the person's.
fn starts_a_turn(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "user")
}

/// A stand-in that summarises summariser requests and answers the others with `next(body, n)`,
/// `n` counting the turn requests from 0.
fn model(next: impl Fn(&Value, usize) -> Reply + Send + Sync + 'static) -> FakeHttp {
    let turn_requests = Arc::new(AtomicUsize::new(0));
    FakeHttp::start(move |seen: &Seen| {
        if seen.path() != "/v1/chat/completions" {
            return Reply::not_implemented("fake OpenAI API", seen);
        }
        let body = seen.json().unwrap_or(Value::Null);
        if summarising(&body) {
            return say(
                "<summary>The person is reading files one by one; nothing failed.</summary>",
            );
        }
        next(&body, turn_requests.fetch_add(1, Ordering::SeqCst))
    })
}

/// The requests of the turn loop the stand-in received, as JSON, and their sizes in bytes.
fn turn_requests(server: &FakeHttp) -> Vec<(usize, Value)> {
    server
        .seen()
        .iter()
        .filter(|seen| seen.path() == "/v1/chat/completions")
        .filter_map(|seen| Some((seen.body.len(), seen.json()?)))
        .filter(|(_, body)| !summarising(body))
        .collect()
}

fn summariser_requests(server: &FakeHttp) -> Vec<Value> {
    server
        .seen()
        .iter()
        .filter_map(Seen::json)
        .filter(summarising)
        .collect()
}

/// A file of `lines` numbered lines naming it.
fn write_file(dir: &Path, name: &str, lines: usize) -> String {
    let text: String = (1..=lines)
        .map(|n| format!("{name} line {n}: {}\n", "abcdefghij".repeat(8)))
        .collect();
    std::fs::write(dir.join(name), &text).expect("write a file");
    text
}

fn run(sandbox: &Sandbox, cwd: &Path, base_url: &str, prompts: &[String]) -> std::process::Output {
    let mut command = sandbox.command("codaris");
    command.args([
        "run",
        "--json",
        "--provider",
        "openai",
        "--model",
        MODEL,
        "--base-url",
        base_url,
        "--cwd",
    ]);
    command.arg(cwd);
    command.args(prompts);
    command.output().expect("run codaris")
}

/// The content of every message of a request, one string.
fn all_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[test]
fn three_hundred_rounds_twenty_windows_of_results_every_request_under_the_budget() {
    const WINDOW: usize = 40_000;
    const OUTPUT: usize = 2_000;
    const READS_PER_TURN: usize = 5;
    const TURNS: usize = 50;
    let sandbox = Sandbox::new();
    sandbox.write_config(&format!(
        "[openai]\ncontext_window = {WINDOW}\nmax_output_tokens = {OUTPUT}\n"
    ));
    let project = sandbox.root.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let files: Vec<String> = (0..TURNS * READS_PER_TURN)
        .map(|i| write_file(&project, &format!("f{i}.txt"), 110))
        .collect();
    let total: usize = files.iter().map(String::len).sum();
    assert!(
        total / 3 >= 20 * WINDOW,
        "the results are {} tokens",
        total / 3
    );
    let reads = Arc::new(AtomicUsize::new(0));
    let this_turn = Arc::new(AtomicUsize::new(0));
    let server = model(move |body, _| {
        // Counted here: a compaction inside a turn folds the turn's first reads.
        if starts_a_turn(body) {
            this_turn.store(0, Ordering::SeqCst);
        }
        if this_turn.fetch_add(1, Ordering::SeqCst) == READS_PER_TURN {
            return say("read them");
        }
        let file = reads.fetch_add(1, Ordering::SeqCst);
        let mut args = json!({"path": format!("f{file}.txt")});
        if file == 3 {
            args["keep"] = json!(true);
        }
        call(&format!("call_{file}"), "read_file", &args)
    });
    let prompts: Vec<String> = (0..TURNS)
        .map(|t| format!("read the next files ({t})"))
        .collect();
    let output = run(
        &sandbox,
        &project,
        &format!("{}/v1", server.url()),
        &prompts,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = turn_requests(&server);
    assert_eq!(requests.len(), TURNS * (READS_PER_TURN + 1), "300 rounds");
    let room = WINDOW - OUTPUT;
    for (n, (bytes, _)) in requests.iter().enumerate() {
        assert!(
            bytes / 3 <= room,
            "request {n} was {bytes} bytes, about {} tokens, over the room of {room}",
            bytes / 3
        );
    }
    // Round 300 still reads the result marked in round 3, whole.
    let (_, last) = requests.last().unwrap();
    let text = all_text(last);
    // Read results come numbered (`N<tab>text`): its first and last lines say it is whole.
    for line in ["1\tf3.txt line 1: ", "110\tf3.txt line 110: "] {
        assert!(
            text.contains(line),
            "the kept result was evicted: no `{line}`"
        );
    }
    assert!(
        !text.contains("f0.txt line 1: "),
        "an old result was still sent"
    );
    assert!(files[3].contains("f3.txt line 110: "));
    let stub = "[result evicted to keep the context under its budget: `read_file` {\"path\":\"f0.txt\"}; call it again with the same arguments to see it]";
    assert!(
        requests
            .iter()
            .any(|(_, body)| all_text(body).contains(stub)),
        "f0.txt was never evicted"
    );
    let events = events(&output);
    let evictions = events.iter().filter(|e| e["type"] == "eviction").count();
    assert!(evictions > 0, "{}", stdout(&output));
    // Stubs add up too: the history is compacted now and then, each time summarised.
    let compactions = events.iter().filter(|e| e["type"] == "compaction").count();
    assert_eq!(summariser_requests(&server).len(), compactions);
    eprintln!("300 rounds: {evictions} eviction batches, {compactions} compactions");
    // The usage line and its JSON say the request's share of the window.
    let usage = events.iter().rev().find(|e| e["type"] == "usage").unwrap();
    assert_eq!(usage["context_window"], WINDOW);
    let percent = usage["context_percent"].as_u64().unwrap();
    assert!((1..=100).contains(&percent), "{usage}");
    assert!(
        usage["line"]
            .as_str()
            .unwrap()
            .contains(&format!("of {WINDOW} tokens")),
        "{usage}"
    );
}

#[test]
fn compact_context_keeps_what_it_is_told_and_a_resumed_session_sends_the_summary() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let project = sandbox.root.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let samples = write_file(&project, "samples.csv", 40);
    let server = model(|body, n| match n {
        0 => call("read", "read_file", &json!({"path": "samples.csv"})),
        1 => call(
            "find",
            "search_tools",
            &json!({"query": "compact the context"}),
        ),
        2 => call(
            "fold",
            "compact_context",
            &json!({"instructions": "keep the sample sheet's name"}),
        ),
        3 => say("compacted"),
        _ => say(&format!(
            "resumed with {} messages",
            body["messages"].as_array().map_or(0, Vec::len)
        )),
    });
    let base = format!("{}/v1", server.url());
    let output = run(
        &sandbox,
        &project,
        &base,
        &["look at the samples".to_owned()],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let compaction = events
        .iter()
        .find(|e| e["type"] == "compaction")
        .unwrap_or_else(|| panic!("no compaction: {}", stdout(&output)));
    assert_eq!(compaction["trigger"], "tool");
    let fold = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["tool"] == "compact_context")
        .unwrap();
    assert!(
        fold["output"].as_str().unwrap().starts_with("compacted: "),
        "{fold}"
    );
    let summariser = summariser_requests(&server);
    assert_eq!(summariser.len(), 1);
    let asked = all_text(&summariser[0]);
    assert!(asked.contains("keep the sample sheet's name"), "{asked}");
    assert!(
        asked.contains("samples.csv line 1:"),
        "the summariser read the history"
    );

    // The session is resumed: what is sent is the summary, not the folded history.
    let session = events
        .iter()
        .find(|e| e["type"] == "session")
        .and_then(|e| e["id"].as_str())
        .expect("the session's id")
        .to_owned();
    let before = turn_requests(&server).len();
    let resumed = sandbox.cli(&["run", "--json", "--session", &session, "and now?"]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let requests = turn_requests(&server);
    let (_, first) = &requests[before];
    let messages = first["messages"].as_array().unwrap();
    // system, the summary, the answer that compacted and its result, the new message.
    let opening = messages[1]["content"].as_str().unwrap();
    assert!(
        opening.starts_with("[The conversation before this point was compacted"),
        "{opening}"
    );
    assert!(
        opening.contains("The person is reading files one by one"),
        "{opening}"
    );
    let results: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["tool_call_id"].as_str())
        .collect();
    assert_eq!(
        results,
        ["fold"],
        "only the compacting call's result is sent"
    );
    assert!(
        !messages
            .iter()
            .any(|m| m["role"] == "tool" && m["content"] == samples)
    );
    assert_eq!(messages.last().unwrap()["content"], "and now?");

    // A chat resuming it shows where the history was folded.
    let chat = sandbox.cli(&["chat", "--resume", &session]);
    assert!(
        stdout(&chat).contains("  ⋯> context compacted (tool): "),
        "{}",
        stdout(&chat)
    );
}

#[test]
fn an_automatic_compaction_keeps_the_plan_the_checklist_kept_results_recent_files_bound_tools_and_open_tasks()
 {
    let sandbox = Sandbox::new();
    sandbox.write_config("[openai]\ncontext_window = 30000\nmax_output_tokens = 1000\n");
    let project = sandbox.root.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    write_file(&project, "keep.txt", 12);
    for i in 0..12 {
        write_file(&project, &format!("big{i}.txt"), 110);
    }
    let server = model(|body, n| {
        let compacted = body["messages"][1]["content"]
            .as_str()
            .is_some_and(|s| s.starts_with("[The conversation before this point was compacted"));
        match n {
            _ if compacted => say("done"),
            0 => call(
                "f",
                "search_tools",
                &json!({"query": "write a plan document"}),
            ),
            1 => call(
                "w",
                "plan_write",
                &json!({"slug": "release", "content": "# Release plan\n1. tag v1.0"}),
            ),
            2 => call(
                "p",
                "planner",
                &json!({"action": "add", "content": "tag the release"}),
            ),
            3 => call("k", "read_file", &json!({"path": "keep.txt", "keep": true})),
            4 => call(
                "s",
                "search_tools",
                &json!({"query": "fetch nf-core test data"}),
            ),
            5 => call(
                "b",
                "run_command",
                &json!({"command": "sleep 60", "background": true}),
            ),
            n => call(
                &format!("r{n}"),
                "read_file",
                &json!({"path": format!("big{}.txt", n - 6)}),
            ),
        }
    });
    let output = {
        let mut command = sandbox.command("codaris");
        command.args([
            "run",
            "--json",
            "--approve",
            "session",
            "--provider",
            "openai",
            "--model",
            MODEL,
        ]);
        command.args(["--base-url", &format!("{}/v1", server.url()), "--cwd"]);
        command.arg(&project);
        command.arg("prepare the release");
        command.output().expect("run codaris")
    };
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let compaction = events
        .iter()
        .find(|e| e["type"] == "compaction")
        .unwrap_or_else(|| panic!("no compaction: {}", stdout(&output)));
    assert_eq!(compaction["trigger"], "auto");
    let bound = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "s")
        .and_then(|e| e["output"].as_str())
        .unwrap()
        .to_owned();
    assert!(bound.contains("fetch_test_data"), "{bound}");
    let requests = turn_requests(&server);
    let (_, after) = requests
        .iter()
        .find(|(_, body)| {
            body["messages"][1]["content"]
                .as_str()
                .is_some_and(|s| s.starts_with("[The conversation before this point was compacted"))
        })
        .expect("a request after the compaction");
    let opening = after["messages"][1]["content"].as_str().unwrap();
    let item = |title: &str, then: &str| {
        let at = opening
            .find(&format!("### {title}"))
            .unwrap_or_else(|| panic!("no `{title}` in {opening}"));
        assert!(
            opening[at..].contains(then),
            "`{title}` lacks `{then}`: {}",
            &opening[at..]
        );
    };
    item("The person's latest request", "prepare the release");
    item("Plan document `release`", "# Release plan\n1. tag v1.0");
    item("The planner's checklist", "tag the release");
    item("Open background tasks", "sleep 60");
    item("Kept result of `read_file`", "keep.txt line 12: ");
    item("Files read or edited most recently", "- `big");
    item("Tools still bound by your searches", "`fetch_test_data`");
    // The project instructions are in the system prompt of every request, compaction or not.
    assert!(after["messages"][0]["role"] == "system");
}

#[test]
fn compact_context_summarises_with_the_configured_model_it_names_and_refuses_an_unknown_one() {
    let sandbox = Sandbox::new();
    sandbox.write_config(
        "[[models]]\nname = \"small-summariser\"\n[[models]]\nname = \"other-model\"\n",
    );
    let project = sandbox.root.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    write_file(&project, "notes.txt", 20);
    let server = model(|_, n| match n {
        0 => call("read", "read_file", &json!({"path": "notes.txt"})),
        1 => call(
            "find",
            "search_tools",
            &json!({"query": "compact the context"}),
        ),
        2 => call("nope", "compact_context", &json!({"model": "llama"})),
        3 => call("fold", "compact_context", &json!({"model": "summariser"})),
        _ => say("done"),
    });
    let output = run(
        &sandbox,
        &project,
        &format!("{}/v1", server.url()),
        &["tidy up".to_owned()],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let result = |id: &str| {
        events
            .iter()
            .find(|e| e["type"] == "tool_result" && e["id"] == id)
            .unwrap_or_else(|| panic!("no result for {id}: {}", stdout(&output)))
            .clone()
    };
    let refused = result("nope");
    assert_eq!(refused["failed"], true);
    assert!(
        refused["output"]
            .as_str()
            .unwrap()
            .starts_with("compact_context: no configured model matches `llama`"),
        "{refused}"
    );
    assert!(
        result("fold")["output"]
            .as_str()
            .unwrap()
            .starts_with("compacted: ")
    );
    let summariser = summariser_requests(&server);
    assert_eq!(summariser.len(), 1);
    assert_eq!(summariser[0]["model"], "small-summariser");
    // The turn itself went on with the session's model.
    let (_, last) = turn_requests(&server).pop().unwrap();
    assert_eq!(last["model"], MODEL);
}
