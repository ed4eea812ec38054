//! What the memory subagent costs a turn (issue #45: at most 50 ms of daemon time added to a
//! turn, model requests excluded, and never a delay of the main turn's first model request).
//!
//! Two daemons are served in this process on their Unix sockets, one with `[memory] enabled`
//! and one without; the model is the scripted provider, so nothing but the daemons' own work is
//! timed. The same turn — read a file, then answer — runs on both, interleaved so the machine's
//! load falls on both alike; with memory on, the turn's memory subagent searches the project's
//! notes, reads one and recalls it. Two measurements:
//!
//! - **first request**: from the `Turn` request to the main turn's first answer event (the
//!   scripted model's first round, so the moment its first model request was made), with memory
//!   on and off. The difference of the medians and of the p99s is what starting the subagent
//!   delays the main turn's first request.
//! - **added daemon time**: from the `Turn` request until both the main turn ended and (with
//!   memory on) the memory subagent's session ended, against the main turn alone with memory
//!   off. The difference is everything the daemon does for the subagent (its session made and
//!   recorded, its turn run with three calls decided, recorded and run, its recall handed over,
//!   its session ended), with the model's answers taking no time.

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use std::path::Path;
use std::time::{Duration, Instant};

use codaris_proto::v1;
use codaris_test_support::daemon::InProcess;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

type Sessions = v1::sessions_client::SessionsClient<tonic::transport::Channel>;

const RUNS: usize = 60;

/// The main turn's work, and its memory subagent's (turn 0 plays `memory[0]`).
fn script() -> Value {
    json!({
        "turns": [{"rounds": [
            {"tool_calls": [{"name": "read_file", "args": {"path": "main.nf"}}]},
            {"text": "main.nf holds an empty workflow."}
        ]}],
        "memory": [{"turns": [{"rounds": [
            {"tool_calls": [{"name": "codaris_memory_search", "args": {"query": "slurm queue"}}]},
            {"tool_calls": [{"name": "codaris_memory_read", "args": {"path": "project:cluster/slurm.md"}}]},
            {"text": "project:cluster/slurm.md: use the long queue."}
        ]}]}]
    })
}

struct Timed {
    first_answer: Duration,
    turn_ended: Duration,
    all_done: Duration,
}

/// One fresh session's turn on `daemon`; with `memory`, waits for its memory subagent too.
async fn turn(daemon: &InProcess, sessions: &mut Sessions, script: &Path, memory: bool) -> Timed {
    let id = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: daemon.temp.path().join("proj").display().to_string(),
            script: script.display().to_string(),
            permission_mode: v1::PermissionMode::Bypass.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    let asked = Instant::now();
    let mut stream = sessions
        .turn(v1::TurnRequest {
            session_id: id.clone(),
            text: "what is in main.nf, and which queue?".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    let mut first_answer = None;
    while let Some(event) = stream.message().await.unwrap() {
        if matches!(
            event.event,
            Some(v1::turn_event::Event::ToolCall(_) | v1::turn_event::Event::Text(_))
        ) {
            first_answer.get_or_insert_with(|| asked.elapsed());
        }
    }
    let turn_ended = asked.elapsed();
    if memory {
        // The subagent's session is the next one made, and it ends once it recalled.
        let child = format!("s{:06}", id[1..].parse::<u64>().unwrap() + 1);
        loop {
            let state = sessions
                .get_session(v1::GetSessionRequest { id: child.clone() })
                .await
                .map(|s| s.into_inner().state)
                .unwrap_or_default();
            if state == i32::from(v1::SessionState::Ended) {
                break;
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    }
    let all_done = asked.elapsed();
    sessions
        .end_session(v1::EndSessionRequest { id })
        .await
        .unwrap();
    Timed {
        first_answer: first_answer.unwrap(),
        turn_ended,
        all_done,
    }
}

fn percentile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * q).round() as usize]
}

async fn daemon(toml: &str) -> (InProcess, Sessions) {
    let daemon = InProcess::start_with_toml(toml).await;
    let proj = daemon.temp.path().join("proj");
    std::fs::create_dir_all(proj.join(".codaris/memory/cluster")).unwrap();
    std::fs::write(proj.join("main.nf"), "workflow { }\n").unwrap();
    std::fs::write(
        proj.join(".codaris/memory/cluster/slurm.md"),
        "# Slurm queue\n\nSTAR runs only in the `long` queue.\n",
    )
    .unwrap();
    std::fs::write(daemon.temp.path().join("script.json"), script().to_string()).unwrap();
    let sessions = Sessions::new(daemon.channel().await);
    (daemon, sessions)
}

fn memory(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ((off, mut off_sessions), (on, mut on_sessions)) =
        runtime.block_on(async { (daemon("").await, daemon("[memory]\nenabled = true\n").await) });
    let (off_script, on_script) = (
        off.temp.path().join("script.json"),
        on.temp.path().join("script.json"),
    );
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        without.push(runtime.block_on(turn(&off, &mut off_sessions, &off_script, false)));
        with.push(runtime.block_on(turn(&on, &mut on_sessions, &on_script, true)));
    }
    let stat = |runs: &[Timed], f: fn(&Timed) -> Duration| {
        let mut samples: Vec<Duration> = runs.iter().map(f).collect();
        (
            percentile(&mut samples, 0.5),
            percentile(&mut samples, 0.99),
        )
    };
    let (f_off, f_off99) = stat(&without, |t| t.first_answer);
    let (f_on, f_on99) = stat(&with, |t| t.first_answer);
    println!(
        "first model answer of the main turn, n={RUNS}: memory off p50={f_off:?} p99={f_off99:?}; on p50={f_on:?} p99={f_on99:?}; delay p50={:?} p99={:?}",
        f_on.saturating_sub(f_off),
        f_on99.saturating_sub(f_off99),
    );
    let (t_off, t_off99) = stat(&without, |t| t.turn_ended);
    let (t_on, t_on99) = stat(&with, |t| t.turn_ended);
    println!(
        "main turn to its end: memory off p50={t_off:?} p99={t_off99:?}; on p50={t_on:?} p99={t_on99:?}"
    );
    let (a_on, a_on99) = stat(&with, |t| t.all_done);
    println!(
        "main turn and its memory subagent done: p50={a_on:?} p99={a_on99:?}; added daemon time per turn: p50={:?} p99={:?}",
        a_on.saturating_sub(t_off),
        a_on99.saturating_sub(t_off99),
    );

    // Criterion's own sample of the whole turn with memory on, for its history and plots.
    c.bench_function("turn_with_memory_subagent", |b| {
        b.iter(|| runtime.block_on(turn(&on, &mut on_sessions, &on_script, true)));
    });
    runtime.block_on(async {
        off.stop().await;
        on.stop().await;
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    targets = memory
}
criterion_main!(benches);
