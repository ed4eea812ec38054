//! The daemon's own secrets and inputs, through the real binaries: provider keys out of its
//! environment block, a state directory another user could swap refused, and bad input or a
//! broken start reported as one clear line.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::sync::mpsc;
use std::time::Duration;

use codaris_test_support::sandbox::{Sandbox, events, stderr, stdout};

const KEY: &str = "sk-e2e-never-in-environ-4f1c";

/// An OpenAI-compatible stand-in on loopback: answers one chat completion with "hi" and reports
/// the `Authorization` header it was sent. It implements only that one streamed reply.
fn fake_openai() -> (String, mpsc::Receiver<String>) {
    fake_openai_streaming(&[
        r#"{"id":"1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}"#.to_owned(),
        r#"{"id":"1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#.to_owned(),
    ])
}

/// The same stand-in streaming `chunks` as its one reply.
fn fake_openai_streaming(chunks: &[String]) -> (String, mpsc::Receiver<String>) {
    let chunks = chunks.to_vec();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let (seen, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut length = 0usize;
        let mut auth = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
            if lower.starts_with("authorization:") {
                auth = line["authorization:".len()..].trim().to_owned();
            }
        }
        let mut body = vec![0; length];
        let _ = reader.read_exact(&mut body);
        let _ = seen.send(auth);
        let mut text = String::new();
        for chunk in chunks {
            text.push_str(&format!("data: {chunk}\n\n"));
        }
        text.push_str("data: [DONE]\n\n");
        let mut stream = stream;
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
            text.len()
        );
    });
    (base, receiver)
}

/// A daemon with a provider key in its environment, its OpenAI base at `base`.
fn start_with_key(sandbox: &Sandbox, base: &str) -> codaris_test_support::sandbox::Daemon {
    sandbox.write_config("");
    let dir = sandbox.root.path().to_path_buf();
    sandbox.start_daemon_in(
        &dir,
        &[
            ("OPENAI_API_KEY", KEY),
            ("OPENAI_BASE_URL", base),
            ("CODARIS_MODEL", "local-model"),
        ],
        &[],
    )
}

#[test]
fn provider_keys_reach_the_provider_but_not_the_daemons_environment_block() {
    let sandbox = Sandbox::new();
    let (base, seen) = fake_openai();
    let daemon = start_with_key(&sandbox, &base);
    // The pid is the one spawned: the daemon replaced its own image, it did not fork.
    let environ = std::fs::read(format!("/proc/{}/environ", daemon.pid())).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(!environ.contains(KEY), "the key is in /proc/<pid>/environ");
    assert!(!environ.contains("OPENAI_API_KEY"), "{environ}");
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", daemon.pid())).unwrap();
    assert_eq!(comm.trim(), "codarisd", "the new image keeps its name");

    let project = sandbox.root.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let output = sandbox.cli(&[
        "run",
        "--provider",
        "openai",
        "--cwd",
        project.to_str().unwrap(),
        "hello",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("hi"), "{}", stdout(&output));
    let auth = seen.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        auth,
        format!("Bearer {KEY}"),
        "the key still reaches the API"
    );
}

#[test]
fn a_model_api_error_echoing_the_key_is_scrubbed_before_the_client_sees_it() {
    let sandbox = Sandbox::new();
    let echo = format!(
        r#"{{"error":{{"message":"the key {KEY} was revoked","type":"invalid_request_error"}}}}"#
    );
    let (base, _seen) = fake_openai_streaming(&[echo]);
    let _daemon = start_with_key(&sandbox, &base);
    let project = sandbox.root.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let output = sandbox.cli(&[
        "run",
        "--json",
        "--provider",
        "openai",
        "--cwd",
        project.to_str().unwrap(),
        "hello",
    ]);
    let text = stdout(&output);
    let ended = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "turn_ended")
        .expect("a turn_ended event");
    let error = ended["error"].as_str().unwrap_or_default();
    assert!(error.contains("the key *** was revoked"), "{ended}");
    assert!(!text.contains(KEY), "{text}");
    assert!(!stderr(&output).contains(KEY));
    let log = std::fs::read_to_string(sandbox.state_dir().join("codarisd.log")).unwrap();
    assert!(!log.contains(KEY), "the key is in the log");
}

#[test]
fn a_state_directory_that_is_a_symlink_or_under_an_open_directory_is_refused() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let victim = sandbox.root.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let link = sandbox.root.path().join("linked-state");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let output = sandbox
        .command("codarisd")
        .env("CODARIS_STATE_DIR", &link)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("is a symbolic link"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);

    let open = sandbox.root.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let output = sandbox
        .command("codaris")
        .env("CODARIS_STATE_DIR", open.join("state"))
        .arg("status")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let error = stderr(&output);
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(error.contains("is writable by every user"), "{error}");
    assert!(!error.contains('\u{1b}'), "escapes relayed: {error:?}");
}

#[test]
fn a_broken_ledger_is_relayed_as_one_plain_line() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    // The ledger's place taken by a file: the daemon cannot open it and must say so plainly.
    std::fs::create_dir_all(sandbox.state_dir()).unwrap();
    std::fs::set_permissions(sandbox.state_dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(sandbox.state_dir().join("ledger"), "not a database").unwrap();
    let output = sandbox.cli(&["status"]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(
        error.starts_with("codaris: codarisd exited while starting: "),
        "{error}"
    );
    assert!(!error.contains('\u{1b}'), "escapes relayed: {error:?}");
    assert!(!error.contains("ERROR"), "a log line was relayed: {error}");
}

#[test]
fn a_socket_the_user_may_not_open_is_reported_as_such() {
    // Root opens any socket whatever its mode, so the refusal needs another user.
    if rustix::process::getuid().is_root() {
        let sandbox = Sandbox::new();
        let _daemon = sandbox.start_daemon(&[]);
        let status = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(codaris_test_support::sandbox::binary("codaris"))
            .args(["--no-autostart", "status"])
            .env_clear()
            .env("CODARIS_STATE_DIR", sandbox.state_dir())
            .env("HOME", "/nonexistent")
            .output()
            .expect("setpriv (util-linux) runs a command as another user");
        let output = status;
        let error = stderr(&output);
        assert!(!output.status.success());
        assert!(error.contains("permission denied on"), "{error}");
        assert!(!error.contains("not running"), "{error}");
    } else {
        let sandbox = Sandbox::new();
        let _daemon = sandbox.start_daemon(&[]);
        std::fs::set_permissions(sandbox.state_dir(), std::fs::Permissions::from_mode(0o000))
            .unwrap();
        let output = sandbox.cli(&["--no-autostart", "status"]);
        std::fs::set_permissions(sandbox.state_dir(), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        assert!(stderr(&output).contains("permission denied on"));
    }
}

#[test]
fn bad_session_input_is_invalid_argument_naming_the_field() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.start_daemon(&[]);
    let missing = sandbox.root.path().join("no-such-script.json");
    let output = sandbox.cli(&[
        "run",
        "--script",
        missing.to_str().unwrap(),
        "--cwd",
        sandbox.root.path().to_str().unwrap(),
        "hello",
    ]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(error.contains("script"), "{error}");
    assert!(error.contains("No such file or directory"), "{error}");
    assert!(!error.contains("Internal"), "{error}");

    let gone = sandbox.root.path().join("gone");
    let output = sandbox.cli(&["run", "--cwd", gone.to_str().unwrap(), "hello"]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(error.contains("cwd"), "{error}");
    assert!(error.contains("gone"), "{error}");
}

#[test]
fn a_huge_session_id_is_refused_without_being_echoed() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.start_daemon(&[]);
    let huge = "s".repeat(100_000);
    let output = sandbox.cli(&["shared", "list", &huge]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(error.contains("session_id"), "{error}");
    assert!(
        error.len() < 2_000,
        "the id was echoed: {} bytes",
        error.len()
    );
    // The daemon still serves.
    let output = sandbox.cli(&["status", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
}

/// Two layers each refuse this: Landlock (a confined process may not inspect one outside its
/// domain) and the daemon being non-dumpable while commands run without `CAP_SYS_PTRACE`.
#[test]
fn a_command_cannot_read_the_daemons_environment_or_memory() {
    let sandbox = Sandbox::new();
    let daemon = start_with_key(&sandbox, "http://127.0.0.1:9/v1");
    let project = sandbox.root.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let pid = daemon.pid();
    let probe = format!(
        "for f in environ mem maps; do if cat /proc/{pid}/$f >/dev/null 2>&1; then echo READ-$f; else echo DENIED-$f; fi; done; grep -c CapEff /proc/self/status"
    );
    let script = serde_json::json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "run_command", "args": {"command": probe}}]},
        {"text": "done"}
    ]}]});
    let output = sandbox.run_script(&project, &script, &["--approve", "once"], "probe");
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let result = events(&output)
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .expect("a tool_result event");
    let said = result["output"].as_str().unwrap_or_default();
    for file in ["environ", "mem", "maps"] {
        assert!(said.contains(&format!("DENIED-{file}")), "{said}");
    }
    assert!(!said.contains("READ-"), "{said}");
    assert!(!text.contains(KEY));
}
