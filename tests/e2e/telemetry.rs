//! Logs, traces and readiness of a real `codarisd`: OTLP export to a fake collector on loopback
//! (spans for the turn, its model request and tool calls, a decision event with its code),
//! nothing exported without `[telemetry]`, a log file without escape bytes while stderr is a
//! terminal and a relayed line carries escapes, JSON log lines, and `READY=1`/`STOPPING=1` on
//! `NOTIFY_SOCKET`.

use std::os::unix::net::UnixDatagram;
use std::process::{Child, Stdio};
use std::time::Duration;

use codaris_test_support::fake_otlp::{ExportedSpan, FakeOtlp};
use codaris_test_support::pty::{Pty, screen_of};
use codaris_test_support::sandbox::{Sandbox, calls_script, events, stderr, wait_for};
use serde_json::{Value, json};

/// What a call's arguments carry that must never be exported or logged as an attribute.
const ARG_SECRET: &str = "sk-arg-secret-5150";
const HEADER_SECRET: &str = "Bearer otlp-token-7342";

fn project(sandbox: &Sandbox) -> std::path::PathBuf {
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("notes.txt"), "nothing to see\n").unwrap();
    proj
}

/// A turn that reads a file and greps for a secret-looking pattern, both inside the project.
fn run_a_turn(sandbox: &Sandbox, proj: &std::path::Path) -> Vec<Value> {
    let script = calls_script(&[
        ("read_file", json!({"path": "notes.txt"})),
        ("grep", json!({"pattern": ARG_SECRET})),
    ]);
    let output = sandbox.run_script(proj, &script, &[], "look around");
    assert!(output.status.success(), "{}", stderr(&output));
    events(&output)
}

fn named<'a>(spans: &'a [ExportedSpan], name: &str) -> Vec<&'a ExportedSpan> {
    spans.iter().filter(|span| span.name == name).collect()
}

#[test]
fn a_turn_exports_spans_and_decision_events_to_the_configured_collector() {
    let collector = FakeOtlp::start();
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    sandbox.write_config(&format!(
        "[telemetry]\notlp_endpoint = \"{}\"\nservice_name = \"codarisd-e2e\"\n\n[telemetry.headers]\nauthorization = \"{HEADER_SECRET}\"\n",
        collector.url()
    ));
    let _daemon = sandbox.start_daemon(&[]);
    let events = run_a_turn(&sandbox, &proj);
    let codes: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["decision"]["code"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(codes.len(), 2, "{events:#?}");
    // A stop flushes what the batch still holds.
    sandbox.stop_daemon();
    wait_for(Duration::from_secs(60), || {
        named(&collector.spans(), "tool_call").len() >= 2
    });
    let spans = collector.spans();

    let turns = named(&spans, "turn");
    assert_eq!(turns.len(), 1, "{spans:#?}");
    let turn = turns[0];
    assert_eq!(turn.service_name.as_deref(), Some("codarisd-e2e"));
    assert!(!turn.attributes["session.id"].is_empty(), "{turn:#?}");
    assert!(turn.parent_span_id.is_empty(), "the turn is a root span");

    let requests = named(&spans, "model_request");
    assert!(!requests.is_empty(), "{spans:#?}");
    for request in &requests {
        assert_eq!(request.parent_span_id, turn.span_id);
        assert_eq!(request.attributes["provider"], "scripted");
    }

    let calls = named(&spans, "tool_call");
    let tools: Vec<&str> = calls
        .iter()
        .map(|c| c.attributes["tool.name"].as_str())
        .collect();
    assert_eq!(tools, ["read_file", "grep"]);
    for (call, code) in calls.iter().zip(&codes) {
        assert_eq!(call.trace_id, turn.trace_id);
        assert_eq!(call.parent_span_id, turn.span_id);
        let decisions: Vec<_> = call
            .events
            .iter()
            .filter(|e| e.name == "dispatch decision")
            .collect();
        assert_eq!(decisions.len(), 1, "{call:#?}");
        let decision = &decisions[0].attributes;
        assert_eq!(&decision["decision.code"], code, "the code the client saw");
        assert_eq!(decision["decision.verdict"], "allow");
        assert_eq!(decision["tool.name"], call.attributes["tool.name"]);
        assert_eq!(decision["session.id"], turn.attributes["session.id"]);
    }

    // The configured header reached the collector; neither it nor an argument went anywhere
    // else: no exported value holds the argument, no log line the header.
    let seen = collector.seen();
    assert!(
        seen.iter()
            .all(|s| s.header("authorization") == Some(HEADER_SECRET))
    );
    let exported = format!("{spans:?}");
    assert!(!exported.contains(ARG_SECRET), "an argument was exported");
    let log = std::fs::read_to_string(sandbox.state_dir().join("codarisd.log")).unwrap();
    assert!(
        !log.contains("otlp-token-7342"),
        "the header's value was logged"
    );
    assert!(log.contains("exporting traces over OTLP"), "{log}");
}

#[test]
fn without_an_endpoint_nothing_leaves_even_with_otel_variables_set() {
    let collector = FakeOtlp::start();
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    sandbox.write_config("");
    let url = collector.url();
    let _daemon = sandbox.start_daemon_in(
        sandbox.root.path(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", url.as_str()),
            ("OTEL_TRACES_EXPORTER", "otlp"),
        ],
        &[],
    );
    run_a_turn(&sandbox, &proj);
    sandbox.stop_daemon();
    assert_eq!(
        collector.seen(),
        Vec::new(),
        "nothing may be sent unconfigured"
    );
}

/// A server that is no MCP server: it prints a coloured line, a title change and a C1 CSI to
/// stderr, then reads its input until the daemon closes it (its stderr is relayed to the log).
fn escaping_server_config() -> String {
    let script = r"printf '\033[31mred alert\033[0m \033]0;owned\007 c1:\302\2332J\n' >&2; exec cat >/dev/null";
    format!("[mcp.servers.esc]\ncommand = \"/bin/sh\"\nargs = [\"-c\", {script:?}]\n")
}

fn start_on_pty(sandbox: &Sandbox, pty: &Pty) -> Child {
    let child = sandbox
        .command("codarisd")
        .stdout(Stdio::null())
        .stderr(pty.stream())
        .spawn()
        .unwrap();
    wait_for(Duration::from_secs(30), || {
        std::os::unix::net::UnixStream::connect(sandbox.socket()).is_ok()
    });
    child
}

fn log_bytes(sandbox: &Sandbox) -> Vec<u8> {
    std::fs::read(sandbox.state_dir().join("codarisd.log")).unwrap_or_default()
}

#[test]
fn the_log_file_holds_no_escape_bytes_while_stderr_is_a_terminal() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    sandbox.write_config(&escaping_server_config());
    // The daemon's stderr is the terminal, so its stderr layer colours.
    let pty = Pty::open();
    let mut daemon = start_on_pty(&sandbox, &pty);
    let shown = screen_of(pty.master.try_clone().unwrap());
    wait_for(Duration::from_secs(60), || {
        String::from_utf8_lossy(&log_bytes(&sandbox)).contains("red alert")
    });
    run_a_turn(&sandbox, &proj);
    // The terminal got colours: the stderr layer formatted (and cached) fields with ANSI.
    wait_for(Duration::from_secs(30), || {
        shown.lock().unwrap().contains(&0x1b)
    });
    sandbox.stop_daemon();
    daemon.wait().unwrap();
    drop(pty);

    let log = log_bytes(&sandbox);
    let text = String::from_utf8(log.clone()).unwrap();
    assert!(text.contains("dispatch decision"), "{text}");
    assert!(
        text.contains("tool_call{"),
        "span context is in the file: {text}"
    );
    let bad: Vec<(usize, u8)> = log
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, b)| (*b < 0x20 && *b != b'\n' && *b != b'\t') || *b == 0x7f)
        .collect();
    assert_eq!(bad, Vec::new(), "control bytes in the log file:\n{text}");
    assert!(!text.contains('\u{9b}'), "a C1 control in the log file");
    // The relayed line is there, its escapes shown as text.
    assert!(text.contains(r"\u{1b}[31mred alert"), "{text}");
    // The current log is the day's dated file, behind the stable name.
    let link = std::fs::read_link(sandbox.state_dir().join("codarisd.log")).unwrap();
    let name = link.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("codarisd.")
            && name.ends_with(".log")
            && name.len() == "codarisd.2026-12-02.log".len(),
        "{name}"
    );
}

#[test]
fn json_log_lines_each_parse_and_carry_the_decision() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    sandbox.write_config(&format!(
        "[daemon]\nlog_format = \"json\"\nlog_max_files = 3\n\n{}",
        escaping_server_config()
    ));
    let _daemon = sandbox.start_daemon(&[]);
    wait_for(Duration::from_secs(60), || {
        String::from_utf8_lossy(&log_bytes(&sandbox)).contains("red alert")
    });
    run_a_turn(&sandbox, &proj);
    sandbox.stop_daemon();
    let text = String::from_utf8(log_bytes(&sandbox)).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"))
        })
        .collect();
    assert!(!lines.is_empty());
    let decisions: Vec<&Value> = lines
        .iter()
        .filter(|line| line["fields"]["message"] == "dispatch decision")
        .collect();
    assert_eq!(decisions.len(), 2, "{text}");
    assert_eq!(decisions[0]["fields"]["tool.name"], "read_file");
    assert!(decisions[0]["fields"]["decision.code"].is_string());
    assert_eq!(decisions[0]["span"]["name"], "tool_call");
    assert!(!text.as_bytes().contains(&0x1b));
    let relayed = lines
        .iter()
        .find(|line| {
            line["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("red alert"))
        })
        .unwrap();
    assert!(
        relayed["fields"]["message"]
            .as_str()
            .unwrap()
            .contains(r"\u{1b}[31m"),
        "{relayed}"
    );
}

#[test]
fn a_bad_log_format_is_one_line_naming_the_key() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[daemon]\nlog_format = \"xml\"\n");
    let output = sandbox.command("codarisd").output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains("daemon.log_format") && message.contains("`xml`"),
        "{message}"
    );
}

#[test]
fn readiness_and_stopping_are_notified_on_notify_socket() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let path = sandbox.root.path().join("notify.sock");
    let listener = UnixDatagram::bind(&path).unwrap();
    listener
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut daemon = sandbox
        .command("codarisd")
        .env("NOTIFY_SOCKET", &path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut buf = [0u8; 4096];
    let n = listener.recv(&mut buf).expect("a readiness message");
    let message = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(message.lines().any(|l| l == "READY=1"), "{message}");
    // Ready means serving: the socket answers at once.
    std::os::unix::net::UnixStream::connect(sandbox.socket()).expect("the socket listens");

    let stop = sandbox.cli(&["daemon", "stop"]);
    assert!(stop.status.success(), "{}", stderr(&stop));
    let n = listener.recv(&mut buf).expect("a stopping message");
    assert!(
        String::from_utf8_lossy(&buf[..n])
            .lines()
            .any(|l| l == "STOPPING=1"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );
    assert!(daemon.wait().unwrap().success());
}
