//! Progress a person sees: `codaris run` on a terminal (a pseudo-terminal here) shows a status
//! line with the running tool, its elapsed time and the command's latest output; piped, it
//! shows none; `--json` reports a model API's retry as a `progress` event of kind `provider_retry`; a failed call
//! reads as an error; a card shows the diff of what it would change.

use std::process::Child;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use codaris_test_support::fake_http::{FakeHttp, Reply};
use codaris_test_support::pty::{Pty, screen_of};
use codaris_test_support::sandbox::{Sandbox, calls_script, events, ok, stderr, stdout};
use serde_json::{Value, json};

fn text(screen: &Mutex<Vec<u8>>) -> String {
    String::from_utf8_lossy(&screen.lock().unwrap()).into_owned()
}

/// Waits (generously) for the program to end; its screen then.
fn finish(mut child: Child, screen: &Mutex<Vec<u8>>) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            // The reader may still be draining what was written last.
            std::thread::sleep(Duration::from_millis(200));
            let shown = text(screen);
            assert!(status.success(), "{status}: {shown}");
            return shown;
        }
        assert!(Instant::now() < deadline, "still running: {}", text(screen));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A command printing a numbered line a second for a few seconds.
fn slow_command() -> Value {
    json!({"command": "for i in 1 2 3 4 5 6; do echo \"step-$i of the build\"; sleep 1; done"})
}

#[test]
fn a_running_command_shows_a_status_line_with_its_tool_time_and_latest_output() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let mut args = sandbox.run_args(
        &proj,
        &calls_script(&[("run_command", slow_command())]),
        &["--approve", "once"],
        "build it",
    );
    args.retain(|arg| arg != "--json");
    let pty = Pty::open();
    let child = pty
        .attach(sandbox.command("codaris").env("TERM", "xterm").args(&args))
        .spawn()
        .unwrap();
    // Only the program holds the terminal now: its end closes it.
    drop(pty.slave);
    let screen = screen_of(pty.master);
    let shown = finish(child, &screen);
    // The tool's name and its elapsed time (`run_command · 2s`), with the last line the command
    // printed (`· step-3 of the build`), on the status line while it ran.
    let status = regex_like_status(&shown);
    assert!(
        status,
        "no status line with the tool and its time in {shown:?}"
    );
    assert!(
        shown.contains("· step-"),
        "no streamed output line on the status line in {shown:?}"
    );
    // What stays on the screen is the ordinary lines.
    assert!(shown.contains("→ run_command"), "{shown:?}");
    assert!(shown.contains("── turn 1 ended: end_turn"), "{shown:?}");
}

/// Whether `screen` holds `run_command · <digits>s`.
fn regex_like_status(screen: &str) -> bool {
    screen.match_indices("run_command · ").any(|(at, found)| {
        let rest = &screen[at + found.len()..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with('s')
    })
}

#[test]
fn piped_output_shows_no_status_line_and_no_streamed_lines() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let command = json!({"command": "echo first-line; echo second-line"});
    let mut args = sandbox.run_args(
        &proj,
        &calls_script(&[("run_command", command)]),
        &["--approve", "once"],
        "run it",
    );
    args.retain(|arg| arg != "--json");
    let output = sandbox.command("codaris").args(&args).output().unwrap();
    let answer = ok(&output);
    assert_eq!(
        answer, "done\n",
        "standard output is the model's text alone"
    );
    // The lines for people are on standard error, with nothing drawn on it.
    let shown = stderr(&output);
    assert!(shown.contains("→ "), "{shown:?}");
    assert!(!shown.contains('\x1b'), "{shown:?}");
    assert!(!shown.contains("run_command · "), "{shown:?}");
}

#[test]
fn json_mode_has_progress_events_and_failed_results_and_nothing_else() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("a.txt"), "hello\n").unwrap();
    let script = calls_script(&[
        ("run_command", slow_command()),
        ("edit", json!({"path": "a.txt", "newString": "x"})),
    ]);
    let output = sandbox.run_script(&proj, &script, &["--approve", "once"], "go");
    let events = events(&output);
    let progress: Vec<&Value> = events.iter().filter(|e| e["type"] == "progress").collect();
    assert!(!progress.is_empty(), "{events:#?}");
    assert!(
        progress.iter().all(|p| p["kind"] == "tool"
            && p["tool"] == "run_command"
            && p["message"].as_str().unwrap().starts_with("step-")),
        "{progress:#?}"
    );
    let results: Vec<(&Value, &Value)> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| (&e["tool"], &e["failed"]))
        .collect();
    assert_eq!(
        results,
        [
            (&json!("run_command"), &json!(false)),
            (&json!("edit"), &json!(true))
        ]
    );
}

#[test]
fn a_failed_call_reads_as_an_error_not_as_allowed() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("a.txt"), "hello\n").unwrap();
    let script = calls_script(&[("edit", json!({"path": "a.txt", "newString": "x"}))]);
    let mut args = sandbox.run_args(&proj, &script, &["--approve", "once"], "go");
    args.retain(|arg| arg != "--json");
    let output = sandbox.command("codaris").args(&args).output().unwrap();
    ok(&output);
    let shown = stderr(&output);
    // The card above it says so too ("the call would fail: …"); the result line is the one
    // after the card's answer.
    let line = shown
        .lines()
        .skip_while(|l| !l.starts_with("? "))
        .find(|l| l.contains("oldString"))
        .unwrap_or_else(|| panic!("no result line in {shown}"));
    assert_eq!(line, "  ✗ edit: `oldString` is required");
    assert!(!line.contains("allow"), "{line:?}");
}

#[test]
fn a_card_for_an_edit_shows_its_diff_above_the_question() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("a.txt"), "keep\nold line\n").unwrap();
    let script = calls_script(&[(
        "edit",
        json!({"path": "a.txt", "oldString": "old line", "newString": "new line"}),
    )]);
    let mut args = sandbox.run_args(&proj, &script, &["--approve", "deny"], "go");
    args.retain(|arg| arg != "--json");
    let output = sandbox.command("codaris").args(&args).output().unwrap();
    ok(&output);
    // The card is for people: on standard error, uncoloured off a terminal.
    let shown = stderr(&output);
    let diff = "    --- a/a.txt\n    +++ b/a.txt\n    @@ -1,2 +1,2 @@\n     keep\n    -old line\n    +new line\n? Codaris wants to edit `a.txt` (1 line changed) → deny";
    assert!(shown.contains(diff), "{shown}");
    assert!(
        !shown.contains('\x1b'),
        "no colours off a terminal: {shown:?}"
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("a.txt")).unwrap(),
        "keep\nold line\n"
    );

    let json = events(&sandbox.run_script(&proj, &script, &["--approve", "deny"], "go"));
    let card = json.iter().find(|e| e["type"] == "card").unwrap();
    assert_eq!(card["preview"]["kind"], "diff");
    assert_eq!(card["preview"]["path"], "a.txt");
    assert!(
        card["preview"]["text"]
            .as_str()
            .unwrap()
            .contains("-old line\n+new line\n")
    );
}

#[test]
fn a_model_api_answering_429_once_is_a_provider_retry_progress_event_in_json() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let answered = std::sync::atomic::AtomicUsize::new(0);
    let server = FakeHttp::start(move |seen| {
        if !seen.path().ends_with("/chat/completions") {
            return Reply::not_implemented("fake OpenAI API", seen);
        }
        match answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 => Reply::json(
                429,
                &json!({"error": {"type": "rate_limit", "message": "slow down"}}),
            )
            .header("retry-after", "0"),
            _ => Reply::new(
                200,
                "text/event-stream",
                "data: {\"id\":\"1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
            ),
        }
    });
    let base = format!("{}/v1", server.url());
    let _daemon = sandbox.start_daemon_in(
        sandbox.root.path(),
        &[
            ("OPENAI_BASE_URL", &base),
            ("OPENAI_API_KEY", "sk-e2e-never-shown"),
        ],
        &[],
    );
    let output = sandbox.cli(&[
        "run",
        "--json",
        "--provider",
        "openai",
        "--model",
        "local-model",
        "hello",
    ]);
    let shown = ok(&output);
    let retries: Vec<Value> = events(&output)
        .into_iter()
        .filter(|e| e["type"] == "progress" && e["kind"] == "provider_retry")
        .collect();
    assert_eq!(
        retries,
        [
            json!({"type": "progress", "kind": "provider_retry", "attempt": 1, "max_attempts": 4,
                   "delay_ms": 0, "reason": "busy (429)",
                   "message": "model API busy (429), retry 1/4 in 0 s"})
        ]
    );
    assert!(!shown.contains("sk-e2e-never-shown"));
    assert!(stdout(&output).contains("\"text\":\"hi\""), "{shown}");
}

/// A model API that answers 429 to every request, past the daemon's retries: the turn ends
/// with `error`, and `turn_ended` says what the daemon knew of it (the status, that trying
/// again later may help, the wait the API asked for) beside the one line it always said.
#[test]
fn a_model_api_answering_429_past_its_retries_ends_the_turn_with_the_status_and_retryable() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let server = FakeHttp::start(move |seen| {
        if !seen.path().ends_with("/chat/completions") {
            return Reply::not_implemented("fake OpenAI API", seen);
        }
        Reply::json(
            429,
            &json!({"error": {"type": "rate_limit", "message": "slow down"}}),
        )
        .header("retry-after", "0")
    });
    let base = format!("{}/v1", server.url());
    let _daemon = sandbox.start_daemon_in(
        sandbox.root.path(),
        &[
            ("OPENAI_BASE_URL", &base),
            ("OPENAI_API_KEY", "sk-e2e-never-shown"),
        ],
        &[],
    );
    let output = sandbox.cli(&[
        "run",
        "--json",
        "--provider",
        "openai",
        "--model",
        "local-model",
        "hello",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let ended: Vec<Value> = events(&output)
        .into_iter()
        .filter(|e| e["type"] == "turn_ended")
        .collect();
    assert_eq!(
        ended,
        [json!({"type": "turn_ended", "turn": 0, "reason": "error",
                "error": "openai model `local-model`: HTTP 429 after 5 attempt(s): rate_limit: slow down",
                "error_kind": "provider_status", "http_status": 429, "retryable": true,
                "retry_after_ms": 0})]
    );
    let chats = server
        .seen()
        .iter()
        .filter(|seen| seen.path().ends_with("/chat/completions"))
        .count();
    assert_eq!(chats, 5, "the first attempt and four retries");
}

/// Waits (generously) until `needle` is on the screen `times` times; the screen then.
fn wait_for_screen(screen: &Mutex<Vec<u8>>, needle: &str, times: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let shown = text(screen);
        if shown.matches(needle).count() >= times {
            return shown;
        }
        assert!(
            Instant::now() < deadline,
            "no {needle:?} ×{times} in {shown:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_at_a_chat_card_refuses_that_call_only_and_the_next_one_asks_again() {
    use std::io::Write;
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let write = json!({"path": "a.txt", "content": "x\n"});
    let script = sandbox.root.path().join("chat.json");
    std::fs::write(
        &script,
        calls_script(&[("write", write.clone()), ("write", write)]).to_string(),
    )
    .unwrap();
    let pty = Pty::open();
    let mut child = pty
        .attach(sandbox.command("codaris").env("TERM", "xterm").args([
            "chat".as_ref(),
            "--script".as_ref(),
            script.as_os_str(),
            "--cwd".as_ref(),
            proj.as_os_str(),
        ]))
        .spawn()
        .unwrap();
    drop(pty.slave);
    let mut keys = std::fs::File::from(pty.master.try_clone().unwrap());
    let screen = screen_of(pty.master);
    let prompt = "Ctrl-C to refuse just this call? ";
    wait_for_screen(&screen, "you> ", 1);
    keys.write_all(b"write it\r").unwrap();
    wait_for_screen(&screen, prompt, 1);
    // Ctrl-C at the card: this call alone is refused.
    keys.write_all(b"\x03").unwrap();
    // The same call again: asked again, since nothing was recorded against it.
    wait_for_screen(&screen, prompt, 2);
    keys.write_all(b"d\r").unwrap();
    wait_for_screen(&screen, "you> ", 2);
    keys.write_all(b"\x04").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "chat still running: {}",
            text(&screen)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let shown = text(&screen);
    assert_eq!(
        shown.matches("? Codaris wants to create `a.txt`").count(),
        2,
        "{shown}"
    );
    assert!(shown.contains("answered: deny once"), "{shown}");
    assert!(shown.contains("answered: deny\r\n"), "{shown:?}");
    assert_eq!(
        shown.matches("✗ write refused (denied_by_user)").count(),
        2,
        "{shown}"
    );
    assert!(!proj.join("a.txt").exists());
}
