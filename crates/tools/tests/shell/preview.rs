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
    assert!(
        message.starts_with("preview_server: `/` is outside every allowed root"),
        "{message}"
    );
}

/// Starts `preview_server` on `site` and returns its `127.0.0.1:PORT`.
async fn start(s: &Setup, site: &str) -> String {
    let out = s.ok("preview_server", json!({"path": site})).await;
    out.strip_prefix("serving at http://")
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn preview_server_never_serves_through_a_symlink_out_of_its_directory() {
    let s = setup();
    let site = s.base().join("site");
    std::fs::create_dir_all(site.join("docs")).unwrap();
    std::fs::write(site.join("index.html"), "<h1>hi</h1>").unwrap();
    std::fs::write(site.join("docs/index.html"), "<p>docs</p>").unwrap();
    // Outside the served directory, though inside the root, and outside the root.
    std::fs::write(s.base().join("private.txt"), "private data").unwrap();
    std::fs::create_dir(s.base().join("private")).unwrap();
    std::fs::write(s.base().join("private/index.html"), "private page").unwrap();
    let beyond = tempfile::tempdir().unwrap();
    std::fs::write(beyond.path().join("far.txt"), "far away").unwrap();
    let links = [
        ("file-link.txt", s.base().join("private.txt")),
        ("relative-link.txt", PathBuf::from("../private.txt")),
        ("dir-link", s.base().join("private")),
        ("up", PathBuf::from("..")),
        ("far.txt", beyond.path().join("far.txt")),
        ("far-dir", beyond.path().to_path_buf()),
    ];
    for (name, target) in &links {
        std::os::unix::fs::symlink(target, site.join(name)).unwrap();
    }
    // A link that stays inside the directory is followed.
    std::os::unix::fs::symlink("docs/index.html", site.join("alias.html")).unwrap();
    let address = start(&s, "site").await;
    for target in [
        "/file-link.txt",
        "/relative-link.txt",
        "/dir-link",
        "/dir-link/",
        "/dir-link/index.html",
        "/up/private.txt",
        "/up/site/index.html",
        "/far.txt",
        "/far-dir/far.txt",
    ] {
        let page = http_get(&address, target).await;
        assert!(
            page.starts_with("HTTP/1.1 404 Not Found\r\n"),
            "{target}: {page}"
        );
        for leaked in ["private", "far away"] {
            assert!(!page.contains(leaked), "{target} leaked: {page}");
        }
    }
    for (target, body) in [
        ("/", "<h1>hi</h1>"),
        ("/docs/", "<p>docs</p>"),
        ("/alias.html", "<p>docs</p>"),
    ] {
        let page = http_get(&address, target).await;
        assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{target}: {page}");
        assert!(page.ends_with(body), "{target}: {page}");
    }
    s.ok("background_stop", json!({"task_id": "bg-1"})).await;
}

/// A thread swaps a served file between a page and a symlink out of the directory while GETs
/// run: each answer is the page or a 404, never the outside file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_server_never_serves_a_symlink_swapped_in() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let s = setup();
    let site = s.base().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("page.html"), "the page").unwrap();
    let beyond = tempfile::tempdir().unwrap();
    std::fs::write(beyond.path().join("far.txt"), "far away").unwrap();
    let address = start(&s, "site").await;
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (site, far) = (site.clone(), beyond.path().join("far.txt"));
        let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::remove_file(site.join("link.tmp"));
                let _ = std::os::unix::fs::symlink(&far, site.join("link.tmp"));
                let _ = std::fs::rename(site.join("link.tmp"), site.join("page.html"));
                let _ = std::fs::write(site.join("page.tmp"), "the page");
                let _ = std::fs::rename(site.join("page.tmp"), site.join("page.html"));
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let (mut gets, mut served) = (0, 0);
    while gets < 300 || (swaps.load(Ordering::Relaxed) < 100 && gets < 5_000) {
        let page = http_get(&address, "/page.html").await;
        assert!(!page.contains("far away"), "served outside: {page}");
        if page.starts_with("HTTP/1.1 200 OK\r\n") {
            assert!(page.ends_with("the page"), "{page}");
            served += 1;
        } else {
            assert!(page.starts_with("HTTP/1.1 404 Not Found\r\n"), "{page}");
        }
        gets += 1;
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    let swaps = swaps.load(Ordering::Relaxed);
    assert!(swaps >= 100, "the race ran: {swaps} swaps, {gets} gets");
    assert!(
        served > 0,
        "the page was served some of the time: {gets} gets"
    );
    s.ok("background_stop", json!({"task_id": "bg-1"})).await;
}

#[tokio::test]
async fn preview_server_does_not_serve_the_fences_secrets() {
    let mut s = setup();
    let site = s.base().join("site");
    std::fs::create_dir_all(site.join("state")).unwrap();
    std::fs::write(site.join("state/token"), "api-token").unwrap();
    std::fs::write(site.join("state/notes.txt"), "notes").unwrap();
    s.ctx.fence = s.ctx.fence.clone().with_secret([site.join("state/token")]);
    let address = start(&s, "site").await;
    for target in [
        "/state/token",
        "/state/TOKEN",
        "/state/./token",
        "/state//token",
    ] {
        let page = http_get(&address, target).await;
        assert!(
            page.starts_with("HTTP/1.1 404 Not Found\r\n") && !page.contains("api-token"),
            "{target}: {page}"
        );
    }
    let page = http_get(&address, "/state/notes.txt").await;
    assert!(page.ends_with("notes"), "{page}");
    // Serving the secret's directory as a whole is fine; serving the secret itself is not.
    let message = s
        .model_error("preview_server", json!({"path": "site/state/token"}))
        .await;
    assert!(message.contains("credentials"), "{message}");
    s.ok("background_stop", json!({"task_id": "bg-1"})).await;
}
