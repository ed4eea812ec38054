//! `switch_model` through the real binaries: the model finds it by search (it is not always
//! on), a switch for the turn sends this turn's next request to the new model and the next
//! turn back to the session's, a switch for the session lasts (its record keeps it, so a
//! session reopened from it asks the new model with its reasoning level) and shows in
//! `codaris sessions`, and a model the configuration cannot reach is refused in one line that
//! lists the choices.
//!
//! The model is a stand-in for OpenAI's Chat Completions on loopback that records each
//! request's `model` and `reasoning_effort`, and answers by where the turn is: its first
//! request searches for the tool, its second calls it with the arguments the prompt carries
//! after `switch `, a third reads the file named after ` then read ` when there is one, any
//! later one (or a prompt without `switch `) answers in text.

use codaris_test_support::fake_http::{FakeHttp, Reply, Seen};
use codaris_test_support::sandbox::{Sandbox, events, json, stderr};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const CONFIG: &str =
    "[[models]]\nname = \"model-alpha\"\n\n[[models]]\nname = \"vendor/model-beta\"\n";

/// One streamed Chat Completions answer: `delta` in a first chunk, then the finish reason.
fn streamed(delta: Value, finish: &str) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "1", "object": "chat.completion.chunk", "model": "m",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    Reply::new(
        200,
        "text/event-stream",
        format!(
            "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
            chunk(delta, Value::Null),
            chunk(json!({}), json!(finish))
        ),
    )
}

fn call(name: &str, args: &Value) -> Reply {
    streamed(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": format!("call_{name}"),
            "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}),
        "tool_calls",
    )
}

/// The stand-in's answer to one request, from the turn's messages alone.
fn answer(body: &Value) -> Reply {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last_user = messages.iter().rposition(|m| m["role"] == "user");
    let prompt = last_user
        .and_then(|i| messages[i]["content"].as_str())
        .unwrap_or_default();
    let answered = last_user.map_or(0, |i| {
        messages[i..]
            .iter()
            .filter(|m| m["role"] == "assistant")
            .count()
    });
    let (prompt, read) = match prompt.split_once(" then read ") {
        Some((prompt, path)) => (prompt, Some(path)),
        None => (prompt, None),
    };
    let switch = prompt
        .strip_prefix("switch ")
        .and_then(|args| serde_json::from_str::<Value>(args).ok());
    match (switch, answered, read) {
        (Some(_), 0, _) => call("search_tools", &json!({"query": "switch to another model"})),
        (Some(args), 1, _) => call("switch_model", &args),
        (Some(_), 2, Some(path)) => call("read_file", &json!({"path": path})),
        _ => streamed(json!({"role": "assistant", "content": "done"}), "stop"),
    }
}

fn fake_openai() -> FakeHttp {
    FakeHttp::start(|seen: &Seen| match (seen.method.as_str(), seen.path()) {
        ("POST", "/v1/chat/completions") => answer(&seen.json().unwrap_or_default()),
        _ => Reply::not_implemented("fake OpenAI API", seen),
    })
}

/// `(model, reasoning_effort)` of each chat request the stand-in received, in order.
fn asked(server: &FakeHttp) -> Vec<(String, Option<String>)> {
    server
        .seen()
        .iter()
        .filter(|seen| seen.path() == "/v1/chat/completions")
        .filter_map(Seen::json)
        .map(|body| {
            (
                body["model"].as_str().unwrap_or_default().to_owned(),
                body["reasoning_effort"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// `codaris run --json` against the stand-in, as model `model-alpha`, of `prompts`
/// (`--session ID` among `flags` continues a session).
fn run(sandbox: &Sandbox, server: &FakeHttp, flags: &[&str], prompts: &[&str]) -> Vec<Value> {
    let base = format!("{}/v1", server.url());
    let output = sandbox
        .command("codaris")
        .envs([
            ("CODARIS_PROVIDER", "openai"),
            ("CODARIS_MODEL", "model-alpha"),
            ("OPENAI_BASE_URL", base.as_str()),
        ])
        .args(["run", "--json"])
        .args(flags)
        .args(prompts)
        .output()
        .expect("run codaris");
    assert!(output.status.success(), "{}", stderr(&output));
    events(&output)
}

fn results_of<'a>(events: &'a [Value], tool: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result" && e["tool"] == tool)
        .collect()
}

fn alpha() -> (String, Option<String>) {
    ("model-alpha".to_owned(), None)
}

fn beta(reasoning: Option<&str>) -> (String, Option<String>) {
    ("vendor/model-beta".to_owned(), reasoning.map(str::to_owned))
}

#[test]
fn a_switch_for_the_turn_asks_the_new_model_until_the_turn_ends() {
    let sandbox = Sandbox::new();
    sandbox.write_config(CONFIG);
    let _daemon = sandbox.start_daemon(&[]);
    let server = fake_openai();
    let events = run(
        &sandbox,
        &server,
        &[],
        &[r#"switch {"model": "beta", "scope": "turn"}"#, "and now?"],
    );
    // Found by search: the first surface did not hold it.
    let binding = events.iter().find(|e| e["type"] == "binding").unwrap();
    assert!(
        !binding["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("switch_model")),
        "{binding}"
    );
    let switched = results_of(&events, "switch_model");
    assert_eq!(switched.len(), 1, "{events:?}");
    assert_eq!(switched[0]["decision"]["verdict"], "allow");
    assert_eq!(
        switched[0]["output"],
        "switch_model: switched to `vendor/model-beta` from the next request, to the end of this turn; the next turn asks `model-alpha` again"
    );
    // Search, switch, the answer after the switch; then the next turn on the session's model.
    assert_eq!(asked(&server), [alpha(), alpha(), beta(None), alpha()]);
    // The system prompt tells the model when it may switch.
    let first = server.seen()[0].json().unwrap();
    assert!(
        first["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("(switch_model) only when the person asks for it"),
        "{first}"
    );
}

#[test]
fn a_switch_for_the_session_lasts_shows_in_sessions_and_survives_reopening() {
    let sandbox = Sandbox::new();
    sandbox.write_config(CONFIG);
    let _daemon = sandbox.start_daemon(&[]);
    let server = fake_openai();
    let events = run(
        &sandbox,
        &server,
        &[],
        &[
            r#"switch {"model": "model-beta", "reasoning": "high"}"#,
            "and now?",
        ],
    );
    let id = events.iter().find(|e| e["type"] == "session").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let switched = results_of(&events, "switch_model");
    assert_eq!(
        switched[0]["output"],
        "switch_model: switched to `vendor/model-beta` (reasoning high) from the next request, for the rest of the session"
    );
    assert_eq!(
        asked(&server),
        [alpha(), alpha(), beta(Some("high")), beta(Some("high"))]
    );
    let listed = json(&sandbox.cli(&["sessions", "--json"]));
    let session = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id.as_str())
        .unwrap();
    assert_eq!(session["model"], "vendor/model-beta", "{session}");
    assert_eq!(session["reasoning"], "high", "{session}");

    // `run` ended the session: reopened, it is built again from its record alone.
    run(&sandbox, &server, &["--session", &id], &["once more"]);
    assert_eq!(asked(&server).last(), Some(&beta(Some("high"))));
}

#[test]
fn a_model_the_configuration_cannot_reach_is_refused_in_one_line_naming_the_choices() {
    let sandbox = Sandbox::new();
    sandbox.write_config(CONFIG);
    let _daemon = sandbox.start_daemon(&[]);
    let found = json(&sandbox.cli(&["tools", "search", "--json", "switch to another model"]));
    let top: Vec<&Value> = found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .take(3)
        .map(|hit| &hit["name"])
        .collect();
    assert!(top.contains(&&json!("switch_model")), "{found}");

    let server = fake_openai();
    let events = run(
        &sandbox,
        &server,
        &[],
        &[r#"switch {"model": "llama"}"#, "and now?"],
    );
    let refused = results_of(&events, "switch_model");
    assert_eq!(refused[0]["failed"], true, "{}", refused[0]);
    assert_eq!(
        refused[0]["output"],
        "switch_model: no configured model matches `llama`; configured: `model-alpha`, `vendor/model-beta`"
    );
    // Nothing changed: every request, the next turn's too, asks the session's model.
    assert!(
        asked(&server).iter().all(|a| *a == alpha()),
        "{:?}",
        asked(&server)
    );
}

/// The scripted provider plays its script whatever the model is called and has no reasoning
/// setting: a level alone is refused saying so, a model is named in the session's record.
#[test]
fn the_scripted_provider_says_what_it_cannot_switch() {
    let sandbox = Sandbox::new();
    sandbox.write_config(CONFIG);
    let _daemon = sandbox.start_daemon(&[]);
    let script = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "search_tools", "args": {"query": "switch to another model"}}]},
        {"tool_calls": [{"name": "switch_model", "args": {"reasoning": "high"}}]},
        {"tool_calls": [{"name": "switch_model", "args": {"model": "alpha", "reasoning": "low"}}]},
        {"text": "switched"}
    ]}]});
    let output = sandbox.run_script(
        sandbox.root.path(),
        &script,
        &[],
        "use alpha, and think hard",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let results = results_of(&events, "switch_model");
    assert_eq!(results.len(), 2, "{events:?}");
    assert_eq!(results[0]["failed"], true);
    assert_eq!(
        results[0]["output"],
        "switch_model: the `scripted` provider has no reasoning setting; nothing changed"
    );
    assert_eq!(results[1]["failed"], false);
    assert_eq!(
        results[1]["output"],
        "switch_model: switched to `model-alpha` from the next request, for the rest of the session; the reasoning level was not changed: the `scripted` provider has no reasoning setting; the scripted provider plays its script whatever the model is called"
    );
    let listed = json(&sandbox.cli(&["sessions", "--json"]));
    assert_eq!(listed[0]["model"], "model-alpha", "{listed}");
    assert_eq!(listed[0]["reasoning"], Value::Null, "{listed}");
}

/// A 1x1 PNG, 70 bytes.
const PNG: [u8; 70] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64, 0x60, 0xf8, 0x5f,
    0x0f, 0x00, 0x02, 0x87, 0x01, 0x80, 0xeb, 0x47, 0xba, 0x92, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// The session's model takes pictures; the one this turn switched to does not, so a picture
/// read after the switch is refused it, and the next turn's model is sent it again.
#[test]
fn a_turn_switched_to_a_model_without_pictures_is_not_sent_them() {
    let sandbox = Sandbox::new();
    sandbox.write_config(
        "[[models]]\nname = \"model-alpha\"\nmultimodal = true\n\n[[models]]\nname = \"vendor/model-beta\"\n",
    );
    let _daemon = sandbox.start_daemon(&[]);
    // In a project of its own: the sandbox's root holds the home directory, which is no root.
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let png = proj.join("dot.png");
    std::fs::write(&png, PNG).unwrap();
    let server = fake_openai();
    let switch = format!(
        r#"switch {{"model": "beta", "scope": "turn"}} then read {}"#,
        png.display()
    );
    let events = run(
        &sandbox,
        &server,
        &["--cwd", proj.to_str().unwrap()],
        &[&switch, "and now?"],
    );
    let read = results_of(&events, "read_file");
    assert_eq!(read.len(), 1, "{events:?}");
    assert_eq!(read[0]["failed"], true, "{}", read[0]);
    assert!(
        read[0]["output"]
            .as_str()
            .unwrap()
            .contains("the model `vendor/model-beta` does not take pictures"),
        "{}",
        read[0]
    );
    let bodies: Vec<String> = server
        .seen()
        .iter()
        .filter(|seen| seen.path() == "/v1/chat/completions")
        .filter_map(Seen::json)
        .map(|body| body.to_string())
        .collect();
    assert!(
        bodies.iter().all(|b| !b.contains("image_url")),
        "{bodies:?}"
    );
}
