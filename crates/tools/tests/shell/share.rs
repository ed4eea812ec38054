//! `share_file`: content-addressed copies and what it refuses.

use super::*;

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
            "/etc/hostname",
            "`/etc/hostname` is outside the allowed roots",
        ),
        ("../x", "`../x` is outside the allowed roots"),
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
    let missing = s
        .model_error("share_file", json!({"path": "missing"}))
        .await;
    assert!(
        missing.starts_with("`missing` cannot be shared:"),
        "{missing}"
    );
}
