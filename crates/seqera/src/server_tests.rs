//! The server over a duplex pipe, with rmcp's client: what a real client lists and calls.

use codaris_test_support::fake_wave::FakeWave;
use pretty_assertions::assert_eq;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

use super::*;

async fn connected(setup: SeqeraSetup) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(serve(setup, server_io));
    ().serve(client_io).await.unwrap()
}

fn arguments(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

#[tokio::test]
async fn it_names_itself_and_lists_every_tool_with_its_read_only_hint() {
    let client = connected(SeqeraSetup::default()).await;
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, SERVER_NAME);
    let listed = client.list_all_tools().await.unwrap();
    let summary: Vec<(String, Option<bool>)> = listed
        .iter()
        .map(|t| {
            (
                t.name.to_string(),
                t.annotations.as_ref().and_then(|a| a.read_only_hint),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("build_container_image".to_owned(), Some(false)),
            ("lint_nextflow".to_owned(), Some(true)),
            ("list_workspaces".to_owned(), Some(true)),
            ("list_pipelines".to_owned(), Some(true)),
            ("list_runs".to_owned(), Some(true)),
            ("describe_run".to_owned(), Some(true)),
            ("list_run_tasks".to_owned(), Some(true)),
            ("get_run_log".to_owned(), Some(true)),
            ("launch_pipeline".to_owned(), Some(false)),
        ]
    );
    let build = &listed[0];
    assert_eq!(build.input_schema.get("required"), Some(&json!(["tool"])));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_call_answers_text_and_a_failure_is_an_error_result() {
    let wave = FakeWave::start("tok");
    let setup = SeqeraSetup {
        wave_url: wave.url(),
        ..SeqeraSetup::default()
    };
    let client = connected(setup).await;
    let answered = client
        .call_tool(
            CallToolRequestParams::new("build_container_image")
                .with_arguments(arguments(json!({"tool": "multiqc"}))),
        )
        .await
        .unwrap();
    let answered = serde_json::to_value(answered).unwrap();
    assert_eq!(
        answered
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        false
    );
    let text = answered["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("nf-core module multiqc provides multiqc "),
        "{text}"
    );

    let refused = client
        .call_tool(
            CallToolRequestParams::new("build_container_image").with_arguments(arguments(
                json!({"tool": "multiqc", "registry": "docker.io/x"}),
            )),
        )
        .await
        .unwrap();
    let refused = serde_json::to_value(refused).unwrap();
    assert_eq!(refused["isError"], true);
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("registry docker.io/x is not in [seqera] registries")
    );

    let no_args = client
        .call_tool(CallToolRequestParams::new("lint_nextflow"))
        .await
        .unwrap();
    let no_args = serde_json::to_value(no_args).unwrap();
    assert_eq!(no_args["isError"], true);
    assert!(wave.seen().is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_unknown_tool_is_a_protocol_error() {
    let client = connected(SeqeraSetup::default()).await;
    let err = client
        .call_tool(CallToolRequestParams::new("rm_rf"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the seqera server has no tool `rm_rf`"),
        "{err}"
    );
    client.cancel().await.unwrap();
}

#[test]
fn tools_has_every_tool_once() {
    let names: Vec<&str> = tools(&SeqeraSetup::default())
        .iter()
        .map(|t| t.name())
        .collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len());
    assert_eq!(names.len(), 9);
}

#[test]
fn no_tool_prints_the_token_in_debug() {
    let setup = SeqeraSetup {
        token: Some("s3cr3t-debug-token".into()),
        ..SeqeraSetup::default()
    };
    let server = SeqeraServer::new(&setup);
    assert!(!format!("{server:?}").contains("s3cr3t-debug-token"));
    let printed = format!(
        "{:?} {:?} {:?} {:?}",
        crate::build::BuildContainerImage::new(&setup),
        crate::launch::LaunchPipeline::new(&setup),
        crate::platform::PlatformTool::all(&setup),
        crate::wave::Wave::new(&setup)
    );
    assert!(!printed.contains("s3cr3t-debug-token"), "{printed}");
    assert!(printed.contains("<redacted>"));
}
