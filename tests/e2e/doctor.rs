//! `codaris doctor` checks what a `codaris run` from the same shell would use: the shell's
//! `CODARIS_PROVIDER`, `CODARIS_MODEL` and `OPENAI_BASE_URL` reach the check as they reach a
//! new session (the daemon, already running, never saw them), and each setting names where it
//! came from. The provider is a stand-in for OpenAI's model list on loopback.

use std::process::Output;

use codaris_test_support::fake_http::{FakeHttp, Reply, Seen};
use codaris_test_support::sandbox::{Sandbox, stderr, stdout};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const MODEL: &str = "local-model";

/// A loopback server that lists one model, as a llama.cpp or Ollama server does, keyless.
fn fake_models() -> FakeHttp {
    FakeHttp::start(|seen: &Seen| match (seen.method.as_str(), seen.path()) {
        ("GET", "/v1/models") => Reply::json(
            200,
            &json!({"object": "list", "data": [{"id": MODEL, "object": "model"}]}),
        ),
        _ => Reply::not_implemented("fake model list", seen),
    })
}

fn doctor(sandbox: &Sandbox, env: &[(&str, &str)], json_out: bool) -> Output {
    let mut command = sandbox.command("codaris");
    command.envs(env.iter().copied()).arg("doctor");
    if json_out {
        command.arg("--json");
    }
    command.output().expect("run codaris doctor")
}

fn json_of(output: &Output) -> Value {
    serde_json::from_str(&stdout(output))
        .unwrap_or_else(|err| panic!("not one JSON document ({err}): {}", stdout(output)))
}

#[test]
fn doctor_checks_the_provider_this_shell_s_environment_names() {
    let sandbox = Sandbox::new();
    let server = fake_models();
    let base = format!("{}/v1", server.url());
    // The daemon is set up with nothing: only this shell names a provider.
    let _daemon = sandbox.start_daemon(&[]);
    let shell = [
        ("CODARIS_PROVIDER", "openai"),
        ("CODARIS_MODEL", MODEL),
        ("OPENAI_BASE_URL", base.as_str()),
    ];

    let checked = doctor(&sandbox, &shell, true);
    assert_eq!(
        checked.status.code(),
        Some(0),
        "{}{}",
        stdout(&checked),
        stderr(&checked)
    );
    let report = json_of(&checked);
    let checks = report["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 1, "{report}");
    assert_eq!(
        checks[0],
        json!({
            "provider": "openai", "model": MODEL, "base_url": base, "ok": true, "problem": null,
            "for_new_session": true,
            "sources": {"provider": "env CODARIS_PROVIDER", "model": "env CODARIS_MODEL",
                        "base_url": "env OPENAI_BASE_URL"}
        })
    );
    assert!(
        server.seen().iter().any(|seen| seen.path() == "/v1/models"),
        "the stand-in was asked"
    );

    let shown = doctor(&sandbox, &shell, false);
    assert_eq!(
        stdout(&shown).lines().collect::<Vec<_>>(),
        [
            format!("ok    openai ({MODEL}) at {base}"),
            "      a new session from this shell: provider from env CODARIS_PROVIDER, model from env CODARIS_MODEL, base URL from env OPENAI_BASE_URL".to_owned(),
        ]
    );

    // The same daemon from a shell that names nothing: nothing is set up.
    let bare = doctor(&sandbox, &[], false);
    assert_eq!(bare.status.code(), Some(1));
    assert!(
        stdout(&bare).contains("no model provider is set up"),
        "{}",
        stdout(&bare)
    );
}

#[test]
fn a_base_url_in_the_shell_goes_with_the_daemon_s_provider_and_model() {
    let sandbox = Sandbox::new();
    let server = fake_models();
    let base = format!("{}/v1", server.url());
    let _daemon = sandbox.start_daemon(&[]);
    // The daemon's own settings: openai and its model, at the public endpoint, with no key.
    let stored = sandbox
        .command("codaris")
        .args([
            "login",
            "--provider",
            "openai",
            "--model",
            MODEL,
            "--keep-key",
        ])
        .output()
        .unwrap();
    assert!(stored.status.success(), "{}", stderr(&stored));

    let checked = doctor(&sandbox, &[("OPENAI_BASE_URL", base.as_str())], true);
    let report = json_of(&checked);
    let checks = report["checks"].as_array().unwrap();
    // First what a run from this shell would use: the daemon's provider and model at the
    // shell's URL, on loopback, which needs no key.
    assert_eq!(checks[0]["for_new_session"], true, "{report}");
    assert_eq!(checks[0]["base_url"], json!(base));
    assert_eq!(checks[0]["model"], MODEL);
    assert_eq!(checks[0]["ok"], true, "{report}");
    assert_eq!(
        checks[0]["sources"],
        json!({"provider": "codaris login", "model": "codaris login",
               "base_url": "env OPENAI_BASE_URL"})
    );
    // Then the daemon's own endpoint, which has no key: named, and the exit status says so.
    assert_eq!(checks.len(), 2, "{report}");
    assert_eq!(checks[1]["for_new_session"], false);
    assert_eq!(checks[1]["sources"], Value::Null);
    assert!(
        checks[1]["problem"]
            .as_str()
            .unwrap()
            .contains("OPENAI_API_KEY"),
        "{report}"
    );
    assert_eq!(checked.status.code(), Some(1));
}

/// `doctor --pipeline DIR` reads each executor profile in that pipeline's config, as a launch
/// of it reads it: an institution's `cluster` profile counts by the executor it sets, and the
/// work dir its run would use is named with what set it, or refused when it is outside the
/// allowed folders. A relative DIR is the shell's.
#[test]
fn doctor_reads_a_pipeline_s_own_executor_and_work_dir() {
    let sandbox = Sandbox::new();
    let root = sandbox.root.path().canonicalize().unwrap();
    let pipe = root.join("pipe");
    std::fs::create_dir_all(&pipe).unwrap();
    std::fs::write(pipe.join("main.nf"), "workflow { }\n").unwrap();
    std::fs::write(
        pipe.join("nextflow.config"),
        format!(
            "profiles {{\n  cluster {{\n    process.executor = 'sge'\n    workDir = '{}'\n  }}\n  \
             elsewhere {{\n    process.executor = 'lsf'\n    workDir = '/etc/elsewhere'\n  }}\n}}\n",
            pipe.join("scratch").display()
        ),
    )
    .unwrap();
    sandbox.write_config(&format!(
        "allowed_dirs = [{:?}]\n\n[nextflow]\nprofiles = [\"test\", \"cluster\", \"elsewhere\"]\n",
        pipe.display().to_string()
    ));
    let _daemon = sandbox.start_daemon(&[]);
    let output = sandbox
        .command("codaris")
        .current_dir(&root)
        .args(["doctor", "--json", "--pipeline", "pipe"])
        .output()
        .unwrap();
    let report = json_of(&output);
    let profile = |name: &str| {
        report["executors"]
            .as_array()
            .and_then(|all| all.iter().find(|e| e["profile"] == name).cloned())
            .unwrap_or_else(|| panic!("no `{name}` in {report}"))
    };
    let cluster = profile("cluster");
    assert_eq!(cluster["executor"], "sge", "{cluster}");
    let found = cluster["found"].to_string();
    assert!(
        found.contains(&format!(
            "work dir: {} (`workDir` of profile `cluster`",
            pipe.join("scratch").display()
        )),
        "{cluster}"
    );
    let elsewhere = profile("elsewhere");
    assert_eq!(elsewhere["executor"], "lsf", "{elsewhere}");
    assert!(
        elsewhere["problem"].as_str().is_some_and(
            |p| p.contains("the work dir `/etc/elsewhere` (`workDir` of profile `elsewhere`")
        ),
        "{elsewhere}"
    );
    assert_eq!(
        report["executors"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    // The text names every profile asked about, the work dir with it.
    let text = stdout(
        &sandbox
            .command("codaris")
            .current_dir(&root)
            .args(["doctor", "--pipeline", "pipe"])
            .output()
            .unwrap(),
    );
    assert!(
        text.contains("warn  executor profile `cluster` (sge): ")
            && text.contains(&format!("work dir: {}", pipe.join("scratch").display())),
        "{text}"
    );
    // Without the pipeline, neither name is an executor doctor knows.
    let plain = stdout(&sandbox.cli(&["doctor"]));
    assert!(!plain.contains("executor profile"), "{plain}");

    let missing = sandbox
        .command("codaris")
        .current_dir(&root)
        .args(["doctor", "--pipeline", "nowhere"])
        .output()
        .unwrap();
    assert!(
        stderr(&missing).contains("has no nextflow.config; give a pipeline's directory"),
        "{}",
        stderr(&missing)
    );
}
