use std::sync::Arc;

use codaris_ledger::{Backing, CardAnswer, CardRecord, Ledger, LedgerError};
use codaris_policy::{CapabilityName, Grant, Lifetime};
use pretty_assertions::assert_eq;

use crate::support::{answered_grant, ledger};

fn once(path: &str) -> Grant {
    Grant::new(
        CapabilityName::MutateOutsideFence,
        Some(path),
        Lifetime::Once,
    )
}

#[test]
fn grants_survive_reopening_whole() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    let written = {
        let ledger = Ledger::open(&path).unwrap();
        ledger
            .append_grant(
                "s1",
                once("/tmp/out"),
                Backing::Card {
                    card_id: "c1".to_owned(),
                },
                42,
            )
            .unwrap()
    };
    let ledger = Ledger::open(&path).unwrap();
    assert_eq!(ledger.grant(&written.id).unwrap(), written);
    assert_eq!(written.grant.id.as_deref(), Some(written.id.as_str()));
    assert_eq!(written.card_id.as_deref(), Some("c1"));
}

#[test]
fn a_second_open_while_held_is_locked() {
    let (temp, _held) = ledger();
    match Ledger::open(&temp.path().join("ledger")) {
        Err(LedgerError::Locked { .. }) => {}
        other => panic!("expected Locked, got {other:?}"),
    }
}

#[test]
fn a_once_grant_is_consumed_exactly_once_under_racing_calls() {
    let (_temp, ledger) = ledger();
    let ledger = Arc::new(ledger);
    for round in 0..20 {
        let grant = ledger
            .append_grant(
                "s1",
                once(&format!("/tmp/{round}")),
                Backing::Card {
                    card_id: "c1".to_owned(),
                },
                1,
            )
            .unwrap();
        let winners: usize = (0..8)
            .map(|_| {
                let ledger = ledger.clone();
                let id = grant.id.clone();
                std::thread::spawn(move || ledger.consume_once(&id, 2).unwrap())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| usize::from(t.join().unwrap()))
            .sum();
        assert_eq!(winners, 1, "round {round}");
        assert!(!ledger.grant(&grant.id).unwrap().is_active());
    }
}

#[test]
fn session_grants_are_not_consumed_and_views_are_per_session() {
    let (_temp, ledger) = ledger();
    let session = Grant::new(
        CapabilityName::MutateOutsideFence,
        Some("/data"),
        Lifetime::Session,
    );
    let kept = answered_grant(&ledger, "s1", "c1", session, CardAnswer::AllowSession);
    assert!(!ledger.consume_once(&kept.id, 2).unwrap());
    let spent = answered_grant(&ledger, "s1", "c2", once("/x"), CardAnswer::AllowOnce);
    assert!(ledger.consume_once(&spent.id, 2).unwrap());
    answered_grant(&ledger, "s2", "c3", once("/other"), CardAnswer::AllowOnce);

    let view = ledger.grant_view("s1").unwrap();
    assert_eq!(view.grants, vec![kept.grant.clone()]);
    assert!(view.corrupt.is_empty());
    assert_eq!(ledger.grant_view("s2").unwrap().grants.len(), 1);
}

#[test]
fn a_grant_whose_card_was_never_answered_grants_nothing() {
    let (_temp, ledger) = ledger();
    // What a disk filling between a grant's write and its card's answer once left behind.
    let orphan = ledger
        .append_grant(
            "s1",
            once("/x"),
            Backing::Card {
                card_id: "c-never".to_owned(),
            },
            1,
        )
        .unwrap();
    let view = ledger.grant_view("s1").unwrap();
    assert_eq!(view.grants, Vec::new());
    assert_eq!(view.set_aside, vec![orphan.id]);
}

#[test]
fn a_cards_answer_and_its_grants_are_durable_together() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    let ids = {
        let ledger = Ledger::open(&path).unwrap();
        ledger
            .append_card(&CardRecord::asked(
                "c1".to_owned(),
                "s1".to_owned(),
                Some(codaris_policy::Capability::new(
                    CapabilityName::MutateOutsideFence,
                    Some("/x".to_owned()),
                )),
                "write outside".to_owned(),
                Vec::new(),
                1,
            ))
            .unwrap();
        let records = ledger
            .answer_card("c1", CardAnswer::AllowOnce, vec![once("/x")], 2)
            .unwrap()
            .unwrap();
        assert_eq!(
            ledger
                .answer_card("c1", CardAnswer::Deny, Vec::new(), 3)
                .unwrap(),
            None,
            "the first answer wins"
        );
        records.into_iter().map(|r| r.id).collect::<Vec<_>>()
    };
    let ledger = Ledger::open(&path).unwrap();
    let view = ledger.grant_view("s1").unwrap();
    assert_eq!(
        view.grants.iter().map(|g| g.id.clone()).collect::<Vec<_>>(),
        ids.iter().cloned().map(Some).collect::<Vec<_>>()
    );
    let (cards, _) = ledger.cards(Some("s1")).unwrap();
    assert_eq!(
        cards[0].grant_id.as_deref(),
        ids.first().map(String::as_str)
    );
    assert!(crate::support::audited(&ledger).is_clean());
}

#[test]
fn revoked_grants_leave_the_view() {
    let (_temp, ledger) = ledger();
    let grant = ledger
        .append_grant(
            "s1",
            once("/x"),
            Backing::Card {
                card_id: "c1".to_owned(),
            },
            1,
        )
        .unwrap();
    let revoked = ledger.revoke(&grant.id, 5).unwrap();
    assert_eq!(revoked.revoked_at_ms, Some(5));
    assert_eq!(ledger.revoke(&grant.id, 9).unwrap().revoked_at_ms, Some(5));
    assert!(ledger.grant_view("s1").unwrap().grants.is_empty());
    assert!(matches!(
        ledger.revoke("g404", 1),
        Err(LedgerError::GrantNotFound { .. })
    ));
}

#[test]
fn cards_take_the_first_answer_only() {
    let (_temp, ledger) = ledger();
    let card = CardRecord::asked(
        "c1".to_owned(),
        "s1".to_owned(),
        None,
        "write `/etc/x` outside the allowed folders".to_owned(),
        Vec::new(),
        1,
    );
    ledger.append_card(&card).unwrap();
    assert!(
        ledger
            .answer_card("c1", CardAnswer::Deny, Vec::new(), 2)
            .unwrap()
            .is_some()
    );
    assert_eq!(
        ledger
            .answer_card("c1", CardAnswer::AllowSession, vec![once("/etc/x")], 3)
            .unwrap(),
        None
    );
    let (cards, corrupt) = ledger.cards(None).unwrap();
    assert!(corrupt.is_empty());
    assert_eq!(cards[0].answer, Some(CardAnswer::Deny));
    assert_eq!(cards[0].grant_id, None);
}

#[test]
fn an_unreadable_grant_is_reported_and_grants_nothing() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    {
        let db = sled::open(&path).unwrap();
        let grants = db.open_tree("grants").unwrap();
        grants
            .insert("g000000000001", &b"{\"schema\": 1, \"grant\": tru"[..])
            .unwrap();
        grants
            .insert(
                "g000000000002",
                serde_json::to_vec(&serde_json::json!({"schema": 99, "session_id": "s1"})).unwrap(),
            )
            .unwrap();
        db.flush().unwrap();
    }
    let ledger = Ledger::open(&path).unwrap();
    let view = ledger.grant_view("s1").unwrap();
    assert!(view.grants.is_empty(), "a corrupt grant never allows");
    assert_eq!(view.corrupt.len(), 2);
    assert!(
        view.corrupt[1].reason.contains("schema 99"),
        "{:?}",
        view.corrupt
    );
    assert!(matches!(
        ledger.grant("g000000000001"),
        Err(LedgerError::Corrupt(_))
    ));
}

#[test]
fn the_journal_is_replayed_a_torn_tail_dropped_and_a_bad_line_reported() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    let written = one_grant(&path);
    // A crash mid-append leaves a line without its newline; a damaged line is complete garbage.
    let journal = temp.path().join("ledger.journal");
    let mut text = std::fs::read(&journal).unwrap();
    text.extend_from_slice(
        b"{\"type\": \"grant\", \"schema\": 1, \"id\": \"x\"}\n{\"type\": \"gra",
    );
    std::fs::write(&journal, text).unwrap();
    let ledger = Ledger::open(&path).unwrap();
    assert_eq!(ledger.grant(&written.id).unwrap(), written);
    let (grants, corrupt) = ledger.grants(None).unwrap();
    assert_eq!(grants, vec![written]);
    assert_eq!(corrupt.len(), 1, "{corrupt:?}");
    assert!(corrupt[0].place.starts_with("journal byte"), "{corrupt:?}");
    assert_eq!(
        std::fs::metadata(&journal).unwrap().len(),
        0,
        "folded into sled and emptied"
    );
}

#[test]
fn a_snapshot_torn_by_a_crash_does_not_keep_the_ledger_shut() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    let written = {
        let ledger = Ledger::open(&path).unwrap();
        ledger
            .append_grant(
                "s1",
                once("/tmp/out"),
                Backing::Card {
                    card_id: "c1".to_owned(),
                },
                42,
            )
            .unwrap()
    };
    // What a SIGKILL in the middle of sled writing a snapshot leaves: a `.generating` file that
    // sorts after every whole snapshot and whose checksum does not match.
    let torn = path.join("snap.FFFFFFFFFFFFFFFF.generating");
    std::fs::write(&torn, b"half a snapshot, no checksum").unwrap();
    let ledger = Ledger::open(&path).unwrap();
    assert_eq!(ledger.grant(&written.id).unwrap(), written);
    assert!(!torn.exists());
}

#[test]
fn a_torn_tail_is_cut_at_open_so_the_next_append_stands_alone() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    drop(Ledger::open(&path).unwrap());
    // A crash mid-append left only the start of a line, and no whole line before it.
    let journal = temp.path().join("ledger.journal");
    std::fs::write(&journal, b"{\"type\":\"grant\",\"schema\":1,\"id\":\"g0").unwrap();
    let written = {
        let ledger = Ledger::open(&path).unwrap();
        assert_eq!(std::fs::metadata(&journal).unwrap().len(), 0);
        grant_kept(&ledger)
    };
    let ledger = Ledger::open(&path).unwrap();
    let (grants, corrupt) = ledger.grants(None).unwrap();
    assert_eq!(corrupt, Vec::new());
    assert_eq!(grants, vec![written]);
}

#[test]
fn a_line_glued_to_torn_remains_is_recovered_and_the_remains_reported() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    let written = one_grant(&path);
    // What a journal written before torn lines were cut holds after a failed append and its
    // successful retry: the torn start of the first, then the whole retry, on one line.
    let journal = temp.path().join("ledger.journal");
    let text = crate::support::journal_lines(&journal);
    let mut glued = text[..text.len() / 2].to_vec();
    glued.extend_from_slice(&text);
    std::fs::write(&journal, glued).unwrap();
    let ledger = Ledger::open(&path).unwrap();
    let (grants, corrupt) = ledger.grants(None).unwrap();
    assert_eq!(grants, vec![written]);
    assert_eq!(
        corrupt.len(),
        1,
        "the torn remains are reported: {corrupt:?}"
    );
    let (lines, corrupt) = ledger.export(None).unwrap();
    assert!(corrupt.is_empty(), "an export is never refused for them");
    assert!(
        lines
            .iter()
            .any(|l| matches!(l, codaris_ledger::ExportLine::Unreadable { .. }))
    );
}

/// A ledger at `path` holding one `once` grant for `/kept`, closed again; the grant.
fn one_grant(path: &std::path::Path) -> codaris_ledger::GrantRecord {
    grant_kept(&Ledger::open(path).unwrap())
}

/// Appends a `once` grant for `/kept` in session `s1`.
fn grant_kept(ledger: &Ledger) -> codaris_ledger::GrantRecord {
    ledger
        .append_grant(
            "s1",
            once("/kept"),
            Backing::Card {
                card_id: "c1".to_owned(),
            },
            1,
        )
        .unwrap()
}

/// An orderly stop folds the journal into the store: the next open replays nothing, and every
/// record appended, even while the fold ran, is there and replays.
#[test]
fn folding_the_journal_leaves_nothing_to_replay_and_loses_nothing() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    let journal = temp.path().join("ledger.journal");
    let ledger = Arc::new(Ledger::open(&path).unwrap());
    crate::support::backed_session(&ledger, "s1");
    assert!(std::fs::metadata(&journal).unwrap().len() > 0);
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let ledger = ledger.clone();
            std::thread::spawn(move || {
                for n in 0..25 {
                    let args = serde_json::json!({"path": format!("f{w}-{n}.txt")});
                    crate::support::record(
                        &ledger,
                        "s2",
                        crate::support::request(
                            "read_file",
                            args,
                            crate::support::task(codaris_policy::Activity::Agent),
                        ),
                    );
                }
            })
        })
        .collect();
    for _ in 0..5 {
        ledger.fold_journal().unwrap();
    }
    for writer in writers {
        writer.join().unwrap();
    }
    ledger.fold_journal().unwrap();
    assert_eq!(std::fs::metadata(&journal).unwrap().len(), 0);
    drop(ledger);
    let reopened = Ledger::open(&path).unwrap();
    let report = crate::support::audited(&reopened);
    assert!(report.is_clean(), "{report:#?}");
    assert_eq!(report.decisions, 8 + 100);
}
