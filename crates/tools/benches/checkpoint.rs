//! The cost of keeping a turn's writes for undo, and of undoing (#46, item 9).
//!
//! - `write` and `edit` of a 1 MB file, each with and without a checkpoint: the first change of
//!   a file in a turn copies it into the turn's store (a fresh checkpoint per call, so every
//!   call pays for the copy, the store's creation included). Target: at most 10 % over the
//!   tool's own time.
//! - Sealing that checkpoint (reading back the file, hashing both copies, the manifest), which
//!   runs when the turn ends, off the tool's time.
//! - Undoing a turn that rewrote 1,000 files: the survey (each file compared with what the
//!   turn left) and the restore (each put back, then read back). Target: at most 1 s.
//!
//! Besides criterion's own estimates, each case prints p50/p99 of individually timed calls.

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]
#![allow(
    clippy::disallowed_methods,
    reason = "the benchmark sets up files directly, outside any fence"
)]

use codaris_test_support::bench::percentiles;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codaris_tools::files::checkpoint::{self, Checkpoint};
use codaris_tools::files::{Edit, WriteFile};
use codaris_tools::{Fence, Tool, ToolContext};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::json;

const MB: usize = 1 << 20;
const SAMPLES: usize = 200;
const UNDO_FILES: usize = 1_000;

struct Setup {
    _temp: tempfile::TempDir,
    root: PathBuf,
    state: PathBuf,
    ctx: ToolContext,
    n: std::cell::Cell<u64>,
}

fn setup() -> Setup {
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path().canonicalize().unwrap();
    let root = base.join("project");
    let state = base.join("state");
    let workspace = state.join("sessions/bench");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    let ctx = ToolContext {
        checkpoint: None,
        session_id: "bench".to_owned(),
        cwd: root.clone(),
        fence: Fence::new([root.clone(), workspace.clone()]).with_state_dir(&state, &workspace),
        workspace,
        read: Default::default(),
    };
    Setup {
        _temp: temp,
        root,
        state,
        ctx,
        n: std::cell::Cell::new(0),
    }
}

impl Setup {
    /// A context with a new turn's checkpoint (or none).
    fn ctx(&self, kept: bool) -> ToolContext {
        let mut ctx = self.ctx.clone();
        if kept {
            let n = self.n.get();
            self.n.set(n + 1);
            ctx.checkpoint = Some(Checkpoint::new(
                self.state.join(format!("checkpoints/bench/{n}")),
                "bench",
                0,
            ));
        }
        ctx
    }
}

/// 1 MB of text lines, with one marker an edit can find.
fn megabyte(marker: &str) -> String {
    let line = "ACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGT\n";
    let mut text = String::with_capacity(MB + 64);
    while text.len() < MB / 2 {
        text.push_str(line);
    }
    text.push_str(marker);
    text.push('\n');
    while text.len() < MB {
        text.push_str(line);
    }
    text
}

fn bench_writes(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let s = setup();
    let path = s.root.join("big.txt");
    let content = megabyte("MARKER");
    let write_args = json!({"path": "big.txt", "content": content});
    std::fs::write(&path, &content).unwrap();
    let flip = std::cell::Cell::new(true);
    // One call, timed alone; a checkpoint's store is removed after the clock stops, so a run
    // of thousands of calls does not fill the disk with copies.
    let timed = |tool: &str, kept: bool| -> Duration {
        let ctx = s.ctx(kept);
        let at = Instant::now();
        match tool {
            "write" => {
                runtime.block_on(WriteFile.call(&ctx, &write_args)).unwrap();
            }
            _ => {
                // The edit swaps the marker back and forth, so every call changes the file.
                let (old, new) = if flip.get() {
                    ("MARKER", "REKRAM")
                } else {
                    ("REKRAM", "MARKER")
                };
                flip.set(!flip.get());
                let args = json!({"path": "big.txt", "oldString": old, "newString": new});
                runtime.block_on(Edit.call(&ctx, &args)).unwrap();
            }
        }
        let took = at.elapsed();
        clean(&s.state);
        took
    };
    for tool in ["write", "edit"] {
        for kept in [false, true] {
            let mut samples: Vec<Duration> = (0..SAMPLES).map(|_| timed(tool, kept)).collect();
            let (p50, p99) = percentiles(&mut samples);
            let with = if kept { "checkpoint" } else { "no checkpoint" };
            println!("{tool} 1 MB, {with}: p50 {p50:?}, p99 {p99:?}");
        }
    }
    let mut samples = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let ctx = s.ctx(true);
        runtime.block_on(WriteFile.call(&ctx, &write_args)).unwrap();
        let at = Instant::now();
        ctx.checkpoint.as_ref().unwrap().seal().unwrap();
        samples.push(at.elapsed());
        clean(&s.state);
    }
    let (p50, p99) = percentiles(&mut samples);
    println!("seal after a 1 MB write (when the turn ends): p50 {p50:?}, p99 {p99:?}");

    let mut group = c.benchmark_group("checkpoint");
    group.measurement_time(Duration::from_secs(4));
    for tool in ["write", "edit"] {
        for kept in [false, true] {
            let with = if kept { "checkpoint" } else { "no checkpoint" };
            group.bench_function(format!("{tool} 1 MB, {with}"), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| timed(tool, kept)).sum())
            });
        }
    }
    group.finish();
}

/// Removes the bench's checkpoints between cases (the disk is not the subject).
fn clean(state: &Path) {
    let _ = std::fs::remove_dir_all(state.join("checkpoints"));
}

/// A turn that rewrote `UNDO_FILES` files of 4 KiB, sealed: its manifest and store.
fn turn_of_a_thousand(
    s: &Setup,
    runtime: &tokio::runtime::Runtime,
) -> (checkpoint::Manifest, PathBuf) {
    clean(&s.state);
    let ctx = s.ctx(true);
    for i in 0..UNDO_FILES {
        let args =
            json!({"path": format!("many/{}/f{i}.txt", i % 20), "content": "y".repeat(4096)});
        runtime.block_on(WriteFile.call(&ctx, &args)).unwrap();
    }
    let manifest = ctx.checkpoint.as_ref().unwrap().seal().unwrap().unwrap();
    let store = s.state.join(format!("checkpoints/bench/{}", s.n.get() - 1));
    (manifest, store)
}

fn bench_undo(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let s = setup();
    for i in 0..UNDO_FILES {
        let dir = s.root.join(format!("many/{}", i % 20));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.txt")), "x".repeat(4096)).unwrap();
    }
    let undo = |(manifest, store): (checkpoint::Manifest, PathBuf)| {
        let survey = checkpoint::survey(&manifest, &s.ctx.fence);
        assert!(survey.first_changed().is_none());
        let changes = checkpoint::restore(&manifest, &store, false).unwrap();
        assert_eq!(changes.len(), UNDO_FILES);
    };
    let mut samples = Vec::new();
    for _ in 0..20 {
        let turn = turn_of_a_thousand(&s, &runtime);
        let at = Instant::now();
        undo(turn);
        samples.push(at.elapsed());
    }
    let (p50, p99) = percentiles(&mut samples);
    println!("undo of {UNDO_FILES} files (survey + restore): p50 {p50:?}, p99 {p99:?}");
    let mut group = c.benchmark_group("undo");
    group.sample_size(10);
    group.bench_function("undo 1,000 files", |b| {
        b.iter_batched(
            || turn_of_a_thousand(&s, &runtime),
            undo,
            BatchSize::PerIteration,
        )
    });
    group.finish();
    clean(&s.state);
}

criterion_group!(benches, bench_writes, bench_undo);
criterion_main!(benches);
