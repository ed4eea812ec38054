//! `run_command` and the background tools against real processes in temp dirs.
//!
//! The machine is shared and noisy: every bound on time here is generous, and no test asserts
//! that something was fast.
#![expect(clippy::unwrap_used, reason = "a test fails loudly on a broken setup")]

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
        session_id: "s1".to_owned(),
        cwd: base.clone(),
        fence: Fence::new([base.clone()]),
        workspace: base.join("workspace"),
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

/// Whether the process is gone (a zombie nobody reaps counts as gone).
fn process_gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
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

#[tokio::test]
async fn runs_a_command_and_reports_code_and_both_streams() {
    let s = setup();
    let out = s
        .ok(
            "run_command",
            json!({"command": "echo hello; echo oops >&2; exit 3"}),
        )
        .await;
    assert!(out.starts_with("exit code: 3\n"), "{out}");
    assert!(out.contains("stdout:\nhello\n"), "{out}");
    assert!(out.contains("stderr:\noops\n"), "{out}");
}

#[tokio::test]
async fn cwd_is_taken_inside_the_fence() {
    let s = setup();
    let out = s
        .ok("run_command", json!({"command": "pwd", "cwd": "sub"}))
        .await;
    assert!(
        out.contains(&format!("{}\n", s.base().join("sub").display())),
        "{out}"
    );
    let out = s.ok("run_command", json!({"command": "true"})).await;
    assert!(out.contains("(no output)"), "{out}");
}

#[tokio::test]
async fn cwd_outside_the_roots_is_refused() {
    let s = setup();
    for cwd in ["/", "../..", "sub/../../..", "/etc"] {
        let message = s
            .model_error("run_command", json!({"command": "touch x", "cwd": cwd}))
            .await;
        assert_eq!(
            message,
            format!("`cwd` `{cwd}` is outside the allowed roots")
        );
    }
    std::os::unix::fs::symlink("/", s.base().join("out")).unwrap();
    let message = s
        .model_error("run_command", json!({"command": "true", "cwd": "out"}))
        .await;
    assert_eq!(message, "`cwd` `out` is outside the allowed roots");
    let message = s
        .model_error("run_command", json!({"command": "true", "cwd": "missing"}))
        .await;
    assert!(
        message.starts_with("`cwd` `missing` cannot be used"),
        "{message}"
    );
}

#[tokio::test]
async fn bad_arguments_are_the_models_to_fix() {
    let s = setup();
    assert_eq!(
        s.model_error("run_command", json!({})).await,
        "`command` is required"
    );
    assert_eq!(
        s.model_error(
            "run_command",
            json!({"command": "true", "background": "yes"})
        )
        .await,
        "`background` must be true or false"
    );
    assert_eq!(
        s.model_error("background_output", json!({"task_id": "bg-99"}))
            .await,
        "no background task `bg-99` in this session"
    );
    assert_eq!(
        s.model_error("background_stop", json!({"task_id": "nope"}))
            .await,
        "no background task `nope` in this session"
    );
    assert_eq!(
        s.model_error("background_wait", json!({})).await,
        "`task_id` is required"
    );
}

#[tokio::test]
async fn background_task_runs_notifies_and_shows_its_output() {
    let mut s = setup();
    let out = s
        .ok(
            "run_command",
            json!({"command": "printf 'a\\nb\\nc\\n'", "background": true, "expected_seconds": 5}),
        )
        .await;
    assert!(out.starts_with("started background task `bg-1`"), "{out}");
    let out = s
        .ok(
            "background_wait",
            json!({"task_id": "bg-1", "timeout_seconds": 60}),
        )
        .await;
    assert!(out.contains("exit code: 0"), "{out}");
    let notice = tokio::time::timeout(Duration::from_secs(30), s.notices.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            notice.session_id.as_str(),
            notice.task_id.as_str(),
            notice.status
        ),
        ("s1", "bg-1", TaskStatus::Exited(0))
    );
    let out = s
        .ok(
            "background_output",
            json!({"task_id": "bg-1", "tail_lines": 1}),
        )
        .await;
    assert!(
        out.ends_with("stdout:\n[4 earlier bytes not shown]\nc\n"),
        "{out}"
    );
    let out = s.ok("background_list", json!({})).await;
    assert!(out.starts_with("bg-1  exited with code 0  "), "{out}");
    assert!(out.contains("(estimate 5s)"), "{out}");
}

#[tokio::test]
async fn a_command_outliving_its_timeout_is_handed_to_the_pool() {
    let mut s = setup();
    let out = s
        .ok(
            "run_command",
            json!({"command": "echo early; exec sleep 300", "timeout_seconds": 1}),
        )
        .await;
    assert!(
        out.starts_with("still running after 1s: handed to the background as task `bg-1`"),
        "{out}"
    );
    assert!(out.contains("early"), "{out}");
    let out = s
        .ok(
            "background_wait",
            json!({"task_id": "bg-1", "timeout_seconds": 1}),
        )
        .await;
    assert!(out.starts_with("task `bg-1` still running"), "{out}");
    assert!(s.ok("background_list", json!({})).await.contains("running"));
    let out = s.ok("background_stop", json!({"task_id": "bg-1"})).await;
    assert_eq!(out, "task `bg-1`: stopped");
    let notice = tokio::time::timeout(Duration::from_secs(30), s.notices.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(notice.status, TaskStatus::Stopped);
}

#[tokio::test]
async fn stop_kills_the_whole_process_group() {
    let s = setup();
    let pid_file = s.base().join("grandchild.pid");
    let command = format!("sleep 300 & echo $! > '{}'; wait", pid_file.display());
    s.ok(
        "run_command",
        json!({"command": command, "background": true}),
    )
    .await;
    let grandchild = read_eventually(&pid_file).await;
    assert!(!grandchild.is_empty() && !process_gone(&grandchild));
    let out = s.ok("background_stop", json!({"task_id": "bg-1"})).await;
    assert_eq!(out, "task `bg-1`: stopped");
    assert!(
        process_gone(&grandchild),
        "grandchild {grandchild} survived"
    );
}

#[tokio::test]
async fn reap_kills_what_an_ended_command_left_behind() {
    let s = setup();
    let pid_file = s.base().join("stray.pid");
    let command = format!(
        "sleep 300 >/dev/null 2>&1 & echo $! > '{}'; echo done",
        pid_file.display()
    );
    let out = s.ok("run_command", json!({"command": command})).await;
    assert!(out.starts_with("exit code: 0"), "{out}");
    let stray = read_eventually(&pid_file).await;
    assert!(!process_gone(&stray));
    let out = s.ok("background_reap", json!({})).await;
    assert!(out.starts_with("killed 1 process group(s):"), "{out}");
    for _ in 0..200 {
        if process_gone(&stray) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(process_gone(&stray), "stray {stray} survived");
    assert_eq!(s.ok("background_reap", json!({})).await, "nothing to reap");
}

#[tokio::test]
async fn closing_the_session_kills_its_tasks() {
    let s = setup();
    let pid_file = s.base().join("leader.pid");
    let command = format!("echo $$ > '{}'; exec sleep 300", pid_file.display());
    s.ok(
        "run_command",
        json!({"command": command, "background": true}),
    )
    .await;
    let leader = read_eventually(&pid_file).await;
    s.pools.close("s1");
    for _ in 0..200 {
        if process_gone(&leader) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        process_gone(&leader),
        "leader {leader} survived the session"
    );
}

#[tokio::test]
async fn output_is_bounded() {
    let s = setup();
    let out = s
        .ok(
            "run_command",
            json!({"command": "yes 0123456789 | head -c 300000; echo END"}),
        )
        .await;
    assert!(out.contains("earlier bytes not shown]"), "{}", &out[..200]);
    assert!(out.len() < 40 * 1024, "{} bytes", out.len());
    assert!(out.trim_end().ends_with("END"));
}

#[tokio::test]
async fn tmpdir_is_private_and_writable() {
    let s = setup();
    let out = s
        .ok(
            "run_command",
            json!({"command": "echo x > \"$TMPDIR/f\" && cat \"$TMPDIR/f\" && echo \"$TMPDIR\""}),
        )
        .await;
    assert!(out.starts_with("exit code: 0\n"), "{out}");
    assert!(out.contains("codaris-shell-"), "{out}");
}

#[tokio::test]
async fn landlock_refuses_writes_outside_the_roots() {
    let abi = match landlock_status() {
        LandlockStatus::Active(abi) => abi,
        LandlockStatus::Unsupported(reason) => {
            eprintln!("skipped: Landlock is not available here ({reason})");
            return;
        }
    };
    let s = setup();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped");
    let command = format!("echo no > '{}'", target.display());
    let out = s.ok("run_command", json!({"command": command})).await;
    assert!(!out.starts_with("exit code: 0"), "ABI {abi}: {out}");
    assert!(!target.exists(), "a write outside the roots got through");
    let out = s
        .ok(
            "run_command",
            json!({"command": "echo yes > inside && cat inside"}),
        )
        .await;
    assert!(
        out.starts_with("exit code: 0\n") && out.contains("yes"),
        "{out}"
    );
    assert!(!out.contains("not confined"), "{out}");
}

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
    assert!(tokio::net::TcpStream::connect(&address).await.is_err());
    let message = s.model_error("preview_server", json!({"path": "/"})).await;
    assert_eq!(message, "`path` `/` is outside the allowed roots");
}

#[tokio::test]
async fn unconfined_commands_say_so_and_quiet_tasks_send_no_notice() {
    let mut s = setup_with(PoolConfig {
        landlock: false,
        ..PoolConfig::default()
    });
    let out = s.ok("run_command", json!({"command": "echo hi"})).await;
    assert_eq!(
        out,
        "exit code: 0\nnote: writes are not confined (Landlock is off)\nstdout:\nhi\n"
    );
    let out = s
        .ok(
            "run_command",
            json!({"command": "true", "background": true, "notify_on_finish": false}),
        )
        .await;
    assert!(out.starts_with("started background task `bg-2`\n"), "{out}");
    s.ok("background_wait", json!({"task_id": "bg-2"})).await;
    let quiet = tokio::time::timeout(Duration::from_secs(1), s.notices.recv()).await;
    assert!(quiet.is_err(), "{quiet:?}");
}

#[tokio::test]
async fn an_abandoned_foreground_command_is_killed() {
    let s = setup();
    let pid_file = s.base().join("abandoned.pid");
    let command = format!("echo $$ > '{}'; exec sleep 300", pid_file.display());
    let call = s.call("run_command", json!({"command": command}));
    // The call is dropped when the outer timeout fires, as when a turn is cancelled.
    let outcome = tokio::time::timeout(Duration::from_secs(3), call).await;
    assert!(outcome.is_err(), "{outcome:?}");
    let leader = read_eventually(&pid_file).await;
    for _ in 0..200 {
        if process_gone(&leader) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        process_gone(&leader),
        "abandoned command {leader} still runs"
    );
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

/// A stand-in for the OpenSSH client that prints the arguments it was given.
fn fake_ssh(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("fake-ssh");
    let script = format!("#!/bin/sh\n[ -n \"$PROBE\" ] && exit 0\n{body}\n");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A process forked by a parallel test while the script was open for writing holds it
    // until it execs ("text file busy"); once one run succeeds, nobody holds it any more.
    for _ in 0..100 {
        let probe = std::process::Command::new(&path).env("PROBE", "1").status();
        if probe.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    path
}

#[tokio::test]
async fn ssh_run_command_passes_host_and_command_after_the_options() {
    let s = setup();
    let bin = tempfile::tempdir().unwrap();
    let ssh = SshRunCommand::with_program(fake_ssh(bin.path(), "printf '%s|' \"$@\"; exit 7"));
    let args = json!({"host": "me@build", "command": "uname -a", "port": 2222});
    let out = ssh.call(&s.ctx, &args).await.unwrap();
    assert_eq!(
        out.content,
        vec![Content::Text(
            "exit code: 7\nstdout:\n-o|BatchMode=yes|-o|ConnectTimeout=20|-p|2222|--|me@build|uname -a|\n"
                .to_owned()
        )]
    );
    for (args, expected) in [
        (
            json!({"host": "-oProxyCommand=x", "command": "true"}),
            "`host` `-oProxyCommand=x` is not a host name (expected `host` or `user@host`)",
        ),
        (
            json!({"host": "h", "command": "true", "port": 70000}),
            "`port` must be between 1 and 65535",
        ),
        (json!({"host": "h"}), "`command` is required"),
    ] {
        match ssh.call(&s.ctx, &args).await {
            Err(ToolError::Model { message }) => assert_eq!(message, expected),
            other => unreachable!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn ssh_run_command_is_stopped_at_its_timeout() {
    let s = setup();
    let bin = tempfile::tempdir().unwrap();
    let ssh = SshRunCommand::with_program(fake_ssh(bin.path(), "echo connecting; exec sleep 300"));
    let args = json!({"host": "slow", "command": "true", "timeout_seconds": 1});
    let out = ssh.call(&s.ctx, &args).await.unwrap();
    assert_eq!(
        out.content,
        vec![Content::Text(
            "timed out after 1s and was stopped\nstatus: stopped\nstdout:\nconnecting\n".to_owned()
        )]
    );
}
