//! `http_request`: methods, the six ways to give a body, files kept inside the fence, redirects,
//! a proxy, timeouts.

use std::time::{Duration, Instant};

use codaris_tools::{HttpRequest, Tool, ToolError, ToolOutput};
use serde_json::{Value, json};

use crate::fake::{Fake, Reply, serve};
use crate::{ctx, model_error, text};

async fn echo() -> Fake {
    serve(|seen| match seen.target.as_str() {
        "/redirect" => Reply::redirect("/landed"),
        "/bytes" => Reply::new(200, "application/octet-stream", vec![0u8, 159, 146, 150]),
        "/slow" => Reply::new(200, "text/plain", "late").delayed(Duration::from_secs(30)),
        _ => Reply::new(201, "application/json", r#"{"ok":true}"#).header("X-Echo", &seen.method),
    })
    .await
}

async fn call(root: &std::path::Path, args: Value) -> Result<ToolOutput, ToolError> {
    HttpRequest::new().call(&ctx(root), &args).await
}

#[tokio::test]
async fn status_line_headers_and_body_come_back() {
    let server = echo().await;
    let dir = tempfile::tempdir().unwrap();
    let output = call(dir.path(), json!({"url": server.url("/x")}))
        .await
        .unwrap();
    let text = text(&output);
    assert!(text.starts_with("HTTP/1.1 201 Created\n"), "{text}");
    assert!(
        text.contains("\ncontent-type: application/json\n"),
        "{text}"
    );
    assert!(text.contains("\nx-echo: GET\n"), "{text}");
    assert!(text.ends_with("\n\n{\"ok\":true}"), "{text}");
}

#[tokio::test]
async fn methods_query_headers_and_each_body_kind_are_sent() {
    let server = echo().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.bin"), b"file body").unwrap();
    let cases = [
        (
            json!({"method": "get", "query": {"q": "a b", "n": 2, "t": ["x", "y"]}, "headers": {"X-Key": "k1"}}),
            "GET",
            "/echo?q=a+b&n=2&t=x&t=y", // in the order given
            None,
            b"".to_vec(),
        ),
        (
            json!({"method": "POST", "body": "raw text"}),
            "POST",
            "/echo",
            None,
            b"raw text".to_vec(),
        ),
        (
            json!({"method": "PUT", "body_base64": "AAEC"}),
            "PUT",
            "/echo",
            None,
            vec![0, 1, 2],
        ),
        (
            json!({"method": "PATCH", "json": {"a": [1, 2]}}),
            "PATCH",
            "/echo",
            Some("application/json"),
            br#"{"a":[1,2]}"#.to_vec(),
        ),
        (
            json!({"method": "POST", "form": {"name": "x y", "n": 1}}),
            "POST",
            "/echo",
            Some("application/x-www-form-urlencoded"),
            b"name=x+y&n=1".to_vec(), // in the order given
        ),
        (
            json!({"method": "POST", "body_file": "data.bin"}),
            "POST",
            "/echo",
            None,
            b"file body".to_vec(),
        ),
        (
            json!({"method": "DELETE"}),
            "DELETE",
            "/echo",
            None,
            Vec::new(),
        ),
    ];
    for (mut args, method, target, content_type, body) in cases {
        args["url"] = json!(server.url("/echo"));
        call(dir.path(), args.clone()).await.unwrap();
        let seen = server.seen().pop().unwrap();
        assert_eq!(
            (seen.method.as_str(), seen.target.as_str()),
            (method, target),
            "{args}"
        );
        assert_eq!(seen.body, body, "{args}");
        if let Some(content_type) = content_type {
            assert_eq!(seen.header("content-type"), Some(content_type), "{args}");
        }
        if method == "GET" {
            assert_eq!(seen.header("x-key"), Some("k1"));
        }
    }
}

#[tokio::test]
async fn form_data_uploads_text_fields_and_files() {
    let server = echo().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("reads.fq"), b"@r1\nACGT\n").unwrap();
    let args = json!({"url": server.url("/up"), "method": "POST",
        "form_data": {"note": "hello", "upload": {"file": "reads.fq", "content_type": "text/plain"}}});
    call(dir.path(), args).await.unwrap();
    let seen = server.seen().pop().unwrap();
    assert!(
        seen.header("content-type")
            .unwrap()
            .starts_with("multipart/form-data; boundary=")
    );
    let body = String::from_utf8_lossy(&seen.body);
    assert!(body.contains("name=\"note\"\r\n\r\nhello\r\n"), "{body}");
    assert!(
        body.contains("name=\"upload\"; filename=\"reads.fq\""),
        "{body}"
    );
    assert!(body.contains("@r1\nACGT\n"), "{body}");
}

#[tokio::test]
async fn more_than_one_body_or_a_file_outside_the_fence_is_refused_before_sending() {
    let server = echo().await;
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), b"s3cret").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
    let url = server.url("/x");
    for (args, expected) in [
        (
            json!({"url": url, "body": "a", "json": {}}),
            "give at most one of",
        ),
        (
            json!({"url": url, "form": {}, "form_data": {}, "body_base64": "AA=="}),
            "got `body_base64`, `form`, `form_data`",
        ),
        (
            json!({"url": url, "body_file": outside.path().join("secret")}),
            "is outside every allowed root",
        ),
        (
            json!({"url": url, "body_file": "../secret"}),
            "http_request: `../secret` is outside every allowed root",
        ),
        (
            json!({"url": url, "body_file": "link"}),
            "http_request: `link` cannot be used: permission denied, or it leads outside its allowed root through a symlink",
        ),
        (
            json!({"url": url, "form_data": {"f": {"file": "link"}}}),
            "through a symlink",
        ),
        (
            json!({"url": url, "body_file": "missing"}),
            "http_request: `missing` does not exist",
        ),
        (json!({"url": url, "body_base64": "***"}), "not base64"),
        (
            json!({"url": url, "method": "BAD METHOD"}),
            "is not an HTTP method",
        ),
        (
            json!({"url": url, "headers": {"Bad Name": "x"}}),
            "is not a valid header",
        ),
        (
            json!({"url": url, "proxy": "::not a url"}),
            "is not a proxy URL",
        ),
        (
            json!({"url": url, "output_file": "../escape.txt"}),
            "http_request: `../escape.txt` is outside every allowed root",
        ),
    ] {
        let message = model_error(call(dir.path(), args.clone()).await);
        assert!(message.contains(expected), "{args}: {message}");
    }
    assert_eq!(server.seen(), vec![], "nothing was sent");
}

#[tokio::test]
async fn output_file_saves_the_body_inside_the_fence() {
    let server = echo().await;
    let dir = tempfile::tempdir().unwrap();
    let args = json!({"url": server.url("/bytes"), "output_file": "downloads/blob.bin"});
    let output = call(dir.path(), args).await.unwrap();
    assert!(
        text(&output).ends_with("[saved 4 bytes of body to `downloads/blob.bin`]"),
        "{}",
        text(&output)
    );
    assert_eq!(
        std::fs::read(dir.path().join("downloads/blob.bin")).unwrap(),
        vec![0u8, 159, 146, 150]
    );
    let names: Vec<_> = std::fs::read_dir(dir.path().join("downloads"))
        .unwrap()
        .collect();
    assert_eq!(names.len(), 1, "no partial file is left behind");
}

#[tokio::test]
async fn output_file_never_writes_through_a_symlink() {
    let server = echo().await;
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("victim"), b"untouched").unwrap();
    // A symlinked directory that leads out of the fence.
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
    let message = model_error(
        call(
            dir.path(),
            json!({"url": server.url("/x"), "output_file": "out/victim"}),
        )
        .await,
    );
    assert!(message.contains("through a symlink"), "{message}");
    // A symlink planted at the name itself is replaced, not followed.
    std::os::unix::fs::symlink(outside.path().join("victim"), dir.path().join("planted")).unwrap();
    call(
        dir.path(),
        json!({"url": server.url("/x"), "output_file": "planted"}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read(outside.path().join("victim")).unwrap(),
        b"untouched"
    );
    assert_eq!(
        std::fs::read(dir.path().join("planted")).unwrap(),
        br#"{"ok":true}"#
    );
}

#[tokio::test]
async fn binary_bodies_are_described_not_shown() {
    let server = echo().await;
    let dir = tempfile::tempdir().unwrap();
    let output = call(dir.path(), json!({"url": server.url("/bytes")}))
        .await
        .unwrap();
    assert!(
        text(&output).ends_with(
            "[binary body of type application/octet-stream: 4 bytes; save it with output_file]"
        ),
        "{}",
        text(&output)
    );
}

#[tokio::test]
async fn redirects_are_followed_only_when_asked() {
    let server = echo().await;
    let dir = tempfile::tempdir().unwrap();
    let output = call(dir.path(), json!({"url": server.url("/redirect")}))
        .await
        .unwrap();
    assert!(
        text(&output).starts_with("HTTP/1.1 302 Found\n"),
        "{}",
        text(&output)
    );
    let args = json!({"url": server.url("/redirect"), "follow_redirects": true});
    let output = call(dir.path(), args).await.unwrap();
    assert!(
        text(&output).starts_with("HTTP/1.1 201 Created\n"),
        "{}",
        text(&output)
    );
    assert_eq!(server.seen().pop().unwrap().target, "/landed");
}

#[tokio::test]
async fn a_proxy_named_by_the_call_carries_the_request() {
    // The fake server plays the proxy: an http proxy receives the absolute URL as the target,
    // so the named host is never resolved or reached.
    let proxy = echo().await;
    let dir = tempfile::tempdir().unwrap();
    let args = json!({"url": "http://upstream.invalid/path?x=1", "proxy": proxy.url("")});
    let output = call(dir.path(), args).await.unwrap();
    assert!(
        text(&output).starts_with("HTTP/1.1 201"),
        "{}",
        text(&output)
    );
    assert_eq!(
        proxy.seen().pop().unwrap().target,
        "http://upstream.invalid/path?x=1"
    );
}

#[tokio::test]
async fn default_headers_are_sent_and_a_call_overrides_them() {
    let server = echo().await;
    let dir = tempfile::tempdir().unwrap();
    let tool = HttpRequest::with_default_headers(vec![
        ("User-Agent".into(), "Browser/1.0".into()),
        ("X-Team".into(), "bio".into()),
    ]);
    let args = json!({"url": server.url("/x"), "headers": {"x-team": "mine"}});
    tool.call(&ctx(dir.path()), &args).await.unwrap();
    let seen = server.seen().pop().unwrap();
    assert_eq!(seen.header("user-agent"), Some("Browser/1.0"));
    assert_eq!(seen.header("x-team"), Some("mine"));
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let server = echo().await;
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let args = json!({"url": server.url("/slow"), "timeout_seconds": 1});
    let message = model_error(call(dir.path(), args).await);
    assert!(
        message.contains("did not answer within 1 s") || message.contains("timed out"),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}
