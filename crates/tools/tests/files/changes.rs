//! The tools that change files: edit, write, apply_patch, mkdir, rmdir, touch, rm, mv.

use super::*;

#[tokio::test]
async fn edit_once_all_and_errors() {
    let env = env();
    env.write("a.txt", "x = 1\ny = 1\n");
    let out = ok(
        &files::Edit,
        &env,
        json!({"path": "a.txt", "oldString": "x = 1", "newString": "x = 2"}),
    )
    .await;
    assert_eq!(out, "edited `a.txt`: 1 replacement");
    assert_eq!(env.read("a.txt"), "x = 2\ny = 1\n");
    let err = model_err(
        &files::Edit,
        &env,
        json!({"path": "a.txt", "oldString": "nope", "newString": "z"}),
    )
    .await;
    assert!(err.contains("was not found"), "{err}");
    env.write("b.txt", "k\nk\n");
    let err = model_err(
        &files::Edit,
        &env,
        json!({"path": "b.txt", "oldString": "k", "newString": "z"}),
    )
    .await;
    assert!(err.contains("matches 2 places"), "{err}");
    ok(
        &files::Edit,
        &env,
        json!({"path": "b.txt", "oldString": "k", "newString": "z", "replaceAll": true}),
    )
    .await;
    assert_eq!(env.read("b.txt"), "z\nz\n");
    let err = model_err(
        &files::Edit,
        &env,
        json!({"path": "none.txt", "oldString": "a", "newString": "b"}),
    )
    .await;
    assert!(err.contains("does not exist"), "{err}");
    let err = model_err(
        &files::Edit,
        &env,
        json!({"path": "b.txt", "oldString": "", "newString": "b"}),
    )
    .await;
    assert!(err.contains("empty"), "{err}");
}

#[tokio::test]
async fn edit_keeps_crlf() {
    let env = env();
    env.write("w.txt", "a\r\nb\r\nc\r\n");
    ok(
        &files::Edit,
        &env,
        json!({"path": "w.txt", "oldString": "a\nb", "newString": "a\nB\nB2"}),
    )
    .await;
    assert_eq!(env.read("w.txt"), "a\r\nB\r\nB2\r\nc\r\n");
}

#[tokio::test]
async fn write_creates_parents_and_overwrites() {
    let env = env();
    let out = ok(
        &files::WriteFile,
        &env,
        json!({"path": "new/deep/f.txt", "content": "hi\n"}),
    )
    .await;
    assert_eq!(out, "created `new/deep/f.txt` (3 bytes, 1 lines)");
    ok(
        &files::WriteFile,
        &env,
        json!({"path": "new/deep/f.txt", "content": "bye"}),
    )
    .await;
    assert_eq!(env.read("new/deep/f.txt"), "bye");
    let err = model_err(
        &files::WriteFile,
        &env,
        json!({"path": "new", "content": "x"}),
    )
    .await;
    assert!(err.contains("is a directory"), "{err}");
    let err = model_err(&files::WriteFile, &env, json!({"path": "f.txt"})).await;
    assert!(err.contains("`content` is required"), "{err}");
}

#[tokio::test]
async fn apply_patch_unified() {
    let env = env();
    env.write("src/a.txt", "one\ntwo\nthree\n");
    let patch = "diff --git a/src/a.txt b/src/a.txt\n--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n";
    let out = ok(&files::ApplyPatch, &env, json!({"patch": patch})).await;
    assert_eq!(out, "applied:\nM src/a.txt\nA new.txt");
    assert_eq!(env.read("src/a.txt"), "one\nTWO\nthree\n");
    assert_eq!(env.read("new.txt"), "hello\nworld\n");
}

#[tokio::test]
async fn apply_patch_v4a() {
    let env = env();
    env.write("m.py", "class A:\n    def f(self):\n        return 1\n\nclass B:\n    def f(self):\n        return 1\n");
    env.write("old.txt", "x\n");
    env.write("gone.txt", "x\n");
    let patch = "*** Begin Patch\n*** Update File: m.py\n@@ class B:\n     def f(self):\n-        return 1\n+        return 2\n*** Update File: old.txt\n*** Move to: moved/new.txt\n-x\n+y\n*** Delete File: gone.txt\n*** Add File: added.txt\n+fresh\n*** End Patch";
    let out = ok(&files::ApplyPatch, &env, json!({"patch": patch})).await;
    assert_eq!(
        out,
        "applied:\nM m.py\nR old.txt -> moved/new.txt\nD gone.txt\nA added.txt"
    );
    assert!(
        env.read("m.py")
            .ends_with("class B:\n    def f(self):\n        return 2\n")
    );
    assert!(
        env.read("m.py")
            .starts_with("class A:\n    def f(self):\n        return 1\n")
    );
    assert_eq!(env.read("moved/new.txt"), "y\n");
    assert!(!env.root.join("old.txt").exists() && !env.root.join("gone.txt").exists());
    assert_eq!(env.read("added.txt"), "fresh\n");
}

#[tokio::test]
async fn apply_patch_is_all_or_nothing() {
    let env = env();
    env.write("a.txt", "a\n");
    env.write("b.txt", "b\n");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Add File: c.txt\n+c\n*** Update File: b.txt\n-not there\n+B\n*** End Patch";
    let err = model_err(&files::ApplyPatch, &env, json!({"patch": patch})).await;
    assert!(
        err.contains("hunk 1 does not apply") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(env.read("a.txt"), "a\n");
    assert!(!env.root.join("c.txt").exists());
    let names: Vec<_> = fs::read_dir(&env.root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "no temporary files left: {names:?}");
    let err = model_err(
        &files::ApplyPatch,
        &env,
        json!({"patch": "*** Begin Patch\n*** Add File: ../x\n+x\n*** End Patch"}),
    )
    .await;
    assert!(err.contains("not beneath"), "{err}");
    let err = model_err(
        &files::ApplyPatch,
        &env,
        json!({"patch": "*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch"}),
    )
    .await;
    assert!(err.contains("not an existing file"), "{err}");
    let err = model_err(&files::ApplyPatch, &env, json!({"patch": "garbage"})).await;
    assert!(err.contains("changes no file"), "{err}");
}

#[tokio::test]
async fn directories_touch_rm_mv() {
    let env = env();
    let err = model_err(&files::Mkdir, &env, json!({"path": "p/q"})).await;
    assert!(err.contains("does not exist"), "{err}");
    ok(&files::Mkdir, &env, json!({"path": "p/q", "parents": true})).await;
    ok(&files::Mkdir, &env, json!({"path": "p/q", "parents": true})).await;
    let err = model_err(&files::Mkdir, &env, json!({"path": "p"})).await;
    assert!(err.contains("already exists"), "{err}");
    ok(&files::Touch, &env, json!({"path": "p/q/t.txt"})).await;
    let err = model_err(&files::Rmdir, &env, json!({"path": "p/q"})).await;
    assert!(err.contains("not empty"), "{err}");
    let err = model_err(&files::Touch, &env, json!({"path": "r/s/t.txt"})).await;
    assert!(err.contains("does not exist"), "{err}");
    ok(
        &files::Touch,
        &env,
        json!({"path": "r/s/t.txt", "create_parents": true}),
    )
    .await;
    let old = SystemTime::now() - Duration::from_secs(3600);
    fs::File::options()
        .write(true)
        .open(env.root.join("r/s/t.txt"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    ok(&files::Touch, &env, json!({"path": "r/s/t.txt"})).await;
    assert!(
        fs::metadata(env.root.join("r/s/t.txt"))
            .unwrap()
            .modified()
            .unwrap()
            > old
    );
    ok(&files::Touch, &env, json!({"path": "r"})).await;
    ok(
        &files::Mv,
        &env,
        json!({"src": "r/s/t.txt", "dst": "moved/into/u.txt"}),
    )
    .await;
    assert!(env.root.join("moved/into/u.txt").is_file());
    ok(
        &files::Mv,
        &env,
        json!({"src": "moved/into/u.txt", "dst": "p"}),
    )
    .await;
    assert!(env.root.join("p/u.txt").is_file());
    let err = model_err(&files::Mv, &env, json!({"src": "nope", "dst": "x"})).await;
    assert!(err.contains("does not exist"), "{err}");
    let err = model_err(&files::Rm, &env, json!({"path": "p"})).await;
    assert!(err.contains("set recursive"), "{err}");
    ok(&files::Rm, &env, json!({"path": "p/u.txt"})).await;
    ok(&files::Rm, &env, json!({"path": "p", "recursive": true})).await;
    ok(&files::Rmdir, &env, json!({"path": "r/s"})).await;
    assert!(!env.root.join("p").exists() && !env.root.join("r/s").exists());
    for tool in [&files::Rm as &dyn Tool, &files::Rmdir] {
        let err = model_err(tool, &env, json!({"path": ".", "recursive": true})).await;
        assert!(err.contains("allowed root itself"), "{err}");
    }
    assert!(env.root.is_dir());
}

#[tokio::test]
async fn apply_patch_crlf_and_final_newlines() {
    let env = env();
    env.write("w.txt", "a\r\nb\r\nc\r\n");
    let patch = "--- a/w.txt\n+++ b/w.txt\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n";
    ok(&files::ApplyPatch, &env, json!({"patch": patch})).await;
    assert_eq!(env.read("w.txt"), "a\r\nb\r\nC\r\n");
    env.write("n.txt", "x\ny");
    let patch =
        "--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+z\n";
    ok(&files::ApplyPatch, &env, json!({"patch": patch})).await;
    assert_eq!(env.read("n.txt"), "x\nz\n");
    let patch = "*** Begin Patch\n*** Update File: n.txt\n-z\n+end\n*** End of File\n*** End Patch";
    ok(&files::ApplyPatch, &env, json!({"patch": patch})).await;
    assert_eq!(env.read("n.txt"), "x\nend\n");
}

#[tokio::test]
async fn symlinks_inside_the_root_are_followed() {
    let env = env();
    env.write("real/t.txt", "one\n");
    std::os::unix::fs::symlink("real", env.root.join("alias")).unwrap();
    std::os::unix::fs::symlink("real/t.txt", env.root.join("t-link")).unwrap();
    assert_eq!(
        ok(&files::ReadFile, &env, json!({"path": "alias/t.txt"})).await,
        "     1\tone\n"
    );
    ok(
        &files::Edit,
        &env,
        json!({"path": "t-link", "oldString": "one", "newString": "two"}),
    )
    .await;
    ok(
        &files::WriteFile,
        &env,
        json!({"path": "alias/u.txt", "content": "u"}),
    )
    .await;
    assert_eq!(env.read("real/t.txt"), "two\n");
    assert_eq!(env.read("real/u.txt"), "u");
    assert!(
        fs::symlink_metadata(env.root.join("t-link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

mod roundtrip {
    use proptest::prelude::*;

    use super::*;

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "", "  d"]), 0..12)
            .prop_flat_map(|lines| {
                let body = lines.join("\n");
                prop::bool::ANY.prop_map(move |eol| {
                    if eol && !body.is_empty() {
                        format!("{body}\n")
                    } else {
                        body.clone()
                    }
                })
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 64,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// A unified diff made by `similar` applies back to exactly the new text.
        #[test]
        fn similar_diffs_apply(old in text(), new in text()) {
            prop_assume!(old != new);
            let env = env();
            env.write("f.txt", &old);
            let diff = similar::TextDiff::from_lines(&old, &new);
            let patch = diff.unified_diff().header("a/f.txt", "b/f.txt").to_string();
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let result = runtime.block_on(call(&files::ApplyPatch, &env, json!({"patch": patch})));
            prop_assert!(result.is_ok(), "{patch}\n{result:?}");
            prop_assert_eq!(env.read("f.txt"), new);
        }

        /// A V4A patch made from the same diff applies too. V4A carries no line numbers, so the
        /// lines are unique here: with repeated lines its context can be ambiguous by design.
        #[test]
        fn v4a_patches_apply(
            keep in prop::collection::vec(prop::bool::weighted(0.7), 0..15),
            inserts in prop::collection::vec(0u8..3, 0..16),
        ) {
            let old: Vec<String> = (0..keep.len()).map(|i| format!("line {i}")).collect();
            let mut new = Vec::new();
            for (i, line) in old.iter().enumerate() {
                for j in 0..inserts.get(i).copied().unwrap_or(0) {
                    new.push(format!("new {i}.{j}"));
                }
                if keep[i] {
                    new.push(line.clone());
                }
            }
            let (old, new) = (lines_text(&old), lines_text(&new));
            prop_assume!(old != new);
            let env = env();
            env.write("f.txt", &old);
            let patch = v4a(&old, &new);
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let result = runtime.block_on(call(&files::ApplyPatch, &env, json!({"patch": patch})));
            prop_assert!(result.is_ok(), "{patch}\n{result:?}");
            prop_assert_eq!(env.read("f.txt"), new);
        }
    }

    fn lines_text(lines: &[String]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    /// A V4A update of `f.txt` from `similar`'s grouped changes, one `@@` chunk a group.
    fn v4a(old: &str, new: &str) -> String {
        let diff = similar::TextDiff::from_lines(old, new);
        let mut patch = String::from("*** Begin Patch\n*** Update File: f.txt\n");
        for group in diff.grouped_ops(3) {
            patch.push_str("@@\n");
            for op in &group {
                for change in diff.iter_changes(op) {
                    let sign = match change.tag() {
                        similar::ChangeTag::Equal => ' ',
                        similar::ChangeTag::Delete => '-',
                        similar::ChangeTag::Insert => '+',
                    };
                    patch.push(sign);
                    patch.push_str(change.value().trim_end_matches('\n'));
                    patch.push('\n');
                }
            }
        }
        patch.push_str("*** End Patch\n");
        patch
    }
}
