//! Tests of the Platform read-only set against the fake Platform.

use codaris_test_support::fake_platform::{FAILED_RUN, FakePlatform, LOG_ERROR_LINE, WORKSPACE};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

const TOKEN: &str = "fixture-platform-token-91ab";

fn tool(kind: Kind, url: &str, token: Option<&str>) -> PlatformTool {
    PlatformTool::new(
        kind,
        &SeqeraSetup {
            platform_url: url.to_owned(),
            token: token.map(str::to_owned),
            ..SeqeraSetup::default()
        },
    )
}

async fn call(platform: &FakePlatform, kind: Kind, args: Value) -> Result<String, ToolFailure> {
    tool(kind, &platform.url(), Some(TOKEN)).call(&args).await
}

#[tokio::test]
async fn workspaces_come_from_the_user_info_then_the_users_workspaces() {
    let platform = FakePlatform::start(TOKEN);
    let text = call(&platform, Kind::ListWorkspaces, json!({}))
        .await
        .unwrap();
    assert_eq!(
        text,
        "2 Seqera Platform workspaces for ada\n\
         personal: the user's own workspace (leave workspace_id out)\n\
         123456  genomics-lab/production  RNA-seq production  (private; maintain)\n\
         789  genomics-lab/scratch  Scratch space  (shared; launch)"
    );
    let seen = platform.seen();
    assert_eq!(
        seen.iter().map(|s| s.target.as_str()).collect::<Vec<_>>(),
        ["/user-info", "/user/7/workspaces"]
    );
    assert!(seen.iter().all(|s| s.method == "GET"));
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
}

#[tokio::test]
async fn pipelines_and_runs_of_a_workspace() {
    let platform = FakePlatform::start(TOKEN);
    let pipelines = call(
        &platform,
        Kind::ListPipelines,
        json!({"workspace_id": WORKSPACE}),
    )
    .await
    .unwrap();
    assert!(pipelines.starts_with("2 pipelines in workspace 123456\n101  nf-core-rnaseq  https://github.com/nf-core/rnaseq"), "{pipelines}");
    let runs = call(
        &platform,
        Kind::ListRuns,
        json!({"workspace_id": WORKSPACE.to_string(), "max": 2}),
    )
    .await
    .unwrap();
    assert_eq!(
        runs.lines().next().unwrap(),
        "2 runs in workspace 123456 (of 3)"
    );
    assert!(
        runs.contains(&format!(
            "{FAILED_RUN}  FAILED  happy_turing  nf-core/rnaseq 3.14.0"
        )),
        "{runs}"
    );
    let searched = call(
        &platform,
        Kind::ListRuns,
        json!({"workspace_id": WORKSPACE, "search": "sarek"}),
    )
    .await
    .unwrap();
    assert_eq!(
        searched.lines().next().unwrap(),
        "1 run in workspace 123456 matching \"sarek\""
    );
    let last = platform.seen().pop().unwrap();
    assert_eq!(last.path(), "/workflow");
    assert_eq!(last.param("workspaceId").as_deref(), Some("123456"));
    assert_eq!(last.param("search").as_deref(), Some("sarek"));
    assert_eq!(last.param("max").as_deref(), Some("20"));
}

#[tokio::test]
async fn a_run_its_tasks_and_its_log() {
    let platform = FakePlatform::start(TOKEN);
    let ws = json!(WORKSPACE);
    let run = call(
        &platform,
        Kind::DescribeRun,
        json!({"run_id": FAILED_RUN, "workspace_id": ws}),
    )
    .await
    .unwrap();
    assert_eq!(
        run.lines().next().unwrap(),
        format!("run {FAILED_RUN} (happy_turing): FAILED")
    );
    assert!(run.contains("\nduration: 30m 0s"), "{run}");
    assert!(run.contains("\nexit status: 1"), "{run}");
    assert!(
        run.contains("\ntasks: 11 succeeded, 1 failed, 3 cached"),
        "{run}"
    );
    let tasks = call(
        &platform,
        Kind::ListRunTasks,
        json!({"run_id": FAILED_RUN, "workspace_id": ws}),
    )
    .await
    .unwrap();
    assert_eq!(
        tasks.lines().next().unwrap(),
        format!("3 tasks of run {FAILED_RUN}")
    );
    assert!(
        tasks.contains(
            "2  FAILED exit 137  NFCORE_RNASEQ:RNASEQ:FASTQC (sample2)  7f/9e8d7c  1m 15s  job 0f3c2a9e-5b1d-4e7a-9c8b-2d6e4f1a7b3c (awsbatch)"
        ),
        "{tasks}"
    );
    let log = call(
        &platform,
        Kind::GetRunLog,
        json!({"run_id": FAILED_RUN, "workspace_id": ws, "tail": 3}),
    )
    .await
    .unwrap();
    assert_eq!(
        log.lines().next().unwrap(),
        format!("log of run {FAILED_RUN}: the last 3 of 25 lines")
    );
    // The analysis reads the whole log, not only the lines shown.
    assert!(
        log.contains("analysis (as analyze_run_log reads a console):"),
        "{log}"
    );
    assert!(log.contains("137"), "{log}");
    let full = call(
        &platform,
        Kind::GetRunLog,
        json!({"run_id": FAILED_RUN, "workspace_id": ws}),
    )
    .await
    .unwrap();
    assert!(full.contains(LOG_ERROR_LINE), "{full}");
    // The same diagnosis a local run's console gets.
    assert!(full.contains("\nexit_status: 137"), "{full}");
    assert!(
        full.contains("\nstderr_tail: `.command.sh: line 2:"),
        "{full}"
    );
    assert!(full.contains("\nlikely_cause: out_of_memory"), "{full}");
}

#[tokio::test]
async fn no_token_sends_nothing_and_says_how_to_set_one() {
    let platform = FakePlatform::start(TOKEN);
    for kind in Kind::ALL {
        let err = tool(kind, &platform.url(), None)
            .call(&json!({"run_id": FAILED_RUN}))
            .await
            .unwrap_err();
        assert_eq!(
            err.0,
            "no Seqera token: set [seqera] token or TOWER_ACCESS_TOKEN"
        );
    }
    assert!(platform.seen().is_empty());
}

#[tokio::test]
async fn a_wrong_token_is_invalid_and_never_repeated() {
    let platform = FakePlatform::start(TOKEN);
    let wrong = "tok-WRONG-77c1";
    let err = tool(Kind::ListWorkspaces, &platform.url(), Some(wrong))
        .call(&json!({}))
        .await
        .unwrap_err();
    assert!(err.0.contains("invalid Seqera token"), "{err}");
    assert!(!err.0.contains(wrong) && !format!("{err:?}").contains(wrong));
}

#[tokio::test]
async fn forbidden_and_missing_are_clear() {
    let platform = FakePlatform::start(TOKEN);
    let err = call(&platform, Kind::ListRuns, json!({"workspace_id": 999}))
        .await
        .unwrap_err();
    assert!(
        err.0
            .starts_with("Seqera Platform refused access (403) to workspace 999"),
        "{err}"
    );
    let err = call(
        &platform,
        Kind::DescribeRun,
        json!({"run_id": "nosuchrun", "workspace_id": WORKSPACE}),
    )
    .await
    .unwrap_err();
    assert!(
        err.0
            .starts_with("Seqera Platform has no run nosuchrun in workspace 123456 (404)"),
        "{err}"
    );
}

#[tokio::test]
async fn the_token_in_an_echoed_error_body_is_redacted() {
    use codaris_test_support::fake_http::{FakeHttp, Reply};
    let echo = FakeHttp::start(|seen| {
        let auth = seen.header("authorization").unwrap_or_default().to_owned();
        Reply::json(500, &json!({"message": format!("failed for {auth}")}))
    });
    let err = tool(Kind::ListPipelines, &echo.url(), Some(TOKEN))
        .call(&json!({}))
        .await
        .unwrap_err();
    assert!(
        err.0
            .starts_with("Seqera Platform answered 500 Internal Server Error to GET /pipelines"),
        "{err}"
    );
    assert!(!err.0.contains(TOKEN), "{err}");
}

#[tokio::test]
async fn bad_arguments_are_sentences_and_send_nothing() {
    let platform = FakePlatform::start(TOKEN);
    let cases = [
        (
            Kind::ListWorkspaces,
            json!([]),
            "the arguments must be a JSON object",
        ),
        (
            Kind::ListPipelines,
            json!("x"),
            "the arguments must be a JSON object",
        ),
        (
            Kind::ListPipelines,
            json!({"workspace_id": "abc"}),
            "`workspace_id` must be a workspace id",
        ),
        (
            Kind::ListRuns,
            json!({"workspace_id": -1}),
            "`workspace_id` must be a workspace id",
        ),
        (
            Kind::ListRuns,
            json!({"max": 0}),
            "`max` must be a whole number from 1 to 100",
        ),
        (
            Kind::ListRuns,
            json!({"max": 1e30}),
            "`max` must be a whole number",
        ),
        (
            Kind::ListRuns,
            json!({"search": {"a": 1}}),
            "`search` must be a string",
        ),
        (
            Kind::DescribeRun,
            json!({}),
            "`run_id` must be a non-empty string",
        ),
        (
            Kind::DescribeRun,
            json!({"run_id": "../../user-info"}),
            "`run_id` must be an id of letters and digits",
        ),
        (
            Kind::ListRunTasks,
            json!({"run_id": 5}),
            "`run_id` must be a string",
        ),
        (
            Kind::GetRunLog,
            json!({"run_id": FAILED_RUN, "tail": "all"}),
            "`tail` must be a whole number",
        ),
        (
            Kind::GetRunLog,
            json!(7),
            "the arguments must be a JSON object",
        ),
    ];
    for (kind, args, expected) in cases {
        let err = call(&platform, kind, args.clone()).await.unwrap_err();
        assert!(err.0.contains(expected), "{kind:?} {args}: {err}");
    }
    for kind in Kind::ALL {
        for bad in [json!([1]), json!("x"), json!(3), json!(false)] {
            let err = call(&platform, kind, bad).await.unwrap_err();
            assert!(
                err.0.ends_with("the arguments must be a JSON object"),
                "{kind:?}: {err}"
            );
        }
    }
    assert!(platform.seen().is_empty());
}

#[test]
fn every_tool_is_read_only_with_an_object_schema() {
    for tool in PlatformTool::all(&SeqeraSetup::default()) {
        assert!(tool.read_only());
        assert_eq!(tool.input_schema()["type"], "object", "{}", tool.name());
    }
}

#[test]
fn durations_read_well() {
    assert_eq!(duration(Some(42_000)), "42s");
    assert_eq!(duration(Some(75_000)), "1m 15s");
    assert_eq!(duration(Some(4_140_000)), "1h 9m");
    assert_eq!(duration(None), "");
}
