//! Model setup as a new user meets it: the CLI's environment reaching a daemon that is already
//! running, no test double when nothing is set up, `codaris login` taking effect without a
//! restart (the key in a 0600 file and nowhere else), `codaris doctor`, `codaris config`, and a
//! project's `AGENTS.md` reaching the model's system prompt.
//!
//! The model is a stand-in for OpenAI's API on loopback: `GET /v1/models` and streamed
//! `POST /v1/chat/completions` (`chat.completion.chunk` events, as documented), answering only
//! the key `sk-good`; anything else it does not implement is a 404 that says so.

use std::io::Write;
use std::process::{Output, Stdio};

use codaris_test_support::fake_http::{FakeHttp, Reply, Seen};
use codaris_test_support::sandbox::{Sandbox, events, stderr, stdout};
use serde_json::{Value, json};

const GOOD_KEY: &str = "sk-good-0123456789";
const MODEL: &str = "local-model";

/// One streamed Chat Completions answer of plain text.
fn completion(text: &str) -> String {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "1", "object": "chat.completion.chunk", "model": MODEL,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        chunk(json!({"role": "assistant", "content": text}), Value::Null),
        chunk(json!({}), json!("stop"))
    )
}

fn fake_openai() -> FakeHttp {
    FakeHttp::start(|seen: &Seen| {
        let authorized = seen.header("authorization") == Some(&format!("Bearer {GOOD_KEY}"));
        let refused = Reply::json(
            401,
            &json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
        );
        match (seen.method.as_str(), seen.path()) {
            (_, "/v1/models" | "/v1/chat/completions") if !authorized => refused,
            ("GET", "/v1/models") => Reply::json(
                200,
                &json!({"object": "list", "data": [{"id": MODEL, "object": "model"}]}),
            ),
            ("POST", "/v1/chat/completions") => Reply::new(
                200,
                "text/event-stream",
                completion("hello from the stand-in"),
            ),
            _ => Reply::not_implemented("fake OpenAI API", seen),
        }
    })
}

/// The chat requests the stand-in received, as JSON.
fn chat_bodies(server: &FakeHttp) -> Vec<Value> {
    server
        .seen()
        .iter()
        .filter(|seen| seen.path() == "/v1/chat/completions")
        .filter_map(Seen::json)
        .collect()
}

fn cli_with(sandbox: &Sandbox, env: &[(&str, &str)], args: &[&str]) -> Output {
    sandbox
        .command("codaris")
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("run codaris")
}

/// `codaris login ARGS --key-stdin` with `key` on standard input (no key: `--keep-key` is
/// among `args`).
fn login(sandbox: &Sandbox, args: &[&str], key: &str) -> Output {
    let key_flag = if key.is_empty() {
        None
    } else {
        Some("--key-stdin")
    };
    let mut child = sandbox
        .command("codaris")
        .arg("login")
        .args(args)
        .args(key_flag)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn codaris login");
    writeln!(child.stdin.take().expect("stdin"), "{key}").expect("send the key");
    child.wait_with_output().expect("codaris login")
}

fn json_of(output: &Output) -> Value {
    serde_json::from_str(&stdout(output))
        .unwrap_or_else(|err| panic!("not one JSON document ({err}): {}", stdout(output)))
}

#[test]
fn the_cli_s_model_and_base_url_reach_a_running_daemon_and_agents_md_its_prompt() {
    let sandbox = Sandbox::new();
    let server = fake_openai();
    // The daemon holds the key; it never saw CODARIS_MODEL or OPENAI_BASE_URL.
    let _daemon =
        sandbox.start_daemon_in(sandbox.root.path(), &[("OPENAI_API_KEY", GOOD_KEY)], &[]);
    let project = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("AGENTS.md"),
        "Run the tests with `cargo nextest run`; never push to main.\n",
    )
    .unwrap();
    let base = format!("{}/v1", server.url());
    let output = cli_with(
        &sandbox,
        &[
            ("CODARIS_PROVIDER", "openai"),
            ("CODARIS_MODEL", MODEL),
            ("OPENAI_BASE_URL", &base),
        ],
        &["run", "--json", "--cwd", project.to_str().unwrap(), "hello"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("read AGENTS.md (60 B)"),
        "{}",
        stderr(&output)
    );
    let text: String = events(&output)
        .iter()
        .filter(|e| e["type"] == "text")
        .filter_map(|e| e["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "hello from the stand-in");
    let bodies = chat_bodies(&server);
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert_eq!(bodies[0]["model"], MODEL);
    let system = bodies[0].to_string();
    assert!(system.contains("never push to main"), "{system}");
    assert!(system.contains("cannot grant permissions"), "{system}");

    // A session's base URL is checked where it is given.
    let bad = cli_with(
        &sandbox,
        &[("CODARIS_MODEL", MODEL)],
        &["run", "--provider", "openai", "--base-url", "ftp://x", "hi"],
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("base_url"), "{}", stderr(&bad));
}

#[test]
fn nothing_set_up_or_no_key_fails_at_once_naming_the_fix() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.start_daemon(&[]);
    let unset = sandbox.cli(&["run", "hello"]);
    assert_eq!(unset.status.code(), Some(1));
    let message = stderr(&unset);
    assert!(message.contains("codaris login"), "{message}");
    assert!(!message.contains("script file"), "{message}");
    assert_eq!(message.trim_end().lines().count(), 1, "{message}");

    for (provider, var) in [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
    ] {
        let keyless = sandbox.cli(&["run", "--provider", provider, "--model", "m", "hello"]);
        assert_eq!(keyless.status.code(), Some(1));
        let message = stderr(&keyless);
        assert!(message.contains(var), "{message}");
        assert!(message.contains("codaris login"), "{message}");
    }
    let status = json_of(&sandbox.cli(&["status", "--json"]));
    assert_eq!(status["provider"], Value::Null);
    assert_eq!(status["allowed_dirs"], json!([]));
    assert_eq!(status["http_allowlist"], json!([]));
}

#[test]
fn a_login_counts_from_the_next_session_and_the_key_stays_in_its_0600_file() {
    let sandbox = Sandbox::new();
    let server = fake_openai();
    let _daemon = sandbox.start_daemon(&[]);
    let base = format!("{}/v1", server.url());
    let output = login(
        &sandbox,
        &[
            "--provider",
            "openai",
            "--model",
            MODEL,
            "--base-url",
            &base,
        ],
        GOOD_KEY,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let key_file = sandbox.state_dir().join("credentials.toml");
    assert!(
        stdout(&output).contains(&key_file.display().to_string()),
        "{}",
        stdout(&output)
    );
    assert_eq!(Sandbox::mode(&key_file), 0o600);
    assert!(
        std::fs::read_to_string(&key_file)
            .unwrap()
            .contains(GOOD_KEY)
    );

    // No restart: the next session, naming nothing, is the stored provider with the stored key.
    let run = sandbox.cli(&["run", "--json", "hello"]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(chat_bodies(&server).len(), 1);
    let status = json_of(&sandbox.cli(&["status", "--json"]));
    assert_eq!(status["provider"], "openai");
    assert_eq!(status["model"], MODEL);

    // This shell's OPENAI_BASE_URL goes with the daemon's provider even when no provider is
    // named here: the session asks the other server, with the stored key.
    let other = fake_openai();
    let other_base = format!("{}/v1", other.url());
    let elsewhere = cli_with(
        &sandbox,
        &[("OPENAI_BASE_URL", &other_base)],
        &["run", "--json", "hello"],
    );
    assert!(elsewhere.status.success(), "{}", stderr(&elsewhere));
    assert_eq!(chat_bodies(&other).len(), 1);
    assert_eq!(chat_bodies(&server).len(), 1);

    let show = sandbox.cli(&["config", "show", "--json"]);
    assert!(show.status.success(), "{}", stderr(&show));
    let shown = json_of(&show);
    let entry = |key: &str| {
        shown["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == key)
            .cloned()
            .unwrap_or_else(|| panic!("no {key} in {shown}"))
    };
    assert_eq!(
        entry("openai.api_key"),
        json!({"key": "openai.api_key", "value": "<redacted>", "source": "login", "line": null})
    );
    assert_eq!(entry("openai.base_url")["value"], base);
    assert_eq!(entry("provider.name")["source"], "login");

    // The key is in no output and no log.
    let log = std::fs::read_to_string(sandbox.state_dir().join("codarisd.log")).unwrap();
    for (what, text) in [
        (
            "login's output",
            format!("{}{}", stdout(&output), stderr(&output)),
        ),
        ("run's output", format!("{}{}", stdout(&run), stderr(&run))),
        ("config show", stdout(&show)),
        ("the log", log),
    ] {
        assert!(!text.contains(GOOD_KEY), "the key is in {what}: {text}");
    }
}

#[test]
fn doctor_names_a_missing_key_a_refused_key_an_unreachable_url_and_passes_a_good_key() {
    let sandbox = Sandbox::new();
    let server = fake_openai();
    let _daemon = sandbox.start_daemon(&[]);
    let doctor = || sandbox.cli(&["doctor", "--json"]);

    let none = doctor();
    assert_eq!(none.status.code(), Some(1));
    assert!(stdout(&none).contains("codaris login"), "{}", stdout(&none));

    let stored = login(
        &sandbox,
        &[
            "--provider",
            "anthropic",
            "--model",
            "claude-x",
            "--keep-key",
        ],
        "",
    );
    assert!(stored.status.success(), "{}", stderr(&stored));
    let missing = doctor();
    assert_eq!(missing.status.code(), Some(1));
    let check = &json_of(&missing)["checks"][0];
    assert_eq!(check["provider"], "anthropic");
    assert_eq!(check["ok"], false);
    assert!(
        check["problem"]
            .as_str()
            .unwrap()
            .contains("set ANTHROPIC_API_KEY"),
        "{check}"
    );

    let base = format!("{}/v1", server.url());
    let bad = login(
        &sandbox,
        &[
            "--provider",
            "openai",
            "--model",
            MODEL,
            "--base-url",
            &base,
        ],
        "sk-bad",
    );
    assert!(bad.status.success(), "{}", stderr(&bad));
    let refused = doctor();
    assert_eq!(refused.status.code(), Some(1));
    let check = &json_of(&refused)["checks"][0];
    assert_eq!(check["provider"], "openai");
    assert!(
        check["problem"]
            .as_str()
            .unwrap()
            .contains("the key was refused"),
        "{check}"
    );
    assert!(!stdout(&refused).contains("sk-bad"));

    // A port nothing listens on: bound, then let go.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let moved = login(
        &sandbox,
        &["--provider", "openai", "--base-url", &gone],
        GOOD_KEY,
    );
    assert!(moved.status.success(), "{}", stderr(&moved));
    let unreachable = sandbox.cli(&["doctor"]);
    assert_eq!(unreachable.status.code(), Some(1));
    assert!(
        stdout(&unreachable).contains(&format!("cannot reach {gone}/models")),
        "{}",
        stdout(&unreachable)
    );

    let good = login(
        &sandbox,
        &["--provider", "openai", "--base-url", &base],
        GOOD_KEY,
    );
    assert!(good.status.success(), "{}", stderr(&good));
    let passed = sandbox.cli(&["doctor"]);
    assert!(passed.status.success(), "{}", stdout(&passed));
    assert_eq!(
        stdout(&passed).lines().next(),
        Some(format!("ok    openai ({MODEL}) at {base}").as_str())
    );
    assert!(server.seen().iter().any(|seen| seen.path() == "/v1/models"));
}

#[test]
fn config_show_names_the_file_the_environment_the_flag_and_the_default() {
    let sandbox = Sandbox::new();
    sandbox.write_config(
        "[tools]\nhttp_allowlist = [\"https://api.github.com\"]\ncommand_allowlist = [\"cargo test\"]\n",
    );
    let _daemon = sandbox.start_daemon_in(
        sandbox.root.path(),
        &[("CODARIS_LEAN_7_TOOLS", "0")],
        &["--listen", "127.0.0.1:0"],
    );
    let shown = json_of(&sandbox.cli(&["config", "show", "--json"]));
    let source = |key: &str| -> (Value, String) {
        let entry = shown["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == key)
            .unwrap_or_else(|| panic!("no {key} in {shown}"));
        (
            entry["value"].clone(),
            entry["source"].as_str().unwrap().to_owned(),
        )
    };
    assert_eq!(
        source("tools.http_allowlist"),
        (json!(["https://api.github.com"]), "file".to_owned())
    );
    assert_eq!(
        source("tools.lean_surface"),
        (json!(false), "environment".to_owned())
    );
    assert_eq!(source("daemon.listen").1, "flag");
    assert_eq!(
        source("daemon.card_timeout_seconds"),
        (json!(300), "default".to_owned())
    );
    assert_eq!(
        shown["file"],
        sandbox
            .root
            .path()
            .join("config.toml")
            .display()
            .to_string()
    );
    let text = stdout(&sandbox.cli(&["config", "show"]));
    assert!(
        text.lines()
            .any(|l| l.starts_with("tools.http_allowlist") && l.contains("file")),
        "{text}"
    );
    let status = json_of(&sandbox.cli(&["status", "--json"]));
    assert_eq!(status["command_allowlist"], json!(["cargo test"]));
    let path = stdout(&sandbox.cli(&["config", "path"]));
    assert!(path.contains("config.toml (exists"), "{path}");
}

#[test]
fn config_check_judges_a_file_offline_with_its_file_and_line() {
    let sandbox = Sandbox::new();
    let bad = sandbox.root.path().join("bad.toml");
    std::fs::write(&bad, "[tools]\nlean_surface = \"yes\"\n").unwrap();
    let output = sandbox.cli(&["config", "check", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.starts_with(&format!("{}:2:", bad.display())),
        "{message}"
    );
    assert!(message.contains("tools.lean_surface"), "{message}");
    assert_eq!(message.trim_end().lines().count(), 1, "{message}");

    let invalid = sandbox.root.path().join("invalid.toml");
    std::fs::write(&invalid, "[openai]\nbase_url = \"ftp://x\"\n").unwrap();
    let output = sandbox.cli(&["config", "check", invalid.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("openai.base_url"),
        "{}",
        stderr(&output)
    );

    let good = sandbox.root.path().join("good.toml");
    std::fs::write(&good, "[provider]\nname = \"openai\"\n").unwrap();
    let output = sandbox.cli(&["config", "check", good.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("ok"), "{}", stdout(&output));
    // Offline: no daemon was started for it.
    assert!(!sandbox.socket().exists());
}
