//! What deciding what to send costs a round of a long session: the eviction batch (or the
//! finding that none is needed) and the messages sent, on conversations of 50, 150 and 300
//! rounds of 10 KB reads with a 40,000-token window, evicted as the loop would have evicted
//! them, and 300 rounds with nothing evicted for comparison. Target: at most 2 ms at 300
//! rounds, and no growth with the rounds already evicted (an evicted round costs its stub, made
//! once, and its call).

use std::hint::black_box;

use codaris_agent::{ContextBudget, Conversation, Event, ToolCall};
use criterion::{BenchmarkId, Criterion};
use serde_json::json;

/// The system prompt and the always-on tools, as the estimate counts them.
const FIXED: u64 = 8_000;

/// `rounds` rounds, five reads a turn, the read of round 3 marked `keep`, with the batch
/// the loop would have made before the last round applied.
fn session(rounds: usize, budget: &ContextBudget) -> Conversation {
    let mut events = Vec::new();
    for round in 0..rounds {
        if round % 5 == 0 {
            events.push(Event::user(format!("read the next files ({round})")));
        }
        let mut args = json!({"path": format!("f{round}.txt")});
        if round == 3 {
            args["keep"] = json!(true);
        }
        events.push(Event::Assistant {
            text: String::new(),
            calls: vec![ToolCall {
                id: format!("call_{round}"),
                name: "read_file".into(),
                arguments: args,
            }],
        });
        events.push(Event::ToolCall {
            id: format!("call_{round}"),
        });
        let output: String = (1..=110)
            .map(|n| format!("{n}\tf{round}.txt line {n}: {}\n", "abcdefghij".repeat(8)))
            .collect();
        events.push(Event::tool_result(
            format!("call_{round}"),
            "read_file",
            output,
            false,
        ));
    }
    let mut conversation = Conversation::from_events(events);
    conversation.evict_for(budget, FIXED);
    conversation
}

fn bench(c: &mut Criterion) {
    let budget = ContextBudget::new(40_000, 2_000);
    let mut group = c.benchmark_group("deciding what to send");
    for rounds in [50, 150, 300] {
        let conversation = session(rounds, &budget);
        assert!(!conversation.evicted().is_empty());
        group.bench_with_input(
            BenchmarkId::from_parameter(rounds),
            &conversation,
            |b, conversation| {
                b.iter_batched_ref(
                    || conversation.clone(),
                    |conversation| {
                        let fitted = conversation.evict_for(&budget, FIXED);
                        black_box((fitted, conversation.sent_messages()))
                    },
                    criterion::BatchSize::LargeInput,
                );
            },
        );
    }
    // The same 300 rounds with a window that holds them all: nothing evicted, for comparison.
    let roomy = ContextBudget::new(2_000_000, 2_000);
    let whole = session(300, &roomy);
    assert!(whole.evicted().is_empty());
    group.bench_function("300, nothing evicted", |b| {
        b.iter_batched_ref(
            || whole.clone(),
            |conversation| {
                let fitted = conversation.evict_for(&roomy, FIXED);
                black_box((fitted, conversation.sent_messages()))
            },
            criterion::BatchSize::LargeInput,
        );
    });
    group.finish();
}

/// p50 and p99 of calls timed one by one, the cases interleaved call by call so a load that
/// comes and goes weighs on all of them alike.
fn percentiles() {
    let budget = ContextBudget::new(40_000, 2_000);
    let roomy = ContextBudget::new(2_000_000, 2_000);
    let cases = [
        ("50 rounds", session(50, &budget), budget),
        ("150 rounds", session(150, &budget), budget),
        ("300 rounds", session(300, &budget), budget),
        ("300 rounds, nothing evicted", session(300, &roomy), roomy),
    ];
    let mut samples: Vec<Vec<std::time::Duration>> = vec![Vec::new(); cases.len()];
    for _ in 0..2_000 {
        for (at, (_, conversation, budget)) in cases.iter().enumerate() {
            let mut conversation = conversation.clone();
            let started = std::time::Instant::now();
            let fitted = conversation.evict_for(budget, FIXED);
            black_box((fitted, conversation.sent_messages()));
            samples[at].push(started.elapsed());
        }
    }
    for ((name, ..), samples) in cases.iter().zip(&mut samples) {
        samples.sort_unstable();
        let p50 = samples[samples.len() / 2];
        let p99 = samples[samples.len() * 99 / 100];
        println!("deciding what to send, {name}: n=2000 p50={p50:?} p99={p99:?}");
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
    percentiles();
}
