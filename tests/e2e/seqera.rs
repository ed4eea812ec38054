//! The built-in MCP server `seqera` through the real binaries: registered by default with its
//! tools off (absent from search) until switched on, `build_container_image` answered from the
//! nf-core module catalogue or built on Wave (the stand-in on loopback), pushing only to a
//! registry the operator lists and only after a card, and `lint_nextflow` on a stand-in
//! `nextflow` with a path the session gave relative to its project.

use std::path::{Path, PathBuf};
use std::time::Duration;

use codaris_test_support::fake_wave::FakeWave;
use codaris_test_support::sandbox::{
    Daemon, Sandbox, calls_script, events, json, ok, stderr, wait_for,
};
use serde_json::{Value, json};

const TOKEN: &str = "seqera-token-for-tests-81c4";

/// The seqera crate's stand-in `nextflow` programs.
fn stand_in(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/seqera/tests/fixtures")
        .join(name)
}

/// A daemon with `config`, once its built-in server has listed its tools.
fn start(config: &str) -> (Sandbox, PathBuf, Daemon) {
    let sandbox = Sandbox::new();
    sandbox.write_config(config);
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).expect("the project directory");
    let daemon = sandbox.start_daemon_in(sandbox.root.path(), &[], &[]);
    let mut last = Value::Null;
    wait_for(Duration::from_secs(40), || {
        last = json(&sandbox.cli(&["mcp", "list", "--json"]));
        let seqera = last
            .as_array()
            .and_then(|servers| servers.iter().find(|s| s["name"] == "seqera"))
            .cloned()
            .unwrap_or(Value::Null);
        assert_ne!(
            seqera["state"], "failed",
            "the built-in server failed: {seqera}"
        );
        seqera["state"] == "ready"
    });
    (sandbox, proj, daemon)
}

/// The names `codaris tools search QUERY` finds.
fn found(sandbox: &Sandbox, query: &str) -> Vec<String> {
    let hits = json(&sandbox.cli(&["tools", "search", query, "--json"]));
    hits["hits"]
        .as_array()
        .map(|hits| {
            hits.iter()
                .filter_map(|h| h["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Each tool's `enabled` as `codaris tools list` shows it, for the seqera server's tools.
fn seqera_tools(sandbox: &Sandbox) -> Vec<(String, bool)> {
    let listed = json(&sandbox.cli(&["tools", "list", "--json"]));
    listed["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter(|t| t["server"] == "seqera")
                .map(|t| {
                    (
                        t["name"].as_str().unwrap_or_default().to_owned(),
                        t["enabled"] == true,
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One turn whose model makes `calls`, one per round, cards answered `approve`.
fn turn(sandbox: &Sandbox, proj: &Path, calls: &[(&str, Value)], approve: &str) -> Vec<Value> {
    let script = calls_script(calls);
    let output = sandbox.run_script(proj, &script, &["--approve", approve], "build it");
    assert!(output.status.success(), "{}", stderr(&output));
    events(&output)
}

fn results(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect()
}

#[test]
fn the_seqera_tools_are_absent_from_search_until_switched_on() {
    let (sandbox, _proj, _daemon) = start("");
    let tools = seqera_tools(&sandbox);
    let names: Vec<&str> = tools.iter().map(|(name, _)| name.as_str()).collect();
    for expected in [
        "seqera__build_container_image",
        "seqera__lint_nextflow",
        "seqera__list_workspaces",
        "seqera__list_runs",
        "seqera__get_run_log",
    ] {
        assert!(names.contains(&expected), "{expected} not in {names:?}");
    }
    assert!(tools.iter().all(|(_, on)| !on), "on by default: {tools:?}");
    assert!(
        !found(&sandbox, "lint nextflow")
            .iter()
            .any(|n| n.starts_with("seqera__")),
        "a switched-off tool was found"
    );
    assert!(
        !found(&sandbox, "build a container image on wave")
            .iter()
            .any(|n| n.starts_with("seqera__"))
    );

    // One tool at a time.
    ok(&sandbox.cli(&["tools", "enable", "seqera__lint_nextflow"]));
    assert!(found(&sandbox, "lint nextflow").contains(&"seqera__lint_nextflow".to_owned()));
    assert!(
        !found(&sandbox, "build a container image on wave")
            .contains(&"seqera__build_container_image".to_owned())
    );

    // Or the whole server.
    ok(&sandbox.cli(&["mcp", "enable", "seqera"]));
    wait_for(Duration::from_secs(20), || {
        seqera_tools(&sandbox).iter().all(|(_, on)| *on)
    });
    assert!(
        found(&sandbox, "build a container image on wave")
            .contains(&"seqera__build_container_image".to_owned())
    );

    // It is Codaris's own: it cannot be removed or shadowed.
    let removed = sandbox.cli(&["mcp", "remove", "seqera"]);
    assert!(!removed.status.success());
    assert!(
        stderr(&removed).contains("built-in"),
        "{}",
        stderr(&removed)
    );
}

#[test]
fn a_container_is_found_in_the_catalogue_or_built_on_wave_and_pushed_only_where_allowed() {
    let wave = FakeWave::start(TOKEN);
    let (sandbox, proj, _daemon) = start(&format!(
        "[seqera]\nwave_url = \"{}\"\ntoken = \"{TOKEN}\"\nregistries = [\"quay.io/lab\"]\n",
        wave.url()
    ));
    ok(&sandbox.cli(&["mcp", "enable", "seqera"]));
    wait_for(Duration::from_secs(20), || {
        seqera_tools(&sandbox).iter().all(|(_, on)| *on)
    });
    let build = |args: Value| ("seqera__build_container_image", args);
    let events = turn(
        &sandbox,
        &proj,
        &[
            (
                "search_tools",
                json!({"query": "build a container image on wave"}),
            ),
            build(json!({"tool": "fastqc"})),
            build(
                json!({"tool": "samtools", "packages": ["samtools=1.21"], "registry": "docker.io/evil"}),
            ),
            build(
                json!({"tool": "samtools", "packages": ["samtools=1.21"], "registry": "quay.io/lab"}),
            ),
        ],
        "once",
    );
    let out = results(&events);
    assert_eq!(out.len(), 4, "{events:#?}");
    // An nf-core module already ships it: no build.
    let catalogue = out[1]["output"].as_str().unwrap_or_default();
    assert!(catalogue.contains("no build needed"), "{catalogue}");
    // An unlisted registry is refused by the policy before any card.
    assert_eq!(
        out[2]["decision"]["code"], "registry_not_listed",
        "{:#?}",
        out[2]
    );
    // A listed one is asked on a card for `push_image` on that registry, then built.
    let cards: Vec<&Value> = events.iter().filter(|e| e["type"] == "card").collect();
    assert_eq!(cards.len(), 1, "{events:#?}");
    assert_eq!(cards[0]["capability"]["name"], "push_image");
    assert_eq!(cards[0]["capability"]["path"], "quay.io/lab");
    let built = out[3]["output"].as_str().unwrap_or_default();
    assert_ne!(out[3]["is_error"], true, "{built}");
    assert!(
        built.contains("quay.io/lab") && built.contains("build: bd-"),
        "{built}"
    );
    assert!(built.contains("packages: samtools=1.21 ("), "{built}");
    let builds = wave.builds();
    assert_eq!(builds.len(), 1, "one build reached Wave: {builds:?}");
    let request = wave
        .seen()
        .into_iter()
        .find(|seen| seen.method == "POST")
        .and_then(|seen| seen.json())
        .unwrap_or(Value::Null);
    assert_eq!(request["buildRepository"], "quay.io/lab", "{request}");
    assert_eq!(request["packages"]["type"], "CONDA", "{request}");
    // The token went to Wave in the body, and nowhere the person or the model can see.
    assert_eq!(request["towerAccessToken"], TOKEN);
    let everything = serde_json::to_string(&events).unwrap_or_default();
    assert!(!everything.contains(TOKEN), "the token reached the events");
    let log = std::fs::read_to_string(sandbox.state_dir().join("codarisd.log")).unwrap_or_default();
    assert!(!log.contains(TOKEN), "the token reached the log");
}

#[test]
fn lint_nextflow_runs_the_configured_nextflow_on_the_session_s_path() {
    let (sandbox, proj, _daemon) = start(&format!(
        "[nextflow]\nbin = \"{}\"\n",
        stand_in("nextflow-25.04-errors").display()
    ));
    std::fs::create_dir_all(proj.join("pipe")).expect("a pipeline directory");
    std::fs::write(proj.join("pipe/main.nf"), "workflow { foo }\n").expect("main.nf");
    ok(&sandbox.cli(&["tools", "enable", "seqera__lint_nextflow"]));
    let events = turn(
        &sandbox,
        &proj,
        &[
            ("search_tools", json!({"query": "lint nextflow"})),
            ("seqera__lint_nextflow", json!({"path": "pipe"})),
        ],
        "once",
    );
    let out = results(&events);
    assert_eq!(out.len(), 2, "{events:#?}");
    let lint = out[1]["output"].as_str().unwrap_or_default();
    assert!(lint.starts_with("nextflow lint: 2 errors"), "{lint}");
    // The relative path reached the server made absolute against the session's directory.
    let pipe = std::fs::canonicalize(proj.join("pipe")).unwrap_or_else(|_| proj.join("pipe"));
    assert!(
        lint.contains(&format!("{}/main.nf:12:5", pipe.display()))
            || lint.contains(&format!("{}/main.nf:12:5", proj.join("pipe").display())),
        "{lint}"
    );
}

/// The daemon's children that run `program` (by the file their image came from).
fn children_running(daemon: &Daemon, program: &str) -> Vec<u32> {
    let tasks =
        std::fs::read_dir(format!("/proc/{}/task", daemon.pid())).expect("the daemon's threads");
    let mut found = Vec::new();
    for task in tasks.flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for pid in children
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
        {
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
            if exe.file_name().is_some_and(|name| name == program) {
                found.push(pid);
            }
        }
    }
    found
}

#[test]
fn the_server_is_a_program_of_its_own_and_its_token_is_not_in_its_environment_block() {
    let (_sandbox, _proj, daemon) = start(&format!("[seqera]\ntoken = \"{TOKEN}\"\n"));
    // Not the daemon's whole image again: the program beside it.
    assert!(children_running(&daemon, "codarisd").is_empty());
    let servers = children_running(&daemon, "codaris-seqera-mcp");
    assert_eq!(servers.len(), 1, "{servers:?}");
    // The token the daemon handed it in the environment was taken out of the block the kernel
    // shows at /proc/<pid>/environ (a process of the same user may read it otherwise).
    let environ = std::fs::read(format!("/proc/{}/environ", servers[0])).expect("its environ");
    let environ = String::from_utf8_lossy(&environ);
    assert!(environ.contains("CODARIS_SEQERA_WAVE_URL="), "{environ}");
    assert!(
        !environ.contains(TOKEN),
        "the token is in its environment block"
    );
}

#[test]
fn without_its_program_beside_codarisd_the_server_is_listed_failed_and_the_log_says_why() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    // codarisd alone in a directory: a hard link, so its own path is that directory.
    let bin = sandbox.root.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let daemon_program = bin.join("codarisd");
    std::fs::hard_link(
        codaris_test_support::sandbox::binary("codarisd"),
        &daemon_program,
    )
    .or_else(|_| {
        std::fs::copy(
            codaris_test_support::sandbox::binary("codarisd"),
            &daemon_program,
        )
        .map(drop)
    })
    .expect("codarisd in a directory of its own");
    let env = sandbox.command("codaris");
    let mut daemon = std::process::Command::new(&daemon_program)
        .env_clear()
        .envs(env.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .current_dir(sandbox.root.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn codarisd");
    let mut seqera = Value::Null;
    wait_for(Duration::from_secs(40), || {
        // Never a daemon of the CLI's own: started from beside `codaris`, it would find its
        // server, and a cold first start of the lone codarisd loses that race.
        let listed = sandbox.cli(&["--no-autostart", "mcp", "list", "--json"]);
        seqera = serde_json::from_slice::<Value>(&listed.stdout)
            .ok()
            .and_then(|all| {
                all.as_array()?
                    .iter()
                    .find(|s| s["name"] == "seqera")
                    .cloned()
            })
            .unwrap_or(Value::Null);
        seqera["state"] == "failed"
    });
    let missing = bin.join("codaris-seqera-mcp");
    let error = seqera["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!("`{}`", missing.display())),
        "{seqera}"
    );
    let log = std::fs::read_to_string(sandbox.state_dir().join("codarisd.log")).unwrap_or_default();
    assert!(
        log.contains(&format!(
            "the built-in MCP server `seqera` cannot start: `{}` is missing",
            missing.display()
        )),
        "{log}"
    );
    let _ = daemon.kill();
    let _ = daemon.wait();
}

#[test]
fn codarisd_mcp_server_seqera_still_serves_by_becoming_the_server_s_program() {
    use std::io::{BufRead, Write};

    let sandbox = Sandbox::new();
    // A token in the environment: codarisd takes it out of its block (re-exec), hands it on,
    // and the server's program takes it out of its own.
    let mut server = sandbox
        .command("codarisd")
        .args(["mcp-server", "seqera"])
        .env("TOWER_ACCESS_TOKEN", TOKEN)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn codarisd mcp-server seqera");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "e2e", "version": "1"}}});
    let mut stdin = server.stdin.take().expect("stdin");
    writeln!(stdin, "{initialize}").expect("write initialize");
    let mut line = String::new();
    let stdout = server.stdout.take().expect("stdout");
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the answer");
    drop(stdin);
    let status = server.wait().expect("wait");
    let mut said = String::new();
    if let Some(mut stderr) = server.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut stderr, &mut said);
    }
    let answer: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "codaris-seqera",
        "{line} / {said}"
    );
    assert!(status.success(), "{status}: {said}");
}
