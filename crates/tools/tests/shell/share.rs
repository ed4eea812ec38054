//! `share_file`: content-addressed copies and what it refuses.

use codaris_tools::shell::{SHARE_FILE_LIMIT, SHARE_SESSION_LIMIT, ShareFile};

use super::*;

/// The bytes in the session's shared directory, the index aside.
fn shared_bytes(s: &Setup) -> u64 {
    std::fs::read_dir(s.ctx.workspace.join("shared"))
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap())
                .filter(|entry| entry.file_name() != "index.jsonl")
                .map(|entry| entry.metadata().unwrap().len())
                .sum()
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn share_file_copies_by_content_into_the_session() {
    let s = setup();
    std::fs::write(s.base().join("sub/a.txt"), "hello").unwrap();
    let hex = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
    let out = s.ok("share_file", json!({"path": "sub/a.txt"})).await;
    assert_eq!(out, format!("shared `sub/a.txt` (5 bytes) as sha256:{hex}"));
    let copy = s.ctx.workspace.join("shared").join(hex);
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), "hello");
    assert!(std::fs::metadata(&copy).unwrap().permissions().readonly());
    let out = s.ok("share_file", json!({"path": "sub/a.txt"})).await;
    assert!(out.ends_with("(already shared)"), "{out}");
    let index = std::fs::read_to_string(s.ctx.workspace.join("shared/index.jsonl")).unwrap();
    let first: Value = serde_json::from_str(index.lines().next().unwrap()).unwrap();
    assert_eq!(
        first,
        json!({"sha256": hex, "name": "a.txt", "path": s.base().join("sub/a.txt"), "size": 5})
    );
}

#[tokio::test]
async fn share_file_refuses_links_directories_strangers_and_giants() {
    let s = setup();
    std::os::unix::fs::symlink(s.base().join("sub"), s.base().join("link")).unwrap();
    std::fs::File::create(s.base().join("big"))
        .unwrap()
        .set_len(26 * 1024 * 1024)
        .unwrap();
    let cases = [
        ("link", "`link` is a symlink; share the file it points to"),
        ("sub", "`sub` is not a regular file"),
        (".", "`.` is a directory"),
        (
            "big",
            "`big` is 27262976 bytes; share_file takes at most 25 MiB",
        ),
    ];
    for (path, expected) in cases {
        assert_eq!(
            s.model_error("share_file", json!({"path": path})).await,
            expected
        );
    }
    for path in ["/etc/hostname", "../x"] {
        let message = s.model_error("share_file", json!({"path": path})).await;
        assert!(
            message.starts_with(&format!(
                "share_file: `{path}` is outside every allowed root"
            )),
            "{message}"
        );
    }
    let missing = s
        .model_error("share_file", json!({"path": "missing"}))
        .await;
    assert!(
        missing.starts_with("`missing` cannot be shared:"),
        "{missing}"
    );
}

#[tokio::test]
async fn share_file_stops_at_the_session_cap() {
    assert_eq!(
        (SHARE_FILE_LIMIT, SHARE_SESSION_LIMIT),
        (25 * 1024 * 1024, 100 * 1024 * 1024),
        "the defaults"
    );
    let s = setup();
    // The same rule as the 100 MiB default, at 1 MiB so the test writes little.
    let tool = ShareFile::with_limits(SHARE_FILE_LIMIT, 1024 * 1024);
    let share = |path: &'static str| {
        let (tool, ctx) = (tool, s.ctx.clone());
        async move {
            match tool.call(&ctx, &json!({"path": path})).await {
                Ok(_) => Ok(()),
                Err(ToolError::Model { message }) => Err(message),
                Err(other) => Err(format!("not a model error: {other:?}")),
            }
        }
    };
    for (name, byte) in [("a", b'a'), ("b", b'b'), ("c", b'c')] {
        std::fs::write(s.base().join(name), vec![byte; 400 * 1024]).unwrap();
    }
    share("a").await.unwrap();
    share("b").await.unwrap();
    assert_eq!(shared_bytes(&s), 800 * 1024);
    assert_eq!(
        share("c").await,
        Err(
            "`c` (409600 bytes) would take this session's shared files past 1 MiB (819200 bytes used)"
                .to_owned()
        )
    );
    assert_eq!(shared_bytes(&s), 800 * 1024, "nothing was stored");
    // Content already shared costs nothing, so it is still accepted at the cap.
    std::fs::write(s.base().join("a-again"), vec![b'a'; 400 * 1024]).unwrap();
    share("a-again").await.unwrap();
    // Exactly up to the cap is allowed.
    std::fs::write(s.base().join("fill"), vec![b'f'; 224 * 1024]).unwrap();
    share("fill").await.unwrap();
    assert_eq!(shared_bytes(&s), 1024 * 1024);
    // The per-file cap is a field too.
    let small = ShareFile::with_limits(1000, SHARE_SESSION_LIMIT);
    let message = match small.call(&s.ctx, &json!({"path": "a"})).await {
        Err(ToolError::Model { message }) => message,
        other => format!("not a model error: {other:?}"),
    };
    assert_eq!(
        message,
        "`a` is 409600 bytes; share_file takes at most 1000 bytes"
    );
}

#[tokio::test]
async fn share_file_opens_beneath_the_root_and_refuses_secrets() {
    let mut s = setup();
    let beyond = tempfile::tempdir().unwrap();
    std::fs::write(beyond.path().join("far.txt"), "far away").unwrap();
    std::os::unix::fs::symlink(beyond.path(), s.base().join("out")).unwrap();
    // `sub/up` climbs out of the root (its parent is the temp dir's parent).
    std::os::unix::fs::symlink("../..", s.base().join("sub/up")).unwrap();
    let far_name = beyond.path().file_name().unwrap().to_str().unwrap();
    let climbing = format!("sub/up/{far_name}/far.txt");
    for path in ["out/far.txt", climbing.as_str()] {
        let message = s.model_error("share_file", json!({"path": path})).await;
        assert!(
            message.starts_with(&format!("`{path}` cannot be shared: ")),
            "{path}: {message}"
        );
        assert!(!message.contains("far away"), "{message}");
    }
    std::fs::create_dir(s.base().join("state")).unwrap();
    std::fs::write(s.base().join("state/token"), "api-token").unwrap();
    s.ctx.fence = s
        .ctx
        .fence
        .clone()
        .with_secret([s.base().join("state/token")]);
    for path in ["state/token", "state/TOKEN", "state/./token"] {
        let message = s.model_error("share_file", json!({"path": path})).await;
        assert!(
            message.contains("holds Codaris's credentials"),
            "{path}: {message}"
        );
    }
    assert_eq!(shared_bytes(&s), 0, "nothing was shared");
}
