use super::*;
use pretty_assertions::assert_eq;

fn store() -> Result<(tempfile::TempDir, SessionStore), Box<dyn std::error::Error>> {
    let temp = tempfile::tempdir()?;
    let ledger = Arc::new(Ledger::open(&temp.path().join("ledger"))?);
    let store = SessionStore::open(ledger, &temp.path().join("sessions"))?;
    Ok((temp, store))
}

fn new_session() -> NewSession {
    NewSession {
        cwd: PathBuf::from("/w"),
        activity: Activity::Agent,
        permission_mode: PermissionMode::Ask,
        provider: ProviderChoice::Scripted,
        model: None,
        script: None,
        base_url: None,
        instructions: Vec::new(),
        child: None,
        reasoning: None,
        title: String::new(),
        additional_dirs: Vec::new(),
    }
}

#[test]
fn create_get_list_end() -> Result<(), Box<dyn std::error::Error>> {
    let (_temp, store) = store()?;
    let a = store.create(new_session())?;
    let b = store.create(new_session())?;
    assert!(a.workspace.is_dir());
    assert_eq!(store.get(&a.id)?, a);
    assert_eq!(store.list(false)?, vec![a.clone(), b.clone()]);
    let ended = store.end(&a.id)?;
    assert_eq!(ended.state, SessionState::Ended);
    assert_eq!(store.end(&a.id)?, ended);
    assert_eq!(store.list(false)?, vec![b]);
    assert_eq!(store.counts()?, (1, 2));
    Ok(())
}

/// `Status` reads counters, not records: they stay exact through creates, ends (ending
/// twice, or racing to end, counts once) and a reopen, which counts from the records.
#[test]
fn counts_are_exact_after_creates_ends_and_a_reopen() -> Result<(), Box<dyn std::error::Error>> {
    let temp = tempfile::tempdir()?;
    let path = temp.path().join("ledger");
    let ids = {
        let store = SessionStore::open(Arc::new(Ledger::open(&path)?), &temp.path().join("s"))?;
        assert_eq!(store.counts()?, (0, 0));
        let ids: Vec<String> = (0..6)
            .map(|_| store.create(new_session()).map(|s| s.id))
            .collect::<Result<_, _>>()?;
        assert_eq!(store.counts()?, (6, 6));
        store.end(&ids[0])?;
        store.end(&ids[0])?;
        assert_eq!(store.end_if_active(&ids[0])?, None);
        assert_eq!(store.counts()?, (5, 6));
        // Four threads race to end the same two sessions, through clones of the store.
        std::thread::scope(|scope| {
            for _ in 0..4 {
                let (store, ids) = (store.clone(), &ids);
                scope.spawn(move || {
                    for id in &ids[1..3] {
                        let _ = store.end_if_active(id);
                    }
                });
            }
        });
        store.count_turn(&ids[3])?;
        assert_eq!(store.counts()?, (3, 6));
        ids
    };
    let store = SessionStore::open(Arc::new(Ledger::open(&path)?), &temp.path().join("s"))?;
    assert_eq!(store.counts()?, (3, 6));
    store.end(&ids[5])?;
    store.create(new_session())?;
    let listed = store.list(true)?;
    let active = listed
        .iter()
        .filter(|s| s.state == SessionState::Active)
        .count();
    assert_eq!(store.counts()?, (saturate(active), saturate(listed.len())));
    assert_eq!(store.counts()?, (3, 7));
    Ok(())
}

#[test]
fn unknown_session_is_not_found() -> Result<(), Box<dyn std::error::Error>> {
    let (_temp, store) = store()?;
    assert!(matches!(
        store.get("s999"),
        Err(DaemonError::SessionNotFound { .. })
    ));
    Ok(())
}

/// The race of the issue: a turn ending (counting itself, moving the cwd) while the session
/// is being ended. With read-modify-write an ended session came back active, or a counted
/// turn went missing; with compare-and-swap neither can happen, however they interleave.
#[test]
fn ending_races_counted_turns_and_loses_neither() -> Result<(), Box<dyn std::error::Error>> {
    let (_temp, store) = store()?;
    let id = store.create(new_session())?.id;
    let threads: u32 = 4;
    let each: u32 = 12;
    let barrier = std::sync::Barrier::new(threads as usize);
    let (counted, ended_by) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let (store, id, barrier) = (&store, &id, &barrier);
                scope.spawn(move || -> Result<(Vec<u32>, u32), DaemonError> {
                    barrier.wait();
                    let mut counts = Vec::new();
                    let mut ended = 0;
                    for n in 0..each {
                        counts.push(store.count_turn(id)?);
                        store.set_cwd(id, Path::new(&format!("/w/{thread}/{n}")))?;
                        // Two of the threads end the session half-way through their turns,
                        // while the others are still counting theirs.
                        if thread < 2 && n == each / 2 && store.end_if_active(id)?.is_some() {
                            ended += 1;
                        }
                    }
                    Ok((counts, ended))
                })
            })
            .collect();
        let mut counted = Vec::new();
        let mut ended_by = 0;
        for worker in workers {
            let Ok(result) = worker.join() else {
                return Err("a worker panicked".to_owned());
            };
            let (counts, ended) = result.map_err(|e| e.to_string())?;
            counted.extend(counts);
            ended_by += ended;
        }
        Ok((counted, ended_by))
    })?;
    let after = store.get(&id)?;
    assert_eq!(after.state, SessionState::Ended, "{after:?}");
    assert!(after.ended_at_ms.is_some());
    assert_eq!(after.turns, threads * each, "a counted turn was lost");
    assert_eq!(ended_by, 1, "exactly one call ended the session");
    // Each count_turn saw its own count: none was computed from a stale record.
    let mut counted = counted;
    counted.sort_unstable();
    assert_eq!(counted, (1..=threads * each).collect::<Vec<_>>());
    // Ending it again changes nothing.
    assert_eq!(store.end_if_active(&id)?, None);
    assert_eq!(store.end(&id)?, after);
    Ok(())
}

#[test]
fn count_turn_returns_the_new_count_and_set_cwd_keeps_the_rest()
-> Result<(), Box<dyn std::error::Error>> {
    let (_temp, store) = store()?;
    let created = store.create(new_session())?;
    assert_eq!(store.count_turn(&created.id)?, 1);
    assert_eq!(store.count_turn(&created.id)?, 2);
    store.set_cwd(&created.id, Path::new("/w/tree"))?;
    let after = store.get(&created.id)?;
    assert_eq!(after.cwd, PathBuf::from("/w/tree"));
    assert_eq!(after.turns, 2);
    assert_eq!(after.state, SessionState::Active);
    assert!(matches!(
        store.count_turn("s999"),
        Err(DaemonError::SessionNotFound { .. })
    ));
    assert!(matches!(
        store.set_cwd("../x", Path::new("/w")),
        Err(DaemonError::InvalidArgument { .. })
    ));
    Ok(())
}

#[test]
fn list_is_in_creation_order_when_ids_grow_wider() -> Result<(), Box<dyn std::error::Error>> {
    let (_temp, store) = store()?;
    let first = store.create(new_session())?;
    // Ids after later restarts: a new stride of a million each time.
    let later: Vec<SessionRecord> = ["s2000000", "s9000001", "s10000002"]
        .iter()
        .map(|id| SessionRecord {
            id: (*id).to_owned(),
            ..first.clone()
        })
        .collect();
    for record in later.iter().rev() {
        store.records.insert_new(&record.id, record)?;
    }
    let ids: Vec<String> = store.list(true)?.into_iter().map(|s| s.id).collect();
    assert_eq!(
        ids,
        [first.id.as_str(), "s2000000", "s9000001", "s10000002"]
    );
    Ok(())
}

#[test]
fn a_session_record_that_does_not_decode_is_named_and_left_out_of_lists()
-> Result<(), Box<dyn std::error::Error>> {
    let temp = tempfile::tempdir()?;
    let ledger = Arc::new(Ledger::open(&temp.path().join("ledger"))?);
    let store = SessionStore::open(ledger.clone(), &temp.path().join("sessions"))?;
    let good = store.create(new_session())?;
    // A record of another shape (damaged, or written by a newer build) under a session id.
    ledger
        .sessions::<serde_json::Value>()?
        .insert_new("s777", &serde_json::json!({"id": "s777", "state": "ative"}))?;
    let read = store.get("s777");
    assert!(
        read.as_ref().is_err_and(|e| e
            .to_string()
            .contains("sessions record `s777` does not decode")),
        "{read:?}"
    );
    assert!(store.end("s777").is_err(), "nothing is computed from it");
    assert_eq!(store.list(true)?, vec![good.clone()]);
    assert_eq!(store.counts()?, (1, 1));
    // Its id stays taken: a reopened store goes on after it.
    let reopened = SessionStore::open(ledger, &temp.path().join("sessions"))?;
    assert_eq!(reopened.create(new_session())?.id, "s000778");
    Ok(())
}

#[test]
fn a_conversation_is_saved_loaded_and_refused_for_a_bad_id()
-> Result<(), Box<dyn std::error::Error>> {
    let (_temp, store) = store()?;
    let id = store.create(new_session())?.id;
    assert_eq!(store.load_conversation(&id)?, None);
    let conversation =
        serde_json::json!({"turns": 1, "messages": [{"role": "user", "text": "hi"}]});
    store.save_conversation(&id, &conversation)?;
    assert_eq!(store.load_conversation(&id)?, Some(conversation.clone()));
    assert!(matches!(
        store.save_conversation("../../etc", &conversation),
        Err(DaemonError::InvalidArgument { .. })
    ));
    Ok(())
}

#[test]
fn a_title_is_the_first_line_cut_short_without_control_characters() {
    assert_eq!(title_of("fix the build\nand then test it"), "fix the build");
    assert_eq!(
        title_of("\n  \n  spaced   out\twords  "),
        "spaced out words"
    );
    assert_eq!(title_of("   "), "");
    assert_eq!(title_of("red \u{1b}[31malert\u{7}"), "red [31malert");
    let long = "word ".repeat(30);
    let title = title_of(&long);
    assert_eq!(title.chars().count(), TITLE_CHARS);
    assert!(title.ends_with("word…"), "{title}");
    // Cut on a character, never inside one.
    let wide = "é".repeat(100);
    assert_eq!(title_of(&wide).chars().count(), TITLE_CHARS);
}

#[test]
fn the_first_prompt_names_a_session_and_a_turn_moves_its_last_activity()
-> Result<(), Box<dyn std::error::Error>> {
    let (_temp, store) = store()?;
    let created = store.create(new_session())?;
    assert_eq!(created.last_activity_ms(), created.created_at_ms);
    store.name_after(&created.id, "   ")?;
    assert_eq!(
        store.get(&created.id)?.title,
        "",
        "a blank prompt names nothing"
    );
    store.name_after(&created.id, "first prompt")?;
    store.name_after(&created.id, "second prompt")?;
    store.count_turn(&created.id)?;
    let after = store.get(&created.id)?;
    assert_eq!(after.title, "first prompt");
    assert!(after.last_turn_ended_ms.is_some());
    assert!(after.last_activity_ms() >= created.created_at_ms);
    Ok(())
}

#[test]
fn reopening_makes_an_ended_session_active_once_and_recounts_it()
-> Result<(), Box<dyn std::error::Error>> {
    let (_temp, store) = store()?;
    let id = store.create(new_session())?.id;
    let (same, reopened) = store.reopen(&id)?;
    assert!(!reopened, "an active session is left as it is");
    assert_eq!(same.state, SessionState::Active);
    store.end(&id)?;
    assert_eq!(store.counts()?, (0, 1));
    let (record, reopened) = store.reopen(&id)?;
    assert!(reopened);
    assert_eq!(record.state, SessionState::Active);
    assert_eq!(record.ended_at_ms, None);
    assert!(!store.reopen(&id)?.1);
    assert_eq!(store.counts()?, (1, 1));
    store.end(&id)?;
    assert!(matches!(
        store.change_active(&id, |r| r.clone()),
        Err(DaemonError::SessionEnded { .. })
    ));
    Ok(())
}

/// Ids are `s000001`, `s000002`, … with no gap for the grants and cards written between
/// them, and go on after a restart; a ledger whose ids came from its id counter keeps them
/// readable and goes on after the highest.
#[test]
fn ids_are_dense_and_go_on_across_restarts() -> Result<(), Box<dyn std::error::Error>> {
    let temp = tempfile::tempdir()?;
    let path = temp.path().join("ledger");
    let dir = temp.path().join("sessions");
    {
        let ledger = Arc::new(Ledger::open(&path)?);
        let store = SessionStore::open(ledger.clone(), &dir)?;
        assert_eq!(store.create(new_session())?.id, "s000001");
        // Other records take ids from the ledger's counter in between.
        ledger.next_id()?;
        ledger.next_id()?;
        assert_eq!(store.create(new_session())?.id, "s000002");
        ledger.flush()?;
    }
    let ledger = Arc::new(Ledger::open(&path)?);
    let store = SessionStore::open(ledger.clone(), &dir)?;
    assert_eq!(store.create(new_session())?.id, "s000003");
    // An older daemon's id from the counter, a million on after a restart.
    let mut old = store.get("s000001")?;
    old.id = "s2000001".to_owned();
    ledger
        .sessions::<SessionRecord>()?
        .insert_new("s2000001", &old)?;
    drop(store);
    let store = SessionStore::open(ledger, &dir)?;
    assert_eq!(store.get("s2000001")?.id, "s2000001");
    assert_eq!(store.create(new_session())?.id, "s2000002");
    let ids: Vec<String> = store.list(true)?.into_iter().map(|s| s.id).collect();
    assert_eq!(
        ids,
        ["s000001", "s000002", "s000003", "s2000001", "s2000002"]
    );
    Ok(())
}

/// A workspace left by a create that stopped before its record was durable keeps its id
/// from being handed out again.
#[test]
fn a_leftover_workspace_holds_its_id() -> Result<(), Box<dyn std::error::Error>> {
    let temp = tempfile::tempdir()?;
    let dir = temp.path().join("sessions");
    std::fs::create_dir_all(dir.join("s000004"))?;
    let store = SessionStore::open(Arc::new(Ledger::open(&temp.path().join("l"))?), &dir)?;
    assert_eq!(store.create(new_session())?.id, "s000005");
    assert_eq!(session_number("s000042"), Some(42));
    assert_eq!(session_number("s"), None);
    assert_eq!(session_number("s-1"), None);
    assert_eq!(session_number("g000000000001"), None);
    Ok(())
}

/// A record written before tags were kept reads back with none, and can be filed: its title
/// (the first prompt's) stays until one is set. An ended session is not refiled.
#[test]
fn an_older_record_without_tags_reads_back_and_is_filed() -> Result<(), Box<dyn std::error::Error>>
{
    let temp = tempfile::tempdir()?;
    let ledger = Arc::new(Ledger::open(&temp.path().join("ledger"))?);
    let store = SessionStore::open(ledger.clone(), &temp.path().join("sessions"))?;
    let written = store.create(new_session())?;
    store.name_after(&written.id, "align the reads")?;
    let mut older = serde_json::to_value(store.get(&written.id)?)?;
    older
        .as_object_mut()
        .ok_or("a record is an object")?
        .remove("tags");
    assert!(older.get("tags").is_none());
    ledger
        .sessions::<serde_json::Value>()?
        .update(&written.id, |_| Some(older.clone()))?;
    let read = store.get(&written.id)?;
    assert!(read.tags.is_empty());
    assert_eq!(read.title, "align the reads");

    let add = |filing: &codaris_tools::filing::Filing| {
        Some(codaris_tools::filing::Filing {
            tags: vec!["qc".to_owned()],
            ..filing.clone()
        })
    };
    let (filed, changed) = store.refile(&written.id, &add)?;
    assert!(changed);
    assert_eq!(
        (filed.title.as_str(), filed.tags.as_slice()),
        ("align the reads", ["qc".to_owned()].as_slice())
    );
    assert_eq!(store.get(&written.id)?.tags, ["qc"]);
    assert!(!store.refile(&written.id, &|_| None)?.1);

    store.end(&written.id)?;
    assert!(matches!(
        store.refile(&written.id, &add),
        Err(DaemonError::SessionEnded { .. })
    ));
    Ok(())
}
