//! A scripted turn of 50 `read_file` calls, end to end in the daemon: each call decided (paths
//! resolved, grants in force, `evaluate`, the durable record), then run in its fence, its result
//! streamed back. The daemon is served in this process on its Unix socket; the model is the
//! scripted provider, so nothing but the daemon's own work is timed.
//!
//! Each sample is one fresh session's first turn (the script's turn 0), timed from the `Turn`
//! request to the end of its stream. Criterion reports the median; p50/p99 of individually
//! timed turns are printed as well, since criterion's summary has no tail percentiles. Run it
//! on two builds in one go (`--save-baseline` then `--baseline`) to compare them.

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use std::path::Path;
use std::time::{Duration, Instant};

use codaris_proto::v1;
use codaris_test_support::daemon::InProcess;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

/// The calls in the turn.
const CALLS: usize = 50;

type Sessions = v1::sessions_client::SessionsClient<tonic::transport::Channel>;

/// A project of `CALLS` small files and the script that reads each once, in one round.
fn project(root: &Path) -> serde_json::Value {
    let proj = root.join("proj");
    std::fs::create_dir_all(proj.join("src")).unwrap();
    let calls: Vec<serde_json::Value> = (0..CALLS)
        .map(|i| {
            let name = format!("src/file{i:02}.rs");
            std::fs::write(
                proj.join(&name),
                format!("// file {i}\nfn f{i}() {{}}\n").repeat(20),
            )
            .unwrap();
            json!({"name": "read_file", "args": {"path": name}})
        })
        .collect();
    json!({"turns": [{"rounds": [{"tool_calls": calls}, {"text": "read them all"}]}]})
}

/// One fresh session's turn, timed from the request to the end of its stream.
async fn one_turn(daemon: &InProcess, sessions: &mut Sessions, script: &Path) -> Duration {
    let id = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: daemon.temp.path().join("proj").display().to_string(),
            script: script.display().to_string(),
            permission_mode: v1::PermissionMode::Ask.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    let started = Instant::now();
    let mut stream = sessions
        .turn(v1::TurnRequest {
            session_id: id.clone(),
            text: "read the sources".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    let mut read = 0;
    while let Some(event) = stream.message().await.unwrap() {
        if let Some(v1::turn_event::Event::ToolResult(result)) = event.event {
            assert!(
                result.output.contains("fn f"),
                "a read failed: {}",
                result.output
            );
            read += 1;
        }
    }
    let took = started.elapsed();
    assert_eq!(read, CALLS);
    sessions
        .end_session(v1::EndSessionRequest { id })
        .await
        .unwrap();
    took
}

fn scripted_turn(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (daemon, mut sessions, script) = runtime.block_on(async {
        let daemon = InProcess::start().await;
        let script = daemon.temp.path().join("script.json");
        std::fs::write(&script, project(daemon.temp.path()).to_string()).unwrap();
        let sessions = Sessions::new(daemon.channel().await);
        (daemon, sessions, script)
    });
    let mut samples: Vec<Duration> = (0..40)
        .map(|_| runtime.block_on(one_turn(&daemon, &mut sessions, &script)))
        .collect();
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "scripted turn of {CALLS} read_file calls: n={} p50={:?} p99={:?}",
        samples.len(),
        at(0.50),
        at(0.99)
    );
    c.bench_function("scripted turn/50 read_file calls", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| runtime.block_on(one_turn(&daemon, &mut sessions, &script)))
                .sum()
        });
    });
    runtime.block_on(daemon.stop());
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(10));
    targets = scripted_turn
}
criterion_main!(benches);
