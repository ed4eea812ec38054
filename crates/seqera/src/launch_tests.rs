//! Tests of `launch_pipeline` against the fake Platform (a stand-in built from the documented
//! launch request and answer; see tests/fixtures/platform-api).

use codaris_test_support::fake_platform::{FakePlatform, LAUNCHED_RUN, WORKSPACE};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

const TOKEN: &str = "fixture-platform-token-launch-5c2e";

fn tool(url: &str) -> LaunchPipeline {
    LaunchPipeline::new(&SeqeraSetup {
        platform_url: url.to_owned(),
        token: Some(TOKEN.to_owned()),
        ..SeqeraSetup::default()
    })
}

/// The documented example body (docs.seqera.io, "Automation"), kept verbatim as a fixture:
/// what this tool sends must use the same field names.
const DOCUMENTED: &str = include_str!("../tests/fixtures/platform-api/launch-request.docs.json");

#[tokio::test]
async fn a_launch_posts_the_documented_body_with_the_bearer_token_and_answers_how_to_follow() {
    let platform = FakePlatform::start(TOKEN);
    let args = json!({
        "pipeline": "https://github.com/nf-core/rnaseq",
        "workspace_id": WORKSPACE,
        "compute_env": "hjE97A8TvD9PklUb0hwEJ",
        "revision": "3.14.0",
        "profiles": ["test", "docker"],
        "params": {"input": "s3://lab/sheet.csv", "outdir": "s3://lab/results"},
        "work_dir": "s3://lab/work",
        "run_name": "rnaseq-first"
    });
    let text = tool(&platform.url()).call(&args).await.unwrap();
    let seen = platform.seen();
    assert_eq!(seen.len(), 1, "the run name was given: no read back");
    let post = &seen[0];
    assert_eq!(post.method, "POST");
    assert_eq!(post.path(), "/workflow/launch");
    assert_eq!(post.param("workspaceId"), Some(WORKSPACE.to_string()));
    assert_eq!(
        post.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    let body = post.json().unwrap();
    assert_eq!(
        body,
        json!({"launch": {
            "pipeline": "https://github.com/nf-core/rnaseq",
            "revision": "3.14.0",
            "computeEnvId": "hjE97A8TvD9PklUb0hwEJ",
            "workDir": "s3://lab/work",
            "paramsText": "{\n  \"input\": \"s3://lab/sheet.csv\",\n  \"outdir\": \"s3://lab/results\"\n}",
            "configProfiles": ["test", "docker"],
            "runName": "rnaseq-first"
        }})
    );
    // Every field sent is one Platform documents in its launch request.
    let documented: Value = serde_json::from_str(DOCUMENTED).unwrap();
    for key in ["pipeline", "revision", "computeEnvId", "workDir", "runName"] {
        assert!(documented["launch"].get(key).is_some(), "{key}");
    }
    // The digest the daemon records is the digest of the bytes that left.
    let sent = hex(&sha2::Sha256::digest(&post.body));
    assert_eq!(launch_body_sha256(&args), Some(sent.clone()));
    assert_eq!(
        text,
        format!(
            "launched run {LAUNCHED_RUN} (rnaseq-first) of https://github.com/nf-core/rnaseq in workspace {WORKSPACE}\n\
             launch body sha256: {sent}\n\
             samplesheet `input`: s3://lab/sheet.csv, read by the compute environment itself (not gated by Codaris)\n\
             follow it: describe_run {{\"run_id\": \"{LAUNCHED_RUN}\", \"workspace_id\": {WORKSPACE}}}, then list_run_tasks and get_run_log"
        )
    );
}

#[tokio::test]
async fn without_a_run_name_the_name_platform_chose_is_read_back() {
    let platform = FakePlatform::start(TOKEN);
    let text = tool(&platform.url())
        .call(&json!({"pipeline": "nf-core-rnaseq", "workspace_id": WORKSPACE.to_string()}))
        .await
        .unwrap();
    assert!(
        text.starts_with(&format!(
            "launched run {LAUNCHED_RUN} (launched_by_codaris) of nf-core-rnaseq"
        )),
        "{text}"
    );
    let seen = platform.seen();
    assert_eq!(
        seen[0].json().unwrap(),
        json!({"launch": {"pipeline": "nf-core-rnaseq"}})
    );
    assert_eq!(seen[1].method, "GET");
    assert_eq!(seen[1].path(), format!("/workflow/{LAUNCHED_RUN}"));
}

#[tokio::test]
async fn platform_s_refusal_is_said_and_bad_arguments_send_nothing() {
    let platform = FakePlatform::start(TOKEN);
    let err = tool(&platform.url())
        .call(&json!({"pipeline": "nf-core/rnaseq", "workspace_id": 789}))
        .await
        .unwrap_err();
    assert!(
        err.0
            .starts_with("Seqera Platform refused access (403) to workspace 789"),
        "{err}"
    );
    let before = platform.seen().len();
    for (args, says) in [
        (json!({"workspace_id": WORKSPACE}), "`pipeline`"),
        (json!({"pipeline": "x"}), "`workspace_id`"),
        (json!({"pipeline": "a b", "workspace_id": 1}), "`pipeline`"),
        (
            json!({"pipeline": "x", "workspace_id": 1, "compute_env": "../ce"}),
            "`compute_env`",
        ),
        (
            json!({"pipeline": "x", "workspace_id": 1, "profiles": ["ok", "a,b"]}),
            "`a,b` is not a profile name",
        ),
        (
            json!({"pipeline": "x", "workspace_id": 1, "params": "input: a"}),
            "`params`",
        ),
        (
            json!({"pipeline": "x", "workspace_id": 1, "run_name": "no spaces allowed"}),
            "`run_name`",
        ),
        (
            json!({"pipeline": "x", "workspace_id": 1, "work_dir": "s3://a\nb"}),
            "`work_dir`",
        ),
    ] {
        let err = tool(&platform.url()).call(&args).await.unwrap_err();
        assert!(err.0.contains(says), "{args}: {err}");
        assert_eq!(launch_body_sha256(&args), None, "{args}");
    }
    assert_eq!(platform.seen().len(), before, "nothing was sent");
}

#[test]
fn the_digest_follows_every_field_of_the_body() {
    let base = json!({"pipeline": "p", "workspace_id": 1});
    let digest = launch_body_sha256(&base);
    for (key, value) in [
        ("compute_env", json!("ce2")),
        ("work_dir", json!("s3://b/w")),
        ("revision", json!("dev")),
        ("params", json!({"a": 1})),
        ("profiles", json!(["test"])),
        ("run_name", json!("r")),
    ] {
        let mut changed = base.clone();
        changed[key] = value;
        assert_ne!(launch_body_sha256(&changed), digest, "{key}");
    }
}
