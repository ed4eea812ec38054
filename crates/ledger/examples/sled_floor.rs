//! The floor under "what the daemon keeps of the sessions it ended" (issue 48, item 7): sled
//! alone, in a process of its own, doing the writes the daemon's stores do for each session
//! (its record inserted, then swapped to ended; with `turn`, its kept conversation, two entries
//! of the session index and the turn count too), and the process's `RssAnon` read before and
//! after, each after a moment of quiet. No daemon, no gRPC, no session value: whatever this
//! keeps, the daemon cannot keep less while its records live in sled.
//!
//! `cargo run --release -p codaris-ledger --example sled_floor -- [N] [turn|plain] [cache_mb]`
//! (default 2000 `turn` 16, the daemon's default page cache). It prints figures; it asserts
//! nothing.

#![expect(clippy::unwrap_used, reason = "a measuring driver")]

use std::time::Duration;

/// How long the process is left alone before each reading (sled flushes in the background).
const QUIET: Duration = Duration::from_secs(3);
/// Sessions written before the `before` reading, as the daemon's driver warms up.
const WARM_UP: usize = 50;

/// The process's anonymous memory, KiB.
fn rss_anon_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("RssAnon:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A session record about the size the daemon writes (its JSON, 600-odd bytes).
fn record(id: &str, state: &str) -> Vec<u8> {
    format!(
        r#"{{"schema":3,"id":"{id}","state":"{state}","created_at_ms":1765000000000,"ended_at_ms":null,"cwd":"/home/user/projects/rnaseq-mini","workspace":"/home/user/.local/state/codaris/sessions/{id}","activity":"agent","permission_mode":"default","provider":"scripted","model":"script","script":"/home/user/.local/state/codaris/scripts/turn.json","turns":1,"title":"check the run and lint it","last_turn_ended_ms":1765000000500,"base_url":"","instructions":[{{"path":"/home/user/projects/rnaseq-mini/AGENTS.md","hash":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}]}}"#
    )
    .into_bytes()
}

/// A kept conversation of one short turn (two calls and their results), about 3 KiB.
fn conversation(id: &str) -> Vec<u8> {
    let output = "x".repeat(1200);
    format!(
        r#"{{"history":[{{"type":"user","text":"check {id}"}},{{"type":"tool_result","id":"c1","tool":"run_command","output":"{output}","bound":[],"is_error":false}}],"messages":[{{"role":"user","text":"check {id}"}},{{"role":"tool_result","call_id":"c1","content":"{output}"}}],"turns":1,"notes":[]}}"#
    )
    .into_bytes()
}

struct Trees {
    sessions: sled::Tree,
    conversations: sled::Tree,
    index: sled::Tree,
}

fn session(trees: &Trees, n: usize, turn: bool) {
    let id = format!("s{n:06}");
    let active = record(&id, "active");
    trees
        .sessions
        .compare_and_swap(id.as_bytes(), None as Option<&[u8]>, Some(active.clone()))
        .unwrap()
        .unwrap();
    if turn {
        trees
            .conversations
            .insert(id.as_bytes(), conversation(&id))
            .unwrap();
        for seq in 0..2u64 {
            let mut key = id.as_bytes().to_vec();
            key.push(0);
            key.extend_from_slice(&(n as u64 * 2 + seq).to_be_bytes());
            trees
                .index
                .insert(key, &1_765_000_000_000u64.to_be_bytes())
                .unwrap();
        }
    }
    trees
        .sessions
        .compare_and_swap(id.as_bytes(), Some(active), Some(record(&id, "ended")))
        .unwrap()
        .unwrap();
}

fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().map_or(2000, |a| a.parse().unwrap());
    let turn = args.next().is_none_or(|mode| mode == "turn");
    let cache_mb: u64 = args.next().map_or(16, |a| a.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let db = sled::Config::new()
        .path(dir.path().join("ledger"))
        .cache_capacity(cache_mb * 1024 * 1024)
        .open()
        .unwrap();
    let trees = Trees {
        sessions: db.open_tree("sessions").unwrap(),
        conversations: db.open_tree("conversations").unwrap(),
        index: db.open_tree("decision_sessions").unwrap(),
    };
    std::thread::sleep(QUIET);
    let idle = rss_anon_kib();
    for n in 0..WARM_UP {
        session(&trees, n, turn);
    }
    db.flush().unwrap();
    std::thread::sleep(QUIET);
    let before = rss_anon_kib();
    for n in WARM_UP..WARM_UP + count {
        session(&trees, n, turn);
    }
    db.flush().unwrap();
    std::thread::sleep(QUIET);
    let after = rss_anon_kib();
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "sled alone, {count} sessions ({}), cache {cache_mb} MiB: RssAnon idle {:.2} MiB, before {:.2} MiB, after {:.2} MiB, after - before {:+.2} MiB",
        if turn { "turn" } else { "plain" },
        mib(idle),
        mib(before),
        mib(after),
        mib(after) - mib(before),
    );
}
