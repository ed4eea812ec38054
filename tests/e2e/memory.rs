//! The memory subagent through the real binaries (`[memory] enabled`), against a stand-in for
//! OpenAI's Chat Completions API on loopback that records every request, so what each model
//! was offered and sent is checked: a note kept by one session's memory subagent and recalled
//! by a later one, reaching the main model at the start of its next round; an ask-mode turn's
//! subagent that may only recall; paths that would leave their scope refused.
//!
//! The stand-in tells the two models apart by the system prompt: the memory subagent's says
//! "You are the memory of this agent". It plays the memory subagent by a plan (the calls it
//! makes, then its recall), the main model by the test's `main`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use codaris_test_support::fake_http::{FakeHttp, Reply, Seen};
use codaris_test_support::sandbox::{Sandbox, events, stderr, wait_for};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const MODEL: &str = "local-model";

fn sse(chunks: &[Value]) -> Reply {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    Reply::new(200, "text/event-stream", body)
}

fn chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "1", "object": "chat.completion.chunk", "model": MODEL,
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn say(text: &str) -> Reply {
    sse(&[
        chunk(json!({"role": "assistant", "content": text}), Value::Null),
        chunk(json!({}), json!("stop")),
    ])
}

fn call(id: &str, tool: &str, args: &Value) -> Reply {
    sse(&[
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
                   "function": {"name": tool, "arguments": args.to_string()}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
    ])
}

/// Whether a request is a memory subagent's.
fn remembering(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.contains("You are the memory of this agent"))
}

/// The contents of a request's tool results, in order.
fn results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The person's message a request answers (the first user message).
fn prompt(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The tools a request offered, by name.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// What the memory subagent does for a person's message: its calls, then its recall.
struct Plan {
    calls: Vec<(&'static str, Value)>,
    recall: &'static str,
}

/// The stand-in: a memory subagent's request is answered by `plan` of the person's message
/// (its next call, or its recall once every call has its result); the main model's by `main`
/// of the request and how many results it carries.
fn model(
    plan: impl Fn(&str) -> Plan + Send + Sync + 'static,
    main: impl Fn(&Value, usize) -> Reply + Send + Sync + 'static,
) -> FakeHttp {
    FakeHttp::start(move |seen: &Seen| {
        if seen.path() != "/v1/chat/completions" {
            return Reply::not_implemented("fake OpenAI API", seen);
        }
        let body = seen.json().unwrap_or(Value::Null);
        let done = results(&body).len();
        if remembering(&body) {
            let plan = plan(&prompt(&body));
            return match plan.calls.get(done) {
                Some((tool, args)) => call(&format!("m{done}"), tool, args),
                None => say(plan.recall),
            };
        }
        main(&body, done)
    })
}

fn requests(server: &FakeHttp) -> Vec<Value> {
    server
        .seen()
        .iter()
        .filter(|seen| seen.path() == "/v1/chat/completions")
        .filter_map(Seen::json)
        .collect()
}

/// The memory subagent's requests for the person's message holding `words`.
fn memory_requests(server: &FakeHttp, words: &str) -> Vec<Value> {
    requests(server)
        .into_iter()
        .filter(|b| remembering(b) && prompt(b).contains(words))
        .collect()
}

/// Waits until the memory subagent for the message holding `words` sent its last request
/// (the one that carries all `calls` results).
fn memory_done(server: &FakeHttp, words: &str, calls: usize) -> Value {
    wait_for(Duration::from_secs(60), || {
        memory_requests(server, words)
            .iter()
            .any(|b| results(b).len() == calls)
    });
    memory_requests(server, words)
        .into_iter()
        .find(|b| results(b).len() == calls)
        .unwrap()
}

fn sandbox_on() -> (Sandbox, PathBuf) {
    let sandbox = Sandbox::new();
    sandbox.write_config("[memory]\nenabled = true\n");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("main.nf"), "workflow { }\n").unwrap();
    (sandbox, proj)
}

/// `codaris run --json` of `prompt` in `cwd` against the stand-in, with `flags`.
fn run_command(
    sandbox: &Sandbox,
    cwd: &Path,
    server: &FakeHttp,
    flags: &[&str],
    prompt: &str,
) -> std::process::Command {
    let mut command = sandbox.command("codaris");
    command
        .args([
            "run",
            "--json",
            "--provider",
            "openai",
            "--model",
            MODEL,
            "--base-url",
        ])
        .arg(format!("{}/v1", server.url()))
        .arg("--cwd")
        .arg(cwd)
        .args(flags)
        .arg(prompt);
    command
}

fn run(
    sandbox: &Sandbox,
    cwd: &Path,
    server: &FakeHttp,
    flags: &[&str],
    prompt: &str,
) -> Vec<Value> {
    let output = run_command(sandbox, cwd, server, flags, prompt)
        .output()
        .expect("run codaris");
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(&output)
    );
    events(&output)
}

/// The memory subagents' sessions, as `codaris sessions --all --json` lists them.
fn memory_sessions(sandbox: &Sandbox) -> Vec<Value> {
    let output = sandbox.cli(&["sessions", "--all", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    listed
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| {
            s["agent"]
                .as_str()
                .is_some_and(|a| a.starts_with("memory: "))
        })
        .cloned()
        .collect()
}

/// The ledger's decisions of `session`, as `codaris ledger decisions` lists them.
fn decisions(sandbox: &Sandbox, session: &str) -> Vec<Value> {
    let output = sandbox.cli(&[
        "ledger",
        "decisions",
        "--session",
        session,
        "--limit",
        "100",
        "--json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    events(&output)
}

const MEMORY_TOOLS: [&str; 6] = [
    "codaris_memory_search",
    "codaris_memory_list",
    "codaris_memory_read",
    "codaris_memory_mkdir",
    "codaris_memory_save",
    "codaris_memory_delete",
];

const KEEP: &str = "the Slurm cluster here runs STAR only in the long queue";
const RECALL: &str = "align the samples with STAR on the cluster";

/// Session one's memory subagent keeps a note; session two's finds and reads it, and what it
/// recalls reaches the main model with the request after the one the turn started with — the
/// main turn's first request went out without waiting for it. Each subagent was offered the
/// six memory tools and nothing else, the main model none of them; the subagents' decisions
/// are recorded under their own sessions and replay clean.
#[test]
fn a_note_kept_in_one_session_is_recalled_in_a_later_one_at_the_next_round() {
    let (sandbox, proj) = sandbox_on();
    let server = model(
        |prompt| {
            if prompt.contains(KEEP) {
                Plan {
                    calls: vec![(
                        "codaris_memory_save",
                        json!({"title": "Slurm queue", "scope": "project", "relative_path": "cluster/slurm",
                               "body": "STAR runs only in the `long` queue on this cluster."}),
                    )],
                    recall: "nothing relevant",
                }
            } else {
                Plan {
                    calls: vec![
                        (
                            "codaris_memory_search",
                            json!({"query": "which queue does STAR need"}),
                        ),
                        (
                            "codaris_memory_read",
                            json!({"path": "project:cluster/slurm.md"}),
                        ),
                    ],
                    recall: "project:cluster/slurm.md: STAR runs only in the long queue here.",
                }
            }
        },
        |body, done| {
            if prompt(body).contains(KEEP) {
                return say("noted");
            }
            if results(body)
                .iter()
                .any(|r| r.contains("[memory (subagent"))
                || done >= 20
            {
                return say("I will use the long queue.");
            }
            // Working on (a round at a time) until the recall arrives with a result.
            call(
                &format!("c{done}"),
                "search_tools",
                &json!({"query": format!("align reads {done}")}),
            )
            .delayed(Duration::from_millis(300))
        },
    );

    run(&sandbox, &proj, &server, &[], KEEP);
    let kept = memory_done(&server, KEEP, 1);
    assert_eq!(results(&kept), ["saved `project:cluster/slurm.md`"]);
    let note = proj.join(".codaris/memory/cluster/slurm.md");
    assert_eq!(
        std::fs::read_to_string(&note).unwrap(),
        "# Slurm queue\n\nSTAR runs only in the `long` queue on this cluster.\n"
    );

    let events = run(&sandbox, &proj, &server, &[], RECALL);
    let answer: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(answer.contains("I will use the long queue."), "{events:#?}");
    let recalled = memory_done(&server, RECALL, 2);
    let found = results(&recalled);
    assert!(
        found[0].contains("- project:cluster/slurm.md: Slurm queue"),
        "{found:?}"
    );
    assert!(
        found[1].contains("STAR runs only in the `long` queue"),
        "{found:?}"
    );

    let main: Vec<Value> = requests(&server)
        .into_iter()
        .filter(|b| !remembering(b) && prompt(b).contains(RECALL))
        .collect();
    // The turn's first request carried no recall: it never waited for the subagent.
    assert!(!main[0].to_string().contains("[memory"), "{}", main[0]);
    let with_memory = main
        .iter()
        .find(|b| results(b).iter().any(|r| r.contains("[memory (subagent")))
        .expect("a request of the main turn carries the recall");
    let note_in = results(with_memory).join("\n");
    assert!(
        note_in.contains("recalled for this message:\nproject:cluster/slurm.md: STAR runs only in the long queue here."),
        "{note_in}"
    );
    for body in &main {
        let tools = offered(body);
        assert!(
            !tools.iter().any(|t| t.starts_with("codaris_memory_")),
            "{tools:?}"
        );
    }
    for body in memory_requests(&server, KEEP)
        .iter()
        .chain(&memory_requests(&server, RECALL))
    {
        assert_eq!(offered(body), MEMORY_TOOLS, "{body}");
    }

    // Each ends once it answered: nothing continues a memory subagent.
    wait_for(Duration::from_secs(30), || {
        memory_sessions(&sandbox)
            .iter()
            .filter(|c| c["state"] == "ended")
            .count()
            == 2
    });
    let children = memory_sessions(&sandbox);
    assert_eq!(children.len(), 2, "{children:#?}");
    assert!(
        children
            .iter()
            .all(|c| c["parent_session_id"].is_string() && c["activity"] == "agent"),
        "{children:#?}"
    );
    // Each subagent's calls are recorded under its own session.
    let recorded: Vec<Vec<String>> = children
        .iter()
        .map(|c| {
            decisions(&sandbox, c["id"].as_str().unwrap())
                .iter()
                .filter(|d| d["decision"]["verdict"] == "allow")
                .map(|d| d["tool"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .collect();
    assert!(
        recorded.contains(&vec!["codaris_memory_save".to_owned()]),
        "{recorded:?}"
    );
    assert!(
        recorded.iter().any(|r| r.len() == 2
            && r.contains(&"codaris_memory_search".to_owned())
            && r.contains(&"codaris_memory_read".to_owned())),
        "{recorded:?}"
    );
    sandbox.stop_daemon();
    sandbox.replay_clean();
}

/// An ask-mode turn's memory subagent is offered the three tools that read, and a save it
/// calls anyway is refused by the policy and recorded so: no note is written.
#[test]
fn an_ask_mode_turns_memory_subagent_only_recalls() {
    let (sandbox, proj) = sandbox_on();
    let server = model(
        |_| Plan {
            calls: vec![(
                "codaris_memory_save",
                json!({"title": "t", "body": "b", "scope": "project", "relative_path": "sneaked.md"}),
            )],
            recall: "nothing relevant",
        },
        |_, _| say("an answer"),
    );
    run(
        &sandbox,
        &proj,
        &server,
        &["--mode", "ask"],
        "what does main.nf hold?",
    );
    let last = memory_done(&server, "what does main.nf hold?", 1);
    assert_eq!(
        offered(&last),
        &MEMORY_TOOLS[..3],
        "the recall-only subagent is offered the reading three"
    );
    let refused = results(&last);
    assert!(refused[0].contains("only recalls"), "{refused:?}");
    assert!(!proj.join(".codaris/memory/sneaked.md").exists());
    let listed = memory_sessions(&sandbox);
    assert_eq!(
        listed.len(),
        1,
        "{}",
        String::from_utf8_lossy(&sandbox.cli(&["sessions", "--all", "--json"]).stdout)
    );
    let child = listed[0]["id"].as_str().unwrap().to_owned();
    let save = decisions(&sandbox, &child)
        .into_iter()
        .find(|d| d["tool"] == "codaris_memory_save")
        .expect("the refused save is recorded");
    assert_eq!(save["decision"]["verdict"], "deny", "{save}");
    assert_eq!(save["decision"]["code"], "tool_withheld", "{save}");
    sandbox.stop_daemon();
    sandbox.replay_clean();
}

/// Every way out of a scope is refused by the tool, nothing outside is read or written: `..`,
/// an absolute path, `~`, `$VAR`, a `file:` URI, and a symbolic link (as a folder on the way,
/// as the note itself) planted beneath the project's scope.
#[test]
fn memory_paths_that_leave_their_scope_are_refused() {
    let (sandbox, proj) = sandbox_on();
    let outside = sandbox.root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("secret.md"),
        "# secret\n\nthe outside secret\n",
    )
    .unwrap();
    std::fs::write(
        proj.join("beside.md"),
        "# beside\n\nthe project's own file\n",
    )
    .unwrap();
    let scope = proj.join(".codaris/memory");
    std::fs::create_dir_all(&scope).unwrap();
    std::os::unix::fs::symlink(&outside, scope.join("link")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.md"), scope.join("alias.md")).unwrap();
    let attempts: Vec<(&'static str, Value, &'static str)> = vec![
        (
            "codaris_memory_read",
            json!({"path": "project:../../beside.md"}),
            "climbs with `..`",
        ),
        (
            "codaris_memory_read",
            json!({"path": "user:/etc/passwd"}),
            "is absolute",
        ),
        (
            "codaris_memory_read",
            json!({"path": "user:~/secret.md"}),
            "`~`",
        ),
        (
            "codaris_memory_read",
            json!({"path": "user:$HOME/secret.md"}),
            "`$`",
        ),
        (
            "codaris_memory_read",
            json!({"path": "file:///etc/passwd"}),
            "is not a memory scope",
        ),
        (
            "codaris_memory_read",
            json!({"path": "project:file:///etc/passwd"}),
            "`:`",
        ),
        (
            "codaris_memory_read",
            json!({"path": "project:link/secret.md"}),
            "symbolic link",
        ),
        (
            "codaris_memory_read",
            json!({"path": "project:alias.md"}),
            "symbolic link",
        ),
        (
            "codaris_memory_list",
            json!({"path": "project:link"}),
            "symbolic link",
        ),
        (
            "codaris_memory_save",
            json!({"title": "t", "body": "b", "scope": "project", "relative_path": "../../escaped.md"}),
            "climbs with `..`",
        ),
        (
            "codaris_memory_save",
            json!({"title": "t", "body": "b", "scope": "project", "relative_path": "link/planted.md"}),
            "symbolic link",
        ),
        (
            "codaris_memory_delete",
            json!({"path": "project:link"}),
            "symbolic link",
        ),
        (
            "codaris_memory_delete",
            json!({"path": "project:"}),
            "never deleted",
        ),
    ];
    let calls: Vec<(&'static str, Value)> =
        attempts.iter().map(|(t, a, _)| (*t, a.clone())).collect();
    let count = calls.len();
    let server = model(
        move |_| Plan {
            calls: calls.clone(),
            recall: "nothing relevant",
        },
        |_, _| say("done"),
    );
    run(&sandbox, &proj, &server, &[], "tidy the notes");
    let last = memory_done(&server, "tidy the notes", count);
    let answers = results(&last);
    for ((tool, args, why), answer) in attempts.iter().zip(&answers) {
        assert!(
            answer.starts_with(&format!("{tool}: ")) && answer.contains(why),
            "{tool} {args}: {answer}"
        );
    }
    let everything = memory_requests(&server, "tidy the notes")
        .iter()
        .map(Value::to_string)
        .collect::<String>();
    assert!(!everything.contains("the outside secret"));
    assert!(!everything.contains("the project's own file"));
    assert!(!everything.contains("root:x:0"));
    assert!(!proj.join("escaped.md").exists());
    assert!(!sandbox.root.path().join("escaped.md").exists());
    assert!(!outside.join("planted.md").exists());
    assert!(outside.join("secret.md").exists() && scope.join("link").exists());
}

/// `codaris memory list|show|rm` for people: the notes of both scopes through the daemon, a note
/// shown and removed, and a path that would leave its scope refused in one line.
#[test]
fn people_list_show_and_remove_notes() {
    let (sandbox, proj) = sandbox_on();
    let project = proj.join(".codaris/memory/cluster");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("slurm.md"), "# Slurm queue\n\nUse `long`.\n").unwrap();
    // The configuration directory is the one `CODARIS_CONFIG` names the file in.
    let user = sandbox.root.path().join("memory");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("style.md"), "# Review style\n\nSnapshots.\n").unwrap();
    let cwd = proj.display().to_string();
    let cli = |args: &[&str]| {
        let mut all = vec!["memory"];
        all.extend_from_slice(args);
        sandbox.cli(&all)
    };

    // The switch is shown where the configuration is: `status` and `config show`.
    let status: Value = serde_json::from_slice(&sandbox.cli(&["status", "--json"]).stdout).unwrap();
    assert_eq!(status["memory_enabled"], true, "{status}");
    let shown = sandbox.cli(&["config", "show"]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    let line = shown.lines().find(|l| l.starts_with("memory.enabled"));
    assert!(line.is_some_and(|l| l.ends_with("true")), "{shown}");

    let listed = cli(&["list", "--json", "--cwd", &cwd]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed["enabled"], true);
    let paths: Vec<&str> = listed["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["path"].as_str())
        .collect();
    assert_eq!(paths, ["user:style.md", "project:cluster/slurm.md"]);
    assert_eq!(listed["notes"][1]["title"], "Slurm queue");

    let shown = cli(&["show", "--json", "--cwd", &cwd, "project:cluster/slurm.md"]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["body"], "Use `long`.");

    for bad in [
        "project:../main.nf",
        "/etc/passwd",
        "user:~/x.md",
        "project:",
    ] {
        let refused = cli(&["rm", "--cwd", &cwd, bad]);
        assert!(!refused.status.success(), "{bad}");
        let said = stderr(&refused);
        assert_eq!(said.trim().lines().count(), 1, "{bad}: {said}");
    }
    assert!(proj.join("main.nf").exists());

    let removed = cli(&["rm", "--cwd", &cwd, "project:cluster"]);
    assert!(removed.status.success(), "{}", stderr(&removed));
    assert!(!project.exists());
    assert!(
        proj.join(".codaris/memory").exists(),
        "the scope's root stays"
    );
}

/// Off by default: `status` says so, and a turn starts no memory subagent even when its script
/// has one to play.
#[test]
fn memory_is_off_by_default_and_then_no_subagent_starts() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let script = json!({
        "turns": [{"rounds": [{"text": "hello"}]}],
        "memory": [{"turns": [{"rounds": [{"tool_calls": [{"name": "codaris_memory_save",
            "args": {"title": "t", "body": "b", "scope": "project", "relative_path": "x.md"}}]}]}]}]
    });
    let output = sandbox.run_script(&proj, &script, &[], "hi");
    assert!(output.status.success(), "{}", stderr(&output));
    let status: Value = serde_json::from_slice(&sandbox.cli(&["status", "--json"]).stdout).unwrap();
    assert_eq!(status["memory_enabled"], false, "{status}");
    // A memory subagent's session would be made as the turn starts, long before `run` exits.
    assert!(memory_sessions(&sandbox).is_empty());
    assert!(!proj.join(".codaris").exists());
}

/// A turn the person cancels (Ctrl-C on `codaris run`) stops its memory subagent with it: the
/// subagent, still waiting on its model, ends within seconds, not at its five-minute limit.
#[test]
fn a_cancelled_turn_stops_its_memory_subagent() {
    let (sandbox, proj) = sandbox_on();
    let server = FakeHttp::start(|seen: &Seen| {
        let body = seen.json().unwrap_or(Value::Null);
        if remembering(&body) {
            // The model keeps the subagent waiting far past the test.
            return say("nothing relevant").delayed(Duration::from_secs(120));
        }
        match results(&body).len() {
            0 => call(
                "c0",
                "run_command",
                &json!({"command": "echo $$ > sleep.pid && exec sleep 300"}),
            ),
            _ => say("done"),
        }
    });
    let mut cli = run_command(
        &sandbox,
        &proj,
        &server,
        &["--permission-mode", "bypass"],
        "sleep while you remember",
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("run codaris");
    // The main turn runs its command and the memory subagent waits on its model.
    wait_for(Duration::from_secs(30), || {
        proj.join("sleep.pid").exists()
            && !memory_requests(&server, "sleep while you remember").is_empty()
    });
    let active = memory_sessions(&sandbox);
    assert_eq!(active.len(), 1, "{active:#?}");
    assert_eq!(active[0]["state"], "active", "{active:#?}");

    let pid = rustix::process::Pid::from_raw(cli.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let status = cli.wait().unwrap();
    assert!(!status.success());
    wait_for(Duration::from_secs(10), || {
        memory_sessions(&sandbox)
            .iter()
            .all(|c| c["state"] == "ended")
    });
    sandbox.stop_daemon();
    sandbox.replay_clean();
}
