//! Kill a writer with SIGKILL at random moments; every grant it reported durable must be in the
//! reopened ledger, whole, and no refusal may have become an allow.
//!
//! The child is the `crash-writer` binary (`tests/crash/writer.rs`): it appends grants
//! (alternating session and deny grants) and prints each id only after `append_grant` returned,
//! i.e. after the commit reached the device.

mod grant;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use codaris_ledger::Ledger;
use grant::grant_for;

fn kills() -> usize {
    std::env::var("CODARIS_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

#[test]
fn sigkill_never_loses_an_acknowledged_grant() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    let mut acknowledged: Vec<(String, u64)> = Vec::new();
    // A cheap deterministic spread of kill delays (2–61 ms: start-up and recovery take a few ms,
    // so the early kills land in sled's recovery and the late ones among appends).
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..kills() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_micros(2_000 + seed % 60_000);
        let mut child = Command::new(env!("CARGO_BIN_EXE_crash-writer"))
            .env("CODARIS_CRASH_DIR", &path)
            .env(
                "CODARIS_CRASH_START",
                (acknowledged.len() as u64 * 1000 + round as u64 * 100_000).to_string(),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, acks) = std::sync::mpsc::channel::<(String, u64)>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let parsed = line.strip_prefix("ACK ").and_then(|ack| {
                    let (id, n) = ack.split_once(' ')?;
                    Some((id.to_owned(), n.parse().ok()?))
                });
                if let Some(ack) = parsed {
                    let _ = sender.send(ack);
                }
            }
        });
        // Even rounds kill at a random moment from exec (often during start-up or recovery);
        // odd rounds first wait for one acknowledged grant, so every run makes progress even
        // on a loaded machine.
        let mut first = None;
        if round % 2 == 1 {
            first = acks.recv_timeout(Duration::from_secs(30)).ok();
        }
        std::thread::sleep(delay);
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        acknowledged.extend(first);
        acknowledged.extend(acks.try_iter());

        let ledger = Ledger::open(&path).unwrap();
        let (records, corrupt) = ledger.grants(None).unwrap();
        assert!(corrupt.is_empty(), "round {round}: {corrupt:?}");
        let stored: std::collections::HashMap<_, _> =
            records.into_iter().map(|r| (r.id.clone(), r)).collect();
        for (id, n) in &acknowledged {
            let record = stored
                .get(id)
                .unwrap_or_else(|| panic!("round {round}: acknowledged grant {id} is missing"));
            let mut expected = grant_for(*n).with_id(id);
            expected.id = Some(id.clone());
            assert_eq!(record.grant, expected, "round {round}: grant {id} changed");
            assert_eq!(record.granted_at_ms, *n);
        }
        // No refusal became an allow: every deny grant is still a deny.
        for record in stored.values() {
            let n = record.granted_at_ms;
            assert_eq!(
                record.grant.lifetime,
                grant_for(n).lifetime,
                "round {round}"
            );
        }
    }
    assert!(
        acknowledged.len() >= kills() / 2,
        "the writer made progress: {}",
        acknowledged.len()
    );
}
