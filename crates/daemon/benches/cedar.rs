//! The daemon's real policy path against Cedar's `is_authorized` on an equivalent policy set,
//! at 10 and at 10,000 grants (issue #13: the daemon's path at least 4× faster at both).
//!
//! The call: a `write` outside the task's roots, under `accept_edits`, to a file beneath one of
//! the session's `mutate_outside_fence` grants (the middle one), so the fence must find a grant
//! and the decision is `allowed_by_grant`. The task protects two paths.
//!
//! What each side does per call, all timed one by one and interleaved in the same loop so the
//! machine's load falls on every side alike:
//!
//! - **daemon, in memory**: what `Dispatcher::decide` runs per call between resolving the paths
//!   and the durable append — the session's view read from the ledger's cache
//!   (`Ledger::grant_view_shared`), the request built (it carries the standing grants; the
//!   view's are named by their grant set), the grant set the dispatcher keeps for that view
//!   looked up (built again only when the session's grants changed), and
//!   `Request::evaluate_with`. This is the fair counterpart of `is_authorized`: both take a
//!   decided set of rules and an already resolved request and answer allow or deny, with no I/O.
//!   The symlink resolution before it (system calls on the call's paths) and the `fdatasync`
//!   after it are not policy, and Cedar would need the first too. It mirrors the loop body of
//!   `Dispatcher::recorded` line for line; if that changes, this must follow.
//! - **daemon, kept set**: `evaluate` alone against that grant set, as the policy crate's own
//!   bench measures it.
//! - **daemon, whole decide**: `Dispatcher::decide` itself, the durable append included.
//! - **Cedar**: `Authorizer::is_authorized` on a policy set holding one `permit` per grant
//!   (`principal == Session::"s-own"`, the grant's capability as the action, `resource in` the
//!   grant's path) and one `forbid` per protected path, with the call's path and its ancestors
//!   as `Path` entities (a grant covers everything beneath its path, which is Cedar's `in`).
//!   The request and the entities are built outside the timed region, so the reference is
//!   `is_authorized` alone: the comparison is the strictest for the daemon. Building them per
//!   call is printed beside it.
//!
//! Both sides are checked to answer the same (allow) before anything is timed. Run with
//! `cargo bench -p codaris-daemon --features cedar-bench --bench cedar` (Cedar is an optional
//! dependency behind that feature; see `Cargo.toml` for why it is not a dev-dependency).

#![expect(clippy::unwrap_used, reason = "benchmark set-up")]

use codaris_test_support::bench::percentiles;
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cedar_policy::{
    Authorizer, Context, Decision as CedarDecision, Entities, Entity, EntityId, EntityTypeName,
    EntityUid, PolicySet, Request as CedarRequest,
};
use codaris_daemon::calls::dispatch::{Dispatcher, SessionCall};
use codaris_ledger::{CardAnswer, CardRecord, GrantView, Ledger};
use codaris_policy::{
    Call, Capability, CapabilityName, Code, Grant, GrantSet, Lifetime, PermissionMode, Request,
    Task, evaluate,
};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

const SESSION: &str = "s-own";
/// Threads recording the grants: the ledger's group commit puts their appends in one
/// `fdatasync`, so 10,000 cards and answers are set up in seconds rather than minutes.
const WRITERS: usize = 16;

/// The scope of grant `k`: spread over 97 directories, as a long session's grants would be.
fn grant_path(root: &Path, k: usize) -> String {
    format!("{}/data/{}/run-{k}", root.display(), k % 97)
}

/// Records `count` `mutate_outside_fence` grants for the session, each answered on its own
/// card as the daemon records an `allow_session` answer.
fn give(ledger: &Arc<Ledger>, root: &Path, count: usize) {
    std::thread::scope(|scope| {
        for writer in 0..WRITERS {
            scope.spawn(move || {
                for k in (writer..count).step_by(WRITERS) {
                    let path = grant_path(root, k);
                    let card_id = format!("c{k:06}");
                    ledger
                        .append_card(&CardRecord::asked(
                            card_id.clone(),
                            SESSION.to_owned(),
                            Some(Capability::new(
                                CapabilityName::MutateOutsideFence,
                                Some(path.clone()),
                            )),
                            "write outside".to_owned(),
                            Vec::new(),
                            1,
                        ))
                        .unwrap();
                    let grant = Grant::new(
                        CapabilityName::MutateOutsideFence,
                        Some(&path),
                        Lifetime::Session,
                    );
                    ledger
                        .answer_card(&card_id, CardAnswer::AllowSession, vec![grant], 2)
                        .unwrap()
                        .unwrap();
                }
            });
        }
    });
}

fn task(root: &Path) -> Task {
    let mut task = Task::new(root.join("proj").display().to_string());
    task.permission_mode = PermissionMode::AcceptEdits;
    task.protected = protected(root);
    task
}

fn protected(root: &Path) -> Vec<String> {
    vec![
        root.join("state/ledger").display().to_string(),
        root.join("state/config.toml").display().to_string(),
    ]
}

fn uid(kind: &str, id: &str) -> EntityUid {
    EntityUid::from_type_name_and_id(EntityTypeName::from_str(kind).unwrap(), EntityId::new(id))
}

/// The same grants and protections as Cedar policies.
fn cedar_policies(root: &Path, grants: usize) -> PolicySet {
    let mut text = String::new();
    for k in 0..grants {
        text.push_str(&format!(
            "permit(principal == Session::{SESSION:?}, action == Action::\"mutate_outside_fence\", resource in Path::{:?});\n",
            grant_path(root, k)
        ));
    }
    for path in protected(root) {
        text.push_str(&format!(
            "forbid(principal, action, resource in Path::{path:?});\n"
        ));
    }
    PolicySet::from_str(&text).unwrap()
}

/// The call's path and each of its ancestors, each the parent of the one below: what `in`
/// walks, as the policy crate's trie walks the path's components.
fn cedar_entities(target: &str) -> Entities {
    let mut entities = Vec::new();
    let mut path = target;
    loop {
        let parent = match path.rfind('/') {
            Some(0) if path.len() > 1 => Some("/"),
            Some(0) | None => None,
            Some(at) => Some(&path[..at]),
        };
        let parents = parent.map(|p| uid("Path", p)).into_iter().collect();
        entities.push(Entity::new_no_attrs(uid("Path", path), parents));
        match parent {
            Some(p) => path = p,
            None => break,
        }
    }
    Entities::from_entities(entities, None).unwrap()
}

fn cedar_request(target: &str) -> CedarRequest {
    CedarRequest::new(
        uid("Session", SESSION),
        uid("Action", "mutate_outside_fence"),
        uid("Path", target),
        Context::empty(),
        None,
    )
    .unwrap()
}

/// What the dispatcher keeps per session between calls: the view its grant set was built
/// from, and the set (rebuilt when the ledger hands out a new view).
#[derive(Default)]
struct Kept(Mutex<Option<(Arc<GrantView>, Arc<GrantSet>)>>);

/// The loop body of `Dispatcher::recorded` between path resolution and the append.
fn daemon_in_memory(ledger: &Ledger, kept: &Kept, tool: &str, args: &Value, task: &Task) -> Code {
    let view = ledger.grant_view_shared(SESSION).unwrap();
    // The request carries the standing grants (none here); the view's are named by their set.
    let request = Request {
        tool: codaris_policy::ToolId::parse(tool),
        args: args.clone(),
        task: task.clone(),
        grants: Vec::new(),
        spec: None,
        marks: None,
    };
    let set = {
        let mut kept = kept.0.lock().unwrap();
        match &*kept {
            Some((seen, set)) if Arc::ptr_eq(seen, &view) => set.clone(),
            _ => {
                let set = Arc::new(GrantSet::from_grants(view.grants.iter().cloned()));
                *kept = Some((view.clone(), set.clone()));
                set
            }
        }
    };
    request.evaluate_with(&set).code
}

fn policy_vs_cedar(c: &mut Criterion) {
    let authorizer = Authorizer::new();
    for (grants, samples_per_side) in [(10, 3_000), (10_000, 200)] {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("proj")).unwrap();
        let ledger = Arc::new(Ledger::open(&root.join("ledger")).unwrap());
        let set_up = Instant::now();
        give(&ledger, &root, grants);
        let set_up = set_up.elapsed();

        let target = format!("{}/deep/out.txt", grant_path(&root, grants / 2));
        let args = json!({"path": target, "content": "x"});
        let task = task(&root);
        let dispatcher = Dispatcher::new(ledger.clone()).for_session();
        // As the daemon's live session does: its view is kept while the session lives.
        let _lease = ledger.lease_grant_view(SESSION);
        let call = |i: usize| SessionCall {
            session_id: SESSION.into(),
            call_id: format!("call{i}").into(),
            tool: codaris_policy::ToolId::parse("write"),
            args: args.clone(),
            task: task.clone(),
            cwd: None,
            spec: None,
            marks: None,
        };
        let kept = ledger.grant_view_shared(SESSION).unwrap().grant_set();
        let kept_view = Kept::default();
        let policies = cedar_policies(&root, grants);
        let entities = cedar_entities(&target);
        let request = cedar_request(&target);

        // Both sides answer the same before anything is timed; the first decide also fills
        // the view the daemon keeps between calls.
        let first = dispatcher.decide(call(0)).unwrap().into_record();
        assert_eq!(first.decision.code, Code::AllowedByGrant);
        assert_eq!(
            daemon_in_memory(&ledger, &kept_view, "write", &args, &task),
            Code::AllowedByGrant
        );
        let call_ref = Call {
            tool: "write",
            args: &args,
            spec: None,
            marks: None,
        };
        assert_eq!(evaluate(&call_ref, &kept, &task).code, Code::AllowedByGrant);
        let response = authorizer.is_authorized(&request, &policies, &entities);
        assert_eq!(response.decision(), CedarDecision::Allow);
        // And a call outside every grant is refused by both (Cedar: denied by default).
        let outside = format!("{}/elsewhere/x", root.display());
        let denied = authorizer.is_authorized(
            &cedar_request(&outside),
            &policies,
            &cedar_entities(&outside),
        );
        assert_eq!(denied.decision(), CedarDecision::Deny);
        assert_eq!(
            daemon_in_memory(
                &ledger,
                &kept_view,
                "write",
                &json!({"path": outside, "content": "x"}),
                &task
            ),
            Code::MutateOutsideFence
        );

        let mut in_memory = Vec::with_capacity(samples_per_side);
        let mut kept_set = Vec::with_capacity(samples_per_side);
        let mut decide = Vec::with_capacity(samples_per_side);
        let mut cedar = Vec::with_capacity(samples_per_side);
        let mut cedar_built = Vec::with_capacity(samples_per_side);
        for i in 0..samples_per_side {
            let started = Instant::now();
            std::hint::black_box(daemon_in_memory(&ledger, &kept_view, "write", &args, &task));
            in_memory.push(started.elapsed());

            let started = Instant::now();
            std::hint::black_box(evaluate(
                std::hint::black_box(&call_ref),
                std::hint::black_box(&kept),
                std::hint::black_box(&task),
            ));
            kept_set.push(started.elapsed());

            let started = Instant::now();
            std::hint::black_box(authorizer.is_authorized(
                std::hint::black_box(&request),
                std::hint::black_box(&policies),
                std::hint::black_box(&entities),
            ));
            cedar.push(started.elapsed());

            let started = Instant::now();
            let built_entities = cedar_entities(&target);
            let built_request = cedar_request(&target);
            std::hint::black_box(authorizer.is_authorized(
                &built_request,
                &policies,
                &built_entities,
            ));
            cedar_built.push(started.elapsed());

            // The whole decide writes a record each time: fewer of them keep the ledger small.
            if i % 4 == 0 {
                let call = call(i + 1);
                let started = Instant::now();
                std::hint::black_box(dispatcher.decide(call).unwrap());
                decide.push(started.elapsed());
            }
        }
        let (cedar50, cedar99) = percentiles(&mut cedar);
        println!(
            "policy vs cedar, {grants} grants (set up in {set_up:.1?}), n={samples_per_side} each:"
        );
        let line = |label: &str, samples: &mut Vec<Duration>| {
            let (p50, p99) = percentiles(samples);
            println!(
                "  {label:<40} p50={p50:>10.1?} p99={p99:>10.1?}  cedar/this p50 {:>6.2}×  p99 {:>6.2}×",
                cedar50.as_secs_f64() / p50.as_secs_f64(),
                cedar99.as_secs_f64() / p99.as_secs_f64(),
            );
        };
        line("daemon in memory (view, request, eval)", &mut in_memory);
        line("daemon evaluate on a kept GrantSet", &mut kept_set);
        line("daemon whole decide (with fdatasync)", &mut decide);
        line("cedar is_authorized (reference)", &mut cedar);
        line("cedar entities + request + is_authorized", &mut cedar_built);

        let mut group = c.benchmark_group(format!("policy vs cedar/{grants} grants"));
        group.bench_function("daemon in memory", |b| {
            b.iter(|| daemon_in_memory(&ledger, &kept_view, "write", &args, &task));
        });
        group.bench_function("cedar is_authorized", |b| {
            b.iter(|| authorizer.is_authorized(&request, &policies, &entities));
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = policy_vs_cedar
}
criterion_main!(benches);
