//! `preview_server` against a real loopback client.

use super::*;

async fn http_get(address: &str, target: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!("GET {target} HTTP/1.1\r\nHost: {address}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

#[tokio::test]
async fn preview_server_serves_the_directory_and_nothing_outside_it() {
    let s = setup();
    let site = s.base().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("index.html"), "<h1>hi</h1>").unwrap();
    std::fs::write(s.base().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink("/etc", site.join("etc")).unwrap();
    let out = s.ok("preview_server", json!({"path": "site"})).await;
    let address = out
        .strip_prefix("serving at http://")
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();
    assert!(
        out.ends_with("as background task `bg-1` (stop it with background_stop)"),
        "{out}"
    );
    let page = http_get(&address, "/").await;
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
    assert!(
        page.contains("text/html") && page.ends_with("<h1>hi</h1>"),
        "{page}"
    );
    for target in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/etc/hostname",
        "/missing",
    ] {
        let page = http_get(&address, target).await;
        assert!(
            page.starts_with("HTTP/1.1 404 Not Found\r\n"),
            "{target}: {page}"
        );
    }
    let log = s.ok("background_output", json!({"task_id": "bg-1"})).await;
    assert!(
        log.contains("GET / 200") && log.contains("GET /missing 404"),
        "{log}"
    );
    assert!(
        s.ok("background_list", json!({}))
            .await
            .contains("running  ")
    );
    let out = s.ok("background_stop", json!({"task_id": "bg-1"})).await;
    assert_eq!(out, "task `bg-1`: stopped");
    // A command forked by a parallel test holds a copy of the listening socket until it execs,
    // so the port may take a moment to close.
    let mut closed = false;
    for _ in 0..200 {
        closed = tokio::net::TcpStream::connect(&address).await.is_err();
        if closed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(closed, "still listening on {address} after the stop");
    let message = s.model_error("preview_server", json!({"path": "/"})).await;
    assert_eq!(message, "`path` `/` is outside the allowed roots");
}
