//! The in-memory grant views against the records: after any sequence of appends, card answers,
//! spends and revocations, and across reopening, each session's cached view is exactly what the
//! grant records and their cards say; every decision taken on a view reads back (its grants
//! filled in from the grant set it names) with exactly the grants it saw, and replays the same;
//! and a ledger written before grants were indexed by session opens with every grant in its
//! session's view.

use codaris_ledger::{
    Backing, CardAnswer, CardRecord, DecisionRecord, GrantLease, GrantView, Ledger,
};
use codaris_policy::{Capability, CapabilityName, Grant, Lifetime, Request, Task};
use pretty_assertions::assert_eq;
use proptest::prelude::*;

const SESSIONS: [&str; 3] = ["s1", "s2", "s10"];
const PROGRAMS: [&str; 3] = ["p0", "p1", "p2"];

#[derive(Debug, Clone)]
enum Op {
    /// A card asked in a session (offering every program).
    Ask(usize),
    /// The answer to the n-th card asked: 0 once, 1 session, 2 every program, 3 deny, 4 lapse.
    Answer(usize, u8),
    /// A grant appended on its own, naming the n-th card (or a card that does not exist), as
    /// an older build or a forger leaves one: it stands only if that card's answer gives it.
    Loose(usize, usize, Option<usize>),
    Consume(usize),
    Revoke(usize),
    /// Reads a session's view under a lease of it, so later changes meet a loaded view.
    View(usize),
    /// Drops a session's lease (its session ended), so later changes meet no kept view.
    Forget(usize),
    /// Unloads a session's kept view, so the next read loads it from disk under the lease.
    Unload(usize),
    /// A decision taken on a session's view, with a standing grant before the view's, as the
    /// daemon builds its requests.
    Decide(usize),
    /// A decision taken on the view a session's last `View` or `Decide` read, whatever changed
    /// since (a call that read its view just before another call's grant was spent): it names
    /// the grants of that view, not the session's grants now.
    DecideOnEarlier(usize),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..SESSIONS.len()).prop_map(Op::Ask),
        3 => (0..8usize, 0..5u8).prop_map(|(c, a)| Op::Answer(c, a)),
        2 => (0..SESSIONS.len(), 0..PROGRAMS.len(), proptest::option::of(0..8usize))
            .prop_map(|(s, p, c)| Op::Loose(s, p, c)),
        2 => (0..16usize).prop_map(Op::Consume),
        1 => (0..16usize).prop_map(Op::Revoke),
        2 => (0..SESSIONS.len()).prop_map(Op::View),
        1 => (0..SESSIONS.len()).prop_map(Op::Forget),
        1 => (0..SESSIONS.len()).prop_map(Op::Unload),
        3 => (0..SESSIONS.len()).prop_map(Op::Decide),
        2 => (0..SESSIONS.len()).prop_map(Op::DecideOnEarlier),
        1 => Just(Op::Reopen),
    ]
}

fn program(name: &str, lifetime: Lifetime) -> Grant {
    Grant::new(CapabilityName::RunProgram, Some(name), lifetime)
}

/// The view rebuilt from every record (the whole grants tree, not the session index), as the
/// ledger computed it before views were kept in memory.
fn rebuilt(ledger: &Ledger, session: &str) -> (Vec<Grant>, Vec<String>) {
    let (records, _) = ledger.grants(None).unwrap();
    let mut grants = Vec::new();
    let mut set_aside = Vec::new();
    for record in records
        .into_iter()
        .filter(|r| r.session_id == session && r.is_active())
    {
        if ledger.grant_stands(&record).unwrap() {
            grants.push(record.grant);
        } else {
            set_aside.push(record.id);
        }
    }
    (grants, set_aside)
}

fn parts(view: &GrantView) -> (Vec<Grant>, Vec<String>) {
    (view.grants.clone(), view.set_aside.clone())
}

fn check_all(ledger: &Ledger) {
    for session in SESSIONS {
        assert_eq!(
            parts(&ledger.grant_view(session).unwrap()),
            rebuilt(ledger, session),
            "session {session}"
        );
    }
}

fn run(ops: Vec<Op>) {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    let mut ledger = Ledger::open(&path).unwrap();
    let mut cards: Vec<String> = Vec::new();
    let mut grant_ids: Vec<String> = Vec::new();
    let mut decided: Vec<DecisionRecord> = Vec::new();
    let mut earlier: std::collections::HashMap<usize, std::sync::Arc<GrantView>> =
        std::collections::HashMap::new();
    let mut leases: std::collections::HashMap<usize, GrantLease> = std::collections::HashMap::new();
    for op in ops {
        match op {
            Op::Ask(s) => {
                let id = format!("c{}", cards.len());
                ledger
                    .append_card(&CardRecord::asked(
                        id.clone(),
                        SESSIONS[s].to_owned(),
                        Some(Capability::new(
                            CapabilityName::RunProgram,
                            Some(PROGRAMS[0].to_owned()),
                        )),
                        "run programs".to_owned(),
                        PROGRAMS.iter().map(|p| (*p).to_owned()).collect(),
                        1,
                    ))
                    .unwrap();
                cards.push(id);
            }
            Op::Answer(c, answer) => {
                let Some(card) = cards.get(c) else { continue };
                let (answer, grants) = match answer {
                    0 => (CardAnswer::AllowOnce, vec![program("p0", Lifetime::Once)]),
                    1 => (
                        CardAnswer::AllowSession,
                        vec![program("p0", Lifetime::Session)],
                    ),
                    2 => (
                        CardAnswer::AllowPrograms,
                        PROGRAMS
                            .iter()
                            .map(|p| program(p, Lifetime::Session))
                            .collect(),
                    ),
                    3 => (CardAnswer::Deny, vec![program("p0", Lifetime::Deny)]),
                    _ => (CardAnswer::TimedOut, Vec::new()),
                };
                if let Some(records) = ledger.answer_card(card, answer, grants, 2).unwrap() {
                    grant_ids.extend(records.into_iter().map(|r| r.id));
                }
            }
            Op::Loose(s, p, c) => {
                let card_id = match c.and_then(|c| cards.get(c)) {
                    Some(card) => card.clone(),
                    None => "c-missing".to_owned(),
                };
                let record = ledger
                    .append_grant(
                        SESSIONS[s],
                        program(PROGRAMS[p], Lifetime::Session),
                        Backing::Card { card_id },
                        3,
                    )
                    .unwrap();
                grant_ids.push(record.id);
            }
            Op::Consume(g) => {
                if let Some(id) = grant_ids.get(g) {
                    ledger.consume_once(id, 4).unwrap();
                }
            }
            Op::Revoke(g) => {
                if let Some(id) = grant_ids.get(g) {
                    ledger.revoke(id, 5).unwrap();
                }
            }
            Op::View(s) => {
                leases
                    .entry(s)
                    .or_insert_with(|| ledger.lease_grant_view(SESSIONS[s]));
                earlier.insert(s, ledger.grant_view_shared(SESSIONS[s]).unwrap());
            }
            Op::Forget(s) => {
                leases.remove(&s);
            }
            Op::Unload(s) => ledger.forget_grant_view(SESSIONS[s]),
            Op::Decide(s) => {
                // As the daemon's live session decides: under a lease of its view.
                leases
                    .entry(s)
                    .or_insert_with(|| ledger.lease_grant_view(SESSIONS[s]));
                let view = ledger.grant_view_shared(SESSIONS[s]).unwrap();
                decided.push(decide(&ledger, s, &view));
                earlier.insert(s, view);
            }
            Op::DecideOnEarlier(s) => {
                if let Some(view) = earlier.get(&s) {
                    decided.push(decide(&ledger, s, view));
                }
            }
            Op::Reopen => {
                let before: Vec<_> = SESSIONS
                    .iter()
                    .map(|s| parts(&ledger.grant_view(s).unwrap()))
                    .collect();
                leases.clear();
                drop(ledger);
                ledger = Ledger::open(&path).unwrap();
                let after: Vec<_> = SESSIONS
                    .iter()
                    .map(|s| parts(&ledger.grant_view(s).unwrap()))
                    .collect();
                assert_eq!(before, after, "across a reopen");
            }
        }
    }
    check_all(&ledger);
    check_decisions(&ledger, &decided);
}

/// A decision of session `SESSIONS[s]` taken on `view` as the dispatcher takes one: the request
/// holds the standing grant, the view's grants follow it, and the ledger is handed the view
/// instead of copies. Returned with all the grants it saw, as a read gives it back.
fn decide(ledger: &Ledger, s: usize, view: &std::sync::Arc<GrantView>) -> DecisionRecord {
    let mut request = Request {
        tool: codaris_policy::ToolId::parse("run_command"),
        args: serde_json::json!({"command": "p0 --all"}),
        task: Task::new("/w"),
        grants: vec![program("p9", Lifetime::Session).with_id("config:tools.command_allowlist=p9")],
        spec: None,
    };
    let mut full = request.clone();
    full.grants.extend(view.grants.iter().cloned());
    let decision = full.evaluate();
    let stored = ledger
        .append_decision_in_view(
            DecisionRecord::new(SESSIONS[s], request.clone(), decision, 6),
            view,
        )
        .unwrap();
    request.grants = full.grants;
    DecisionRecord { request, ..stored }
}

/// Every decision reads back as it was taken, with the grants it saw, and replays the same.
fn check_decisions(ledger: &Ledger, decided: &[DecisionRecord]) {
    let (read, corrupt) = ledger.decisions(None).unwrap();
    assert!(corrupt.is_empty(), "{corrupt:?}");
    let strip = |r: &DecisionRecord| (r.seq, r.request.clone(), r.decision.clone());
    assert_eq!(
        read.iter().map(strip).collect::<Vec<_>>(),
        decided.iter().map(strip).collect::<Vec<_>>()
    );
    let report = crate::support::audited(ledger);
    assert!(report.differences.is_empty(), "{:?}", report.differences);
    assert!(report.corrupt.is_empty(), "{:?}", report.corrupt);
    assert_eq!(report.decisions, decided.len());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn cached_grant_views_equal_the_records(ops in proptest::collection::vec(op(), 1..28)) {
        run(ops);
    }
}

#[test]
fn each_decision_names_the_grants_of_the_view_it_was_taken_on() {
    // How a decision names its view's grants is kept with the session's view: a change must
    // drop it, and a decision on a view read before the change names that view's grants.
    run(vec![
        Op::Ask(0),
        Op::Answer(0, 2),
        Op::Decide(0),
        Op::Revoke(0),
        Op::Decide(0),
        Op::Revoke(1),
        Op::DecideOnEarlier(0),
        Op::Decide(0),
        Op::DecideOnEarlier(0),
        Op::Ask(0),
        Op::Answer(1, 1),
        Op::DecideOnEarlier(0),
        Op::Decide(0),
    ]);
}

#[test]
fn a_loose_grant_stands_once_the_card_that_offered_its_program_is_answered() {
    // The view is loaded while the grant is set aside; the card's answer must let it stand.
    run(vec![
        Op::Ask(0),
        Op::Loose(0, 2, Some(0)),
        Op::View(0),
        Op::Answer(0, 2),
        Op::View(0),
        Op::Consume(0),
        Op::Revoke(1),
        Op::Reopen,
    ]);
}

#[test]
fn a_ledger_without_the_session_index_is_indexed_at_open() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    let expected: Vec<_> = {
        let ledger = Ledger::open(&path).unwrap();
        for (i, session) in SESSIONS.iter().enumerate() {
            ledger
                .append_card(&CardRecord::asked(
                    format!("c{i}"),
                    (*session).to_owned(),
                    Some(Capability::new(
                        CapabilityName::RunProgram,
                        Some("p0".to_owned()),
                    )),
                    "run".to_owned(),
                    Vec::new(),
                    1,
                ))
                .unwrap();
            ledger
                .answer_card(
                    &format!("c{i}"),
                    CardAnswer::AllowSession,
                    vec![program("p0", Lifetime::Session)],
                    2,
                )
                .unwrap()
                .unwrap();
        }
        SESSIONS
            .iter()
            .map(|s| parts(&ledger.grant_view(s).unwrap()))
            .collect()
    };
    // Reopened once, the journal is folded into sled; then the index is taken away, as a
    // ledger written by a build before it looks.
    drop(Ledger::open(&path).unwrap());
    std::thread::sleep(std::time::Duration::from_millis(200));
    {
        let db = sled::open(&path).unwrap();
        assert!(db.drop_tree("grants_by_session").unwrap());
        db.flush().unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let ledger = Ledger::open(&path).unwrap();
    let got: Vec<_> = SESSIONS
        .iter()
        .map(|s| parts(&ledger.grant_view(s).unwrap()))
        .collect();
    assert_eq!(got, expected);
    assert!(got.iter().all(|(grants, _)| grants.len() == 1));
    for session in SESSIONS {
        let (records, _) = ledger.grants(Some(session)).unwrap();
        assert_eq!(records.len(), 1, "{session}");
    }
}

#[test]
fn a_view_is_kept_while_a_lease_of_its_session_lives_and_goes_with_the_last() {
    let temp = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(&temp.path().join("ledger")).unwrap();
    // Read without a lease: from disk, nothing kept.
    ledger.grant_view_shared("s1").unwrap();
    assert_eq!(ledger.grant_views_kept(), 0);
    let first = ledger.lease_grant_view("s1");
    // A session ended while its next one (the same id, resumed) already holds a lease.
    let second = ledger.lease_grant_view("s1");
    let other = ledger.lease_grant_view("s2");
    let view = ledger.grant_view_shared("s1").unwrap();
    assert!(std::sync::Arc::ptr_eq(
        &view,
        &ledger.grant_view_shared("s1").unwrap()
    ));
    assert_eq!(ledger.grant_views_kept(), 2);
    drop(first);
    assert_eq!(ledger.grant_views_kept(), 2);
    drop(second);
    assert_eq!(ledger.grant_views_kept(), 1);
    drop(other);
    assert_eq!(ledger.grant_views_kept(), 0);
}
