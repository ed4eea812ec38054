//! Ending a session frees what it held in other crates' keeping: its task pool, its grant set
//! and its grant view. Counted in every map that keeps them, and through weak handles to the
//! things themselves, before, during and after.

use std::sync::{Arc, Weak};

use codaris_agent::{Conversation, ScriptedProvider, parse_script};
use codaris_ledger::Ledger;
use codaris_policy::Task;
use codaris_tools::shell::{PoolConfig, ShellPools};
use serde_json::json;

use super::{Model, Parts, Session};
use crate::calls::builtins::Pictures;
use crate::calls::dispatch::{Dispatched, Dispatcher, SessionCall};
use crate::sessions::ids::SessionId;

type TestResult = Result<(), Box<dyn std::error::Error>>;

struct Live {
    session: Arc<Session>,
    pool: Weak<codaris_tools::shell::TaskPool>,
    set: Weak<codaris_policy::GrantSet>,
}

/// A session that made everything it can hold: a pool (as a command makes it), a grant view
/// and a grant set (as a decision makes them).
fn live(
    id: &str,
    ledger: &Arc<Ledger>,
    dispatcher: &Dispatcher,
    pools: &ShellPools,
    cwd: &std::path::Path,
) -> Result<Live, Box<dyn std::error::Error>> {
    let provider = ScriptedProvider::new(parse_script(r#"{"turns": []}"#)?);
    let session = Arc::new(Session::new(
        SessionId::new(id),
        Conversation::default(),
        Model {
            provider: Arc::new(provider),
            pictures: Pictures::Shown,
            context: codaris_agent::ContextBudget::new(200_000, 0),
        },
        Parts {
            ledger: ledger.clone(),
            dispatcher: dispatcher.for_session(),
            pool: Some(pools.lease(id)),
            lineage: None,
        },
    ));
    let pool = Arc::downgrade(&pools.pool(id)?);
    let decided = session.dispatcher().decide(SessionCall {
        session_id: id.into(),
        call_id: "c1".into(),
        tool: codaris_policy::ToolId::parse("read_file"),
        args: json!({"path": "notes.md"}),
        task: Task::new(cwd.display().to_string()),
        cwd: None,
        spec: None,
        marks: None,
    })?;
    assert!(matches!(decided, Dispatched::Run(_)), "{decided:?}");
    let set = session
        .dispatcher()
        .kept_grant_set()
        .ok_or("no grant set kept")?;
    Ok(Live { session, pool, set })
}

#[tokio::test]
async fn ending_a_session_frees_its_pool_grant_set_and_grant_view() -> TestResult {
    let temp = tempfile::tempdir()?;
    let cwd = temp.path().canonicalize()?;
    let ledger = Arc::new(Ledger::open(&cwd.join("ledger"))?);
    let dispatcher = Dispatcher::new(ledger.clone());
    let (pools, _notices) = ShellPools::new(PoolConfig {
        cgroups: false,
        ..PoolConfig::default()
    });
    assert_eq!((pools.sessions_held(), ledger.grant_views_kept()), (0, 0));

    let one = live("s1", &ledger, &dispatcher, &pools, &cwd)?;
    let two = live("s2", &ledger, &dispatcher, &pools, &cwd)?;
    assert_eq!((pools.sessions_held(), ledger.grant_views_kept()), (2, 2));
    for live in [&one, &two] {
        assert!(live.pool.upgrade().is_some() && live.set.upgrade().is_some());
    }

    // Ended while its turn still holds the value for a moment: all of it goes at once.
    let turn_holds = one.session.clone();
    one.session.close();
    assert_eq!((pools.sessions_held(), ledger.grant_views_kept()), (1, 1));
    assert!(
        one.pool.upgrade().is_none(),
        "the pool outlived its session"
    );
    assert!(
        one.set.upgrade().is_none(),
        "the grant set outlived its session"
    );
    assert!(one.session.dispatcher().kept_grant_set().is_none());
    drop(turn_holds);
    drop(one.session);
    assert_eq!((pools.sessions_held(), ledger.grant_views_kept()), (1, 1));

    // The other one, only dropped (the daemon stops): the same, and nothing is left.
    assert!(two.pool.upgrade().is_some() && two.set.upgrade().is_some());
    drop(two.session);
    assert_eq!((pools.sessions_held(), ledger.grant_views_kept()), (0, 0));
    assert!(two.pool.upgrade().is_none() && two.set.upgrade().is_none());
    Ok(())
}
