//! `question` through the real binaries with the scripted model: the model finds it by
//! search, `codaris run` answers it from `--answer` flags (a label, `custom:TEXT`, none left:
//! nobody could answer) and refuses a label the question does not offer; a gRPC client holding
//! the turn answers it once with the event's secret (a wrong secret and a second answer are
//! refused, the question staying open to the first), and with no answer before the card
//! timeout the model reads that nobody answered.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use codaris_proto::v1;
use codaris_test_support::sandbox::{Sandbox, events, stderr, stdout};
use hyper_util::rt::TokioIo;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};

fn call(name: &str, args: Value) -> Value {
    json!({"tool_calls": [{"name": name, "args": args}]})
}

fn find() -> Value {
    call(
        "search_tools",
        json!({"query": "ask the user a multiple-choice question"}),
    )
}

/// Which aligner (one of two), and which checks (several, or words of your own).
fn two_questions() -> Value {
    call(
        "question",
        json!({"questions": [
            {"header": "Aligner", "question": "Which aligner?", "options": [
                {"label": "bwa", "description": "short reads"}, {"label": "STAR", "description": "RNA-seq"}]},
            {"header": "Checks", "question": "Which checks?", "multiple": true, "custom": true,
             "options": [{"label": "lint"}, {"label": "test"}]}
        ]}),
    )
}

fn one_question() -> Value {
    call(
        "question",
        json!({"questions": [{"question": "Keep the work directory?", "options": [{"label": "yes"}, {"label": "no"}]}]}),
    )
}

/// The outputs of `question`'s results, in order.
fn answers_read(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result" && e["tool"] == "question")
        .map(|e| {
            assert_eq!(e["decision"]["verdict"], "allow", "{e}");
            e["output"].as_str().unwrap().to_owned()
        })
        .collect()
}

fn project(sandbox: &Sandbox) -> PathBuf {
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    proj
}

#[test]
fn run_answers_from_its_flags_in_order_then_says_nobody_could_answer() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    let script = json!({"turns": [{"rounds": [find(), two_questions(), one_question(), {"text": "Done."}]}]});
    let output = sandbox.run_script(
        &proj,
        &script,
        &[
            "--answer",
            "star",
            "--answer",
            "custom:only lint, not the tests",
        ],
        "set up the alignment",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let asked: Vec<&Value> = events.iter().filter(|e| e["type"] == "question").collect();
    assert_eq!(asked.len(), 2, "{events:?}");
    assert_eq!(asked[0]["questions"][1]["options"][0]["label"], "lint");
    assert_eq!(
        asked[0]["questions"][0]["options"][1]["description"],
        "RNA-seq"
    );
    assert_eq!(
        asked[0]["answers"],
        json!([{"labels": ["star"], "custom": null}, {"labels": [], "custom": "only lint, not the tests"}])
    );
    assert_eq!(asked[1]["answers"], json!([{"labels": [], "custom": null}]));
    assert!(
        !stdout(&output).contains("answer_secret"),
        "the secret never leaves the stream's client"
    );
    assert_eq!(
        answers_read(&events),
        vec![
            "question: the user answered\n1. Aligner: STAR\n2. Checks: (in their own words) only lint, not the tests".to_owned(),
            "question: nobody could answer; choose yourself and say what you chose".to_owned(),
        ]
    );
}

#[test]
fn run_refuses_an_answer_the_question_does_not_offer() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    let script = json!({"turns": [{"rounds": [find(), one_question(), {"text": "Done."}]}]});
    let output = sandbox.run_script(&proj, &script, &["--answer", "maybe"], "clean up");
    assert!(!output.status.success(), "{}", stdout(&output));
    let said = stderr(&output);
    assert!(
        said.contains("question 1 has no option `maybe`; its options: `yes`, `no`"),
        "{said}"
    );
    // A custom answer where the question takes none is refused the same way.
    let output = sandbox.run_script(&proj, &script, &["--answer", "custom:later"], "clean up");
    assert!(!output.status.success(), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("question 1 takes no answer in your own words"),
        "{}",
        stderr(&output)
    );
}

async fn connect(socket: PathBuf) -> Channel {
    Endpoint::from_static("http://codarisd.local")
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let socket = socket.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?)) }
        }))
        .await
        .unwrap()
}

type Sessions = v1::sessions_client::SessionsClient<Channel>;

/// A session playing `script` in `cwd`, its turn started: the client and the turn's stream.
async fn turn(
    sandbox: &Sandbox,
    cwd: &Path,
    script: &Value,
) -> (Sessions, String, tonic::Streaming<v1::TurnEvent>) {
    let path = sandbox.root.path().join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let mut sessions = Sessions::new(connect(sandbox.socket()).await);
    let session = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: cwd.display().to_string(),
            provider: "scripted".to_owned(),
            script: path.display().to_string(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let stream = sessions
        .turn(v1::TurnRequest {
            session_id: session.id.clone(),
            text: "go".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    (sessions, session.id, stream)
}

/// The next event of `kind` on the stream (the others are passed over).
async fn next(
    stream: &mut tonic::Streaming<v1::TurnEvent>,
    kind: fn(&v1::turn_event::Event) -> bool,
) -> v1::turn_event::Event {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(60), stream.message())
            .await
            .expect("an event within a minute")
            .unwrap()
            .expect("the turn goes on")
            .event
            .unwrap();
        if kind(&event) {
            return event;
        }
    }
}

fn question_of(event: v1::turn_event::Event) -> v1::Question {
    match event {
        v1::turn_event::Event::Question(q) => q,
        other => panic!("not a question: {other:?}"),
    }
}

fn result_of(event: v1::turn_event::Event) -> v1::ToolResult {
    match event {
        v1::turn_event::Event::ToolResult(r) => r,
        other => panic!("not a result: {other:?}"),
    }
}

fn is_question(e: &v1::turn_event::Event) -> bool {
    matches!(e, v1::turn_event::Event::Question(_))
}

fn is_question_result(e: &v1::turn_event::Event) -> bool {
    matches!(e, v1::turn_event::Event::ToolResult(r) if r.tool == "question")
}

fn answer(
    session_id: &str,
    question: &v1::Question,
    secret: &str,
    labels: &[&str],
) -> v1::AnswerQuestionRequest {
    v1::AnswerQuestionRequest {
        session_id: session_id.to_owned(),
        question_id: question.id.clone(),
        answer_secret: secret.to_owned(),
        answers: vec![v1::QuestionAnswer {
            labels: labels.iter().map(|l| (*l).to_owned()).collect(),
            custom: String::new(),
        }],
    }
}

#[test]
fn only_the_events_secret_answers_and_only_once() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    let _daemon = sandbox.start_daemon(&[]);
    let script = json!({"turns": [{"rounds": [find(), one_question(), {"text": "Done."}]}]});
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let (mut sessions, id, mut stream) = turn(&sandbox, &proj, &script).await;
            let question = question_of(next(&mut stream, is_question).await);
            assert_eq!(question.questions[0].options.len(), 2);
            assert_eq!(question.answer_secret.len(), 64);

            // A wrong secret (and none at all) is refused, and the question stays open.
            let mut wrong = question.answer_secret.clone().into_bytes();
            wrong[0] = if wrong[0] == b'0' { b'1' } else { b'0' };
            for secret in [String::from_utf8(wrong).unwrap(), String::new()] {
                let refused = sessions
                    .answer_question(answer(&id, &question, &secret, &["no"]))
                    .await
                    .unwrap_err();
                assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
            }
            // An answer that does not fit is refused too, and leaves it open.
            let unfit = sessions
                .answer_question(answer(&id, &question, &question.answer_secret, &["maybe"]))
                .await
                .unwrap_err();
            assert_eq!(unfit.code(), tonic::Code::InvalidArgument, "{unfit:?}");

            let first = sessions
                .answer_question(answer(&id, &question, &question.answer_secret, &["no"]))
                .await
                .unwrap()
                .into_inner();
            assert!(first.accepted);
            let second = sessions
                .answer_question(answer(&id, &question, &question.answer_secret, &["yes"]))
                .await
                .unwrap()
                .into_inner();
            assert!(!second.accepted, "answered twice: the second is refused");

            let result = result_of(next(&mut stream, is_question_result).await);
            assert_eq!(
                result.output,
                "question: the user answered\n1. Keep the work directory?: no"
            );
            assert!(!result.failed);
        });
}

#[test]
fn no_answer_before_the_timeout_is_an_answer_the_model_reads() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[daemon]\ncard_timeout_seconds = 1\n");
    let proj = project(&sandbox);
    let _daemon = sandbox.start_daemon(&[]);
    let script = json!({"turns": [{"rounds": [find(), one_question(), {"text": "Done."}]}]});
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let (mut sessions, id, mut stream) = turn(&sandbox, &proj, &script).await;
            let question = question_of(next(&mut stream, is_question).await);
            let result = result_of(next(&mut stream, is_question_result).await);
            assert_eq!(
                result.output,
                "question: nobody answered within 1 s; choose yourself and say what you chose, or ask again in your reply"
            );
            assert!(!result.failed);
            // Too late: the question timed out.
            let late = sessions
                .answer_question(answer(&id, &question, &question.answer_secret, &["yes"]))
                .await
                .unwrap()
                .into_inner();
            assert!(!late.accepted);
        });
}

#[test]
fn chat_shows_numbered_options_and_takes_a_number_asking_again_for_one_it_does_not_offer() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    let script = json!({"turns": [{"rounds": [find(), one_question(), {"text": "Kept it."}]}]});
    let mut chat = sandbox.spawn_chat(&script, Some(&proj));
    // `3` is no option and `1,2` two for a question that takes one: asked again each time.
    chat.stdin
        .take()
        .unwrap()
        .write_all(b"clean up\n3\n1,2\n2\n")
        .unwrap();
    let output = chat.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    for needle in [
        "? 1. Keep the work directory?\n    1) yes\n    2) no",
        "answered: no",
        "Kept it.",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    assert!(sandbox.cli(&["daemon", "stop"]).status.success());
}
