//! `codaris audit replay`'s work per decision, with `codaris`'s allocator: a ledger of 10,000
//! and one of 100,000 decisions (issue #13: at most 5 µs per decision, linear), each decision
//! shaped as the daemon's dispatcher writes them (a call inside the project under
//! `accept_edits`, a standing allowlist grant inline, the session's ten card grants by grant
//! set), spread over 100 sessions and written by eight threads.
//!
//! Printed per ledger, the median of five runs: the read and replay (`Ledger::decisions` and
//! `replay`, the records freed after); the whole audit `codaris audit replay` runs on a ledger
//! (`Ledger::audit`, a batch of decisions at a time: replay, what backs every grant, the
//! chain); and, for reference, the same audit from all the evidence at once (`Ledger::evidence`
//! and `audit`, what an export's audit does). Run with
//! `cargo bench -p codaris-cli --bench replay`; see [`ledger`] for keeping the largest ledger.

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use std::sync::Arc;
use std::time::Instant;

use codaris_ledger::{DecisionRecord, Ledger};
use codaris_policy::{CapabilityName, Grant, Lifetime, PermissionMode, Request, Task};

/// The daemon benches' set-up of card grants, so both build the same ledgers.
#[path = "../../daemon/benches/grants/mod.rs"]
mod grants;
use grants::give;

/// The allocator `codaris` runs with (`src/main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SESSIONS: usize = 100;
const GRANTS_PER_SESSION: usize = 10;
const WRITERS: usize = 8;

fn request(project: &str, grants: &[Grant], n: usize) -> Request {
    let mut task = Task::new(project);
    task.permission_mode = PermissionMode::AcceptEdits;
    task.allowed_roots = vec![project.to_owned()];
    let (tool, args) = match n % 3 {
        0 => (
            "read_file",
            serde_json::json!({"path": format!("{project}/src/f{}.rs", n % 50)}),
        ),
        1 => (
            "write",
            serde_json::json!({"path": format!("{project}/out/{}.txt", n % 16), "content": "x"}),
        ),
        _ => ("run_command", serde_json::json!({"command": "cargo test"})),
    };
    Request {
        tool: codaris_policy::ToolId::parse(tool),
        args,
        task,
        grants: grants.to_vec(),
        spec: None,
    }
}

/// A ledger of `decisions` decisions over [`SESSIONS`] sessions of ten card grants each.
/// With `REPLAY_BENCH_KEEP` set to a directory, the largest ledger is written there as a state
/// directory's `ledger` (and kept), so `codaris audit replay` can be timed on it:
/// `CODARIS_STATE_DIR=<dir> codaris audit replay`.
fn ledger(decisions: usize, keep: bool) -> (tempfile::TempDir, Arc<Ledger>) {
    let temp = tempfile::tempdir().unwrap();
    let dir = match std::env::var_os("REPLAY_BENCH_KEEP") {
        Some(dir) if keep => std::path::PathBuf::from(dir),
        _ => temp.path().to_owned(),
    };
    let ledger = Arc::new(Ledger::open(&dir.join("ledger")).unwrap());
    let allowlist = Grant::new(CapabilityName::RunProgram, Some("cargo"), Lifetime::Session)
        .with_id("config:tools.command_allowlist=cargo");
    let mut cards = 0;
    let sessions: Vec<(String, Vec<Grant>)> = (0..SESSIONS)
        .map(|s| {
            let session = format!("s{s:05}");
            // One card answered with `allow_programs`, as the daemon records a program-wide
            // answer: ten grants, each backed by the card.
            give(&ledger, &session, GRANTS_PER_SESSION, &mut cards);
            let (records, corrupt) = ledger.grants(Some(&session)).unwrap();
            assert!(corrupt.is_empty(), "{corrupt:?}");
            let mut grants = vec![allowlist.clone()];
            grants.extend(records.into_iter().map(|record| record.grant));
            (session, grants)
        })
        .collect();
    let sessions = Arc::new(sessions);
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (ledger, sessions) = (ledger.clone(), sessions.clone());
            std::thread::spawn(move || {
                for n in (w..decisions).step_by(WRITERS) {
                    let (session, grants) = &sessions[n % SESSIONS];
                    let request = request("/home/me/proj", grants, n);
                    let decision = request.evaluate();
                    let record = DecisionRecord::new(session.clone(), request, decision, 1);
                    ledger.append_decision(record).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    (temp, ledger)
}

/// The median of five runs of `phase`, in µs per decision.
fn per_decision(phase: impl Fn() -> usize) -> f64 {
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let started = Instant::now();
            let decisions = phase();
            started.elapsed().as_secs_f64() * 1e6 / decisions as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[2]
}

fn main() {
    // `cargo test --benches` runs this too: one small ledger, to show the code still works.
    let sizes: &[usize] = if std::env::args().any(|a| a == "--bench") {
        &[10_000, 100_000]
    } else {
        &[1_000]
    };
    let mut figures = Vec::new();
    for &size in sizes {
        let started = Instant::now();
        let (_temp, ledger) = ledger(size, Some(&size) == sizes.last());
        println!(
            "{size} decisions over {SESSIONS} sessions, written in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let replay = per_decision(|| {
            let (records, corrupt) = ledger.decisions(None).unwrap();
            let report = codaris_ledger::replay(&records, &corrupt);
            assert!(report.is_clean(), "{report:?}");
            report.decisions
        });
        let audit = per_decision(|| {
            let report = ledger.audit().unwrap();
            assert!(report.is_clean(), "{report:?}");
            report.decisions
        });
        let whole = per_decision(|| {
            let report = codaris_ledger::audit(&ledger.evidence().unwrap());
            assert!(report.is_clean(), "{report:?}");
            report.decisions
        });
        println!(
            "  read and replay {replay:.2} µs per decision; the whole audit {audit:.2} µs per decision (from all the evidence at once: {whole:.2} µs)"
        );
        figures.push((size, replay, audit));
    }
    if let [
        (small, replay_small, audit_small),
        (large, replay_large, audit_large),
    ] = figures[..]
    {
        println!(
            "{large} ÷ {small} decisions, per decision: read and replay {:.2}×, the whole audit {:.2}×",
            replay_large / replay_small,
            audit_large / audit_small
        );
    }
}
