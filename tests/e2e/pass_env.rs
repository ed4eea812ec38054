//! `[nextflow] pass_env` and a local run's work directory, through the real binaries: a listed
//! variable reaches a pipeline run's `nextflow` (a stand-in that writes down its environment)
//! by its environment, and nothing else — not a command, not a hook, not the card or an
//! answer; a configuration listing a provider's key is refused by `codaris config check` and
//! by the daemon; a run whose work directory would be outside the roots gets no card; `doctor`
//! counts a credential `pass_env` lists and names the work directory `NXF_WORK` gives.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codaris_test_support::sandbox::{Sandbox, calls_script, events, stderr, stdout};
use serde_json::{Value, json};

/// The value the run must get and nothing else may show.
const SECRET: &str = "lab-cloud-secret-7f3a9c";

/// An executable script at `path`.
fn script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("its directory");
    std::fs::write(path, body).expect("a script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("executable");
}

/// A stand-in `nextflow` (not Nextflow) that writes its environment to `nextflow-env.txt` in
/// the launch directory and its arguments to `nextflow-args.txt`, printing neither.
fn stand_in_nextflow(sandbox: &Sandbox) -> PathBuf {
    let path = sandbox.root.path().join("nf-bin/nextflow");
    script(
        &path,
        "#!/bin/sh\n# codaris stand-in `nextflow` for the e2e tests: NOT Nextflow; it writes down its environment\nenv > nextflow-env.txt\necho \"$@\" > nextflow-args.txt\necho 'stand-in nextflow: done'\n",
    );
    path
}

/// A pipeline directory `proj/pipe` with a `main.nf` and `config` as its `nextflow.config`.
fn pipeline(sandbox: &Sandbox, config: &str) -> (PathBuf, PathBuf) {
    let proj = sandbox.root.path().join("proj");
    let pipe = proj.join("pipe");
    std::fs::create_dir_all(&pipe).expect("pipe");
    std::fs::write(pipe.join("main.nf"), "workflow {}\n").expect("main.nf");
    std::fs::write(pipe.join("nextflow.config"), config).expect("nextflow.config");
    (proj, pipe)
}

fn turn(sandbox: &Sandbox, proj: &Path, calls: &[(&str, Value)]) -> Vec<Value> {
    let output = sandbox.run_script(
        proj,
        &calls_script(calls),
        &["--permission-mode", "accept_edits", "--approve", "session"],
        "go",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    events(&output)
}

fn result_of<'a>(events: &'a [Value], tool: &str) -> &'a str {
    events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["tool"] == tool)
        .and_then(|e| e["output"].as_str())
        .unwrap_or_default()
}

#[test]
fn a_pass_env_variable_reaches_the_run_alone_and_by_its_environment() {
    let sandbox = Sandbox::new();
    let nextflow = stand_in_nextflow(&sandbox);
    let hook_log = sandbox.root.path().join("hook-env.txt");
    let hook = sandbox.root.path().join("hooks/spy");
    script(
        &hook,
        &format!(
            "#!/bin/sh\n# a PreToolUse hook that writes down its environment\ncat > /dev/null\nenv >> '{}'\nexit 0\n",
            hook_log.display()
        ),
    );
    sandbox.write_config(&format!(
        "[tools]\nlean_surface = false\n\n[nextflow]\nbin = \"{}\"\nprofiles = [\"test\"]\npass_env = [\"LAB_CLOUD_TOKEN\"]\n\n[[hooks.pre_tool_use]]\nmatcher = \"run_command|run_built_pipeline\"\ncommand = [\"{}\"]\n",
        nextflow.display(),
        hook.display()
    ));
    let (proj, pipe) = pipeline(&sandbox, "profiles {\n  test { params.x = 1 }\n}\n");
    let _daemon = sandbox.start_daemon_in(sandbox.root.path(), &[("LAB_CLOUD_TOKEN", SECRET)], &[]);
    let events = turn(
        &sandbox,
        &proj,
        &[
            (
                "run_built_pipeline",
                json!({"path": "pipe", "profile": "test"}),
            ),
            (
                "run_command",
                json!({"command": "env > command-env.txt; echo listed"}),
            ),
            (
                "background_wait",
                json!({"task_id": "bg-1", "timeout_seconds": 60}),
            ),
        ],
    );
    let launched = result_of(&events, "run_built_pipeline");
    assert!(launched.starts_with("launched run `codaris-"), "{launched}");
    let pipe = std::fs::canonicalize(&pipe).expect("pipe");
    assert!(
        launched.contains(&format!("work dir: {}\n", pipe.join("work").display())),
        "{launched}"
    );
    let waited = result_of(&events, "background_wait");
    assert!(waited.contains("stand-in nextflow: done"), "{waited}");

    // The run got it, by its environment.
    let run_env = std::fs::read_to_string(pipe.join("nextflow-env.txt")).expect("the run's env");
    assert!(
        run_env.contains(&format!("LAB_CLOUD_TOKEN={SECRET}")),
        "{run_env}"
    );
    let args = std::fs::read_to_string(pipe.join("nextflow-args.txt")).expect("the run's args");
    assert!(!args.contains(SECRET), "{args}");
    // A command did not, nor did the hooks (before the command and before the run).
    let command_env = std::fs::read_to_string(proj.join("command-env.txt")).expect("its env");
    assert!(command_env.contains("PATH="), "{command_env}");
    assert!(!command_env.contains("LAB_CLOUD_TOKEN"), "{command_env}");
    let hook_env = std::fs::read_to_string(&hook_log).expect("the hook ran");
    assert!(hook_env.matches("PATH=").count() >= 2, "{hook_env}");
    assert!(!hook_env.contains("LAB_CLOUD_TOKEN"), "{hook_env}");
    // Neither the card (which shows the command line) nor any answer or event shows it.
    let card = events
        .iter()
        .find(|e| e["type"] == "card" && e["capability"]["name"] == "run_pipeline")
        .unwrap_or_else(|| panic!("no card: {events:#?}"));
    let preview = card.to_string();
    assert!(preview.contains("nextflow run"), "{preview}");
    assert!(preview.contains("work dir: "), "{preview}");
    for event in &events {
        assert!(!event.to_string().contains(SECRET), "{event}");
    }
}

#[test]
fn a_pass_env_listing_a_provider_key_is_refused_by_the_check_and_the_daemon() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[nextflow]\npass_env = [\"AWS_PROFILE\", \"OPENAI_API_KEY\"]\n");
    let checked = sandbox.cli(&["config", "check"]);
    assert!(!checked.status.success(), "{}", stdout(&checked));
    let said = format!("{}{}", stdout(&checked), stderr(&checked));
    assert!(
        said.contains("`nextflow.pass_env` lists `OPENAI_API_KEY`"),
        "{said}"
    );

    let mut daemon = sandbox
        .command("codarisd")
        .env("OPENAI_API_KEY", "sk-must-never-reach-a-run")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("codarisd");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = daemon.try_wait().expect("its status") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = daemon.kill();
            let _ = daemon.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut said = String::new();
    if let Some(mut err) = daemon.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut err, &mut said);
    }
    assert!(
        status.is_some_and(|s| !s.success()),
        "the daemon started: {said}"
    );
    assert!(
        said.contains("nextflow.pass_env") && said.contains("OPENAI_API_KEY"),
        "{said}"
    );
}

#[test]
fn a_run_whose_work_dir_leaves_the_roots_gets_no_card_and_a_cloud_one_does() {
    let sandbox = Sandbox::new();
    let nextflow = stand_in_nextflow(&sandbox);
    sandbox.write_config(&format!(
        "[tools]\nlean_surface = false\n\n[nextflow]\nbin = \"{}\"\nprofiles = [\"test\", \"slurm\", \"awsbatch\"]\n",
        nextflow.display()
    ));
    let (proj, _pipe) = pipeline(
        &sandbox,
        "profiles {\n  slurm {\n    process.executor = 'slurm'\n    workDir = '/etc/x'\n  }\n  awsbatch {\n    process.executor = 'awsbatch'\n    workDir = 's3://lab/work'\n  }\n}\n",
    );
    let _daemon = sandbox.start_daemon_in(sandbox.root.path(), &[], &[]);
    let events = turn(
        &sandbox,
        &proj,
        &[
            (
                "run_built_pipeline",
                json!({"path": "pipe", "profile": "slurm"}),
            ),
            (
                "run_built_pipeline",
                json!({"path": "pipe", "profile": "awsbatch"}),
            ),
        ],
    );
    let results: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .filter_map(|e| e["output"].as_str())
        .collect();
    assert!(
        results[0].contains("refused: the work dir `/etc/x` (`workDir` of profile `slurm`")
            && results[0].contains("is outside the session's roots"),
        "{results:?}"
    );
    assert_eq!(results[0].lines().count(), 1, "{}", results[0]);
    // One card: the cloud run's, saying where it writes.
    let cards: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "card")
        .map(Value::to_string)
        .collect();
    assert_eq!(cards.len(), 1, "{cards:?}");
    assert!(
        cards[0].contains("work dir: s3://lab/work") && cards[0].contains("a cloud URL"),
        "{}",
        cards[0]
    );
    assert!(
        results[1].contains("work dir: s3://lab/work\n"),
        "{}",
        results[1]
    );
}

/// `nextflow.pass_env` is read at each launch: a commit adding a name puts it in force for the
/// next run at once; a commit listing a provider's key is refused, naming it.
#[test]
fn a_commit_puts_pass_env_in_force_at_once_and_refuses_a_provider_key() {
    let sandbox = Sandbox::new();
    let nextflow = stand_in_nextflow(&sandbox);
    sandbox.write_config(&format!(
        "[tools]\nlean_surface = false\n\n[nextflow]\nbin = \"{}\"\nprofiles = [\"test\"]\n",
        nextflow.display()
    ));
    let (proj, pipe) = pipeline(&sandbox, "");
    let _daemon = sandbox.start_daemon_in(sandbox.root.path(), &[("LAB_CLOUD_TOKEN", SECRET)], &[]);
    let set = sandbox.cli(&[
        "config",
        "set",
        "add_list nextflow.pass_env=LAB_CLOUD_TOKEN",
    ]);
    assert!(set.status.success(), "{}{}", stdout(&set), stderr(&set));
    let committed = sandbox.cli(&["config", "commit"]);
    let said = format!("{}{}", stdout(&committed), stderr(&committed));
    assert!(committed.status.success(), "{said}");
    assert!(!said.contains("next start"), "{said}");
    turn(
        &sandbox,
        &proj,
        &[
            ("run_built_pipeline", json!({"path": "pipe"})),
            (
                "background_wait",
                json!({"task_id": "bg-1", "timeout_seconds": 60}),
            ),
        ],
    );
    let run_env = std::fs::read_to_string(pipe.join("nextflow-env.txt")).expect("the run's env");
    assert!(
        run_env.contains(&format!("LAB_CLOUD_TOKEN={SECRET}")),
        "{run_env}"
    );

    let set = sandbox.cli(&[
        "config",
        "set",
        "add_list nextflow.pass_env=ANTHROPIC_API_KEY",
    ]);
    let committed = sandbox.cli(&["config", "commit"]);
    let said = format!(
        "{}{}{}{}",
        stdout(&set),
        stderr(&set),
        stdout(&committed),
        stderr(&committed)
    );
    assert!(
        !set.status.success() || !committed.status.success(),
        "{said}"
    );
    assert!(said.contains("ANTHROPIC_API_KEY"), "{said}");
}

/// `codaris doctor` counts a credential `nextflow.pass_env` lists and names the work directory
/// `NXF_WORK` gives each executor profile, held to `allowed_dirs` (it does not know which
/// pipeline will run, so not its `workDir`).
#[test]
fn doctor_counts_pass_env_and_names_nxf_work_s_work_dir() {
    let sandbox = Sandbox::new();
    let scratch = sandbox.root.path().join("scratch");
    std::fs::create_dir_all(&scratch).expect("scratch");
    sandbox.write_config(&format!(
        "allowed_dirs = [\"{}\"]\n\n[nextflow]\nprofiles = [\"test\", \"slurm\", \"awsbatch\"]\npass_env = [\"AWS_PROFILE\"]\n",
        scratch.display()
    ));
    let _daemon = sandbox.start_daemon_in(
        sandbox.root.path(),
        &[("AWS_PROFILE", "lab"), ("NXF_WORK", "/etc/x")],
        &[],
    );
    let shown = sandbox.cli(&["doctor", "--json"]);
    let report: Value = serde_json::from_str(&stdout(&shown)).unwrap_or(Value::Null);
    let of = |profile: &str| {
        report["executors"]
            .as_array()
            .and_then(|all| all.iter().find(|e| e["profile"] == profile))
            .cloned()
            .unwrap_or_else(|| panic!("no `{profile}` in {report}"))
    };
    let slurm = of("slurm");
    assert!(
        slurm["problem"]
            .as_str()
            .is_some_and(|p| p.contains("the work dir `/etc/x` (NXF_WORK) is outside")),
        "{slurm}"
    );
    let aws = of("awsbatch");
    let found = aws["found"].to_string();
    assert!(
        found.contains(
            "credentials named by `AWS_PROFILE`, passed to pipeline runs (`nextflow.pass_env`)"
        ),
        "{aws}"
    );
    assert!(
        aws["problem"]
            .as_str()
            .is_some_and(|p| p.contains("the work dir `/etc/x` (NXF_WORK)")),
        "{aws}"
    );
}
