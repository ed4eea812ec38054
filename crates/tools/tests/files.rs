//! The file tools on real files in temp dirs: each tool's happy path and errors, then an
//! adversarial corpus where each case checks nothing outside the roots was read or changed.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]
#![allow(
    clippy::disallowed_methods,
    reason = "tests set up and inspect files directly, outside any fence"
)]

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use codaris_tools::files;
use codaris_tools::{Content, Fence, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{Value, json};

#[path = "files/adversarial.rs"]
mod adversarial;
#[path = "files/changes.rs"]
mod changes;
#[path = "files/protected.rs"]
mod protected;
#[path = "files/reads.rs"]
mod reads;

/// A root inside a temp dir, an "outside" dir beside it holding a secret, and `root-evil`.
struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    ctx: ToolContext,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::create_dir_all(base.join("root-evil")).unwrap();
    fs::write(outside.join("secret.txt"), "secret x\n").unwrap();
    fs::write(base.join("root-evil/evil.txt"), "evil x\n").unwrap();
    let ctx = ToolContext {
        checkpoint: None,
        session_id: "s".into(),
        cwd: root.clone(),
        fence: Fence::new([root.clone()]),
        workspace: root.clone(),
        read: Default::default(),
    };
    Env {
        _tmp: tmp,
        root,
        outside,
        ctx,
    }
}

impl Env {
    fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        path
    }

    fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.root.join(rel)).unwrap()
    }

    /// Everything beside the root (the outside dir and root-evil): names, contents, times.
    fn outside_state(&self) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
        let mut out = BTreeMap::new();
        let base = self.root.parent().unwrap();
        for dir in [self.outside.clone(), base.join("root-evil")] {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let meta = fs::symlink_metadata(&path).unwrap();
                let bytes = if meta.is_file() {
                    fs::read(&path).unwrap()
                } else {
                    Vec::new()
                };
                out.insert(path, (bytes, meta.modified().unwrap()));
            }
        }
        out
    }
}

async fn call(tool: &dyn Tool, env: &Env, args: Value) -> Result<ToolOutput, ToolError> {
    tool.call(&env.ctx, &args).await
}

async fn ok(tool: &dyn Tool, env: &Env, args: Value) -> String {
    match call(tool, env, args.clone()).await {
        Ok(output) => text(&output),
        Err(e) => unreachable!("{} {args} failed: {e}", tool.name()),
    }
}

async fn model_err(tool: &dyn Tool, env: &Env, args: Value) -> String {
    match call(tool, env, args.clone()).await {
        Err(ToolError::Model { message }) => message,
        other => unreachable!(
            "{} {args}: expected a model error, got {other:?}",
            tool.name()
        ),
    }
}

fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|c| match c {
            Content::Text(t) => Some(t.as_str()),
            Content::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn png(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
    bytes
}

/// A GIF with `frames` 1x1 images, no global colour table.
fn gif(frames: usize) -> Vec<u8> {
    let mut bytes = b"GIF89a\x01\x00\x01\x00\x00\x00\x00".to_vec();
    for _ in 0..frames {
        bytes.extend(b"\x21\xf9\x04\x00\x0a\x00\x00\x00"); // graphic control extension
        bytes.extend(b"\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00"); // image descriptor
        bytes.extend(b"\x02\x02\x44\x01\x00"); // LZW data
    }
    bytes.push(0x3b);
    bytes
}
