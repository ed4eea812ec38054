//! `codaris acp` on raw JSON-RPC lines, as a careless or hostile editor writes them: a request
//! before `initialize`, an unknown method, a malformed line, a 10 MB prompt, a cwd in the
//! state directory, extra roots, option ids it never offered, and standard input closed in the
//! middle of a command. Every line on standard output must be JSON-RPC.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use codaris_test_support::sandbox::{Sandbox, alive, wait_for};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// One `codaris acp` process and its output, line by line.
struct Editor {
    child: Child,
    input: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    /// Notifications and agent requests seen while waiting for answers.
    seen: Vec<Value>,
}

impl Editor {
    fn start(sandbox: &Sandbox, script: &Value, flags: &[&str]) -> Self {
        let path = sandbox.root.path().join("raw-script.json");
        std::fs::write(&path, script.to_string()).unwrap();
        let mut child = sandbox
            .command("codaris")
            .arg("acp")
            .arg("--script")
            .arg(&path)
            .args(flags)
            .env("RUST_LOG", "trace")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let input = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            input,
            lines,
            next_id: 1,
            seen: Vec::new(),
        }
    }

    fn write_line(&mut self, line: &str) {
        let input = self.input.as_mut().unwrap();
        input.write_all(line.as_bytes()).unwrap();
        input.write_all(b"\n").unwrap();
        input.flush().unwrap();
    }

    /// The next line, which must be one JSON-RPC message.
    fn read(&mut self, timeout: Duration) -> Option<Value> {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => {
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|err| panic!("not JSON on stdout ({err}): {line}"));
                assert_eq!(value["jsonrpc"], "2.0", "{line}");
                Some(value)
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Sends a request and waits for its answer, keeping what else arrives; a permission
    /// request is answered with `option` (an id, which need not be one offered).
    fn call(&mut self, method: &str, params: Value, option: &str) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.write_line(&line.to_string());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .read(left)
                .unwrap_or_else(|| panic!("no answer to {method}; saw {:#?}", self.seen));
            if message["id"] == json!(id) && message.get("method").is_none() {
                return message;
            }
            if message["method"] == "session/request_permission" {
                let answer = json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": option}}});
                self.write_line(&answer.to_string());
            }
            self.seen.push(message);
        }
    }

    fn initialize(&mut self) {
        let answer = self.call(
            "initialize",
            json!({"protocolVersion": 99, "clientInfo": {"name": "raw", "version": "0"}}),
            "",
        );
        // A version the adapter does not speak is answered with the one it does.
        assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    }

    fn new_session(&mut self, cwd: &Path) -> Value {
        self.call("session/new", json!({"cwd": cwd, "mcpServers": []}), "")
    }

    fn prompt(&mut self, session: &str, text: &str, option: &str) -> Value {
        self.call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
            option,
        )
    }

    /// Closes standard input; the adapter's exit status once it exits by itself.
    fn close(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        drop(self.input.take());
        let mut status = None;
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            status = self.child.try_wait().unwrap();
            if status.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        status
    }
}

impl Drop for Editor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn project(sandbox: &Sandbox) -> std::path::PathBuf {
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    proj
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
}

#[test]
fn careless_lines_get_errors_and_the_adapter_survives_them() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let _daemon = sandbox.start_daemon(&[]);
    let mut editor = Editor::start(&sandbox, &json!({"turns": []}), &[]);

    // Before `initialize`: an error, not a session.
    let early = editor.new_session(&proj);
    assert_eq!(error_code(&early), -32600, "{early}");

    editor.initialize();
    // A malformed line is not the end of the connection.
    editor.write_line("{this is not json");
    let unknown = editor.call("session/frobnicate", json!({}), "");
    assert_eq!(error_code(&unknown), -32601, "{unknown}");
    let session = editor.new_session(&proj);
    let id = session["result"]["sessionId"].as_str().unwrap().to_owned();

    // A 10 MB prompt is refused with a sentence, and the session still works after it.
    let huge = editor.prompt(&id, &"x".repeat(10 * 1024 * 1024), "");
    assert_eq!(error_code(&huge), -32602, "{huge}");
    let said = huge["error"]["message"].as_str().unwrap();
    assert!(
        said.starts_with("the prompt is larger than 1 MiB"),
        "{said}"
    );

    // Hostile ids: a config option and a mode that do not exist.
    let option = editor.call(
        "session/set_config_option",
        json!({"sessionId": id, "configId": "../../permission", "value": "bypass"}),
        "",
    );
    assert_eq!(error_code(&option), -32602, "{option}");
    let mode = editor.call(
        "session/set_mode",
        json!({"sessionId": id, "modeId": "root"}),
        "",
    );
    assert_eq!(error_code(&mode), -32602, "{mode}");
    // Extra roots are not taken, whatever they name.
    for root in ["/", sandbox.state_dir().to_str().unwrap()] {
        let extra = editor.call(
            "session/new",
            json!({"cwd": proj, "mcpServers": [], "additionalDirectories": [root]}),
            "",
        );
        assert_eq!(error_code(&extra), -32602, "{extra}");
    }
    // A relative cwd is refused by the daemon, with its sentence.
    let relative = editor.call("session/new", json!({"cwd": "proj", "mcpServers": []}), "");
    assert!(relative.get("error").is_some(), "{relative}");
    assert_eq!(
        editor.close(Duration::from_secs(5)).map(|s| s.success()),
        Some(true)
    );
}

#[test]
fn an_option_the_card_never_offered_grants_nothing() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    std::fs::write(proj.join("a.txt"), "old\n").unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let script = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "write", "args": {"path": "a.txt", "content": "new\n"}}]},
        {"text": "done"}
    ]}]});
    let mut editor = Editor::start(&sandbox, &script, &[]);
    editor.initialize();
    let session = editor.new_session(&proj);
    let id = session["result"]["sessionId"].as_str().unwrap().to_owned();
    let answer = editor.prompt(&id, "write", "allow_forever_and_everywhere");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(
        std::fs::read_to_string(proj.join("a.txt")).unwrap(),
        "old\n"
    );
    let failed = editor
        .seen
        .iter()
        .find(|m| m["params"]["update"]["status"] == "failed")
        .unwrap_or_else(|| panic!("{:#?}", editor.seen));
    assert_eq!(failed["params"]["update"]["toolCallId"], "call_0_0_0");
}

#[test]
fn a_project_that_is_the_state_directory_the_disk_or_home_is_refused() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    // A link in the project that leads to the daemon's state directory.
    std::os::unix::fs::symlink(sandbox.state_dir(), proj.join("state-link")).unwrap();
    let mut editor = Editor::start(&sandbox, &json!({"turns": []}), &[]);
    editor.initialize();
    let state = sandbox.state_dir();
    for cwd in [
        state.clone(),
        state.join("ledger"),
        proj.join("state-link"),
        proj.join("../state"),
        "/".into(),
        home.clone(),
        sandbox.root.path().to_path_buf(),
    ] {
        let answer = editor.new_session(&cwd);
        assert_eq!(error_code(&answer), -32602, "{}: {answer}", cwd.display());
        let said = answer["error"]["message"].as_str().unwrap();
        assert!(said.starts_with("cwd `"), "{said}");
    }
    // The project itself is fine.
    let answer = editor.new_session(&proj);
    assert!(answer.get("result").is_some(), "{answer}");
}

#[test]
fn closing_standard_input_mid_command_ends_the_adapter_and_the_command() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    // A turn whose stream went away would be cancelled by the daemon only after this grace:
    // the command must die because the adapter cancelled it.
    sandbox.write_config("[daemon]\ndetach_grace_seconds = 300\n");
    let _daemon = sandbox.start_daemon(&[]);
    let script = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "run_command",
                         "args": {"command": "echo $$ > sleep.pid && exec sleep 300"}}]},
        {"text": "never"}
    ]}]});
    let mut editor = Editor::start(&sandbox, &script, &["--permission-mode", "bypass"]);
    editor.initialize();
    let session = editor.new_session(&proj);
    let id = session["result"]["sessionId"].as_str().unwrap().to_owned();
    let line = json!({"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
        "params": {"sessionId": id, "prompt": [{"type": "text", "text": "sleep"}]}});
    editor.write_line(&line.to_string());
    let mut pid = 0;
    wait_for(Duration::from_secs(30), || {
        pid = std::fs::read_to_string(proj.join("sleep.pid"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        pid != 0 && alive(pid)
    });
    assert!(
        editor.close(Duration::from_secs(10)).is_some(),
        "the adapter outlived its editor"
    );
    wait_for(Duration::from_secs(10), || !alive(pid));
    // No turn left running in the daemon: a new connection resumes the session and its next
    // prompt is taken at once.
    let mut again = Editor::start(&sandbox, &script, &["--permission-mode", "bypass"]);
    again.initialize();
    let resumed = again.call("session/resume", json!({"sessionId": id, "cwd": proj}), "");
    assert!(resumed.get("result").is_some(), "{resumed}");
    let answer = again.prompt(&id, "again", "");
    assert!(answer.get("result").is_some(), "{answer}");
}

#[test]
fn help_prints_each_editors_setup() {
    let sandbox = Sandbox::new();
    let output = sandbox.cli(&["acp", "--help"]);
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    for line in [
        r#""agent_servers": { "Codaris": { "type": "custom", "command": "codaris", "args": ["acp"]"#,
        "~/.jetbrains/acp.json",
        r#"commands = { default = { "codaris", "acp" } }"#,
        r#"(agent-shell--make-acp-client :command "codaris" :command-params '("acp")"#,
    ] {
        assert!(help.contains(line), "no `{line}` in:\n{help}");
    }
}

#[test]
fn a_card_the_daemon_timed_out_is_withdrawn_from_the_editor() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    sandbox.write_config("[daemon]\ncard_timeout_seconds = 1\n");
    let _daemon = sandbox.start_daemon(&[]);
    let script = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "write", "args": {"path": "a.txt", "content": "x"}}]},
        {"text": "done"}
    ]}]});
    let mut editor = Editor::start(&sandbox, &script, &[]);
    editor.initialize();
    let session = editor.new_session(&proj);
    let id = session["result"]["sessionId"].as_str().unwrap().to_owned();
    let line = json!({"jsonrpc": "2.0", "id": 50, "method": "session/prompt",
        "params": {"sessionId": id, "prompt": [{"type": "text", "text": "write"}]}});
    editor.write_line(&line.to_string());
    // Nobody answers the card; the daemon gives up on it after a second.
    let mut asked = None;
    let mut withdrawn = None;
    let mut answer = None;
    while answer.is_none() {
        let message = editor
            .read(Duration::from_secs(30))
            .unwrap_or_else(|| panic!("the turn never ended; saw {:#?}", editor.seen));
        if message["method"] == "session/request_permission" {
            asked = Some(message["id"].clone());
        } else if message["method"] == "$/cancel_request" {
            withdrawn = Some(message["params"]["requestId"].clone());
        } else if message["id"] == json!(50) {
            answer = Some(message.clone());
        }
        editor.seen.push(message);
    }
    assert!(asked.is_some(), "{:#?}", editor.seen);
    assert_eq!(withdrawn, asked, "{:#?}", editor.seen);
    // Withdrawn as soon as the daemon moved on: before the call is shown failed.
    let at = |found: &dyn Fn(&Value) -> bool| editor.seen.iter().position(found).unwrap();
    let withdrawal = at(&|m| m["method"] == "$/cancel_request");
    let failed = at(&|m| m["params"]["update"]["status"] == "failed");
    assert!(withdrawal < failed, "{:#?}", editor.seen);
    assert_eq!(answer.unwrap()["result"]["stopReason"], "end_turn");
    assert!(!proj.join("a.txt").exists());
}

#[test]
fn without_a_daemon_initialize_names_the_socket() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let mut editor = Editor::start(&sandbox, &json!({"turns": []}), &["--no-autostart"]);
    let answer = editor.call(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "raw", "version": "0"}}),
        "",
    );
    let said = answer["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error: {answer}"));
    assert!(
        said.contains(&sandbox.socket().display().to_string()),
        "{said}"
    );
    // Nothing but JSON-RPC on standard output, and the adapter still answers.
    let unknown = editor.call("session/frobnicate", json!({}), "");
    assert!(unknown.get("error").is_some(), "{unknown}");
}

/// An editor without forms is asked a `question` as a permission request, an option per
/// label: the option it picks is the label the model reads; an option id the request never
/// offered chooses nothing, and the model reads at once that nobody could answer (never
/// waiting out the daemon's timeout).
#[test]
fn a_question_is_a_permission_request_and_an_option_never_offered_answers_nothing() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[daemon]\ncard_timeout_seconds = 30\n");
    let proj = project(&sandbox);
    let _daemon = sandbox.start_daemon(&[]);
    let script = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "search_tools", "args": {"query": "ask the user a multiple-choice question"}}]},
        {"tool_calls": [{"name": "question", "args": {"questions": [
            {"question": "Keep it?", "options": [{"label": "yes"}, {"label": "no"}]}]}}]},
        {"text": "done"}
    ]}]});
    let mut editor = Editor::start(&sandbox, &script, &[]);
    editor.initialize();
    for (option, read) in [
        ("option-1", "question: the user answered\\n1. Keep it?: no"),
        ("option-9", "question: nobody could answer"),
    ] {
        editor.seen.clear();
        let session = editor.new_session(&proj);
        let id = session["result"]["sessionId"].as_str().unwrap().to_owned();
        let answer = editor.prompt(&id, "ask", option);
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        let asked = editor
            .seen
            .iter()
            .find(|m| m["method"] == "session/request_permission")
            .unwrap_or_else(|| panic!("{:#?}", editor.seen));
        let names: Vec<&Value> = asked["params"]["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| &o["name"])
            .collect();
        assert_eq!(names, [&json!("yes"), &json!("no"), &json!("Skip")]);
        let seen = serde_json::to_string(&editor.seen).unwrap();
        assert!(
            seen.contains(read) && !seen.contains("nobody answered within"),
            "{option}: {seen}"
        );
    }
}
