//! The background pool: hand-over, notices, output, wait, stop, reap, session end.

use super::*;

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
        gone_eventually(&grandchild).await,
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
    assert!(gone_eventually(&stray).await, "stray {stray} survived");
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
    assert!(
        gone_eventually(&leader).await,
        "leader {leader} survived the session"
    );
}
