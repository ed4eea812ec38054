//! The adversarial corpus: each case tries to read or change something outside the root and
//! asserts that nothing there was read, created or changed.

use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::*;

/// Every mutating call through `path`, each of which must fail or stay inside the root.
async fn try_all_mutations(env: &Env, path: &str) {
    let _ = call(
        &files::WriteFile,
        env,
        json!({"path": path, "content": "pwned"}),
    )
    .await;
    let _ = call(
        &files::Edit,
        env,
        json!({"path": path, "oldString": "x", "newString": "pwned"}),
    )
    .await;
    let _ = call(&files::Touch, env, json!({"path": path})).await;
    let _ = call(&files::Rm, env, json!({"path": path, "recursive": true})).await;
    let _ = call(
        &files::Mkdir,
        env,
        json!({"path": format!("{path}.d"), "parents": true}),
    )
    .await;
    let _ = call(&files::Mv, env, json!({"src": path, "dst": "stolen.txt"})).await;
    let _ = call(&files::Mv, env, json!({"src": "bait.txt", "dst": path})).await;
    let patch =
        format!("*** Begin Patch\n*** Update File: {path}\n-secret x\n+pwned\n*** End Patch");
    let _ = call(&files::ApplyPatch, env, json!({"patch": patch})).await;
}

/// Every reading call through `path`: none may show the outside file's content.
async fn try_all_reads(env: &Env, path: &str) {
    for (tool, args) in [
        (&files::ReadFile as &dyn Tool, json!({"path": path})),
        (&files::Grep, json!({"pattern": "secret", "path": path})),
        (&files::Grep, json!({"pattern": "secret"})),
        (&files::Glob, json!({"pattern": "*", "path": path})),
        (&files::PrintTree, json!({"path": path})),
    ] {
        if let Ok(output) = call(tool, env, args.clone()).await {
            let out = text(&output);
            assert!(
                !out.contains("secret x"),
                "{} {args} read outside: {out}",
                tool.name()
            );
            assert!(
                !out.contains("secret.txt"),
                "{} {args} listed outside: {out}",
                tool.name()
            );
        }
    }
}

#[tokio::test]
async fn symlinked_directory_out_of_the_root() {
    let env = env();
    env.write("bait.txt", "bait");
    symlink(&env.outside, env.root.join("link")).unwrap();
    let before = env.outside_state();
    for path in ["link/secret.txt", "link/new.txt", "link/deeper/new.txt"] {
        try_all_mutations(&env, path).await;
    }
    try_all_reads(&env, "link").await;
    try_all_reads(&env, "link/secret.txt").await;
    let err = model_err(
        &files::WriteFile,
        &env,
        json!({"path": "link/new.txt", "content": "x"}),
    )
    .await;
    assert!(err.contains("outside its allowed root"), "{err}");
    // A patch moving a file out through the link fails whole: the source stays too.
    let patch = "*** Begin Patch\n*** Update File: bait.txt\n*** Move to: link/moved.txt\n-bait\n+x\n*** End Patch";
    let err = model_err(&files::ApplyPatch, &env, json!({"patch": patch})).await;
    assert!(err.contains("outside its allowed root"), "{err}");
    assert_eq!(env.read("bait.txt"), "bait");
    assert_eq!(env.outside_state(), before);
}

#[tokio::test]
async fn removing_a_tree_removes_links_not_their_targets() {
    let env = env();
    env.write("d/keep.txt", "x");
    symlink(&env.outside, env.root.join("d/out-dir")).unwrap();
    symlink(env.outside.join("secret.txt"), env.root.join("d/out-file")).unwrap();
    let before = env.outside_state();
    ok(&files::Rm, &env, json!({"path": "d", "recursive": true})).await;
    assert!(!env.root.join("d").exists());
    assert_eq!(env.outside_state(), before);
}

#[tokio::test]
async fn symlinked_file_out_of_the_root() {
    let env = env();
    env.write("bait.txt", "bait");
    symlink(env.outside.join("secret.txt"), env.root.join("s.txt")).unwrap();
    let before = env.outside_state();
    try_all_reads(&env, "s.txt").await;
    try_all_mutations(&env, "s.txt").await;
    assert_eq!(env.outside_state(), before);
}

#[tokio::test]
async fn dot_dot_through_a_symlink() {
    let env = env();
    env.write("bait.txt", "bait");
    // `up` is lexically inside the root; following it climbs out.
    symlink("..", env.root.join("up")).unwrap();
    let before = env.outside_state();
    try_all_reads(&env, "up/outside").await;
    try_all_reads(&env, "up/outside/secret.txt").await;
    try_all_mutations(&env, "up/outside/secret.txt").await;
    try_all_mutations(&env, "up/outside/fresh.txt").await;
    let err = model_err(
        &files::ReadFile,
        &env,
        json!({"path": "a/../../outside/secret.txt"}),
    )
    .await;
    assert!(err.contains("outside every allowed root"), "{err}");
    assert_eq!(env.outside_state(), before);
}

#[tokio::test]
async fn hard_link_to_an_outside_file() {
    let env = env();
    fs::hard_link(env.outside.join("secret.txt"), env.root.join("hl.txt")).unwrap();
    let before = env.outside_state();
    for (tool, args) in [
        (
            &files::WriteFile as &dyn Tool,
            json!({"path": "hl.txt", "content": "pwned"}),
        ),
        (
            &files::Edit,
            json!({"path": "hl.txt", "oldString": "x", "newString": "pwned"}),
        ),
        (
            &files::ApplyPatch,
            json!({"patch": "*** Begin Patch\n*** Update File: hl.txt\n-secret x\n+pwned\n*** End Patch"}),
        ),
        (&files::Touch, json!({"path": "hl.txt"})),
    ] {
        let err = model_err(tool, &env, args).await;
        assert!(err.contains("hard links"), "{err}");
    }
    assert_eq!(env.outside_state(), before);
}

#[tokio::test]
async fn a_sibling_with_the_root_as_prefix() {
    let env = env();
    env.write("bait.txt", "bait");
    let evil = env.root.parent().unwrap().join("root-evil");
    let before = env.outside_state();
    for path in [
        evil.join("evil.txt").display().to_string(),
        "../root-evil/evil.txt".to_owned(),
    ] {
        let err = model_err(&files::ReadFile, &env, json!({"path": path})).await;
        assert!(err.contains("outside every allowed root"), "{err}");
        try_all_mutations(&env, &path).await;
    }
    assert_eq!(env.outside_state(), before);
}

#[tokio::test]
async fn git_internals_are_refused_by_the_tools_too() {
    // The policy refuses these paths; if a call got here anyway the tool refuses it as well.
    let env = env();
    let before = env.outside_state();
    for path in [".git/hooks/pre-commit", ".GIT/config", "sub/.Git/config"] {
        let message = model_err(
            &files::WriteFile,
            &env,
            json!({"path": path, "content": "#!/bin/sh\n"}),
        )
        .await;
        assert!(message.contains("`.git`"), "{path}: {message}");
    }
    assert!(!env.root.join(".git").exists() && !env.root.join(".GIT").exists());
    assert_eq!(env.outside_state(), before);
}

#[tokio::test]
async fn nul_bytes_in_paths() {
    let env = env();
    let path = "a\0b";
    for (tool, args) in [
        (&files::ReadFile as &dyn Tool, json!({"path": path})),
        (&files::WriteFile, json!({"path": path, "content": "x"})),
        (
            &files::Edit,
            json!({"path": path, "oldString": "a", "newString": "b"}),
        ),
        (&files::Glob, json!({"pattern": "*", "path": path})),
        (&files::Grep, json!({"pattern": "x", "path": path})),
        (&files::PrintTree, json!({"path": path})),
        (&files::Mkdir, json!({"path": path})),
        (&files::Rmdir, json!({"path": path})),
        (&files::Touch, json!({"path": path})),
        (&files::Rm, json!({"path": path})),
        (&files::Mv, json!({"src": path, "dst": "x"})),
        (&files::Mv, json!({"src": "x", "dst": path})),
    ] {
        let err = model_err(tool, &env, args).await;
        assert!(err.contains("NUL byte"), "{}: {err}", tool.name());
    }
}

/// A thread swaps `f` between a regular file and a symlink to the outside secret while `edit`
/// and `write` run on it thousands of times: the secret must never change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_swapped_in_and_out() {
    let env = env();
    let secret = env.outside.join("secret.txt");
    let before = env.outside_state();
    env.write("f", "x\n");
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (root, stop, swaps) = (env.root.clone(), Arc::clone(&stop), Arc::clone(&swaps));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = fs::remove_file(root.join("link.tmp"));
                let _ = symlink(&secret, root.join("link.tmp"));
                let _ = fs::rename(root.join("link.tmp"), root.join("f"));
                let _ = fs::write(root.join("file.tmp"), "x\n");
                let _ = fs::rename(root.join("file.tmp"), root.join("f"));
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    // At least 2000 calls, and on until the swapper has really run (it can be starved on two
    // shared cores), with a ceiling so a stuck thread cannot hang the suite.
    let (mut calls, mut edited) = (0, 0);
    while calls < 2000 || (swaps.load(Ordering::Relaxed) < 500 && calls < 50_000) {
        let result = if calls % 4 == 3 {
            call(
                &files::WriteFile,
                &env,
                json!({"path": "f", "content": "pwned x\n"}),
            )
            .await
        } else {
            call(
                &files::Edit,
                &env,
                json!({"path": "f", "oldString": "x", "newString": "pwned"}),
            )
            .await
        };
        edited += usize::from(result.is_ok());
        calls += 1;
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    let swaps = swaps.load(Ordering::Relaxed);
    // How often each side won depends on scheduling; the property checked is that the secret
    // never changed, whoever won.
    assert!(
        swaps >= 500,
        "the race ran: {swaps} swaps, {calls} calls, {edited} edits"
    );
    assert_eq!(env.outside_state(), before);
}

#[tokio::test]
async fn secrets_inside_the_root_are_never_opened_or_searched() {
    let mut env = env();
    let token = env.write("state/token", "secret x\n");
    env.write("state/notes.txt", "plain\n");
    env.ctx.fence = env.ctx.fence.clone().with_secret([token.clone()]);
    for path in [
        "state/token",
        "state/TOKEN",
        "state/./token",
        "state/sub/../token",
    ] {
        let err = call(&files::ReadFile, &env, json!({"path": path}))
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("credentials"), "{path}: {err}");
    }
    // A search over the directory holding the secret walks past it.
    for (tool, args) in [
        (
            &files::Grep as &dyn Tool,
            json!({"pattern": "x", "path": "state"}),
        ),
        (&files::Grep, json!({"pattern": "x"})),
        (&files::Glob, json!({"pattern": "**/*"})),
    ] {
        let out = text(&call(tool, &env, args.clone()).await.unwrap());
        assert!(!out.contains("secret x"), "{} {args}: {out}", tool.name());
        assert!(!out.contains("token"), "{} {args}: {out}", tool.name());
    }
    let plain = text(
        &call(
            &files::Grep,
            &env,
            json!({"pattern": "plain", "path": "state"}),
        )
        .await
        .unwrap(),
    );
    assert!(plain.contains("notes.txt"), "{plain}");
    try_all_mutations(&env, "state/token").await;
    assert_eq!(fs::read_to_string(&token).unwrap(), "secret x\n");
}
