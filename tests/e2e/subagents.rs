//! `spawn_agent` through the real binaries with the scripted model: a child session of the
//! same daemon with its own turn, conversation and record, linked to its parent. Each script
//! carries its children's scripts (`children`): the N-th child the session spawns plays the
//! N-th.

use std::path::PathBuf;

use codaris_test_support::sandbox::{Sandbox, events, json, stderr};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn call(name: &str, args: Value) -> Value {
    json!({"tool_calls": [{"name": name, "args": args}]})
}

fn find() -> Value {
    call(
        "search_tools",
        json!({"query": "delegate a task to a subagent"}),
    )
}

fn spawn(args: Value) -> Value {
    call("spawn_agent", args)
}

/// A parent's one turn that finds `spawn_agent`, spawns one child with `args` and ends, and the
/// child's one turn of `child_rounds`.
fn one_child(args: Value, child_rounds: Value) -> Value {
    json!({
        "turns": [{"rounds": [find(), spawn(args), {"text": "done"}]}],
        "children": [{"turns": [{"rounds": child_rounds}]}]
    })
}

fn project(sandbox: &Sandbox) -> PathBuf {
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("main.nf"), "workflow { }\n").unwrap();
    proj
}

/// The outputs of the turn's results of `tool`, in order.
fn outputs(events: &[Value], tool: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result" && e["tool"] == tool)
        .map(|e| e["output"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The sessions as `codaris sessions --json` lists them, by id.
fn sessions(sandbox: &Sandbox) -> Vec<Value> {
    let listed = json(&sandbox.cli(&["sessions", "--all", "--json"]));
    listed.as_array().cloned().unwrap_or_default()
}

#[test]
fn a_foreground_child_reports_back_and_is_its_own_session() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    let script = json!({
        "turns": [{"rounds": [
            find(),
            spawn(json!({"prompt": "read main.nf and say what it holds", "description": "read the workflow"})),
            {"text": "The child says the workflow is empty."}
        ]}],
        "children": [{"turns": [{"rounds": [
            {"text": "Reading it first.", "tool_calls": [{"name": "read_file", "args": {"path": "main.nf"}}]},
            {"text": "main.nf holds an empty workflow."}
        ]}]}]
    });
    let output = sandbox.run_script(&proj, &script, &[], "what is in main.nf? ask a subagent");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let reports = outputs(&events, "spawn_agent");
    assert_eq!(reports.len(), 1, "{events:#?} {}", stderr(&output));
    assert!(
        reports[0].starts_with("subagent `s000002` (general: read the workflow) reported:\nmain.nf holds an empty workflow."),
        "{}",
        reports[0]
    );
    let progress: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "progress" && e["tool"] == "spawn_agent")
        .collect();
    assert!(
        progress
            .iter()
            .any(|p| p["message"] == "s000002 (general): read_file"),
        "{progress:#?}"
    );
    let listed = sessions(&sandbox);
    let child = listed
        .iter()
        .find(|s| s["id"] == "s000002")
        .expect("the child is listed");
    assert_eq!(child["parent_session_id"], "s000001", "{child}");
    assert_eq!(child["turns"], 1);
    let parent = listed.iter().find(|s| s["id"] == "s000001").unwrap();
    assert_eq!(parent["children"], json!(["s000002"]), "{parent}");
}

/// The ledger's decisions of `session`, oldest first, as `codaris ledger decisions` lists them.
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
    let mut listed = events(&output);
    listed.reverse();
    listed
}

/// The decision of `session`'s call of `tool` (the last one).
fn decision_of(sandbox: &Sandbox, session: &str, tool: &str) -> Value {
    decisions(sandbox, session)
        .into_iter()
        .rev()
        .find(|d| d["tool"] == tool)
        .unwrap_or_else(|| panic!("no decision of `{tool}` in {session}"))
}

/// A child never asks the person, rewrites the configuration or leaves plan mode, and its
/// definition's `tools` only ever remove: each refusal is the policy's, recorded under the
/// child with its parent named, and the parent's own report still arrives.
#[test]
fn a_childs_narrowed_set_refuses_question_config_set_and_what_its_definition_leaves_out() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    std::fs::create_dir_all(proj.join(".codaris/agents")).unwrap();
    std::fs::write(
        proj.join(".codaris/agents/reader.md"),
        "---\nname: reader\ndescription: reads files and reports\ntools: read_file, question, config_set\n---\nRead, never write.\n",
    )
    .unwrap();
    let script = one_child(
        json!({"agent": "reader", "prompt": "try everything", "description": "probe the limits"}),
        json!([
            {"tool_calls": [
                {"name": "question", "args": {"questions": [{"question": "ok?", "options": [{"label": "yes"}]}]}},
                {"name": "config_set", "args": {"commands": ["set tools.background=false"]}},
                {"name": "run_command", "args": {"command": "ls"}},
                {"name": "read_file", "args": {"path": "main.nf"}}
            ]},
            {"text": "I could only read."}
        ]),
    );
    let output = sandbox.run_script(&proj, &script, &["--permission-mode", "bypass"], "probe");
    assert!(output.status.success(), "{}", stderr(&output));
    let report = &outputs(&events(&output), "spawn_agent")[0];
    assert!(
        report.ends_with("reported:\nI could only read."),
        "{report}"
    );
    let question = decision_of(&sandbox, "s000002", "question");
    assert_eq!(question["decision"]["code"], "tool_withheld", "{question}");
    let sentence = question["decision"]["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("never offered to a subagent"),
        "{sentence}"
    );
    assert_eq!(question["parent_session_id"], "s000001");
    assert_eq!(question["request"]["task"]["subagent"], true);
    // Withheld from every subagent, whatever its definition lists.
    let config_set = decision_of(&sandbox, "s000002", "config_set");
    assert_eq!(config_set["decision"]["verdict"], "deny", "{config_set}");
    assert_eq!(
        config_set["decision"]["code"], "tool_withheld",
        "{config_set}"
    );
    assert_eq!(config_set["request"]["task"]["subagent"], true);
    let left_out = decision_of(&sandbox, "s000002", "run_command");
    assert_eq!(left_out["decision"]["code"], "tool_withheld", "{left_out}");
    assert!(
        left_out["decision"]["sentence"]
            .as_str()
            .unwrap()
            .contains("definition gives it"),
        "{left_out}"
    );
    assert_eq!(
        left_out["request"]["task"]["narrowed"],
        json!({"agent": "reader", "tools": ["read_file", "question", "config_set"]})
    );
    assert_eq!(
        decision_of(&sandbox, "s000002", "read_file")["decision"]["verdict"],
        "allow"
    );
    sandbox.stop_daemon();
    let replay = sandbox.replay_clean();
    assert!(replay.status.success(), "{}", stderr(&replay));
}

/// A plan-mode parent's child stays in plan mode: its write is refused as the parent's would be,
/// and it cannot leave plan mode itself.
#[test]
fn a_write_in_a_plan_mode_parents_child_is_refused() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    let script = one_child(
        json!({"prompt": "write the notes", "description": "write notes"}),
        json!([
            {"tool_calls": [
                {"name": "write", "args": {"path": "notes.md", "content": "x"}},
                {"name": "plan_exit", "args": {}}
            ]},
            {"text": "Both were refused."}
        ]),
    );
    let output = sandbox.run_script(
        &proj,
        &script,
        &["--mode", "plan", "--permission-mode", "bypass"],
        "plan it",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        !proj.join("notes.md").exists(),
        "the child wrote in plan mode"
    );
    let write = decision_of(&sandbox, "s000002", "write");
    assert_eq!(write["decision"]["verdict"], "deny", "{write}");
    assert_eq!(write["request"]["task"]["activity"], "plan", "{write}");
    let exit = decision_of(&sandbox, "s000002", "plan_exit");
    assert_eq!(exit["decision"]["code"], "tool_withheld", "{exit}");
    let child = sessions(&sandbox)
        .into_iter()
        .find(|s| s["id"] == "s000002")
        .unwrap();
    assert_eq!(child["activity"], "plan");
}

/// A child's card reaches the parent's person on the parent's stream, marked as the child's;
/// answered there, it grants for the family, and the child's decisions are recorded under the
/// child with its parent and whose grants it used. The audit replays them clean.
#[test]
fn a_childs_card_is_answered_by_the_parents_person_and_recorded_under_the_child() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    let script = one_child(
        json!({"prompt": "write the notes", "description": "write notes"}),
        json!([
            {"tool_calls": [{"name": "write", "args": {"path": "notes.md", "content": "from the child\n"}}]},
            {"text": "Wrote notes.md."}
        ]),
    );
    let output = sandbox.run_script(&proj, &script, &["--approve", "session"], "notes please");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let cards: Vec<&Value> = events.iter().filter(|e| e["type"] == "card").collect();
    assert_eq!(cards.len(), 1, "{events:#?}");
    assert_eq!(cards[0]["raised_in"], "s000002", "{}", cards[0]);
    assert_eq!(cards[0]["raised_in_agent"], "general: write notes");
    assert_eq!(
        std::fs::read_to_string(proj.join("notes.md")).unwrap(),
        "from the child\n"
    );
    let child = decisions(&sandbox, "s000002");
    let writes: Vec<&Value> = child.iter().filter(|d| d["tool"] == "write").collect();
    assert_eq!(
        writes
            .iter()
            .map(|d| d["decision"]["verdict"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["ask", "allow"]
    );
    for write in writes {
        assert_eq!(write["session_id"], "s000002");
        assert_eq!(write["parent_session_id"], "s000001");
        assert_eq!(write["grants_of"], "s000001");
    }
    let grants = codaris_test_support::sandbox::events(
        &sandbox.cli(&["ledger", "grants", "--all", "--json"]),
    );
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(
        grants[0]["session_id"], "s000001",
        "the grant is the person's session's"
    );
    sandbox.stop_daemon();
    let replay = sandbox.replay_clean();
    assert!(replay.status.success(), "{}", stderr(&replay));
}

/// `resume` continues a finished child in its own session (its second turn, its conversation
/// kept); a session that is not this one's child is refused; a child may spawn a grandchild,
/// which plays its own entry of the script.
#[test]
fn resume_continues_a_finished_child_and_children_nest() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    let script = json!({
        "turns": [{"rounds": [
            find(),
            spawn(json!({"prompt": "count the files", "description": "count"})),
            spawn(json!({"prompt": "and now the lines", "description": "count more", "resume": "s000002"})),
            spawn(json!({"prompt": "x", "description": "not mine", "resume": "s000001"})),
            {"text": "done"}
        ]}],
        "children": [{
            "turns": [
                {"rounds": [
                    find(),
                    {"tool_calls": [{"name": "spawn_agent", "args": {"prompt": "help me", "description": "grandchild"}}]},
                    {"text": "One file, with help."}
                ]},
                {"rounds": [{"text": "One line."}]}
            ],
            "children": [{"turns": [{"rounds": [{"text": "grandchild here"}]}]}]
        }]
    });
    let output = sandbox.run_script(&proj, &script, &[], "count");
    assert!(output.status.success(), "{}", stderr(&output));
    let reports = outputs(&events(&output), "spawn_agent");
    assert_eq!(reports.len(), 3, "{reports:#?}");
    assert!(
        reports[0].ends_with("reported:\nOne file, with help."),
        "{}",
        reports[0]
    );
    assert!(
        reports[1].ends_with("reported:\nOne line."),
        "{}",
        reports[1]
    );
    assert!(
        reports[2].starts_with(
            "spawn_agent: `s000001` is not a child of this session; its children: `s000002`"
        ),
        "{}",
        reports[2]
    );
    let listed = sessions(&sandbox);
    let child = listed.iter().find(|s| s["id"] == "s000002").unwrap();
    assert_eq!(child["turns"], 2, "resumed in its own session: {child}");
    assert_eq!(child["children"], json!(["s000003"]));
    let grandchild = listed.iter().find(|s| s["id"] == "s000003").unwrap();
    assert_eq!(grandchild["parent_session_id"], "s000002");
    let said = decision_of(&sandbox, "s000002", "spawn_agent");
    assert_eq!(said["decision"]["verdict"], "allow", "{said}");
}

/// `subagents.max_depth` bounds nesting: with 1, a child is refused `spawn_agent` by the policy
/// (and never offered it), while its parent spawned it.
#[test]
fn the_depth_limit_stops_a_child_spawning_another() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[subagents]\nmax_depth = 1\n");
    let proj = project(&sandbox);
    let script = one_child(
        json!({"prompt": "go deeper", "description": "deeper"}),
        json!([
            find(),
            {"tool_calls": [{"name": "spawn_agent", "args": {"prompt": "deeper still", "description": "deepest"}}]},
            {"text": "I could not go deeper."}
        ]),
    );
    let output = sandbox.run_script(&proj, &script, &[], "depth");
    assert!(output.status.success(), "{}", stderr(&output));
    let refused = decision_of(&sandbox, "s000002", "spawn_agent");
    assert_eq!(refused["decision"]["code"], "tool_withheld", "{refused}");
    assert!(
        refused["decision"]["sentence"]
            .as_str()
            .unwrap()
            .contains("subagents.max_depth"),
        "{refused}"
    );
    assert_eq!(sessions(&sandbox).len(), 2, "no grandchild was made");
}

mod background {
    //! A background child over gRPC: the parent's turn ends while the child works, and the
    //! child's end wakes the parent (a turn of its own, whose prompt is the child's report) —
    //! or, with `notify_on_finish: false`, waits for the parent's next turn.

    use std::path::PathBuf;
    use std::time::Duration;

    use codaris_proto::v1;
    use codaris_test_support::sandbox::Sandbox;
    use hyper_util::rt::TokioIo;
    use serde_json::{Value, json};
    use tokio::net::UnixStream;
    use tonic::transport::{Channel, Endpoint, Uri};

    use super::{find, project, spawn};

    type Sessions = v1::sessions_client::SessionsClient<Channel>;

    async fn connect(socket: PathBuf) -> Sessions {
        let channel =
            Endpoint::from_static("http://codarisd.local")
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let socket = socket.clone();
                    async move {
                        Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?))
                    }
                }))
                .await
                .unwrap();
        Sessions::new(channel)
    }

    /// A session playing `script`, and its first turn run to its end; what `background_list`
    /// answered in it.
    async fn first_turn(sandbox: &Sandbox, script: &Value) -> (Sessions, String, Vec<String>) {
        let proj = project(sandbox);
        let path = sandbox.root.path().join("script.json");
        std::fs::write(&path, script.to_string()).unwrap();
        let mut sessions = connect(sandbox.socket()).await;
        let session = sessions
            .create_session(v1::CreateSessionRequest {
                cwd: proj.display().to_string(),
                provider: "scripted".to_owned(),
                script: path.display().to_string(),
                permission_mode: v1::PermissionMode::Bypass.into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let mut stream = sessions
            .turn(v1::TurnRequest {
                session_id: session.id.clone(),
                text: "start the background work".to_owned(),
            })
            .await
            .unwrap()
            .into_inner();
        let mut listed = Vec::new();
        while let Some(event) = stream.message().await.unwrap() {
            match event.event {
                Some(v1::turn_event::Event::TurnEnded(_)) => break,
                Some(v1::turn_event::Event::ToolResult(result))
                    if result.tool == "background_list" =>
                {
                    listed.push(result.output);
                }
                _ => {}
            }
        }
        (sessions, session.id, listed)
    }

    async fn turns_of(sessions: &mut Sessions, id: &str) -> u32 {
        sessions
            .get_session(v1::GetSessionRequest { id: id.to_owned() })
            .await
            .unwrap()
            .into_inner()
            .turns
    }

    async fn history(sessions: &mut Sessions, id: &str) -> Vec<(String, String)> {
        sessions
            .get_history(v1::GetHistoryRequest {
                session_id: id.to_owned(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .messages
            .into_iter()
            .map(|m| (m.role, m.text))
            .collect()
    }

    /// Polls (a blocking wait on the runtime's own thread would stall the daemon client).
    async fn until(mut done: impl AsyncFnMut() -> bool) {
        for _ in 0..300 {
            if done().await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("not within 30 s");
    }

    fn script(notify: bool) -> Value {
        json!({
            "turns": [
                {"rounds": [
                    find(),
                    spawn(json!({"prompt": "lint slowly", "description": "lint in the background",
                                 "background": true, "notify_on_finish": notify})),
                    {"tool_calls": [{"name": "search_tools", "args": {"query": "list background tasks"}}]},
                    {"tool_calls": [{"name": "background_list", "args": {}}]},
                    {"text": "It runs in the background."}
                ]},
                {"rounds": [{"text": "The linter's report is in."}]}
            ],
            "children": [{"turns": [{"rounds": [
                {"tool_calls": [{"name": "run_command", "args": {"command": "sleep 5"}}]},
                {"text": "No lint errors."}
            ]}]}]
        })
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_background_child_wakes_its_parent_with_its_report() {
        let sandbox = Sandbox::new();
        sandbox.write_config("");
        let _daemon = sandbox.start_daemon(&[]);
        runtime().block_on(async {
            let (mut sessions, id, listed) = first_turn(&sandbox, &script(true)).await;
            assert_eq!(id, "s000001");
            // While it works, the parent finds it among its background work.
            assert_eq!(listed.len(), 1, "{listed:?}");
            assert!(
                listed[0].starts_with("agent s000002  running  ")
                    && listed[0].ends_with("general: lint in the background"),
                "{listed:?}"
            );
            // The parent's turn ended first; the child's end starts the parent's second turn.
            until(async || turns_of(&mut sessions, "s000001").await == 2).await;
            let said = history(&mut sessions, "s000001").await;
            let wake = &said[said.len() - 2];
            assert_eq!(wake.0, "user");
            assert!(
                wake.1.starts_with("[subagent `s000002` (general: lint in the background) reported:\nNo lint errors.]"),
                "{said:#?}"
            );
            assert_eq!(
                said.last().unwrap(),
                &("assistant".to_owned(), "The linter's report is in.".to_owned())
            );
        });
    }

    /// A background child whose person's session runs no turn has nobody to show a card to:
    /// its request for a capability is refused at once (no card recorded, nothing granted)
    /// instead of waiting out the card timeout (300 s, far past this test's 30), its write stays
    /// refused, and its report still wakes the parent.
    #[test]
    fn a_background_childs_card_with_nobody_watching_is_refused_at_once() {
        let sandbox = Sandbox::new();
        sandbox.write_config("");
        let _daemon = sandbox.start_daemon(&[]);
        let outside = sandbox.root.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        let target = outside.join("notes.md");
        let script = json!({
            "turns": [
                {"rounds": [
                    find(),
                    spawn(json!({"prompt": "write outside", "description": "write outside",
                                 "background": true})),
                    {"text": "It runs."}
                ]},
                {"rounds": [{"text": "Noted."}]}
            ],
            "children": [{"turns": [{"rounds": [
                // Long enough for the parent's turn to have ended.
                {"tool_calls": [{"name": "run_command", "args": {"command": "sleep 3"}}]},
                {"tool_calls": [{"name": "request_capability", "args": {
                    "capability": "mutate_outside_fence", "path": outside.display().to_string(),
                    "reason": "write the notes there"}}]},
                {"tool_calls": [{"name": "write", "args": {"path": target.display().to_string(), "content": "x"}}]},
                {"text": "The write was refused."}
            ]}]}]
        });
        runtime().block_on(async {
            let (mut sessions, _, _) = first_turn(&sandbox, &script).await;
            until(async || turns_of(&mut sessions, "s000001").await == 2).await;
            let said = history(&mut sessions, "s000001").await;
            let wake = &said[said.len() - 2].1;
            assert!(wake.contains("The write was refused."), "{said:#?}");
        });
        assert!(!target.exists(), "the child wrote outside its fence");
        let export = sandbox.cli(&["ledger", "export"]);
        let lines = String::from_utf8_lossy(&export.stdout).into_owned();
        let records: Vec<Value> = lines
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect();
        let write = records
            .iter()
            .find(|l| l["type"] == "decision" && l["request"]["tool"] == "write")
            .expect("the child's write was decided");
        assert_eq!(write["session_id"], "s000002");
        assert_eq!(write["decision"]["verdict"], "deny", "{write}");
        assert!(
            !records
                .iter()
                .any(|l| l["type"] == "card" || l["type"] == "grant"),
            "no card was shown and nothing granted for the child: {lines}"
        );
    }

    /// With memory on, the person's turn starts its memory subagent, but the turn the
    /// child's report wakes does not: its text is a report, not a message of the person's.
    #[test]
    fn a_turn_a_report_woke_starts_no_memory_subagent() {
        let sandbox = Sandbox::new();
        sandbox.write_config("[memory]\nenabled = true\n");
        let _daemon = sandbox.start_daemon(&[]);
        let mut script = script(true);
        let recall = json!({"turns": [{"rounds": [{"text": "nothing relevant"}]}]});
        script["memory"] = json!([recall, recall]);
        let memory_agents = || {
            let listed = sandbox.cli(&["sessions", "--all", "--json"]);
            serde_json::from_slice::<Value>(&listed.stdout)
                .unwrap()
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s["agent"].as_str().map(str::to_owned))
                .filter(|agent| agent.starts_with("memory: "))
                .collect::<Vec<_>>()
        };
        runtime().block_on(async {
            let (mut sessions, id, _) = first_turn(&sandbox, &script).await;
            until(async || turns_of(&mut sessions, &id).await == 2).await;
            let said = history(&mut sessions, &id).await;
            assert!(
                said[said.len() - 2].1.contains("No lint errors."),
                "the report woke the session: {said:#?}"
            );
            // A memory subagent would be made as its turn starts; give it time to show.
            tokio::time::sleep(Duration::from_secs(1)).await;
        });
        assert_eq!(memory_agents(), ["memory: recall for turn 0"]);
    }

    #[test]
    fn without_notify_the_report_waits_for_the_next_turn() {
        let sandbox = Sandbox::new();
        sandbox.write_config("");
        let _daemon = sandbox.start_daemon(&[]);
        runtime().block_on(async {
            let (mut sessions, _, _) = first_turn(&sandbox, &script(false)).await;
            until(async || turns_of(&mut sessions, "s000002").await == 1).await;
            // The child has ended and counted its turn; nothing wakes the parent.
            tokio::time::sleep(Duration::from_secs(1)).await;
            assert_eq!(turns_of(&mut sessions, "s000001").await, 1);
        });
    }
}

/// The parent's turn cancelled while its foreground child runs a command: both turns stop and
/// the child's command is killed; ending the parent's session ends the child's.
#[test]
fn cancelling_the_parent_stops_the_child_and_kills_its_command() {
    use codaris_test_support::sandbox::{alive, wait_for};
    use rustix::process::{Pid, Signal, kill_process};
    use std::process::Stdio;
    use std::time::Duration;

    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    let _daemon = sandbox.start_daemon(&[]);
    let script = one_child(
        json!({"prompt": "wait a long time", "description": "sleep"}),
        json!([
            {"tool_calls": [{"name": "run_command",
                             "args": {"command": "echo $$ > sleep.pid && exec sleep 300"}}]},
            {"text": "slept"}
        ]),
    );
    let mut run = sandbox
        .command("codaris")
        .args(sandbox.run_args(&proj, &script, &["--permission-mode", "bypass"], "go"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pid = 0;
    wait_for(Duration::from_secs(30), || {
        pid = std::fs::read_to_string(proj.join("sleep.pid"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        pid != 0 && alive(pid)
    });
    assert!(pid != 0, "the child's command never started");
    kill_process(
        Pid::from_raw(i32::try_from(run.id()).unwrap()).unwrap(),
        Signal::INT,
    )
    .unwrap();
    wait_for(Duration::from_secs(20), || !alive(pid));
    assert!(
        !alive(pid),
        "the child's command outlived its parent's cancel"
    );
    assert_eq!(run.wait().unwrap().code(), Some(130));
    wait_for(Duration::from_secs(10), || {
        sessions(&sandbox).iter().all(|s| s["state"] == "ended")
    });
    let listed = sessions(&sandbox);
    assert_eq!(listed.len(), 2, "{listed:#?}");
    assert!(
        listed.iter().all(|s| s["state"] == "ended"),
        "the child's session ended with its parent's: {listed:#?}"
    );
}

/// `codaris agents list` shows what `spawn_agent` can name in a project — the project's over
/// the user's over the built-in — and a project's link left out with why.
#[test]
fn agents_list_shows_the_definitions_a_project_can_name() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    // The configuration file is `<root>/config.toml`, so its directory holds `agents`.
    let user = sandbox.root.path().join("agents");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("reviewer.md"),
        "---\ndescription: the user's reviewer\n---\n",
    )
    .unwrap();
    std::fs::create_dir_all(proj.join(".codaris/agents")).unwrap();
    std::fs::write(
        proj.join(".codaris/agents/reviewer.md"),
        "---\ndescription: the project's reviewer\ntools: read_file, grep\ndisallowed_tools: [grep]\n---\nBe strict.\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(
        sandbox.state_dir().join("token"),
        proj.join(".codaris/agents/token.md"),
    )
    .unwrap();
    let output = sandbox.cli(&["agents", "list", "--json", "--cwd", proj.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let listed = json(&output);
    let names: Vec<&str> = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["general", "reviewer"]);
    let reviewer = &listed["agents"][1];
    assert_eq!(reviewer["source"], "project");
    assert_eq!(reviewer["description"], "the project's reviewer");
    assert_eq!(reviewer["tools"], json!(["read_file", "grep"]));
    assert_eq!(reviewer["disallowed_tools"], json!(["grep"]));
    let problems = listed["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0]
            .as_str()
            .unwrap()
            .contains("token.md: a symbolic link"),
        "{problems:?}"
    );
    let text = sandbox.cli(&["agents", "list", "--cwd", proj.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(
        text.contains(
            "reviewer (project) — the project's reviewer [tools: read_file, grep; not: grep]"
        ),
        "{text}"
    );
}
