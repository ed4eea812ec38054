//! The prompt cache across eviction batches on the Anthropic route, through `codaris run
//! --json` against a stand-in for the Messages API on loopback that caches as the API
//! documents: a `cache_control` breakpoint caches the prompt up to its block (tools, then system,
//! then messages), and a later request reads the longest cached prefix it starts with; the rest
//! up to its last breakpoint is written. Each request's usage is the stand-in's own count (bytes
//! over 3), so the test reads what a round after an eviction batch costs and what the rounds
//! after it read.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use codaris_test_support::fake_http::{FakeHttp, Reply, Seen};
use codaris_test_support::sandbox::{Sandbox, events, stderr, stdout};
use serde_json::{Value, json};

const READS_PER_TURN: usize = 5;
const TURNS: usize = 16;

/// One request's cache usage as the stand-in counted it, in tokens.
#[derive(Debug, Clone, Copy)]
struct Counted {
    read: usize,
    written: usize,
    input: usize,
}

/// The request as the cache sees it: its blocks in cache order, each with whether it carries
/// a breakpoint.
fn blocks(body: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut push = |block: &Value| {
        let marked = block.get("cache_control").is_some();
        let mut plain = block.clone();
        if let Some(fields) = plain.as_object_mut() {
            fields.remove("cache_control");
        }
        out.push((plain.to_string(), marked));
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push(tool);
    }
    for block in body["system"].as_array().into_iter().flatten() {
        push(block);
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        match &message["content"] {
            // A string is one text block, as the API reads it.
            Value::String(text) => {
                push(&json!({"type": "text", "text": text, "role": message["role"]}))
            }
            Value::Array(parts) => {
                for part in parts {
                    let mut part = part.clone();
                    part["role"] = message["role"].clone();
                    push(&part);
                }
            }
            _ => {}
        }
    }
    out
}

/// Anthropic-style prompt caching over `cached` (the prefixes written so far, as the joined
/// text of their blocks): reads the longest cached prefix, writes up to the last breakpoint.
fn count(body: &Value, cached: &mut HashSet<String>) -> Counted {
    let blocks = blocks(body);
    let tokens = |range: &[(String, bool)]| range.iter().map(|(b, _)| b.len()).sum::<usize>() / 3;
    let last_mark = blocks
        .iter()
        .rposition(|(_, marked)| *marked)
        .map_or(0, |at| at + 1);
    let mut prefix = String::new();
    let mut hit = 0;
    for (at, (block, _)) in blocks[..last_mark].iter().enumerate() {
        prefix.push_str(block);
        if cached.contains(&prefix) {
            hit = at + 1;
        }
    }
    let mut prefix = String::new();
    for (block, marked) in &blocks[..last_mark] {
        prefix.push_str(block);
        if *marked {
            cached.insert(prefix.clone());
        }
    }
    Counted {
        read: tokens(&blocks[..hit]),
        written: tokens(&blocks[hit..last_mark]),
        input: tokens(&blocks[last_mark..]),
    }
}

fn sse(events: &[Value]) -> Reply {
    let body: String = events
        .iter()
        .map(|e| {
            format!(
                "event: {}\ndata: {e}\n\n",
                e["type"].as_str().unwrap_or_default()
            )
        })
        .collect();
    Reply::new(200, "text/event-stream", body)
}

fn answer(counted: Counted, block: Value, delta: Option<Value>, stop: &str) -> Reply {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant",
            "content": [], "model": "claude-stand-in", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": counted.input, "cache_creation_input_tokens": counted.written,
                      "cache_read_input_tokens": counted.read, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
    ];
    events.extend(delta.map(|d| json!({"type": "content_block_delta", "index": 0, "delta": d})));
    events.push(json!({"type": "content_block_stop", "index": 0}));
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                       "usage": {"output_tokens": 5}}),
    );
    events.push(json!({"type": "message_stop"}));
    sse(&events)
}

#[test]
fn after_an_eviction_batch_one_round_writes_the_cache_and_the_next_rounds_read_it() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[anthropic]\ncontext_window = 40000\nmax_output_tokens = 2000\n");
    let project = sandbox.root.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    for i in 0..TURNS * READS_PER_TURN {
        let text: String = (1..=110)
            .map(|n| format!("f{i}.txt line {n}: {}\n", "abcdefghij".repeat(8)))
            .collect();
        std::fs::write(project.join(format!("f{i}.txt")), text).unwrap();
    }
    let counted: Arc<Mutex<Vec<Counted>>> = Arc::default();
    let seen = counted.clone();
    let cached = Mutex::new(HashSet::new());
    let state = Mutex::new((0usize, 0usize)); // reads issued, reads this turn
    let server = FakeHttp::start(move |request: &Seen| {
        if request.path() != "/v1/messages" {
            return Reply::not_implemented("fake Anthropic API", request);
        }
        let body = request.json().unwrap_or(Value::Null);
        let usage = count(&body, &mut cached.lock().unwrap());
        seen.lock().unwrap().push(usage);
        let last_is_person = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|m| {
                m["role"] == "user"
                    && m["content"]
                        .as_array()
                        .is_none_or(|parts| parts.iter().all(|p| p["type"] != "tool_result"))
            });
        let mut state = state.lock().unwrap();
        if last_is_person {
            state.1 = 0;
        }
        if state.1 == READS_PER_TURN {
            return answer(
                usage,
                json!({"type": "text", "text": ""}),
                Some(json!({"type": "text_delta", "text": "read them"})),
                "end_turn",
            );
        }
        let file = state.0;
        state.0 += 1;
        state.1 += 1;
        answer(
            usage,
            json!({"type": "tool_use", "id": format!("toolu_{file}"), "name": "read_file", "input": {}}),
            Some(
                json!({"type": "input_json_delta", "partial_json": json!({"path": format!("f{file}.txt")}).to_string()}),
            ),
            "tool_use",
        )
    });
    let prompts: Vec<String> = (0..TURNS)
        .map(|t| format!("read the next files ({t})"))
        .collect();
    let output = sandbox
        .command("codaris")
        .args([
            "run",
            "--json",
            "--provider",
            "anthropic",
            "--model",
            "claude-stand-in",
            "--base-url",
        ])
        .arg(server.url())
        .arg("--cwd")
        .arg(&project)
        .args(&prompts)
        .output()
        .expect("run codaris");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let batches: Vec<usize> = events
        .iter()
        .filter(|e| e["type"] == "eviction")
        .map(|e| {
            e["turn"].as_u64().unwrap() as usize * (READS_PER_TURN + 1)
                + e["round"].as_u64().unwrap() as usize
        })
        .collect();
    assert!(batches.len() >= 3, "{}", stdout(&output));
    assert!(
        events.iter().all(|e| e["type"] != "compaction"),
        "no compaction in this test"
    );
    let counted = counted.lock().unwrap().clone();
    assert_eq!(counted.len(), TURNS * (READS_PER_TURN + 1));
    let mut reads_after_batches = 0;
    for (at, pair) in counted.windows(2).enumerate() {
        let (before, usage) = (pair[0], pair[1]);
        let round = at + 1;
        let sent_before = before.read + before.written;
        if batches.contains(&round) {
            // The batch changed the prefix from the first evicted result on: this round writes
            // what follows it, once.
            assert!(
                usage.read < sent_before,
                "round {round} after a batch: {usage:?}"
            );
            assert!(usage.written > 0, "round {round} after a batch: {usage:?}");
        } else {
            // Between batches a round reads from the cache everything the round before sent,
            // and writes only what it adds.
            assert!(
                usage.read >= sent_before,
                "round {round} read {} of the {sent_before} tokens the round before sent: {usage:?}",
                usage.read
            );
            if batches.contains(&at) {
                reads_after_batches += 1;
            }
        }
    }
    // The cache recovered right after each batch.
    assert_eq!(reads_after_batches, batches.len());
    // Over the session: every round writes the 3,700-token result it adds, so the share read
    // from the cache is bounded well below 100 % by the workload itself.
    let read: usize = counted.iter().map(|u| u.read).sum();
    let whole: usize = counted.iter().map(|u| u.read + u.written + u.input).sum();
    eprintln!(
        "{} rounds, {} eviction batches: {}% of the prompt read from the cache",
        counted.len(),
        batches.len(),
        read * 100 / whole
    );
    assert!(read * 100 >= whole * 55, "read {read} of {whole}");
}
