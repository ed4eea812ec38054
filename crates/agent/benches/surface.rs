//! The per-round overhead of the pure core: reading the turn's message into a plan and
//! computing the surface for a 50-turn history in which every turn searched, on a registry of
//! every built-in tool plus 200 MCP tools. Target: the whole per-round overhead at most 1 ms.

#![expect(clippy::unwrap_used, reason = "a bench fails loudly on a bad fixture")]

use std::hint::black_box;

use codaris_agent::{
    Event, LoopGuard, Registry, RegistryTool, ToolCall, TurnPlan, TurnState, Usage, surface,
};
use codaris_index::Server;
use codaris_policy::{BUILTIN, Task, Withholding};
use criterion::Criterion;
use serde_json::json;

fn registry() -> Registry {
    let builtin = BUILTIN
        .iter()
        .filter(|s| s.withheld_when != Some(Withholding::MemoryChild))
        .map(|s| RegistryTool::builtin(s.name.to_string()));
    let mcp = (0..200).map(|i| RegistryTool::mcp(&format!("srv{}", i % 20), &format!("tool{i}")));
    let fetch = RegistryTool::mcp("fetch", "fetch");
    let servers = [Server {
        name: "fetch".into(),
        keywords: vec!["url".into()],
    }];
    Registry::new(builtin.chain(mcp).chain([fetch]), &servers)
}

/// 50 turns; each has a search binding five tools, a few calls and results, and text.
fn history() -> Vec<Event> {
    let mut h = Vec::new();
    for turn in 0..50 {
        h.push(Event::user(format!(
            "turn {turn}: check the run and lint it"
        )));
        let search = ToolCall {
            id: format!("s{turn}"),
            name: "search_tools".into(),
            arguments: json!({"query": format!("lint run {turn}")}),
        };
        h.push(Event::Assistant {
            text: String::new(),
            calls: vec![search],
        });
        h.push(Event::ToolCall {
            id: format!("s{turn}"),
        });
        h.push(Event::ToolResult {
            id: format!("s{turn}"),
            tool: "search_tools".into(),
            output: "Matches …".into(),
            bound: (0..5)
                .map(|k| (turn * 5 + k) % 200)
                .map(|j| format!("srv{}__tool{j}", j % 20))
                .collect(),
            is_error: false,
            pictures: Vec::new(),
            retired: String::new(),
        });
        for call in 0..3 {
            h.push(Event::Assistant {
                text: String::new(),
                calls: vec![ToolCall {
                    id: format!("c{turn}_{call}"),
                    name: "read_file".into(),
                    arguments: json!({"path": format!("f{call}.nf")}),
                }],
            });
            h.push(Event::ToolCall {
                id: format!("c{turn}_{call}"),
            });
            h.push(Event::tool_result(
                format!("c{turn}_{call}"),
                "read_file",
                "process X { script: 'echo' }\nBound for your next step: planner",
                false,
            ));
        }
        h.push(Event::assistant("Done."));
    }
    h
}

fn main() {
    let registry = registry();
    let history = history();
    let message = "/review main.nf and see https://nf-co.re/rnaseq";
    let task = Task::new("/w/proj");
    let mut c = Criterion::default().configure_from_args();
    c.bench_function("surface/50_turns", |b| {
        let st = TurnState::new(TurnPlan::from_message(message), task.clone(), true);
        b.iter(|| black_box(surface(black_box(&history), &st, &registry)));
    });
    let round = || {
        let mut st = TurnState::new(
            TurnPlan::from_message(black_box(message)),
            task.clone(),
            true,
        );
        // Each round reads the switched-off tools from the registry.
        st.switch_off(&registry);
        let s = surface(black_box(&history), &st, &registry);
        let line = s.line();
        let dispatch = st.dispatch_task(&s);
        let mut guard = LoopGuard::new();
        let args = json!({"query": "lint nextflow"});
        // The loop reads a call's name once, where it enters; so does this round.
        let tool = codaris_agent::ToolId::parse("search_tools");
        let check = guard.check(&tool, &args);
        let progress = guard.record(&tool, &args, "Matches …", &s.tools[..2]);
        let usage = Usage {
            input_tokens: 1200,
            cache_read_tokens: 5800,
            cache_write_tokens: 0,
            output_tokens: 80,
        }
        .line();
        black_box((line, dispatch, check, progress, usage))
    };
    c.bench_function("round/plan_surface_line_guard_usage", |b| b.iter(round));
    // Criterion's summary has no tail: time single rounds for p50 and p99.
    let mut samples: Vec<std::time::Duration> = (0..20_000)
        .map(|_| {
            let started = std::time::Instant::now();
            black_box(round());
            started.elapsed()
        })
        .collect();
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "round/plan_surface_line_guard_usage single rounds: n={} p50={:?} p99={:?}",
        samples.len(),
        at(0.50),
        at(0.99)
    );
    c.bench_function("surface/legacy_whole_registry", |b| {
        let st = TurnState::new(TurnPlan::from_message(message), task.clone(), false);
        b.iter(|| black_box(surface(black_box(&history), &st, &registry)));
    });
    let st = TurnState::new(TurnPlan::from_message(message), task.clone(), true);
    let s = surface(&history, &st, &registry);
    assert!(s.found > 0, "{}", s.line());
    println!("{}", s.line());
    c.final_summary();
    let _ = serde_json::to_string(&s).unwrap();
}
