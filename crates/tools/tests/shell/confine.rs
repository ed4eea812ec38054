//! What a command may read, whom it may signal, which privileges it keeps, and that what it
//! leaves behind dies with its session: against the real kernel. A test that needs a kernel
//! feature fails under CI (`CI=true`) when the feature is missing, and is skipped loudly
//! elsewhere.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use codaris_tools::shell::{
    Containment, PoolConfig, SandboxPaths, ShellPools, default_readable, home_carved, home_secrets,
    tools,
};
use codaris_tools::{Content, Fence, Tool, ToolContext};
use serde_json::json;

use super::{gone_eventually, landlock_or_skip, process_gone, read_eventually};

/// A fake `$HOME` that is an allowed root and holds everything a command must not read.
struct Home {
    _temp: tempfile::TempDir,
    _outside: tempfile::TempDir,
    home: PathBuf,
    state: PathBuf,
    config: PathBuf,
    outside: PathBuf,
    ctx: ToolContext,
    pools: Arc<ShellPools>,
    tools: Vec<Arc<dyn Tool>>,
}

fn home_as_root(config: PoolConfig) -> Home {
    let temp = tempfile::tempdir().unwrap();
    let home = temp.path().canonicalize().unwrap();
    let state = home.join(".local/state/codaris");
    let workspace = state.join("sessions/s1");
    let config_dir = home.join(".config/codaris");
    for dir in [
        &workspace,
        &config_dir,
        &home.join(".ssh"),
        &home.join("proj"),
        &home.join(".config/git"),
        &home.join(".cargo/bin"),
    ] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(home.join(".config/git/config"), "[user]\n\tname = T\n").unwrap();
    std::fs::write(home.join(".config/other.conf"), "other-config-secret\n").unwrap();
    std::fs::write(home.join(".cargo/bin/tool"), "cargo-readable\n").unwrap();
    std::fs::write(state.join("token"), "state-token-secret\n").unwrap();
    std::fs::write(state.join("ledger.journal"), "journal-secret\n").unwrap();
    std::fs::write(
        config_dir.join("config.toml"),
        "api_key = \"sk-config-secret\"\n",
    )
    .unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "ssh-key-secret\n").unwrap();
    std::fs::write(home.join("proj/readme"), "project-readable\n").unwrap();
    let outside_dir = tempfile::tempdir().unwrap();
    let outside = outside_dir.path().canonicalize().unwrap();
    std::fs::write(outside.join("f"), "outside-secret\n").unwrap();
    // As the daemon sets them up (`Setup::sandbox_paths`).
    let mut hidden = vec![state.clone(), config_dir.join("config.toml")];
    hidden.extend(home_secrets(&home));
    let mut carved = vec![config_dir.clone()];
    carved.extend(home_carved(&home));
    let (pools, _notices) = ShellPools::new(config);
    let pools = Arc::new(pools.with_sandbox(SandboxPaths {
        hidden,
        carved,
        readable: default_readable(&home),
        writable: Vec::new(),
        env_passthrough: Vec::new(),
    }));
    let ctx = ToolContext {
        checkpoint: None,
        session_id: "s1".to_owned(),
        cwd: home.join("proj"),
        fence: Fence::new([home.clone(), workspace.clone()]),
        workspace,
        read: Default::default(),
    };
    let tools = tools(&pools);
    Home {
        _temp: temp,
        _outside: outside_dir,
        config: config_dir.join("config.toml"),
        home,
        state,
        outside,
        ctx,
        pools,
        tools,
    }
}

impl Home {
    async fn run(&self, command: &str) -> String {
        let tool = self
            .tools
            .iter()
            .find(|tool| tool.name() == "run_command")
            .unwrap();
        let output = tool
            .call(&self.ctx, &json!({"command": command}))
            .await
            .unwrap();
        output
            .content
            .iter()
            .map(|content| match content {
                Content::Text(text) => text.clone(),
                Content::Image { .. } => String::new(),
            })
            .collect()
    }
}

#[tokio::test]
async fn commands_read_only_the_roots_the_system_and_nothing_of_the_daemon() {
    let Some(abi) =
        landlock_or_skip("commands_read_only_the_roots_the_system_and_nothing_of_the_daemon")
    else {
        return;
    };
    let h = home_as_root(PoolConfig::default());
    let secrets = [
        (h.state.join("token"), "state-token-secret"),
        (h.state.join("ledger.journal"), "journal-secret"),
        (h.config.clone(), "sk-config-secret"),
        (h.home.join(".ssh/id_ed25519"), "ssh-key-secret"),
        (h.home.join(".config/other.conf"), "other-config-secret"),
        (h.outside.join("f"), "outside-secret"),
    ];
    for (path, secret) in &secrets {
        let out = h.run(&format!("cat '{}'", path.display())).await;
        assert!(!out.starts_with("exit code: 0"), "ABI {abi}: {out}");
        assert!(
            !out.contains(secret),
            "ABI {abi}: read {}: {out}",
            path.display()
        );
    }
    // Nor the raw disk it all lies on (a root command needs no capability for that).
    let disks: Vec<PathBuf> = std::fs::read_dir("/dev")
        .unwrap()
        .flatten()
        .filter(|entry| {
            use std::os::unix::fs::FileTypeExt;
            entry.file_type().is_ok_and(|kind| kind.is_block_device())
        })
        .map(|entry| entry.path())
        .collect();
    for disk in &disks {
        let out = h
            .run(&format!("head -c 1 '{}' | wc -c", disk.display()))
            .await;
        assert!(
            out.contains("\n0\n") || out.contains("stdout:\n0"),
            "{}: {out}",
            disk.display()
        );
    }
    // Listing what a carve hides does not help either.
    for dir in [&h.state, &h.home.join(".ssh"), &h.home.join(".config")] {
        let out = h.run(&format!("ls -a '{}'", dir.display())).await;
        assert!(
            !out.contains("token") && !out.contains("id_ed25519") && !out.contains("codaris\n"),
            "{out}"
        );
    }
    let out = h
        .run(&format!(
            "cat readme && /bin/sh -c 'echo sh-runs' && ls /usr >/dev/null && echo ls-runs && git --version && HOME='{home}' git init -q . && HOME='{home}' git status --short && echo git-status-runs && cat '{home}/.cargo/bin/tool'",
            home = h.home.display()
        ))
        .await;
    assert!(out.starts_with("exit code: 0\n"), "{out}");
    for expected in [
        "project-readable",
        "sh-runs",
        "ls-runs",
        "git version",
        "git-status-runs",
        "cargo-readable",
    ] {
        assert!(out.contains(expected), "{expected}: {out}");
    }
    assert!(!out.contains("not confined"), "{out}");
}

#[tokio::test]
async fn writes_stay_where_they_were_and_the_workspace_stays_open() {
    let Some(abi) = landlock_or_skip("writes_stay_where_they_were_and_the_workspace_stays_open")
    else {
        return;
    };
    let h = home_as_root(PoolConfig::default());
    let workspace = h.ctx.workspace.clone();
    let out = h
        .run(&format!(
            "echo made > new && echo kept > '{}/w' && cat '{}/w' && echo t > \"$TMPDIR/t\"",
            workspace.display(),
            workspace.display()
        ))
        .await;
    assert!(
        out.starts_with("exit code: 0\n") && out.contains("kept"),
        "{out}"
    );
    assert!(h.home.join("proj/new").exists());
    for target in [
        h.state.join("ledger.journal"),
        h.config.clone(),
        h.outside.join("g"),
        h.home.join(".ssh/authorized_keys"),
    ] {
        let out = h
            .run(&format!("echo forged >> '{}'", target.display()))
            .await;
        assert!(!out.starts_with("exit code: 0"), "ABI {abi}: {out}");
        let now = std::fs::read_to_string(&target).unwrap_or_default();
        assert!(!now.contains("forged"), "wrote {}", target.display());
    }
    let out = h.run(&format!("rm -f '{}/token'", h.state.display())).await;
    assert!(!out.starts_with("exit code: 0"), "{out}");
    assert!(h.state.join("token").exists());
}

#[tokio::test]
async fn a_command_cannot_signal_the_daemon() {
    let Some(abi) = landlock_or_skip("a_command_cannot_signal_the_daemon") else {
        return;
    };
    if abi < 6 {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "Landlock ABI {abi} has no signal scope; CI needs ABI 6"
        );
        eprintln!("SKIPPED a_command_cannot_signal_the_daemon: Landlock ABI {abi} < 6");
        return;
    }
    let h = home_as_root(PoolConfig::default());
    // Signal 0 asks only whether a signal would be allowed: nothing is sent.
    let me = std::process::id();
    let out = h.run(&format!("kill -0 {me} && echo reached")).await;
    assert!(!out.contains("reached"), "{out}");
    let out = h.run("sleep 5 & kill $! && echo own-child").await;
    assert!(out.contains("own-child"), "{out}");
}

#[tokio::test]
async fn commands_run_with_no_new_privs_and_without_capabilities() {
    for landlock in [true, false] {
        let h = home_as_root(PoolConfig {
            landlock,
            ..PoolConfig::default()
        });
        let out = h
            .run("grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status")
            .await;
        assert!(out.contains("NoNewPrivs:\t1"), "landlock {landlock}: {out}");
        if rustix::process::geteuid().is_root() {
            for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
                assert!(
                    out.contains(&format!("{set}:\t0000000000000000")),
                    "landlock {landlock}: {set}: {out}"
                );
            }
        } else {
            eprintln!("not root: only no_new_privs is checked");
        }
    }
}

/// The session cgroup, or `None` after saying why; under CI (which runs as root on a
/// machine with cgroup v2) process groups alone fail the test.
fn cgroup_or_skip(pools: &ShellPools, test: &str) -> bool {
    match pools.containment() {
        Containment::Cgroup { .. } => true,
        Containment::ProcessGroups { reason } => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{test}: a cgroup is required under CI but: {reason}"
            );
            eprintln!("SKIPPED {test}: no cgroup ({reason})");
            false
        }
    }
}

#[tokio::test]
async fn a_setsid_descendant_dies_when_its_session_ends() {
    let h = home_as_root(PoolConfig {
        landlock: false,
        ..PoolConfig::default()
    });
    if !cgroup_or_skip(&h.pools, "a_setsid_descendant_dies_when_its_session_ends") {
        return;
    }
    setsid_sleep_dies_with_the_session(&h).await;
}

#[tokio::test]
async fn without_a_cgroup_the_mark_still_finds_a_setsid_descendant() {
    let h = home_as_root(PoolConfig {
        landlock: false,
        cgroups: false,
        ..PoolConfig::default()
    });
    assert!(!h.pools.containment().tracks_every_descendant());
    let out = h.run("true").await;
    assert!(out.contains("note: processes it leaves behind are tracked by process groups, the CODARIS_TASK environment mark"), "{out}");
    setsid_sleep_dies_with_the_session(&h).await;
}

async fn setsid_sleep_dies_with_the_session(h: &Home) {
    let pid_file = h.home.join("proj/escaped.pid");
    let command = format!(
        "setsid sh -c 'sh -c \"echo \\$\\$ > {}; exec sleep 300\" &' >/dev/null 2>&1 &",
        pid_file.display()
    );
    let out = h.run(&command).await;
    assert!(out.starts_with("exit code: 0"), "{out}");
    let pid = read_eventually(&pid_file).await;
    assert!(!pid.is_empty(), "the double-forked sleep never started");
    assert!(!process_gone(&pid), "it should run until the session ends");
    // The command ended long ago; only the session's end kills what it left.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!process_gone(&pid));
    h.pools.close("s1");
    assert!(
        gone_eventually(&pid).await,
        "pid {pid} outlived its session"
    );
}

#[tokio::test]
async fn a_named_owner_cleans_up_what_its_last_run_left() {
    let owner = format!("test{}", std::process::id());
    let left = std::env::temp_dir().join(format!("codaris-shell-{owner}-left"));
    std::fs::create_dir_all(left.join("inner")).unwrap();
    let (pools, _notices) = ShellPools::new(PoolConfig::default());
    let pools = pools.with_owner(&owner);
    assert_eq!(pools.clean_leftovers(), 1);
    assert!(!left.exists());
    if let Containment::Cgroup { root } = pools.containment() {
        assert!(
            root.ends_with(format!("codaris-{owner}-{}", std::process::id())),
            "{}",
            root.display()
        );
        assert!(root.join("cgroup.procs").exists());
        let root: &Path = &root;
        drop(pools);
        // The watchdog removes the subtree once the pools (its pipe) are gone.
        let mut removed = false;
        for _ in 0..200 {
            if !root.exists() {
                removed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(removed, "{} is left", root.display());
    }
}

/// The parent-death signal fires when the forking *thread* exits: a command started from a
/// tokio blocking thread that then retires must live on (every fork happens on the pools'
/// own long-lived thread).
#[test]
fn a_command_outlives_the_thread_that_asked_for_it() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_keep_alive(Duration::from_millis(10))
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let h = Arc::new(home_as_root(PoolConfig {
            landlock: false,
            ..PoolConfig::default()
        }));
        let pid_file = h.home.join("proj/shell.pid");
        let command = format!("echo $$ > '{}'; exec sleep 300", pid_file.display());
        let asked = h.clone();
        let handle = tokio::runtime::Handle::current();
        let started = tokio::task::spawn_blocking(move || {
            handle.block_on(async {
                let tool = asked
                    .tools
                    .iter()
                    .find(|tool| tool.name() == "run_command")
                    .unwrap();
                tool.call(&asked.ctx, &json!({"command": command, "background": true}))
                    .await
                    .unwrap();
            });
        });
        started.await.unwrap();
        let pid = read_eventually(&pid_file).await;
        assert!(!pid.is_empty());
        // Long past the blocking thread's keep-alive: it has retired by now.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(
            !process_gone(&pid),
            "the command died with the thread that asked for it"
        );
        h.pools.close("s1");
    });
}
