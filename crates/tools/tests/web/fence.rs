//! `http_request`'s local files against the adversarial cases of the file tools: each file is
//! opened beneath its root, so a symlink out — planted, or swapped in while calls run — and the
//! fence's secrets are refused, nothing outside reaches the server, and nothing outside is
//! created or changed.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::SystemTime;

use codaris_tools::{HttpRequest, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{Value, json};

use crate::fake::{Fake, Reply, serve};
use crate::{ctx, model_error};

const OUTSIDE_CONTENT: &str = "outside s3cret";

/// A root and, beside it, an `outside` dir holding `secret.txt`, both in one temp dir.
struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (root, outside) = (base.join("root"), base.join("outside"));
    fs::create_dir(&root).unwrap();
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("secret.txt"), OUTSIDE_CONTENT).unwrap();
    Env {
        _tmp: tmp,
        root,
        outside,
    }
}

impl Env {
    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.call_in(&ctx(&self.root), args).await
    }

    async fn call_in(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        HttpRequest::new().call(ctx, &args).await
    }

    /// Everything in the outside dir, recursively: names, contents, modification times.
    fn outside_state(&self) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
        let mut out = BTreeMap::new();
        walk(&self.outside, &mut out);
        out
    }
}

fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, (Vec<u8>, SystemTime)>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            walk(&path, out);
        }
        let bytes = if meta.is_file() {
            fs::read(&path).unwrap()
        } else {
            Vec::new()
        };
        out.insert(path, (bytes, meta.modified().unwrap()));
    }
}

async fn sink() -> Fake {
    serve(|_| Reply::new(200, "application/octet-stream", "downloaded")).await
}

/// No request the server saw carried the outside file's content.
fn nothing_outside_was_sent(server: &Fake) {
    for seen in server.seen() {
        assert!(
            !String::from_utf8_lossy(&seen.body).contains(OUTSIDE_CONTENT),
            "the outside file reached the server: {seen:?}"
        );
    }
}

#[tokio::test]
async fn body_file_and_form_data_through_a_symlink_out_never_reach_the_server() {
    let env = env();
    let server = sink().await;
    let url = server.url("/up");
    // A file symlinked out, a directory symlinked out, `..` through a symlink, a relative link
    // climbing out.
    symlink(env.outside.join("secret.txt"), env.root.join("file-link")).unwrap();
    symlink(&env.outside, env.root.join("dir-link")).unwrap();
    symlink("..", env.root.join("up")).unwrap();
    symlink("../outside/secret.txt", env.root.join("relative-link")).unwrap();
    for path in [
        "file-link",
        "dir-link/secret.txt",
        "up/outside/secret.txt",
        "relative-link",
    ] {
        for args in [
            json!({"url": url, "method": "POST", "body_file": path}),
            json!({"url": url, "method": "POST",
                "form_data": {"note": "x", "upload": {"file": path}}}),
        ] {
            let message = model_error(env.call(args.clone()).await);
            assert!(
                message.contains("leads outside its allowed root through a symlink"),
                "{args}: {message}"
            );
        }
    }
    assert_eq!(server.seen(), vec![], "nothing was sent");
    // A symlink that stays inside the root is followed, as the file tools follow it.
    fs::write(env.root.join("inside.txt"), "inside").unwrap();
    symlink("inside.txt", env.root.join("inside-link")).unwrap();
    env.call(json!({"url": url, "method": "POST", "body_file": "inside-link"}))
        .await
        .unwrap();
    assert_eq!(server.seen().pop().unwrap().body, b"inside");
    nothing_outside_was_sent(&server);
}

#[tokio::test]
async fn a_hard_linked_file_is_read_for_upload_as_read_file_reads_it() {
    let env = env();
    let server = sink().await;
    fs::write(env.root.join("data.txt"), "shared data").unwrap();
    fs::hard_link(env.root.join("data.txt"), env.root.join("alias.txt")).unwrap();
    env.call(json!({"url": server.url("/up"), "method": "PUT", "body_file": "alias.txt"}))
        .await
        .unwrap();
    assert_eq!(server.seen().pop().unwrap().body, b"shared data");
}

#[tokio::test]
async fn output_file_through_a_symlinked_directory_creates_nothing_outside() {
    let env = env();
    let server = sink().await;
    let url = server.url("/file");
    symlink(&env.outside, env.root.join("dir-link")).unwrap();
    symlink("..", env.root.join("up")).unwrap();
    let before = env.outside_state();
    for path in [
        "dir-link/new.bin",
        "dir-link/deeper/new.bin",
        "dir-link/secret.txt",
        "up/outside/new.bin",
        "up/outside/secret.txt",
    ] {
        let message = model_error(env.call(json!({"url": url, "output_file": path})).await);
        assert!(
            message.contains("leads outside its allowed root through a symlink"),
            "{path}: {message}"
        );
    }
    // The request is refused before it is sent, like a bad body.
    assert_eq!(server.seen(), vec![]);
    // A hard link at the name is replaced, never written through.
    fs::hard_link(env.outside.join("secret.txt"), env.root.join("hard.bin")).unwrap();
    env.call(json!({"url": url, "output_file": "hard.bin"}))
        .await
        .unwrap();
    assert_eq!(fs::read(env.root.join("hard.bin")).unwrap(), b"downloaded");
    assert_eq!(env.outside_state(), before);
}

/// A thread swaps a directory between a symlink inside the root and one out of it, and a file
/// between a regular file and a symlink to the outside secret, while `http_request` saves to a
/// path through each, hundreds of times: nothing outside the root is ever created or changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_swapped_in_and_out_while_output_file_is_saved() {
    let env = env();
    let server = sink().await;
    let url = server.url("/file");
    fs::create_dir(env.root.join("real")).unwrap();
    symlink("real", env.root.join("d")).unwrap();
    fs::write(env.root.join("f"), "inside").unwrap();
    let before = env.outside_state();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (root, outside) = (env.root.clone(), env.outside.clone());
        let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = fs::remove_file(root.join("d.tmp"));
                let _ = symlink(&outside, root.join("d.tmp"));
                let _ = fs::rename(root.join("d.tmp"), root.join("d"));
                let _ = fs::remove_file(root.join("f.tmp"));
                let _ = symlink(outside.join("secret.txt"), root.join("f.tmp"));
                let _ = fs::rename(root.join("f.tmp"), root.join("f"));
                let _ = symlink("real", root.join("d.tmp"));
                let _ = fs::rename(root.join("d.tmp"), root.join("d"));
                let _ = fs::write(root.join("f.tmp"), "inside");
                let _ = fs::rename(root.join("f.tmp"), root.join("f"));
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    // At least 500 rounds of four concurrent calls (so the saves overlap the swaps more
    // often), and on until the swapper has really run (it can be starved on two shared cores),
    // with a ceiling so a stuck thread cannot hang the suite.
    let (mut rounds, mut calls, mut saved) = (0, 0, 0);
    while rounds < 500 || (swaps.load(Ordering::Relaxed) < 100 && rounds < 5_000) {
        let mut round = tokio::task::JoinSet::new();
        for path in ["d/out.bin", "f", "d/out.bin", "f"] {
            let (root, url) = (env.root.clone(), url.clone());
            round.spawn(async move {
                HttpRequest::new()
                    .call(&ctx(&root), &json!({"url": url, "output_file": path}))
                    .await
            });
        }
        while let Some(result) = round.join_next().await {
            saved += usize::from(result.unwrap().is_ok());
            calls += 1;
        }
        rounds += 1;
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    let swaps = swaps.load(Ordering::Relaxed);
    assert!(
        swaps >= 100,
        "the race ran: {swaps} swaps, {calls} calls, {saved} saved"
    );
    assert!(saved > 0, "some saves went through: {calls} calls");
    assert_eq!(env.outside_state(), before);
}

#[tokio::test]
async fn a_secret_path_is_refused_to_every_file_argument() {
    let env = env();
    let server = sink().await;
    let url = server.url("/x");
    let token = env.root.join("state/token");
    fs::create_dir(env.root.join("state")).unwrap();
    fs::write(&token, "api-token").unwrap();
    let mut ctx = ctx(&env.root);
    ctx.fence = ctx.fence.clone().with_secret([token.clone()]);
    for path in ["state/token", "state/TOKEN", "state/sub/../token"] {
        for args in [
            json!({"url": url, "method": "POST", "body_file": path}),
            json!({"url": url, "method": "POST", "form_data": {"f": {"file": path}}}),
            json!({"url": url, "output_file": path}),
        ] {
            let message = model_error(env.call_in(&ctx, args.clone()).await);
            assert!(
                message.contains("holds Codaris's credentials"),
                "{args}: {message}"
            );
        }
    }
    assert_eq!(server.seen(), vec![], "nothing was sent");
    assert_eq!(fs::read_to_string(&token).unwrap(), "api-token");
}
