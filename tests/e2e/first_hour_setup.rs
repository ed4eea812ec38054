//! The first hour's setup, through the real binaries: a repository's `AGENTS.md` found from a
//! subdirectory, `codaris config check` judging a file with no `codarisd` anywhere, `config
//! show` listing the keys left at their defaults, session ids that stay dense across a restart.
//!
//! The model is a stand-in for OpenAI's Chat Completions API on loopback: it answers every
//! `POST /v1/chat/completions` with one streamed `chat.completion.chunk` of text and `[DONE]`,
//! as documented, and refuses anything else it does not implement.

use std::process::Output;

use codaris_test_support::fake_http::{FakeHttp, Reply, Seen};
use codaris_test_support::sandbox::{Sandbox, binary, events, json, ok, stderr, stdout};
use serde_json::{Value, json};

const MODEL: &str = "local-model";

fn fake_openai() -> FakeHttp {
    FakeHttp::start(|seen: &Seen| match (seen.method.as_str(), seen.path()) {
        ("POST", "/v1/chat/completions") => {
            let chunk = |delta: Value, finish: Value| {
                json!({"id": "1", "object": "chat.completion.chunk", "model": MODEL,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            };
            Reply::new(
                200,
                "text/event-stream",
                format!(
                    "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
                    chunk(
                        json!({"role": "assistant", "content": "noted"}),
                        Value::Null
                    ),
                    chunk(json!({}), json!("stop"))
                ),
            )
        }
        _ => Reply::not_implemented("fake OpenAI API", seen),
    })
}

/// A repository with notes at its root and in `pipelines/`, and notes above it that belong
/// to no project; the session works in `pipelines/rnaseq`.
#[test]
fn agents_md_is_found_from_a_subdirectory_up_to_the_repository_root() {
    let sandbox = Sandbox::new();
    let server = fake_openai();
    let _daemon = sandbox.start_daemon_in(sandbox.root.path(), &[("OPENAI_API_KEY", "sk-x")], &[]);
    let repo = sandbox.root.path().join("repo");
    let cwd = repo.join("pipelines/rnaseq");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir(repo.join(".git")).unwrap();
    std::fs::write(
        sandbox.root.path().join("AGENTS.md"),
        "notes of no project\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("AGENTS.md"),
        "root: run nf-test before a commit\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("pipelines/CODARIS.md"),
        "pipelines: use nf-core tools\n",
    )
    .unwrap();
    std::fs::write(cwd.join("AGENTS.md"), "rnaseq: keep STAR as the aligner\n").unwrap();

    let base = format!("{}/v1", server.url());
    let output = sandbox
        .command("codaris")
        .envs([
            ("CODARIS_PROVIDER", "openai"),
            ("CODARIS_MODEL", MODEL),
            ("OPENAI_BASE_URL", base.as_str()),
        ])
        .args(["run", "--json", "--cwd", cwd.to_str().unwrap(), "hello"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    // Each file read is said, the ones further up by their whole path.
    let said = stderr(&output);
    for line in [
        format!("read {} (", repo.join("AGENTS.md").display()),
        format!("read {} (", repo.join("pipelines/CODARIS.md").display()),
        "read AGENTS.md (".to_owned(),
    ] {
        assert!(said.contains(&line), "{line:?} not in {said}");
    }
    assert!(!events(&output).is_empty());

    let bodies: Vec<Value> = server
        .seen()
        .iter()
        .filter(|seen| seen.path() == "/v1/chat/completions")
        .filter_map(Seen::json)
        .collect();
    assert_eq!(bodies.len(), 1);
    let system = bodies[0].to_string();
    let at = |text: &str| system.find(text).unwrap_or(usize::MAX);
    assert!(
        at("root: run nf-test") < at("pipelines: use nf-core"),
        "{system}"
    );
    assert!(
        at("pipelines: use nf-core") < at("rnaseq: keep STAR"),
        "{system}"
    );
    assert!(at("rnaseq: keep STAR") < system.len(), "{system}");
    assert!(!system.contains("notes of no project"), "{system}");
}

/// `codaris` alone in a directory, run with a `PATH` that holds no `codarisd`: the check
/// needs neither the daemon nor its binary.
fn check_alone(sandbox: &Sandbox, args: &[&str]) -> Output {
    let lonely = sandbox.root.path().join("bin");
    std::fs::create_dir_all(&lonely).unwrap();
    let codaris = lonely.join("codaris");
    if !codaris.exists() {
        std::fs::copy(binary("codaris"), &codaris).unwrap();
    }
    std::process::Command::new(&codaris)
        .env_clear()
        .env("PATH", &lonely)
        .env("HOME", sandbox.root.path().join("home"))
        .env("CODARIS_STATE_DIR", sandbox.state_dir())
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn config_check_offline_reports_every_error_with_its_line() {
    let sandbox = Sandbox::new();
    let file = sandbox.root.path().join("config.toml");
    std::fs::write(
        &file,
        "[daemon]\nlisten_on = \"127.0.0.1:7457\"\nlog_format = \"xml\"\n\n[tools]\nlean_surface = \"yes\"\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let output = check_alone(&sandbox, &["config", "check", path]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let said = stderr(&output);
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines.len(), 3, "{said}");
    assert!(
        lines[0].starts_with(&format!("{path}:2: unknown key `daemon.listen_on`")),
        "{said}"
    );
    assert!(
        lines[1].starts_with(&format!("{path}:3: `daemon.log_format` must be one of")),
        "{said}"
    );
    assert!(
        lines[2].starts_with(&format!(
            "{path}:6: `tools.lean_surface` must be true or false"
        )),
        "{said}"
    );

    let output = check_alone(&sandbox, &["config", "check", "--json", path]);
    assert_eq!(output.status.code(), Some(1));
    let report = json(&output);
    assert_eq!(report["ok"], false);
    let problems: Vec<(Value, Value)> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["line"].clone(), p["key"].clone()))
        .collect();
    assert_eq!(
        problems,
        vec![
            (json!(2), json!("daemon.listen_on")),
            (json!(3), json!("daemon.log_format")),
            (json!(6), json!("tools.lean_surface")),
        ]
    );

    // A good file is ok without the daemon, and the answer says what was not judged.
    std::fs::write(&file, "[daemon]\nlog_format = \"json\"\n").unwrap();
    let output = check_alone(&sandbox, &["config", "check", path]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with(&format!("ok: {path}")),
        "{}",
        stdout(&output)
    );
    assert!(!sandbox.socket().exists(), "a check started a daemon");
}

#[test]
fn config_show_lists_the_keys_left_at_their_defaults() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[tools]\nbackground = false\n");
    let _daemon = sandbox.start_daemon(&[]);
    let shown = json(&sandbox.cli(&["config", "show", "--json"]));
    let entry = |key: &str| {
        shown["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == key)
            .map(|e| (e["value"].clone(), e["source"].clone()))
    };
    assert_eq!(
        entry("tools.background"),
        Some((json!(false), json!("file")))
    );
    assert_eq!(
        entry("daemon.log_format"),
        Some((json!("text"), json!("default")))
    );
    assert_eq!(
        entry("nextflow.bin"),
        Some((json!("nextflow"), json!("default")))
    );
    assert_eq!(
        entry("telemetry.otlp_endpoint"),
        Some((Value::Null, json!("default")))
    );
    let line_of = |key: &str| {
        shown["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == key)
            .map(|e| e["line"].clone())
    };
    assert_eq!(line_of("tools.background"), Some(json!(2)));
    assert_eq!(line_of("nextflow.bin"), Some(Value::Null));
    let text = ok(&sandbox.cli(&["config", "show"]));
    assert!(
        text.lines()
            .any(|l| l.starts_with("tools.background ") && l.contains(" file:2 ")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("nextflow.nf_core ")),
        "{text}"
    );
}

#[test]
fn session_ids_are_dense_across_a_restart() {
    let sandbox = Sandbox::new();
    let project = sandbox.root.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let script = json!({"turns": [{"rounds": [{"text": "Done."}]}]});
    let id = |output: &Output| -> String {
        events(output)
            .iter()
            .find_map(|e| e["id"].as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    let mut ids = Vec::new();
    {
        let _daemon = sandbox.start_daemon(&[]);
        for _ in 0..2 {
            let output = sandbox.run_script(&project, &script, &[], "hi");
            ok(&output);
            ids.push(id(&output));
        }
        sandbox.stop_daemon();
    }
    let _daemon = sandbox.start_daemon(&[]);
    let output = sandbox.run_script(&project, &script, &[], "hi");
    ok(&output);
    ids.push(id(&output));
    assert_eq!(ids, ["s000001", "s000002", "s000003"]);
    sandbox.stop_daemon();
    ok(&sandbox.replay_clean());
}
