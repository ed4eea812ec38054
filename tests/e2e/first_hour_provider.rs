//! The first hour with a local model server, as issue 46 met it: every request carries an output
//! cap (`max_tokens`, `[openai] max_output_tokens`), an answer cut at it ends the turn with
//! `max_tokens` and says so plainly, and `codaris login` sets up a keyless server on this machine
//! in one step (flags alone, or questions at a terminal) while a remote one still needs a key.
//!
//! The server is a stand-in for an OpenAI-compatible one (llama.cpp's `llama-server`) on
//! loopback: `GET /v1/models` and streamed `POST /v1/chat/completions`, no key asked.

use std::io::Write;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use codaris_test_support::fake_http::{FakeHttp, Reply, Seen};
use codaris_test_support::pty::{Pty, screen_of};
use codaris_test_support::sandbox::{Sandbox, events, stderr, stdout};
use serde_json::{Value, json};

const MODEL: &str = "local-model";

/// The partial answer the stand-in streams before its cap cuts it.
const PARTIAL: &[&str] = &["Hello", " there", ", friend", " of", " mine"];

/// One streamed answer: `pieces` as content deltas, then `finish`.
fn completion(pieces: &[&str], finish: &str) -> String {
    let chunk = |delta: Value, finish: Value| {
        let chunk = json!({"id": "1", "object": "chat.completion.chunk", "model": MODEL,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let mut body: String = pieces
        .iter()
        .map(|piece| chunk(json!({"content": piece}), Value::Null))
        .collect();
    body.push_str(&chunk(json!({}), json!(finish)));
    body.push_str("data: [DONE]\n\n");
    body
}

/// A keyless local server listing two models, whose answers stop at `finish`.
fn local_server(finish: &'static str) -> FakeHttp {
    FakeHttp::start(
        move |seen: &Seen| match (seen.method.as_str(), seen.path()) {
            ("GET", "/v1/models") => Reply::json(
                200,
                &json!({"object": "list", "data": [
                    {"id": "other-model", "object": "model"},
                    {"id": MODEL, "object": "model"}
                ]}),
            ),
            ("POST", "/v1/chat/completions") => {
                Reply::new(200, "text/event-stream", completion(PARTIAL, finish))
            }
            _ => Reply::not_implemented("local model server", seen),
        },
    )
}

/// The chat requests the server received.
fn chat_requests(server: &FakeHttp) -> Vec<Seen> {
    server
        .seen()
        .into_iter()
        .filter(|seen| seen.path() == "/v1/chat/completions")
        .collect()
}

/// `codaris ARGS` with the provider variables of a shell pointed at `server`, no key.
fn run_against(sandbox: &Sandbox, server: &FakeHttp, args: &[&str]) -> std::process::Output {
    let base = format!("{}/v1", server.url());
    sandbox
        .command("codaris")
        .envs([
            ("CODARIS_PROVIDER", "openai"),
            ("CODARIS_MODEL", MODEL),
            ("OPENAI_BASE_URL", base.as_str()),
        ])
        .args(args)
        .output()
        .expect("run codaris")
}

#[test]
fn every_request_carries_the_configured_cap_and_an_answer_cut_there_says_so() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[openai]\nmax_output_tokens = 300\n");
    let server = local_server("length");
    let _daemon = sandbox.start_daemon(&[]);

    let output = run_against(
        &sandbox,
        &server,
        &["run", "--json", "Say hello in five words."],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = chat_requests(&server);
    assert_eq!(
        requests.len(),
        1,
        "one round: a capped answer ends the turn"
    );
    assert_eq!(requests[0].json().unwrap()["max_tokens"], json!(300));
    let events = events(&output);
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(text, PARTIAL.concat(), "the partial answer is shown whole");
    let ended = events.last().unwrap();
    assert_eq!(ended["type"], "turn_ended");
    assert_eq!(ended["reason"], "max_tokens");
    assert_eq!(
        ended["error"],
        "the model hit the output cap of 300 tokens; its partial answer is kept; raise `openai.max_output_tokens` for longer answers"
    );

    // For people: the partial text on standard output, the end and its reason on one line
    // of standard error.
    let output = run_against(&sandbox, &server, &["run", "Say hello in five words."]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim_end(), PARTIAL.concat());
    let shown = stderr(&output);
    assert!(
        shown.contains("ended: max_tokens (the model hit the output cap of 300 tokens;"),
        "{shown}"
    );
}

#[test]
fn without_configuration_the_cap_is_the_default_and_a_bad_one_stops_the_daemon() {
    let sandbox = Sandbox::new();
    let server = local_server("stop");
    let daemon = sandbox.start_daemon(&[]);
    let output = run_against(&sandbox, &server, &["run", "--json", "hello"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(events(&output).last().unwrap()["reason"], "end_turn");
    let requests = chat_requests(&server);
    assert_eq!(requests[0].json().unwrap()["max_tokens"], json!(8192));
    drop(daemon);
    sandbox.stop_daemon();

    for bad in ["0", "-1", "\"lots\""] {
        sandbox.write_config(&format!("[openai]\nmax_output_tokens = {bad}\n"));
        let refused = sandbox.command("codarisd").output().expect("run codarisd");
        assert!(!refused.status.success(), "{bad}");
        let said = stderr(&refused);
        assert!(said.contains("max_output_tokens"), "{bad}: {said}");
        assert_eq!(said.trim_end().lines().count(), 1, "{bad}: {said}");
    }
}

/// `codaris login ARGS` with standard input closed (`</dev/null`), as a script runs it.
fn login_without_input(sandbox: &Sandbox, args: &[&str]) -> std::process::Output {
    sandbox
        .command("codaris")
        .arg("login")
        .args(args)
        .output()
        .expect("run codaris login")
}

#[test]
fn login_to_a_local_server_with_no_key_is_one_step_and_run_reaches_it_without_one() {
    let sandbox = Sandbox::new();
    let server = local_server("stop");
    let _daemon = sandbox.start_daemon(&[]);
    let base = format!("{}/v1", server.url());
    let login_args = [
        "--provider",
        "openai",
        "--model",
        MODEL,
        "--base-url",
        &base,
    ];

    // A key stored earlier (for this provider's public API, say) is not sent to the local
    // server: a login with none removes it.
    let mut child = sandbox
        .command("codaris")
        .arg("login")
        .args(login_args)
        .arg("--key-stdin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "sk-earlier-0123456789").unwrap();
    let earlier = child.wait_with_output().unwrap();
    assert!(earlier.status.success(), "{}", stderr(&earlier));

    let output = login_without_input(&sandbox, &login_args);
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stdout(&output);
    assert!(
        said.contains(&format!(
            "logged in: new sessions use openai, model {MODEL}, at {base}"
        )),
        "{said}"
    );
    assert!(said.contains("no key"), "{said}");
    let stored = std::fs::read_to_string(sandbox.state_dir().join("credentials.toml")).unwrap();
    assert!(!stored.contains("api_key"), "{stored}");

    // No provider variables in this shell: the login is what the run uses.
    let run = sandbox.cli(&["run", "--json", "hello"]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(events(&run).last().unwrap()["reason"], "end_turn");
    let requests = chat_requests(&server);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].json().unwrap()["model"], MODEL);
    assert_eq!(requests[0].header("authorization"), None);
}

#[test]
fn a_remote_base_url_with_no_key_is_still_refused_and_nothing_is_stored() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.start_daemon(&[]);
    for base in [
        "https://api.openai.com/v1",
        "http://127.0.0.1.evil.example/v1",
        "http://localhost@evil.example/v1",
    ] {
        let output = login_without_input(
            &sandbox,
            &["--provider", "openai", "--model", MODEL, "--base-url", base],
        );
        assert_eq!(output.status.code(), Some(1), "{base}: {}", stderr(&output));
        let said = stderr(&output);
        assert!(
            said.contains("invalid key: none was given; pass --keep-key to keep the stored one"),
            "{said}"
        );
        assert!(said.contains(&format!("`{base}` is not one")), "{said}");
        assert_eq!(said.trim_end().lines().count(), 1, "{said}");
    }
    // No flag: the public endpoint is the base URL, and it needs a key.
    let output = login_without_input(&sandbox, &["--provider", "openai", "--model", MODEL]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(!sandbox.state_dir().join("credentials.toml").exists());
}

fn text(screen: &Mutex<Vec<u8>>) -> String {
    String::from_utf8_lossy(&screen.lock().unwrap()).into_owned()
}

fn wait_for_screen(screen: &Mutex<Vec<u8>>, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let shown = text(screen);
        if shown.contains(needle) {
            return shown;
        }
        assert!(Instant::now() < deadline, "no {needle:?} in {shown:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn login_at_a_terminal_asks_for_the_base_url_and_the_model_from_the_server_s_list_then_checks() {
    let sandbox = Sandbox::new();
    let server = local_server("stop");
    let _daemon = sandbox.start_daemon(&[]);
    let base = format!("{}/v1", server.url());
    let pty = Pty::open();
    let mut child = pty
        .attach(sandbox.command("codaris").env("TERM", "xterm").arg("login"))
        .spawn()
        .unwrap();
    drop(pty.slave);
    let mut keys = std::fs::File::from(pty.master.try_clone().unwrap());
    let screen = screen_of(pty.master);
    wait_for_screen(&screen, "provider (anthropic or openai): ");
    keys.write_all(b"openai\r").unwrap();
    // The default shown is the public endpoint: nothing is set up yet.
    wait_for_screen(&screen, "base URL [https://api.openai.com/v1]: ");
    keys.write_all(format!("{base}\r").as_bytes()).unwrap();
    wait_for_screen(&screen, "empty for none, the server is on this machine");
    keys.write_all(b"\r").unwrap();
    let shown = wait_for_screen(&screen, "model (a number or a name) [other-model]: ");
    assert!(shown.contains(&format!("models at {base}:")), "{shown}");
    assert!(shown.contains(&format!(" 2) {MODEL}")), "{shown}");
    keys.write_all(b"2\r").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still running: {}",
            text(&screen)
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(200));
    let shown = text(&screen);
    assert!(status.success(), "{status}: {shown}");
    assert!(
        shown.contains(&format!(
            "logged in: new sessions use openai, model {MODEL}, at {base}"
        )),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("check: ok    openai ({MODEL}) at {base}")),
        "{shown}"
    );
    // The model list and the check were asked without a key.
    let listed: Vec<Seen> = server
        .seen()
        .into_iter()
        .filter(|seen| seen.path() == "/v1/models")
        .collect();
    assert_eq!(listed.len(), 2, "one list to choose from, one check");
    assert!(
        listed
            .iter()
            .all(|seen| seen.header("authorization").is_none())
    );
}
