//! Issue 11 at execution: the state directory (all but the session's own workspace), `.git`
//! through `apply_patch` (any case, `..`, symlinked directories) and a recursive `rm` of a tree
//! holding a repository are refused by the tools themselves, whatever the decision said.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;

/// A root holding a state directory (as an explicit `allowed_dirs` above it may), the session's
/// workspace inside it, and a repository.
fn state_env() -> (Env, PathBuf) {
    let mut env = env();
    let state = env.root.join("state");
    for name in ["ledger.journal", "codaris.sock", "codarisd.pid", "token"] {
        env.write(&format!("state/{name}"), "state x\n");
    }
    env.write("state/sessions/2/notes.md", "other x\n");
    env.write("state/sessions/1/notes.md", "mine\n");
    let workspace = state.join("sessions/1");
    env.ctx.fence = env
        .ctx
        .fence
        .clone()
        .with_state_dir(&state, &workspace)
        .with_protected([state.join("ledger")]);
    (env, state)
}

async fn refused(tool: &dyn Tool, env: &Env, args: Value) -> String {
    match call(tool, env, args.clone()).await {
        Err(ToolError::Model { message }) => message,
        other => unreachable!("{} {args}: expected a refusal, got {other:?}", tool.name()),
    }
}

#[tokio::test]
async fn nothing_in_the_state_directory_but_the_own_workspace_is_opened() {
    let (env, state) = state_env();
    for path in [
        "state/ledger.journal",
        "state/codaris.sock",
        "state/codarisd.pid",
        "state/token",
        "state/sessions/2/notes.md",
        "STATE/Ledger.Journal",
        "state/sessions/1/../2/notes.md",
    ] {
        let read = refused(&files::ReadFile, &env, json!({"path": path})).await;
        assert!(read.contains("credentials"), "{path}: {read}");
        refused(
            &files::WriteFile,
            &env,
            json!({"path": path, "content": ""}),
        )
        .await;
        refused(&files::Rm, &env, json!({"path": path})).await;
    }
    refused(
        &files::Rm,
        &env,
        json!({"path": "state", "recursive": true}),
    )
    .await;
    for name in ["ledger.journal", "codaris.sock", "codarisd.pid"] {
        assert_eq!(env.read(&format!("state/{name}")), "state x\n", "{name}");
    }
    // A symlink inside the root into the state directory is judged by where it leads, and a
    // dangling one by what it names.
    // (Relative links: cap-std refuses an absolute one outright.)
    symlink("state", env.root.join("link")).unwrap();
    symlink("state/new-grant", env.root.join("dangling")).unwrap();
    let through = refused(
        &files::ReadFile,
        &env,
        json!({"path": "link/ledger.journal"}),
    )
    .await;
    assert!(through.contains("leads to"), "{through}");
    refused(
        &files::WriteFile,
        &env,
        json!({"path": "dangling", "content": "grant"}),
    )
    .await;
    assert!(!state.join("new-grant").exists());

    // The session's own workspace is open.
    ok(
        &files::WriteFile,
        &env,
        json!({"path": "state/sessions/1/out.txt", "content": "ok"}),
    )
    .await;
    assert_eq!(env.read("state/sessions/1/out.txt"), "ok");
    // Searches walk past the rest of the state directory.
    for (tool, args) in [
        (&files::Grep as &dyn Tool, json!({"pattern": "x"})),
        (&files::Glob, json!({"pattern": "**/*"})),
    ] {
        let out = text(&call(tool, &env, args.clone()).await.unwrap());
        assert!(
            !out.contains("state x") && !out.contains("other x") && !out.contains("journal"),
            "{} {args}: {out}",
            tool.name()
        );
    }
}

/// A repository in the root, with a symlink to its `.git` and one to a nested `.Git`.
fn repo_env() -> Env {
    let env = env();
    env.write(".git/config", "[core]\n\tbare = false\n");
    env.write(".git/HEAD", "ref: refs/heads/main\n");
    env.write("sub/.Git/config", "[core]\n");
    env.write("src/a.rs", "fn a() {}\n");
    symlink(".git", env.root.join("link")).unwrap();
    symlink("sub/.Git", env.root.join("deep")).unwrap();
    symlink(env.root.join(".git"), env.root.join("abs-link")).unwrap();
    env
}

/// Every file under every `.git` of the root, in any case, with its bytes.
fn git_state(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, inside: bool, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let git = inside || entry.file_name().eq_ignore_ascii_case(".git");
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                if git {
                    out.insert(path.clone(), Vec::new());
                }
                walk(&path, git, out);
            } else if git {
                out.insert(path.clone(), fs::read(&path).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, false, &mut out);
    out
}

#[tokio::test]
async fn apply_patch_never_writes_inside_git() {
    let env = repo_env();
    let before = git_state(&env.root);
    for patch in [
        "*** Begin Patch\n*** Update File: .git/config\n@@\n [core]\n+\tfsmonitor = \"touch /tmp/pwned\"\n*** End Patch\n",
        "--- /dev/null\n+++ b/.GIT/hooks/pre-commit\n@@ -0,0 +1 @@\n+touch /tmp/pwned\n",
        "*** Begin Patch\n*** Update File: link/config\n@@\n [core]\n+\tfsmonitor = \"x\"\n*** End Patch\n",
        "*** Begin Patch\n*** Add File: deep/hooks/post-checkout\n+x\n*** End Patch\n",
        "*** Begin Patch\n*** Add File: abs-link/hooks/post-merge\n+x\n*** End Patch\n",
        "*** Begin Patch\n*** Add File: src/../.git/hooks/pre-push\n+x\n*** End Patch\n",
        "*** Begin Patch\n*** Update File: src/a.rs\n*** Move to: .git/hooks/pre-commit\n@@\n-fn a() {}\n+touch /tmp/pwned\n*** End Patch\n",
        "*** Begin Patch\n*** Delete File: .git/HEAD\n*** End Patch\n",
        "*** Begin Patch\n*** Add File: src/ok.rs\n+fine\n*** Add File: sub/.git/hooks/pre-commit\n+x\n*** End Patch\n",
    ] {
        let message = refused(&files::ApplyPatch, &env, json!({"patch": patch})).await;
        assert!(
            message.contains("nothing was changed") || message.contains("outside its allowed root"),
            "{patch}: {message}"
        );
        assert_eq!(git_state(&env.root), before, "{patch}");
    }
    assert!(!env.root.join("src/ok.rs").exists(), "all or nothing");
    assert_eq!(env.read("src/a.rs"), "fn a() {}\n");
    // A patch of ordinary files still applies.
    ok(
        &files::ApplyPatch,
        &env,
        json!({"patch": "*** Begin Patch\n*** Add File: src/ok.rs\n+fine\n*** End Patch\n"}),
    )
    .await;
}

#[tokio::test]
async fn rm_recursive_of_a_tree_holding_a_repository_is_refused() {
    let env = env();
    env.write("proj/repo/.git/HEAD", "ref\n");
    env.write("proj/other/.GIT/config", "x\n");
    env.write("plain/a/b.txt", "b\n");
    let message = refused(&files::Rm, &env, json!({"path": "proj", "recursive": true})).await;
    assert!(message.contains(".git"), "{message}");
    assert!(env.root.join("proj/repo/.git/HEAD").exists());
    refused(
        &files::Rm,
        &env,
        json!({"path": "proj/other", "recursive": true}),
    )
    .await;
    refused(
        &files::Rm,
        &env,
        json!({"path": "proj/repo/.git", "recursive": true}),
    )
    .await;
    // A symlink to a repository is not followed: the tree holding it goes, the repository stays.
    symlink(env.root.join("proj/repo"), env.root.join("plain/a/link")).unwrap();
    ok(
        &files::Rm,
        &env,
        json!({"path": "plain", "recursive": true}),
    )
    .await;
    assert!(!env.root.join("plain").exists());
    assert!(env.root.join("proj/repo/.git/HEAD").exists());
}

const PARTS: &[&str] = &[
    "..", ".", "src", "sub", ".git", ".GIT", ".Git", "link", "deep", "abs-link", "hooks", "config",
    "HEAD", "a.rs", "new",
];

fn name() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PARTS), 1..5).prop_map(|p| p.join("/"))
}

/// A patch in either format naming random files, with a random operation on each.
fn patch_text() -> impl Strategy<Value = String> {
    let op = (0..5u8, name(), name());
    (any::<bool>(), prop::collection::vec(op, 1..4)).prop_map(|(v4a, ops)| {
        let mut out = String::new();
        if v4a {
            out.push_str("*** Begin Patch\n");
            for (kind, a, b) in ops {
                match kind {
                    0 => out.push_str(&format!("*** Add File: {a}\n+x\n")),
                    1 => out.push_str(&format!("*** Delete File: {a}\n")),
                    2 => out.push_str(&format!("*** Update File: {a}\n*** Move to: {b}\n")),
                    _ => out.push_str(&format!(
                        "*** Update File: {a}\n@@\n [core]\n+\tfsmonitor = \"x\"\n"
                    )),
                }
            }
            out.push_str("*** End Patch\n");
        } else {
            for (kind, a, b) in ops {
                let (old, new) = match kind {
                    0 => ("/dev/null".to_owned(), format!("b/{a}")),
                    1 => (format!("a/{a}"), "/dev/null".to_owned()),
                    2 => (format!("a/{a}"), format!("b/{b}")),
                    _ => (format!("a/{a}"), format!("b/{a}")),
                };
                out.push_str(&format!(
                    "--- {old}\n+++ {new}\n@@ -1,1 +1,2 @@\n [core]\n+x\n"
                ));
            }
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever a patch names (`.git` in any case, `..`, symlinks to `.git`) and whatever an
    /// `rm` removes, nothing under any `.git` changes.
    #[test]
    fn no_patch_or_removal_ever_changes_a_git_directory(
        patch in patch_text(),
        target in name(),
        recursive in any::<bool>(),
    ) {
        let env = repo_env();
        let before = git_state(&env.root);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _ = runtime.block_on(call(&files::ApplyPatch, &env, json!({"patch": patch})));
        prop_assert_eq!(&git_state(&env.root), &before, "{}", patch);
        let rm = json!({"path": target, "recursive": recursive});
        let _ = runtime.block_on(call(&files::Rm, &env, rm));
        prop_assert_eq!(&git_state(&env.root), &before, "rm {} {}", target, recursive);
    }
}
