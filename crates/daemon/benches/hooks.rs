//! What a PreToolUse hook adds to a call (#44): the target is at most the hook program's own
//! run time plus 1 ms, and nothing measurable for a call no hook matches.
//!
//! Three cases, timed call by call and interleaved so the machine's noise falls on each alike:
//! - `no hook matches`: `pre_tool_use` with a hook configured for another tool (what every call
//!   pays once hooks are configured);
//! - `the program alone`: the hook's program started the way any caller would start it (its
//!   input on standard input, its output read, waited for): its own run time;
//! - `one matching hook`: the same program run as a hook, its answer read and combined.
//!
//! The hook is a tiny shell script that answers `allow` at once. Each case prints p50 and p99,
//! and the hook's overhead (p50 and p99 of the matching hook less the program alone).

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use codaris_test_support::bench::percentiles;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use codaris_daemon::calls::hooks::{HookCall, pre_tool_use};
use codaris_daemon::config::hooks::PreToolUseHook;
use codaris_policy::Task;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ROUNDS: usize = 300;

fn hook(matcher: &str, program: &str) -> PreToolUseHook {
    PreToolUseHook {
        matcher: matcher.to_owned(),
        pattern: codaris_config::hook_matcher(matcher).unwrap(),
        command: vec![program.to_owned()],
        timeout: Duration::from_secs(10),
    }
}

/// The program alone: started, fed `input`, read, waited for.
async fn program_alone(program: &str, cwd: &std::path::Path, input: &[u8]) {
    let mut child = tokio::process::Command::new(program)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let write = async move {
        let _ = stdin.write_all(input).await;
    };
    let _ = tokio::join!(
        write,
        stdout.read_to_end(&mut out),
        stderr.read_to_end(&mut err),
        child.wait()
    );
}

fn hooks(c: &mut Criterion) {
    let temp = tempfile::tempdir().unwrap();
    let script = temp.path().join("allow.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\"}}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let program = script.display().to_string();
    let cwd = temp.path().display().to_string();
    let task = Task::new(cwd.clone());
    let args = json!({"path": "src/main.rs", "content": "fn main() {}\n"});
    let call = HookCall {
        session_id: "s1",
        call_id: "c1",
        tool: "write",
        mcp: false,
        args: &args,
        task: &task,
        cwd: &cwd,
    };
    let matching = vec![hook("write|edit", &program)];
    let elsewhere = vec![hook("run_command", &program)];
    let input = serde_json::to_vec(&json!({"tool_name": "write", "tool_input": args})).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let (mut none, mut alone, mut hooked) = (Vec::new(), Vec::new(), Vec::new());
    runtime.block_on(async {
        for _ in 0..ROUNDS {
            let start = Instant::now();
            assert!(pre_tool_use(&elsewhere, &[], call).await.is_none());
            none.push(start.elapsed());
            let start = Instant::now();
            program_alone(&program, temp.path(), &input).await;
            alone.push(start.elapsed());
            let start = Instant::now();
            let answered = pre_tool_use(&matching, &[], call).await.unwrap();
            hooked.push(start.elapsed());
            assert_eq!(
                answered.outcome.decision(),
                codaris_policy::HookDecision::Allow
            );
        }
    });
    let (none50, none99) = percentiles(&mut none);
    let (alone50, alone99) = percentiles(&mut alone);
    let (hook50, hook99) = percentiles(&mut hooked);
    println!("no hook matches:    p50 {none50:?}  p99 {none99:?}");
    println!("the program alone:  p50 {alone50:?}  p99 {alone99:?}");
    println!("one matching hook:  p50 {hook50:?}  p99 {hook99:?}");
    println!(
        "the hook's overhead: p50 {:?}  p99 {:?}",
        hook50.saturating_sub(alone50),
        hook99.saturating_sub(alone99)
    );

    let mut group = c.benchmark_group("pre_tool_use");
    group.bench_function("no hook matches", |b| {
        b.to_async(&runtime)
            .iter(|| async { pre_tool_use(&elsewhere, &[], call).await.is_none() });
    });
    group.sample_size(50);
    group.bench_function("the program alone", |b| {
        b.to_async(&runtime)
            .iter(|| program_alone(&program, temp.path(), &input));
    });
    group.bench_function("one matching hook", |b| {
        b.to_async(&runtime)
            .iter(|| async { pre_tool_use(&matching, &[], call).await.is_some() });
    });
    group.finish();
}

criterion_group!(benches, hooks);
criterion_main!(benches);
