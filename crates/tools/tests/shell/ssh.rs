//! `ssh_run_command` with a fake client standing in for OpenSSH.

use super::*;

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

#[tokio::test]
async fn ssh_run_command_is_one_of_the_sessions_processes() {
    let s = setup();
    let bin = tempfile::tempdir().unwrap();
    let pid_file = s.base().join("ssh.pid");
    let body = format!("echo $$ > '{}'; exec sleep 300", pid_file.display());
    let ssh = Arc::new(
        SshRunCommand::with_program(fake_ssh(bin.path(), &body)).with_pools(s.pools.clone()),
    );
    let ctx = s.ctx.clone();
    let call = tokio::spawn({
        let ssh = ssh.clone();
        async move {
            ssh.call(
                &ctx,
                &json!({"host": "h", "command": "true", "timeout_seconds": 3600}),
            )
            .await
        }
    });
    let pid = read_eventually(&pid_file).await;
    assert!(!pid.is_empty(), "the client never started");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&environ).contains("CODARIS_TASK="),
        "the client carries no session mark"
    );
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    s.pools.close(&s.ctx.session_id);
    let out = tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(process_gone(&pid), "the client outlived its session");
    let text: String = out
        .content
        .iter()
        .map(|content| match content {
            Content::Text(text) => text.clone(),
            Content::Image { .. } => String::new(),
        })
        .collect();
    assert!(!text.starts_with("exit code: 0"), "{text}");
}
