//! The shell tools against real processes in temp dirs: one test binary, a module per tool group.
//!
//! The machine is shared and noisy: every bound on time here is generous, and no test asserts
//! that something was fast.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]
#![allow(
    clippy::disallowed_methods,
    reason = "tests set up and inspect files directly, outside any fence"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use codaris_tools::shell::{
    LandlockStatus, PoolConfig, ShellPools, SshRunCommand, TaskNotice, TaskStatus, landlock_status,
    tools,
};
use codaris_tools::{Content, Fence, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

struct Setup {
    root: tempfile::TempDir,
    ctx: ToolContext,
    pools: Arc<ShellPools>,
    notices: UnboundedReceiver<TaskNotice>,
    tools: Vec<Arc<dyn Tool>>,
}

fn setup() -> Setup {
    setup_with(PoolConfig {
        stop_grace: Duration::from_secs(2),
        ..PoolConfig::default()
    })
}

fn setup_with(config: PoolConfig) -> Setup {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().canonicalize().unwrap();
    std::fs::create_dir(base.join("sub")).unwrap();
    std::fs::create_dir(base.join("workspace")).unwrap();
    let ctx = ToolContext {
        checkpoint: None,
        session_id: "s1".to_owned(),
        cwd: base.clone(),
        fence: Fence::new([base.clone()]),
        workspace: base.join("workspace"),
        read: Default::default(),
    };
    let (pools, notices) = ShellPools::new(config);
    let pools = Arc::new(pools);
    let tools = tools(&pools);
    Setup {
        root,
        ctx,
        pools,
        notices,
        tools,
    }
}

impl Setup {
    fn base(&self) -> PathBuf {
        self.root.path().canonicalize().unwrap()
    }

    async fn call(&self, name: &str, args: Value) -> Result<String, ToolError> {
        let tool = self.tools.iter().find(|tool| tool.name() == name).unwrap();
        let output = tool.call(&self.ctx, &args).await?;
        Ok(output
            .content
            .iter()
            .map(|content| match content {
                Content::Text(text) => text.clone(),
                Content::Image { .. } => String::new(),
            })
            .collect())
    }

    async fn ok(&self, name: &str, args: Value) -> String {
        self.call(name, args).await.unwrap()
    }

    async fn model_error(&self, name: &str, args: Value) -> String {
        match self.call(name, args).await {
            Err(ToolError::Model { message }) => message,
            other => format!("not a model error: {other:?}"),
        }
    }
}

/// Landlock's ABI, or `None` after saying loudly why the test is skipped; under CI a
/// missing Landlock fails the test instead.
fn landlock_or_skip(test: &str) -> Option<u32> {
    match landlock_status() {
        LandlockStatus::Active(abi) => Some(abi),
        LandlockStatus::Unsupported(reason) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{test}: Landlock is required under CI but unavailable: {reason}"
            );
            eprintln!("SKIPPED {test}: Landlock is unavailable here ({reason})");
            None
        }
    }
}

/// Whether the process is gone (a zombie nobody reaps counts as gone).
fn process_gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Whether the process is gone within 10 s. A SIGKILL is delivered asynchronously, so a process
/// just sent one can still be seen running for a moment.
async fn gone_eventually(pid: &str) -> bool {
    for _ in 0..200 {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    process_gone(pid)
}

async fn read_eventually(path: &Path) -> String {
    for _ in 0..600 {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text.trim().to_owned();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    String::new()
}

#[path = "shell/background.rs"]
mod background;
#[path = "shell/confine.rs"]
mod confine;
#[path = "shell/preview.rs"]
mod preview;
#[path = "shell/run.rs"]
mod run;
#[path = "shell/share.rs"]
mod share;
#[path = "shell/ssh.rs"]
mod ssh;
#[path = "shell/worktree.rs"]
mod worktree;
