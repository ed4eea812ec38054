//! One `run_command` — the tools crate's own path: the session's pool, the Landlock plan and
//! ruleset, the fork on the spawner thread with the cgroup join, limits, privileges and
//! Landlock in the child, the output captured, the group's liveness checked when it ends —
//! against a plain `sh -c` of the same command (tokio's, output captured too), in the same
//! run, call by call in turn; then both again with 1,000 idle `sleep` processes on the
//! machine.
//!
//! The targets (#38, item 10): `run_command` at most 2 ms over plain `sh -c`
//! (median), and with 1,000 extra idle processes at most 1.1× without. Each case prints
//! p50/p99 of individually timed calls and the machine's load (`/proc/loadavg`).

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]
#![allow(
    clippy::disallowed_methods,
    reason = "the benchmark sets up and reads files directly, outside any fence"
)]

use codaris_test_support::bench::{loadavg, percentiles};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codaris_tools::shell::{PoolConfig, RunCommand, ShellPools};
use codaris_tools::{Fence, Tool, ToolContext};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

/// What both run: a builtin and one program, so that both fork and exec twice.
const COMMAND: &str = "echo hi && /bin/true";
const SAMPLES: usize = 300;

struct Setup {
    _temp: tempfile::TempDir,
    ctx: ToolContext,
    tool: RunCommand,
}

fn setup() -> Setup {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    let workspace = root.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let (pools, _notices) = ShellPools::new(PoolConfig::default());
    let pools = Arc::new(pools.with_owner(&format!("bench{}", std::process::id())));
    println!("containment: {}", pools.containment());
    println!("limits: {}", pools.limits());
    let ctx = ToolContext {
        checkpoint: None,
        session_id: "bench".to_owned(),
        cwd: root.clone(),
        fence: Fence::new([root]),
        workspace,
        read: Default::default(),
    };
    Setup {
        _temp: temp,
        ctx,
        tool: RunCommand::new(pools),
    }
}

async fn run_command(setup: &Setup) {
    let output = setup
        .tool
        .call(&setup.ctx, &json!({"command": COMMAND}))
        .await
        .unwrap();
    std::hint::black_box(output);
}

async fn plain(setup: &Setup) {
    let output = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(COMMAND)
        .current_dir(&setup.ctx.cwd)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(output.status.success());
    std::hint::black_box(output);
}

/// `SAMPLES` of each, interleaved; (plain p50, p99), (run_command p50, p99).
fn measure(
    runtime: &tokio::runtime::Runtime,
    setup: &Setup,
) -> ((Duration, Duration), (Duration, Duration)) {
    let mut plain_samples = Vec::with_capacity(SAMPLES);
    let mut tool_samples = Vec::with_capacity(SAMPLES);
    runtime.block_on(async {
        // Warm: the session's pool, its cgroup and limits, the spawner thread.
        run_command(setup).await;
        plain(setup).await;
        for _ in 0..SAMPLES {
            let started = Instant::now();
            plain(setup).await;
            plain_samples.push(started.elapsed());
            let started = Instant::now();
            run_command(setup).await;
            tool_samples.push(started.elapsed());
        }
    });
    (
        percentiles(&mut plain_samples),
        percentiles(&mut tool_samples),
    )
}

fn report(label: &str, plain: (Duration, Duration), tool: (Duration, Duration)) {
    println!(
        "{label}: plain sh -c p50={:?} p99={:?}; run_command p50={:?} p99={:?}; over plain p50 +{:?} ({:.2}×); load {}",
        plain.0,
        plain.1,
        tool.0,
        tool.1,
        tool.0.saturating_sub(plain.0),
        tool.0.as_secs_f64() / plain.0.as_secs_f64(),
        loadavg(),
    );
}

/// 1,000 `sleep` processes, killed and waited for when dropped.
struct Idle(Vec<Child>);

impl Idle {
    fn start(count: usize) -> Self {
        Self(
            (0..count)
                .map(|_| {
                    std::process::Command::new("sleep")
                        .arg("600")
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Idle {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
        }
        for child in &mut self.0 {
            let _ = child.wait();
        }
    }
}

fn command_cost(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let setup = setup();
    let (plain_base, tool_base) = measure(&runtime, &setup);
    report("no extra processes", plain_base, tool_base);
    let (plain_idle, tool_idle) = {
        let _idle = Idle::start(1_000);
        // Let them all reach their sleep.
        std::thread::sleep(Duration::from_millis(500));
        let measured = measure(&runtime, &setup);
        report("1,000 idle processes", measured.0, measured.1);
        measured
    };
    println!(
        "run_command with 1,000 idle processes: {:.2}× the p50 without ({:.2}× plain sh -c's)",
        tool_idle.0.as_secs_f64() / tool_base.0.as_secs_f64(),
        plain_idle.0.as_secs_f64() / plain_base.0.as_secs_f64(),
    );
    c.bench_function("run_command/echo hi && /bin/true", |b| {
        b.to_async(&runtime).iter(|| run_command(&setup));
    });
    c.bench_function("plain sh -c/echo hi && /bin/true", |b| {
        b.to_async(&runtime).iter(|| plain(&setup));
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = command_cost
}
criterion_main!(benches);
