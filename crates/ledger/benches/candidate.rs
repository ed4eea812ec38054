//! Replay under a candidate configuration (`codaris audit replay --config`), per decision, at
//! 10,000 and 100,000 decisions (target: ≤ 10 µs per decision at 100,000, linear):
//! - `decide`: [`replay_under`] of records already read, the candidate's part alone;
//! - `read_and_decide`: reading every decision of a ledger of that many and deciding it under
//!   the candidate, what the command does from a state directory.
//!
//! The decisions are what the daemon records (standing allowlist grants first in each request,
//! a person's grant in half the sessions, the configuration's roots at the end of the task's):
//! commands in and out of the allowlist, reads inside and outside the roots, web requests. The
//! candidate narrows the command allowlist, drops the HTTP allowlist and widens the roots, so
//! a third of the decisions change and each change is grouped.
//!
//! Per decision is a whole run's time divided by its decisions, p50 and p99 over the runs.
//! The ledgers live in `/dev/shm` when there is one, as in `reads.rs`.

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use std::time::{Duration, Instant};

use codaris_ledger::{Backing, Candidate, DecisionRecord, Ledger, OperatorInputs, replay_under};
use codaris_policy::{CapabilityName, Grant, Lifetime, PermissionMode, Request, Task, ToolId};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const SESSIONS: usize = 100;

fn recorded_inputs() -> OperatorInputs {
    OperatorInputs {
        allowed_dirs: vec!["/data".to_owned()],
        http_allowlist: vec!["https://api.github.com".to_owned()],
        command_allowlist: vec!["cargo test".to_owned(), "git status".to_owned()],
        push_registries: Vec::new(),
        hooks: Vec::new(),
    }
}

fn candidate() -> Candidate {
    Candidate::new(OperatorInputs {
        allowed_dirs: vec!["/data".to_owned(), "/srv".to_owned()],
        http_allowlist: Vec::new(),
        command_allowlist: vec!["git status".to_owned()],
        push_registries: Vec::new(),
        hooks: Vec::new(),
    })
}

/// The `n`th decision as the daemon records it, in session `n % SESSIONS`; `person` are the
/// session's grants from cards.
fn decision(n: usize, person: &[Grant]) -> DecisionRecord {
    let inputs = recorded_inputs();
    let mut task = Task::new(format!("/w/p{}", n % SESSIONS));
    task.permission_mode = PermissionMode::AcceptEdits;
    task.allowed_roots
        .extend(inputs.allowed_dirs.iter().cloned());
    task.configured_roots = Some(inputs.allowed_dirs.len());
    let (tool, args) = match n % 6 {
        0 => (
            "run_command",
            json!({"command": format!("cargo test -p c{}", n % 7)}),
        ),
        1 => ("run_command", json!({"command": "git status"})),
        2 => (
            "read_file",
            json!({"path": format!("/data/set{}/a.csv", n % 13)}),
        ),
        3 => (
            "read_file",
            json!({"path": format!("/srv/x{}/b.csv", n % 11)}),
        ),
        4 => (
            "http_request",
            json!({"url": "https://api.github.com/repos"}),
        ),
        _ => (
            "write",
            json!({"path": format!("/w/p{}/out.txt", n % SESSIONS), "content": "x"}),
        ),
    };
    let mut grants = inputs.standing_grants();
    grants.extend(person.iter().cloned());
    let request = Request {
        tool: ToolId::parse(tool),
        args,
        task,
        grants,
        spec: None,
    };
    let decision = request.evaluate();
    DecisionRecord::new(format!("s{}", n % SESSIONS), request, decision, 1)
}

/// A person's grant in every other session: it stays in force under the candidate.
fn person_grant(session: usize) -> Option<Grant> {
    session.is_multiple_of(2).then(|| {
        Grant::new(CapabilityName::RunProgram, Some("cargo"), Lifetime::Session)
            .with_id(format!("g{session}"))
    })
}

fn records(count: usize) -> Vec<DecisionRecord> {
    (0..count)
        .map(|n| {
            let person: Vec<Grant> = person_grant(n % SESSIONS).into_iter().collect();
            let mut record = decision(n, &person);
            record.seq = n as u64;
            record
        })
        .collect()
}

fn temp() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

/// A ledger holding `count` such decisions, the persons' grants as grant records (the ledger
/// stores the standing grants inline and names the session's by their set).
fn filled(count: usize) -> (tempfile::TempDir, Ledger) {
    let dir = temp();
    let ledger = Ledger::open(&dir.path().join("ledger")).unwrap();
    let mut granted = vec![Vec::new(); SESSIONS];
    for (session, grants) in granted.iter_mut().enumerate() {
        if let Some(grant) = person_grant(session) {
            let record = ledger
                .append_grant(
                    &format!("s{session}"),
                    grant,
                    Backing::Card {
                        card_id: format!("c{session}"),
                    },
                    1,
                )
                .unwrap();
            grants.push(record.grant);
        }
    }
    for n in 0..count {
        let mut record = decision(n, &granted[n % SESSIONS]);
        record.seq = 0;
        ledger.append_decision(record).unwrap();
    }
    ledger.flush().unwrap();
    (dir, ledger)
}

fn samples(mut f: impl FnMut(), count: usize) -> Vec<Duration> {
    let mut taken: Vec<Duration> = (0..count)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    taken.sort();
    taken
}

fn p(sorted: &[Duration], per_mille: usize) -> Duration {
    sorted[(sorted.len() * per_mille / 1000).min(sorted.len() - 1)]
}

fn replay_under_candidate(c: &mut Criterion) {
    let candidate = candidate();
    let mut group = c.benchmark_group("replay_under_candidate");
    group.sample_size(10);
    for count in [10_000, 100_000] {
        let records = records(count);
        let changed = replay_under(&records, &[], &candidate).changed;
        assert!(
            changed > count / 5 && changed < count,
            "{changed} of {count}"
        );
        let decide = || {
            let report = replay_under(&records, &[], &candidate);
            assert_eq!(report.decisions, count);
        };
        group.bench_function(format!("decide_{count}"), |b| b.iter(decide));
        let taken = samples(decide, if count > 10_000 { 11 } else { 31 });
        let per = |d: Duration| d / u32::try_from(count).unwrap();
        println!(
            "replay under a candidate, {count} decisions ({changed} change): per decision p50 {:?} p99 {:?}",
            per(p(&taken, 500)),
            per(p(&taken, 990)),
        );

        let (_dir, ledger) = filled(count);
        let read_and_decide = || {
            let (records, corrupt) = ledger.decisions(None).unwrap();
            let report = replay_under(&records, &corrupt, &candidate);
            assert_eq!((report.decisions, report.changed), (count, changed));
        };
        group.bench_function(format!("read_and_decide_{count}"), |b| {
            b.iter(read_and_decide)
        });
        let taken = samples(read_and_decide, if count > 10_000 { 11 } else { 31 });
        println!(
            "read + replay under a candidate, {count} decisions: per decision p50 {:?} p99 {:?}",
            per(p(&taken, 500)),
            per(p(&taken, 990)),
        );
    }
    group.finish();
}

criterion_group!(benches, replay_under_candidate);
criterion_main!(benches);
