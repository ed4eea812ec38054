//! Files `share_file` copied into a session are listed and read back over the API, and only
//! those: a name that is not a shared file's SHA-256 reads nothing.

use codaris_proto::v1;
use codaris_test_support::daemon::InProcess;
use pretty_assertions::assert_eq;
use tonic::Code;

use crate::turns::scripted_session;

#[tokio::test]
async fn shared_files_are_listed_and_read_back_whole() {
    let daemon = InProcess::start_with_toml("[tools]\nlean_surface = false\n").await;
    let content: Vec<u8> = (0..200_000u32).map(|n| (n % 251) as u8).collect();
    std::fs::write(daemon.temp.path().join("report.bin"), &content).unwrap();
    let script = serde_json::json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "share_file", "args": {"path": "report.bin"}}]},
        {"text": "shared"}
    ]}]});
    let (mut sessions, id) = scripted_session(
        &daemon,
        daemon.temp.path(),
        &script,
        v1::PermissionMode::Bypass,
    )
    .await;
    // `share_file` is class `always`: it asks even under bypass.
    let mut stream = crate::turns::start_turn(&mut sessions, &id, "share it").await;
    let rest =
        crate::turns::rest_answering(&mut stream, &mut sessions, &id, v1::CardAnswer::AllowOnce)
            .await;
    assert_eq!(rest.cards.len(), 1, "{rest:?}");
    let files = sessions
        .list_shared_files(v1::ListSharedFilesRequest {
            session_id: id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .files;
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].name, "report.bin");
    assert_eq!(files[0].size, content.len() as u64);
    assert_eq!(files[0].sha256.len(), 64);

    let read = |sha256: &str| v1::ReadSharedFileRequest {
        session_id: id.clone(),
        sha256: sha256.to_owned(),
    };
    let mut chunks = sessions
        .read_shared_file(read(&files[0].sha256))
        .await
        .unwrap()
        .into_inner();
    let mut bytes = Vec::new();
    while let Some(chunk) = chunks.message().await.unwrap() {
        assert!(chunk.data.len() <= 64 * 1024);
        bytes.extend(chunk.data);
    }
    assert!(bytes == content, "the bytes read back differ");

    for wrong in [
        "0".repeat(64),
        "../../token".to_owned(),
        "index.jsonl".to_owned(),
    ] {
        let status = sessions.read_shared_file(read(&wrong)).await.err().unwrap();
        assert_eq!(status.code(), Code::NotFound, "{wrong}: {status:?}");
    }
    let status = sessions
        .list_shared_files(v1::ListSharedFilesRequest {
            session_id: "nope".to_owned(),
        })
        .await
        .err()
        .unwrap();
    assert_eq!(status.code(), Code::NotFound);
    daemon.stop().await;
}
