//! What a foreground subagent costs the daemon (issue #43: at most 5 ms per child start, and no
//! growth with the children already finished in the session).
//!
//! The daemon is served in this process on its Unix socket; the model is the scripted provider,
//! so nothing but the daemon's own work is timed. Two measurements, in one run:
//!
//! - **added cost**: the same work — read a file, then answer — done by the parent itself, and
//!   by a foreground child the parent spawns, each one fresh session's turn timed from the
//!   `Turn` request to the end of its stream, interleaved so the machine's load falls on both
//!   alike. The child's turn has the same rounds; what differs is the child: its session made
//!   and recorded, its turn started and followed, its report written. The difference of the
//!   medians (and of the p99s) is the added cost per child.
//! - **growth**: one session whose one turn spawns `SERIAL` children one after the other, each
//!   answering at once; each `spawn_agent` call is timed from its `tool_call` event to its
//!   `tool_result` (the daemon's whole work for the child, start to report). The first and the
//!   last tenth are compared: a cost that grew with the finished children would show there.

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use std::path::Path;
use std::time::{Duration, Instant};

use codaris_proto::v1;
use codaris_test_support::daemon::InProcess;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

type Sessions = v1::sessions_client::SessionsClient<tonic::transport::Channel>;

/// The children one turn spawns one after another, for the growth measurement.
const SERIAL: usize = 200;

fn search() -> Value {
    json!({"tool_calls": [{"name": "search_tools", "args": {"query": "delegate a task to a subagent"}}]})
}

fn spawn(n: usize) -> Value {
    json!({"tool_calls": [{"name": "spawn_agent", "args": {"prompt": format!("task {n}"), "description": format!("task {n}")}}]})
}

/// The work itself: read a file, then answer.
fn work() -> Vec<Value> {
    vec![
        json!({"tool_calls": [{"name": "read_file", "args": {"path": "main.nf"}}]}),
        json!({"text": "main.nf holds an empty workflow."}),
    ]
}

/// The parent does the work itself (after the same search a spawning parent makes).
fn direct() -> Value {
    let mut rounds = vec![search()];
    rounds.extend(work());
    json!({"turns": [{"rounds": rounds}]})
}

/// The parent has a child do it.
fn delegated() -> Value {
    json!({
        "turns": [{"rounds": [search(), spawn(0), {"text": "done"}]}],
        "children": [{"turns": [{"rounds": work()}]}]
    })
}

/// The children one turn spawns (a turn takes at most 24 rounds).
const PER_TURN: usize = 10;

/// Turns that spawn `SERIAL` children in a row, `PER_TURN` a turn, each answering at once.
fn serial() -> Value {
    let turns: Vec<Value> = (0..SERIAL / PER_TURN)
        .map(|t| {
            let mut rounds = vec![search()];
            rounds.extend((t * PER_TURN..(t + 1) * PER_TURN).map(spawn));
            rounds.push(json!({"text": "done"}));
            json!({"rounds": rounds})
        })
        .collect();
    let children: Vec<Value> = (0..SERIAL)
        .map(|n| json!({"turns": [{"rounds": [{"text": format!("report {n}")}]}]}))
        .collect();
    json!({"turns": turns, "children": children})
}

/// A session that answers at once: what any session's first turn costs, the floor under a
/// child (which is a session with a turn).
fn trivial() -> Value {
    json!({"turns": [{"rounds": [{"text": "hello"}]}]})
}

/// A fresh session playing `script`, and its first turn's events with the time each arrived.
async fn turn(
    daemon: &InProcess,
    sessions: &mut Sessions,
    script: &Path,
) -> (Duration, Vec<(Instant, v1::turn_event::Event)>) {
    let (took, mut events) = turns(daemon, sessions, script, 1).await;
    (took, events.remove(0))
}

/// A fresh session playing `script`'s first `count` turns, each turn's events with the time
/// each arrived; the time is the first turn's (from creating the session).
async fn turns(
    daemon: &InProcess,
    sessions: &mut Sessions,
    script: &Path,
    count: usize,
) -> (Duration, Vec<Vec<(Instant, v1::turn_event::Event)>>) {
    let created = Instant::now();
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
    let mut all = Vec::new();
    let mut took = Duration::ZERO;
    for n in 0..count {
        let mut stream = sessions
            .turn(v1::TurnRequest {
                session_id: id.clone(),
                text: format!("go {n}"),
            })
            .await
            .unwrap()
            .into_inner();
        let mut events = Vec::new();
        while let Some(event) = stream.message().await.unwrap() {
            if let Some(event) = event.event {
                events.push((Instant::now(), event));
            }
        }
        if n == 0 {
            took = created.elapsed();
        }
        all.push(events);
    }
    sessions
        .end_session(v1::EndSessionRequest { id })
        .await
        .unwrap();
    (took, all)
}

fn percentile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * q).round() as usize]
}

fn write(path: &Path, script: &Value) {
    std::fs::write(path, script.to_string()).unwrap();
}

fn subagents(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (daemon, mut sessions) = runtime.block_on(async {
        let daemon = InProcess::start().await;
        let proj = daemon.temp.path().join("proj");
        std::fs::create_dir_all(&proj).unwrap();
        std::fs::write(proj.join("main.nf"), "workflow { }\n").unwrap();
        let sessions = Sessions::new(daemon.channel().await);
        (daemon, sessions)
    });
    let scripts = daemon.temp.path();
    let (direct_script, delegated_script, serial_script) = (
        scripts.join("direct.json"),
        scripts.join("delegated.json"),
        scripts.join("serial.json"),
    );
    write(&direct_script, &direct());
    write(&delegated_script, &delegated());
    write(&serial_script, &serial());

    // Added cost: interleaved, so load falls on both alike; and the floor, a session that
    // answers at once, timed the same way (from creating it to its turn's end).
    let trivial_script = scripts.join("trivial.json");
    write(&trivial_script, &trivial());
    let (mut alone, mut with_child, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..60 {
        floor.push(
            runtime
                .block_on(turn(&daemon, &mut sessions, &trivial_script))
                .0,
        );
        alone.push(
            runtime
                .block_on(turn(&daemon, &mut sessions, &direct_script))
                .0,
        );
        let (took, events) = runtime.block_on(turn(&daemon, &mut sessions, &delegated_script));
        let reported = events.iter().any(|(_, e)| {
            matches!(e, v1::turn_event::Event::ToolResult(r)
                if r.tool == "spawn_agent" && r.output.contains("main.nf holds an empty workflow."))
        });
        assert!(reported, "the child did not report");
        with_child.push(took);
    }
    let (a50, c50) = (
        percentile(&mut alone, 0.5),
        percentile(&mut with_child, 0.5),
    );
    let (a99, c99) = (
        percentile(&mut alone, 0.99),
        percentile(&mut with_child, 0.99),
    );
    println!(
        "the work in the parent: n={} p50={a50:?} p99={a99:?}; in a foreground child: p50={c50:?} p99={c99:?}; added per child: p50={:?} p99={:?}",
        alone.len(),
        c50.saturating_sub(a50),
        c99.saturating_sub(a99),
    );

    println!(
        "the floor, a new session answering at once (create to turn's end): p50={:?} p99={:?}",
        percentile(&mut floor, 0.5),
        percentile(&mut floor, 0.99),
    );

    // Growth: each spawn's tool_call → tool_result in one session.
    let (_, turns_seen) = runtime.block_on(turns(
        &daemon,
        &mut sessions,
        &serial_script,
        SERIAL / PER_TURN,
    ));
    let events: Vec<(Instant, v1::turn_event::Event)> = turns_seen.into_iter().flatten().collect();
    let mut started = std::collections::HashMap::new();
    let mut spans = Vec::new();
    for (at, event) in &events {
        match event {
            v1::turn_event::Event::ToolCall(call) if call.tool == "spawn_agent" => {
                started.insert(call.id.clone(), *at);
            }
            v1::turn_event::Event::ToolResult(result) if result.tool == "spawn_agent" => {
                assert!(!result.failed, "{}", result.output);
                spans.push(at.duration_since(started[&result.id]));
            }
            _ => {}
        }
    }
    assert_eq!(spans.len(), SERIAL);
    let tenth = SERIAL / 10;
    let mut first = spans[..tenth].to_vec();
    let mut last = spans[SERIAL - tenth..].to_vec();
    let mut all = spans.clone();
    println!(
        "a child's start to its report, {SERIAL} in one session: p50={:?} p99={:?}; first {tenth}: p50={:?}; last {tenth}: p50={:?}",
        percentile(&mut all, 0.5),
        percentile(&mut all, 0.99),
        percentile(&mut first, 0.5),
        percentile(&mut last, 0.5),
    );

    // The same number of children, each in a session of its own: what grows with the daemon's
    // history rather than with one session's children.
    let one_script = scripts.join("one.json");
    write(
        &one_script,
        &json!({
            "turns": [{"rounds": [search(), spawn(0), {"text": "done"}]}],
            "children": [{"turns": [{"rounds": [{"text": "report"}]}]}]
        }),
    );
    let mut apart = Vec::new();
    for _ in 0..SERIAL {
        let (_, events) = runtime.block_on(turn(&daemon, &mut sessions, &one_script));
        let call = events.iter().find_map(|(at, e)| {
            matches!(e, v1::turn_event::Event::ToolCall(c) if c.tool == "spawn_agent")
                .then_some(*at)
        });
        let result = events.iter().find_map(|(at, e)| {
            matches!(e, v1::turn_event::Event::ToolResult(r) if r.tool == "spawn_agent")
                .then_some(*at)
        });
        apart.push(result.unwrap().duration_since(call.unwrap()));
    }
    let mut first = apart[..tenth].to_vec();
    let mut last = apart[SERIAL - tenth..].to_vec();
    println!(
        "a child's start to its report, {SERIAL} children in sessions of their own: first {tenth}: p50={:?}; last {tenth}: p50={:?}",
        percentile(&mut first, 0.5),
        percentile(&mut last, 0.5),
    );

    c.bench_function("subagents/the work in a foreground child", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| {
                    runtime
                        .block_on(turn(&daemon, &mut sessions, &delegated_script))
                        .0
                })
                .sum()
        });
    });
    c.bench_function("subagents/the same work in the parent", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| {
                    runtime
                        .block_on(turn(&daemon, &mut sessions, &direct_script))
                        .0
                })
                .sum()
        });
    });
    runtime.block_on(daemon.stop());
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(10));
    targets = subagents
}
criterion_main!(benches);
