//! `webfetch`: the SSRF guard on the first hop and on every redirect, and the happy path.

use std::time::{Duration, Instant};

use codaris_tools::{Tool, WebFetch};
use serde_json::json;

use crate::fake::{Reply, serve};
use crate::{ctx, model_error, text};

const PAGE: &str = "<html><head><title>Fake page</title><script>var x = 1;</script></head>\
    <body><nav><a href='/'>Home</a></nav><main><h1>Hello</h1><p>Some <em>text</em> and \
    <a href='https://example.org/'>a link</a>.</p></main><footer>foot</footer></body></html>";

async fn fetch(
    tool: &WebFetch,
    url: &str,
) -> Result<codaris_tools::ToolOutput, codaris_tools::ToolError> {
    let dir = tempfile::tempdir().unwrap();
    tool.call(
        &ctx(dir.path()),
        &json!({"url": url, "timeout_seconds": 20}),
    )
    .await
}

#[tokio::test]
async fn loopback_private_and_link_local_are_refused_without_the_switch() {
    let server = serve(|_| Reply::new(200, "text/html", PAGE)).await;
    let port = server.addr.port();
    let tool = WebFetch::new();
    for (url, kind) in [
        (format!("http://127.0.0.1:{port}/"), "loopback"),
        (format!("http://[::1]:{port}/"), "loopback"),
        (format!("http://localhost:{port}/"), "loopback"),
        (
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "link-local",
        ),
        ("http://10.0.0.1/".to_owned(), "private"),
        ("http://192.168.0.1/".to_owned(), "private"),
        ("http://[::ffff:127.0.0.1]/".to_owned(), "loopback"),
        ("http://[fe80::1]/".to_owned(), "link-local"),
        ("http://0.0.0.0/".to_owned(), "unspecified"),
        // The URL parser reads a bare number as an IPv4 address: 2130706433 is 127.0.0.1.
        (format!("http://2130706433:{port}/"), "loopback"),
        (format!("http://0177.0.0.1:{port}/"), "loopback"),
        (format!("http://0x7f.1:{port}/"), "loopback"),
        (format!("http://user@127.0.0.1:{port}/"), "loopback"),
    ] {
        let message = model_error(fetch(&tool, &url).await);
        assert!(
            message.contains(&format!("a {kind} address")),
            "{url}: {message}"
        );
    }
    assert_eq!(server.seen(), vec![], "the fake server was never contacted");
}

#[tokio::test]
async fn the_switch_opens_loopback_but_not_private_or_link_local() {
    let tool = WebFetch::allowing_loopback_for_tests();
    for url in [
        "http://169.254.169.254/",
        "http://10.0.0.1/",
        "http://172.16.0.1/",
    ] {
        let message = model_error(fetch(&tool, url).await);
        assert!(
            message.contains("webfetch only fetches public pages"),
            "{url}: {message}"
        );
    }
}

#[tokio::test]
async fn with_the_switch_a_name_resolving_to_loopback_is_reached() {
    // `localhost` may answer ::1 first; every checked address is pinned, so the client falls
    // back to 127.0.0.1 where the fake server listens.
    let server = serve(|_| Reply::new(200, "text/plain", "local")).await;
    let tool = WebFetch::allowing_loopback_for_tests();
    let url = format!("http://localhost:{}/", server.addr.port());
    let output = fetch(&tool, &url).await.unwrap();
    assert!(text(&output).ends_with("local"), "{}", text(&output));
}

#[tokio::test]
async fn html_comes_back_as_markdown_of_the_main_text() {
    let server = serve(|_| Reply::new(200, "text/html; charset=utf-8", PAGE)).await;
    let tool = WebFetch::allowing_loopback_for_tests();
    let output = fetch(&tool, &server.url("/page")).await.unwrap();
    assert_eq!(
        text(&output),
        format!(
            "# Fake page\nSource: {}\n\n# Hello\n\nSome *text* and [a link](https://example.org/).",
            server.url("/page")
        )
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].target, "/page");
    assert!(
        seen[0]
            .header("user-agent")
            .unwrap()
            .starts_with("codaris/")
    );
}

#[tokio::test]
async fn a_page_in_a_legacy_charset_is_decoded() {
    // "<p>Привет</p>" in windows-1251, declared only in the header.
    let body = [
        b"<p>".as_slice(),
        &[0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2],
        b"</p>",
    ]
    .concat();
    let server =
        serve(move |_| Reply::new(200, "text/html; charset=windows-1251", body.clone())).await;
    let tool = WebFetch::allowing_loopback_for_tests();
    let output = fetch(&tool, &server.url("/")).await.unwrap();
    assert!(text(&output).ends_with("\n\nПривет"), "{}", text(&output));
}

#[tokio::test]
async fn max_chars_cuts_with_a_note() {
    let server =
        serve(|_| Reply::new(200, "text/plain", "abcdefghij".repeat(10)).header("X-Fake", "1"))
            .await;
    let tool = WebFetch::allowing_loopback_for_tests();
    let dir = tempfile::tempdir().unwrap();
    let output = tool
        .call(
            &ctx(dir.path()),
            &json!({"url": server.url("/"), "max_chars": 15}),
        )
        .await
        .unwrap();
    assert!(
        text(&output).ends_with(
            "abcdefghijabcde\n\n[cut at 15 of 100 characters; raise max_chars to read more]"
        ),
        "{}",
        text(&output)
    );
}

#[tokio::test]
async fn redirects_are_followed_and_each_hop_is_checked() {
    let server = serve(|seen| match seen.target.as_str() {
        "/hop1" => Reply::redirect("/hop2"),
        "/hop2" => Reply::redirect("/final"),
        "/to-private" => Reply::redirect("http://10.0.0.1/admin"),
        "/to-metadata" => Reply::redirect("http://169.254.169.254/latest/meta-data/"),
        "/to-mapped" => Reply::redirect("http://[::ffff:192.168.1.1]/"),
        "/to-file" => Reply::redirect("file:///etc/passwd"),
        "/loop" => Reply::redirect("/loop"),
        _ => Reply::new(200, "text/plain", "arrived"),
    })
    .await;
    let tool = WebFetch::allowing_loopback_for_tests();
    let output = fetch(&tool, &server.url("/hop1")).await.unwrap();
    assert!(text(&output).ends_with("arrived"), "{}", text(&output));
    assert!(text(&output).contains("/final"), "{}", text(&output));

    for (path, expected) in [
        ("/to-private", "is 10.0.0.1, a private address"),
        ("/to-metadata", "is 169.254.169.254, a link-local address"),
        ("/to-mapped", "a private address"),
        ("/to-file", "answered a redirect without a usable Location"),
        ("/loop", "stopped after 5 redirects"),
    ] {
        let message = model_error(fetch(&tool, &server.url(path)).await);
        assert!(message.contains(expected), "{path}: {message}");
    }
}

#[tokio::test]
async fn binary_and_error_answers_are_told_to_the_model() {
    let server = serve(|seen| match seen.target.as_str() {
        "/zip" => Reply::new(200, "application/zip", vec![0u8, 1, 2, 3]),
        _ => Reply::new(404, "text/html", "<p>nope</p>"),
    })
    .await;
    let tool = WebFetch::allowing_loopback_for_tests();
    let message = model_error(fetch(&tool, &server.url("/zip")).await);
    assert!(
        message.contains("is application/zip (4 bytes)"),
        "{message}"
    );
    let message = model_error(fetch(&tool, &server.url("/missing")).await);
    assert!(message.ends_with("answered 404"), "{message}");
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let server =
        serve(|_| Reply::new(200, "text/plain", "late").delayed(Duration::from_secs(30))).await;
    let tool = WebFetch::allowing_loopback_for_tests();
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let result = tool
        .call(
            &ctx(dir.path()),
            &json!({"url": server.url("/"), "timeout_seconds": 1}),
        )
        .await;
    let message = model_error(result);
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

#[tokio::test]
async fn bad_arguments_are_model_errors() {
    let tool = WebFetch::new();
    let dir = tempfile::tempdir().unwrap();
    for (args, expected) in [
        (json!({}), "`url` is required"),
        (
            json!({"url": "ftp://example.org/"}),
            "not an http or https URL",
        ),
        (json!({"url": "not a url"}), "not an http or https URL"),
        (
            json!({"url": "http://example.org/", "max_chars": 0}),
            "`max_chars` must be",
        ),
        (
            json!({"url": "http://example.org/", "timeout_seconds": "5"}),
            "`timeout_seconds` must be",
        ),
    ] {
        let message = model_error(tool.call(&ctx(dir.path()), &args).await);
        assert!(message.contains(expected), "{args}: {message}");
    }
}
