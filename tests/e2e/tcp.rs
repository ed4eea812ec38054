//! The loopback TCP listener: every request needs the token, no browser origin, a loopback host.

use codaris_proto::v1;
use codaris_test_support::sandbox::{Sandbox, free_port};
use pretty_assertions::assert_eq;
use tonic::Code;
use tonic::metadata::MetadataValue;
use tonic::transport::{Endpoint, Uri};

/// Calls `Daemon.Status` over TCP with the given `:authority` and headers.
async fn status_over_tcp(
    port: u16,
    authority: &str,
    headers: &[(&str, &str)],
) -> Result<u32, Code> {
    let origin: Uri = format!("http://{authority}").parse().unwrap();
    let channel = Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .origin(origin)
        .connect()
        .await
        .unwrap();
    let mut request = tonic::Request::new(v1::StatusRequest {});
    for (name, value) in headers {
        let value: MetadataValue<_> = value.parse().unwrap();
        request.metadata_mut().insert(
            tonic::metadata::MetadataKey::from_bytes(name.as_bytes()).unwrap(),
            value,
        );
    }
    v1::daemon_client::DaemonClient::new(channel)
        .status(request)
        .await
        .map(|response| response.into_inner().pid)
        .map_err(|status| status.code())
}

// Two workers: the channels' connection tasks close their connections on one while the test
// stops the daemon on the other (on one blocked thread the daemon waits out its drain for them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_requires_token_no_origin_and_a_loopback_host() {
    let sandbox = Sandbox::new();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let daemon = sandbox.start_daemon(&["--listen", &listen]);
    let token_file = sandbox.state_dir().join("token");
    assert_eq!(Sandbox::mode(&token_file), 0o600);
    let token = std::fs::read_to_string(&token_file).unwrap();
    let bearer = format!("Bearer {token}");
    let loopback = listen.as_str();

    // The positive control: with the token, on a loopback name, it answers.
    assert_eq!(
        status_over_tcp(port, loopback, &[("authorization", &bearer)]).await,
        Ok(daemon.pid())
    );
    assert_eq!(
        status_over_tcp(
            port,
            &format!("localhost:{port}"),
            &[("authorization", &bearer)]
        )
        .await,
        Ok(daemon.pid())
    );

    assert_eq!(
        status_over_tcp(port, loopback, &[]).await,
        Err(Code::Unauthenticated),
        "no token"
    );
    assert_eq!(
        status_over_tcp(port, loopback, &[("authorization", "Bearer 0123")]).await,
        Err(Code::Unauthenticated),
        "wrong token"
    );
    assert_eq!(
        status_over_tcp(
            port,
            loopback,
            &[
                ("authorization", &bearer),
                ("origin", "https://evil.example")
            ]
        )
        .await,
        Err(Code::PermissionDenied),
        "a browser origin"
    );
    assert_eq!(
        status_over_tcp(
            port,
            &format!("evil.example:{port}"),
            &[("authorization", &bearer)]
        )
        .await,
        Err(Code::PermissionDenied),
        "a foreign host"
    );

    // The socket needs no token: its 0600 mode is the guard.
    let output = sandbox.cli(&["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(status["tcp_listen"], listen);
}

#[test]
fn the_token_is_removed_on_stop() {
    let sandbox = Sandbox::new();
    let port = free_port();
    let daemon = sandbox.start_daemon(&["--listen", &format!("127.0.0.1:{port}")]);
    assert!(sandbox.state_dir().join("token").exists());
    assert!(sandbox.cli(&["daemon", "stop"]).status.success());
    daemon.wait(std::time::Duration::from_secs(10));
    assert!(!sandbox.state_dir().join("token").exists());
}
