//! `run_command`: results, the fence on `cwd`, bounds, Landlock, cancellation.

use super::*;

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
    let Some(abi) = landlock_or_skip("landlock_refuses_writes_outside_the_roots") else {
        return;
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

#[tokio::test]
async fn unconfined_commands_say_so_and_quiet_tasks_send_no_notice() {
    let mut s = setup_with(PoolConfig {
        landlock: false,
        ..PoolConfig::default()
    });
    let out = s.ok("run_command", json!({"command": "echo hi"})).await;
    let containment = s.pools.containment();
    let tracked = if containment.tracks_every_descendant() {
        String::new()
    } else {
        format!("note: processes it leaves behind are tracked by {containment}\n")
    };
    assert_eq!(
        out,
        format!(
            "exit code: 0\nnote: reads and writes are not confined (Landlock is off)\n{tracked}stdout:\nhi\n"
        )
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

/// Each shell tool is the catalogue's: same name, the spec's arguments in its schema, and every
/// path argument the policy checks present and required exactly when the policy requires it.
#[test]
fn tools_match_the_policy_catalogue() {
    let (pools, _notices) = ShellPools::new(PoolConfig::default());
    let spec_arguments: [(&str, &[&str]); 10] = [
        (
            "run_command",
            &[
                "command",
                "cwd",
                "permission_rationale",
                "timeout_seconds",
                "background",
                "notify_on_finish",
                "expected_seconds",
            ],
        ),
        ("background_list", &[]),
        ("background_output", &["task_id", "tail_lines"]),
        ("background_wait", &["task_id", "timeout_seconds"]),
        ("background_stop", &["task_id"]),
        ("background_reap", &[]),
        ("preview_server", &["path", "timeout_seconds"]),
        ("share_file", &["path"]),
        (
            "ssh_run_command",
            &[
                "host",
                "command",
                "port",
                "timeout_seconds",
                "permission_rationale",
            ],
        ),
        ("worktree_create", &["branch"]),
    ];
    let tools = tools(&Arc::new(pools));
    let names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
    assert_eq!(names, spec_arguments.map(|(name, _)| name));
    for (tool, (_, arguments)) in tools.iter().zip(spec_arguments) {
        let name = tool.name();
        assert!(
            codaris_policy::builtin(name).is_some(),
            "{name} is not in the catalogue"
        );
        let schema = tool.schema();
        for argument in arguments {
            assert!(
                schema["properties"].get(argument).is_some(),
                "{name}: no `{argument}`"
            );
        }
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(spec) = codaris_policy::builtin(name) else {
            continue;
        };
        for path in spec.paths.iter() {
            let argument: &str = &path.name;
            assert!(
                schema["properties"].get(argument).is_some(),
                "{name}: no `{argument}`"
            );
            assert_eq!(
                required.contains(&argument),
                path.default == codaris_policy::PathDefault::Required,
                "{name}: `{argument}` required?"
            );
        }
    }
}

#[tokio::test]
async fn configured_extra_directories_are_writable_under_landlock() {
    if landlock_or_skip("configured_extra_directories_are_writable_under_landlock").is_none() {
        return;
    }
    let mut s = setup();
    let cache = tempfile::tempdir().unwrap();
    let (pools, _notices) = ShellPools::new(PoolConfig::default());
    let pools = Arc::new(pools.with_extra_writable(vec![cache.path().to_path_buf()]));
    s.tools = tools(&pools);
    let command = format!(
        "echo ok > '{}/f' && cat '{}/f'",
        cache.path().display(),
        cache.path().display()
    );
    let out = s.ok("run_command", json!({"command": command})).await;
    assert!(
        out.starts_with("exit code: 0\n") && out.contains("ok"),
        "{out}"
    );
}

#[tokio::test]
async fn with_background_off_its_tools_are_gone_and_nothing_outlives_its_call() {
    let s = setup_with(PoolConfig {
        background: false,
        stop_grace: Duration::from_secs(1),
        ..PoolConfig::default()
    });
    let names: Vec<&str> = s.tools.iter().map(|t| t.name()).collect();
    assert!(names.contains(&"run_command"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("background_") || *n == "preview_server"),
        "{names:?}"
    );
    let refused = s
        .model_error(
            "run_command",
            json!({"command": "true", "background": true}),
        )
        .await;
    assert!(refused.contains("tools.background = false"), "{refused}");

    let marker = s.base().join("still-alive");
    let out = s
        .ok(
            "run_command",
            json!({"command": format!("echo begun; sleep 3; touch {}", marker.display()), "timeout_seconds": 1}),
        )
        .await;
    assert!(
        out.starts_with("still running after 1s, so it was stopped"),
        "{out}"
    );
    assert!(out.contains("begun"), "{out}");
    // Had the command lived on, it would have touched the marker by now.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(!marker.exists(), "the stopped command's group lived on");
}

#[tokio::test]
async fn preview_server_can_be_switched_off_alone() {
    let s = setup_with(PoolConfig {
        preview_server: false,
        ..PoolConfig::default()
    });
    let names: Vec<&str> = s.tools.iter().map(|t| t.name()).collect();
    assert!(names.contains(&"background_list"), "{names:?}");
    assert!(!names.contains(&"preview_server"), "{names:?}");
}
