//! `worktree_create` against a local bare repository standing in for origin.

use super::*;

/// `origin.git` (bare, default branch `main`) and a clone of it as `repo` in the fence;
/// the context's working directory is the clone.
fn with_repo(s: &mut Setup) -> PathBuf {
    let repo = codaris_test_support::git::origin_and_clone(&s.base());
    s.ctx.cwd = repo.clone();
    repo
}

#[tokio::test]
async fn creates_then_reuses_a_feature_worktree() {
    let mut s = setup();
    let repo = with_repo(&mut s);
    let out = s.ok("worktree_create", json!({"branch": "feat/x"})).await;
    let path = repo.join(".worktrees/feat-x");
    assert_eq!(
        out,
        format!(
            "worktree `{}` on branch `feat/x` (created from `origin/main`); the session now works there: relative paths and commands start in it",
            path.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(path.join("README")).unwrap(),
        "hi\n"
    );
    let out = s.ok("worktree_create", json!({"branch": "feat/x"})).await;
    assert_eq!(
        out,
        format!(
            "worktree `{}` on branch `feat/x` (reused); the session now works there: relative paths and commands start in it",
            path.display()
        )
    );
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args(["status", "--porcelain"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        "",
        "the worktree shows as untracked"
    );
}

#[tokio::test]
async fn refuses_bad_names_and_needs_a_reachable_origin() {
    let mut s = setup();
    let _repo = with_repo(&mut s);
    for branch in ["-b", "a..b", "x y"] {
        let message = s
            .model_error("worktree_create", json!({"branch": branch}))
            .await;
        assert_eq!(message, format!("`branch` `{branch}` is not a branch name"));
    }
    std::fs::remove_dir_all(s.base().join("origin.git")).unwrap();
    let message = s
        .model_error("worktree_create", json!({"branch": "feat/y"}))
        .await;
    assert!(
        message.starts_with("`git fetch --quiet origin` failed:"),
        "{message}"
    );
    s.ctx.cwd = s.base().join("sub");
    let message = s
        .model_error("worktree_create", json!({"branch": "feat/z"}))
        .await;
    // Not a repository — or, where the temp dir sits inside one, a repository outside the fence.
    assert!(
        message.starts_with("`git rev-parse --show-toplevel` failed:")
            || message.ends_with("is outside the allowed roots"),
        "{message}"
    );
}
