//! `codaris run`'s output for people (issue 46): the model's text streams to standard output
//! unchanged, one paragraph however many pieces it came in, with every other line on standard
//! error; a command's result shows its exit code and last lines folded, without the decision
//! code unless `--verbose`; turns are numbered from 1 for people and from 0 in JSON; the prompt
//! read from standard input (`run -`), and `--context FILE` and piped standard input added to
//! the prompt as context.
//!
//! The model is a stand-in for OpenAI's Chat Completions API on loopback that streams its
//! answer as 200 one-token `chat.completion.chunk` deltas.

use std::io::Write;
use std::process::{Output, Stdio};

use codaris_test_support::fake_http::{FakeHttp, Reply, Seen};
use codaris_test_support::sandbox::{Daemon, Sandbox, calls_script, events, stderr, stdout};
use serde_json::{Value, json};

const KEY: &str = "sk-first-hour";
const MODEL: &str = "local-model";
const TOKENS: usize = 200;

/// The answer's 200 pieces: words with their spaces, a comma, and a full stop at the end.
fn tokens() -> Vec<String> {
    (0..TOKENS)
        .map(|i| match i {
            0 => "The".to_owned(),
            i if i == TOKENS - 1 => ".".to_owned(),
            i if i % 17 == 0 => ",".to_owned(),
            i => format!(" w{i}"),
        })
        .collect()
}

/// A streamed Chat Completions answer of one delta per token, then the stop.
fn streamed(tokens: &[String]) -> String {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "1", "object": "chat.completion.chunk", "model": MODEL,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut body = format!(
        "data: {}\n\n",
        chunk(json!({"role": "assistant", "content": ""}), Value::Null)
    );
    for token in tokens {
        body.push_str(&format!(
            "data: {}\n\n",
            chunk(json!({"content": token}), Value::Null)
        ));
    }
    body.push_str(&format!(
        "data: {}\n\ndata: [DONE]\n\n",
        chunk(json!({}), json!("stop"))
    ));
    body
}

fn fake_openai() -> FakeHttp {
    let body = streamed(&tokens());
    FakeHttp::start(move |seen: &Seen| {
        if seen.method == "POST" && seen.path().ends_with("/chat/completions") {
            Reply::new(200, "text/event-stream", body.clone())
        } else {
            Reply::not_implemented("fake OpenAI API", seen)
        }
    })
}

/// A daemon whose OpenAI provider is `server`.
fn daemon_for(sandbox: &Sandbox, server: &FakeHttp) -> Daemon {
    sandbox.write_config("");
    let base = format!("{}/v1", server.url());
    sandbox.start_daemon_in(
        sandbox.root.path(),
        &[("OPENAI_BASE_URL", &base), ("OPENAI_API_KEY", KEY)],
        &[],
    )
}

/// `codaris run --provider openai --model local-model ARGS` with `input` on standard input
/// (`None`: standard input is `/dev/null`).
fn run_openai(sandbox: &Sandbox, args: &[&str], input: Option<&str>) -> Output {
    let mut command = sandbox.command("codaris");
    command.args(["run", "--provider", "openai", "--model", MODEL]);
    command.args(args);
    command.current_dir(sandbox.root.path());
    let Some(input) = input else {
        return command.output().expect("run codaris");
    };
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start codaris");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("send standard input");
    child.wait_with_output().expect("run codaris")
}

/// The text of the last user message of each chat request the stand-in received.
fn prompts_seen(server: &FakeHttp) -> Vec<String> {
    server
        .seen()
        .iter()
        .filter(|seen| seen.path().ends_with("/chat/completions"))
        .filter_map(Seen::json)
        .filter_map(|body| {
            let messages = body["messages"].as_array()?.clone();
            let user = messages.iter().rev().find(|m| m["role"] == "user")?.clone();
            match &user["content"] {
                Value::String(text) => Some(text.clone()),
                Value::Array(parts) => Some(
                    parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<String>(),
                ),
                _ => None,
            }
        })
        .collect()
}

fn succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "{}{}",
        stdout(output),
        stderr(output)
    );
}

#[test]
fn run_streams_two_hundred_deltas_to_stdout_as_one_line_and_the_rest_to_stderr() {
    let sandbox = Sandbox::new();
    let server = fake_openai();
    let _daemon = daemon_for(&sandbox, &server);
    let sentence: String = tokens().concat();

    let output = run_openai(&sandbox, &["say it"], None);
    succeeded(&output);
    let answer = stdout(&output);
    assert!(
        answer == sentence || answer == format!("{sentence}\n"),
        "stdout is not the deltas concatenated:\n{answer:?}\nwanted\n{sentence:?}"
    );
    assert_eq!(answer.lines().count(), 1, "{answer:?}");
    // Everything else is for people, on standard error, turns numbered from 1.
    let said = stderr(&output);
    for needle in ["session s", "── turn 1\n", "── turn 1 ended: end_turn"] {
        assert!(said.contains(needle), "missing {needle:?} in\n{said}");
    }
    assert!(
        !said.contains(" w18 w19"),
        "the model's text is on stderr too:\n{said}"
    );

    // The JSON contract is unchanged: every delta its own `text` event, turns from 0.
    let json = run_openai(&sandbox, &["--json", "say it"], None);
    succeeded(&json);
    let events = events(&json);
    let texts: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "text")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(
        texts.len() > 1,
        "the deltas reach the CLI as pieces: {texts:?}"
    );
    assert_eq!(texts.concat(), sentence);
    let turns: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "turn_started" || e["type"] == "turn_ended")
        .map(|e| &e["turn"])
        .collect();
    assert_eq!(turns, [&json!(0), &json!(0)], "{events:#?}");
}

#[test]
fn text_blocks_of_different_rounds_do_not_run_together() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("a.txt"), "one\n").unwrap();
    let script = json!({"turns": [{"rounds": [
        {"text": "Let me look.", "tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]},
        {"text": "It says one."}
    ]}]});
    let mut args = sandbox.run_args(&proj, &script, &[], "what is in a.txt");
    args.retain(|arg| arg != "--json");
    let output = sandbox.command("codaris").args(&args).output().unwrap();
    succeeded(&output);
    assert_eq!(stdout(&output), "Let me look.\n\nIt says one.\n");
    assert!(stderr(&output).contains("→ "), "{}", stderr(&output));
}

#[test]
fn a_commands_exit_code_and_last_lines_are_shown_without_the_decision_code() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let script = calls_script(&[(
        "run_command",
        json!({"command": "for i in $(seq 1 20); do echo line-$i; done; echo oops >&2"}),
    )]);
    let mut args = sandbox.run_args(&proj, &script, &["--approve", "once"], "count");
    args.retain(|arg| arg != "--json");
    let output = sandbox.command("codaris").args(&args).output().unwrap();
    succeeded(&output);
    assert_eq!(stdout(&output), "done\n", "{}", stderr(&output));
    let said = stderr(&output);
    let folded = "  ✓ run_command: exit code 0\n    … ";
    assert!(said.contains(folded), "no folded result in\n{said}");
    assert!(
        said.contains(
            " more lines\n    line-17\n    line-18\n    line-19\n    line-20\n    stderr:\n    oops\n"
        ),
        "no last lines in\n{said}"
    );
    assert!(
        !said.contains("line-16"),
        "more than the last lines:\n{said}"
    );
    assert!(!said.contains("allowed_by_"), "a decision code:\n{said}");

    // `--verbose` keeps the codes (and the output).
    args.insert(1, "--verbose".to_owned());
    let output = sandbox.command("codaris").args(&args).output().unwrap();
    succeeded(&output);
    let said = stderr(&output);
    assert!(
        said.contains("  allow allowed_by_grant: exit code: 0\n    … "),
        "no decision code with --verbose in\n{said}"
    );
    assert!(said.contains("    line-20\n"), "{said}");
}

#[test]
fn run_dash_reads_the_prompt_from_stdin() {
    let sandbox = Sandbox::new();
    let server = fake_openai();
    let _daemon = daemon_for(&sandbox, &server);
    let output = run_openai(&sandbox, &["-"], Some("explain main.nf\n"));
    succeeded(&output);
    assert_eq!(prompts_seen(&server), ["explain main.nf"]);

    // Nothing on standard input is no prompt, said in one line; nothing reaches the model.
    let output = run_openai(&sandbox, &["-"], Some(""));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "codaris: no input: expected a prompt on standard input\n"
    );
    assert_eq!(prompts_seen(&server).len(), 1);
}

/// A program that starts `codaris run "…"` with a pipe it never writes to or closes (a CI
/// runner, `subprocess.Popen(stdin=PIPE)`) must not hang the run: after a short wait the
/// prompt goes alone, and standard error says why the pipe was not read.
#[test]
fn a_pipe_left_open_beside_a_prompt_does_not_hang_the_run() {
    let sandbox = Sandbox::new();
    let server = fake_openai();
    let _daemon = daemon_for(&sandbox, &server);
    let mut child = sandbox
        .command("codaris")
        .args(["run", "--provider", "openai", "--model", MODEL, "hi"])
        .current_dir(sandbox.root.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start codaris");
    // Held open, never written: `wait_with_output` would close it otherwise.
    let _open = child.stdin.take().expect("stdin");
    let output = child.wait_with_output().expect("run codaris");
    succeeded(&output);
    assert_eq!(prompts_seen(&server), ["hi"]);
    assert!(
        stderr(&output).contains("nothing arrived on standard input in 3 s; going on without it"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn context_files_and_piped_stdin_reach_the_model_named_before_the_prompt() {
    let sandbox = Sandbox::new();
    let server = fake_openai();
    let _daemon = daemon_for(&sandbox, &server);
    std::fs::write(sandbox.root.path().join("build.log"), "ERROR step FASTQC\n").unwrap();
    let output = run_openai(
        &sandbox,
        &["--context", "build.log", "why did this fail"],
        Some("exit status 137\n"),
    );
    succeeded(&output);
    assert_eq!(
        prompts_seen(&server),
        [
            "<context source=\"build.log\">\nERROR step FASTQC\n</context>\n\n<context source=\"standard input\">\nexit status 137\n</context>\n\nwhy did this fail"
        ]
    );

    // A binary file is refused in one line, before any request.
    std::fs::write(sandbox.root.path().join("reads.bam"), b"BAM\x01\0\0\xff").unwrap();
    let output = run_openai(&sandbox, &["--context", "reads.bam", "why"], None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "codaris: cannot use `reads.bam` as context: it is binary, not UTF-8 text\n"
    );
    // So is one over the limit.
    let big = "x".repeat(300 * 1024);
    std::fs::write(sandbox.root.path().join("big.log"), &big).unwrap();
    let output = run_openai(&sandbox, &["--context", "big.log", "why"], None);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).starts_with("codaris: cannot use `big.log` as context: it is over "),
        "{}",
        stderr(&output)
    );
    assert_eq!(stderr(&output).lines().count(), 1);
    assert_eq!(
        prompts_seen(&server).len(),
        1,
        "no request for a refused context"
    );
}

/// `codaris chat ARGS` playing `script` in `proj`, sent `input`: its output.
fn chat(
    sandbox: &Sandbox,
    proj: &std::path::Path,
    script: &Value,
    args: &[&str],
    input: &str,
) -> Output {
    let path = sandbox.root.path().join("chat.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let mut child = sandbox
        .command("codaris")
        .arg("chat")
        .arg("--script")
        .arg(&path)
        .arg("--cwd")
        .arg(proj)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn chat_shows_a_commands_output_and_the_codes_only_with_verbose() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let script = calls_script(&[("run_command", json!({"command": "echo built-it"}))]);
    let output = chat(&sandbox, &proj, &script, &[], "build\no\n");
    succeeded(&output);
    let text = stdout(&output);
    assert!(
        text.contains("  ✓ run_command: exit code 0\n    built-it\n"),
        "no command output in\n{text}"
    );
    assert!(text.contains("── turn 1 ended: end_turn"), "{text}");
    assert!(!text.contains("allowed_by_"), "{text}");

    let output = chat(&sandbox, &proj, &script, &["--verbose"], "build\no\n");
    succeeded(&output);
    let text = stdout(&output);
    assert!(
        text.contains("  allow allowed_by_grant: exit code: 0\n    built-it\n"),
        "no decision code with --verbose in\n{text}"
    );
}
