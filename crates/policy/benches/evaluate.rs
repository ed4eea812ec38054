//! `evaluate` with 10 and with 10,000 grants in force.
//!
//! Criterion measures the mean and median; it does not report tail percentiles, so a first pass
//! times calls one by one and prints p50 / p99 / p99.9 for the same inputs. The grant set is built
//! once, outside the timed loop, as the daemon keeps it per session.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use codaris_policy::{
    Activity, CapabilityName, Code, Grant, GrantSet, Lifetime, PermissionMode, Task, evaluate,
};
use codaris_policy::{Call, Decision, ToolId};
use criterion::{BenchmarkId, Criterion};
use serde_json::{Value, json};

const SIZES: [usize; 2] = [10, 10_000];

/// `n` grants spread over every capability and many paths, one of which covers the call.
fn grants(n: usize) -> GrantSet {
    let names = CapabilityName::ALL;
    let mut set = GrantSet::from_grants((0..n - 1).map(|i| {
        let name = names[i % names.len()];
        let path = match name {
            CapabilityName::UseTool => format!("tool_{i}"),
            CapabilityName::RunProgram => format!("program{i} sub"),
            CapabilityName::SendHttp => format!("https://host{i}.example"),
            _ => format!("/data/{}/run-{i}/out", i % 97),
        };
        let lifetime = if i % 5 == 0 {
            Lifetime::Once
        } else {
            Lifetime::Session
        };
        Grant::new(name, Some(&path), lifetime).with_id(format!("g{i}"))
    }));
    set.insert(Grant::new(
        CapabilityName::MutateOutsideFence,
        Some("/tmp/out"),
        Lifetime::Session,
    ));
    for program in ["cargo test", "tail"] {
        set.insert(Grant::new(
            CapabilityName::RunProgram,
            Some(program),
            Lifetime::Session,
        ));
    }
    set
}

fn task() -> Task {
    let mut task = Task::new("/w/proj");
    task.workspace = Some("/s/sessions/1".into());
    task.protected = vec!["/s/ledger".into(), "/s/config.toml".into()];
    task.bound = Some(
        codaris_policy::ALWAYS_ON
            .iter()
            .map(|s| s.to_string())
            .collect(),
    );
    task
}

/// The scenarios: a write outside the fence allowed by a grant (fence and class both look
/// grants up), a command line covered program by program, a read inside the fence, and a
/// read-only refusal.
fn scenarios() -> Vec<(&'static str, &'static str, Value, Task, Code)> {
    let mut review = task();
    review.activity = Activity::Review;
    review.permission_mode = PermissionMode::AcceptEdits;
    vec![
        (
            "write_granted",
            "write",
            json!({"path": "/tmp/out/deep/er/file.rs", "content": "x"}),
            task(),
            Code::AllowedByGrant,
        ),
        (
            "read_inside",
            "read_file",
            json!({"path": "src/lib.rs", "offset": 1, "limit": 200}),
            task(),
            Code::AllowedByDefault,
        ),
        (
            "command_by_program",
            "run_command",
            json!({"command": "cargo test -p codaris-policy 2>&1 | tail -n 20"}),
            task(),
            Code::AllowedByGrant,
        ),
        (
            "read_only_refusal",
            "edit",
            json!({"path": "src/lib.rs", "oldString": "a", "newString": "b"}),
            review,
            Code::ReadOnlyActivity,
        ),
    ]
}

// The tool's name is parsed once where a call enters, before the decision path.
fn decide(tool: &ToolId, args: &Value, grants: &GrantSet, task: &Task) -> Decision {
    let call = Call {
        tool,
        args,
        spec: None,
    };
    evaluate(black_box(&call), black_box(grants), black_box(task))
}

fn percentiles() {
    const CALLS: usize = 200_000;
    println!("per-call latency ({CALLS} calls each, timed one by one)");
    for n in SIZES {
        let set = grants(n);
        for (name, tool, args, task, code) in scenarios() {
            let tool = &ToolId::parse(tool);
            assert_eq!(decide(tool, &args, &set, &task).code, code, "{name}");
            let mut samples: Vec<Duration> = Vec::with_capacity(CALLS);
            for _ in 0..CALLS {
                let start = Instant::now();
                black_box(decide(tool, &args, &set, &task));
                samples.push(start.elapsed());
            }
            samples.sort_unstable();
            let at = |q: f64| samples[((CALLS as f64 - 1.0) * q) as usize].as_nanos();
            println!(
                "  {n:>6} grants  {name:<18} p50 {:>5} ns   p99 {:>6} ns   p99.9 {:>6} ns",
                at(0.50),
                at(0.99),
                at(0.999)
            );
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("evaluate");
    for n in SIZES {
        let set = grants(n);
        for (name, tool, args, task, _) in scenarios() {
            let tool = ToolId::parse(tool);
            group.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter(|| decide(&tool, &args, &set, &task))
            });
        }
    }
    group.finish();
}

fn main() {
    // `cargo bench` passes `--bench`; without it (e.g. `cargo test --benches`) criterion only
    // checks that each benchmark runs, and the long percentile pass is skipped too.
    if std::env::args().any(|a| a == "--bench") {
        percentiles();
    }
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
