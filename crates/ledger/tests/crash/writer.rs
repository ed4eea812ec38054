//! The crash test's child (see `tests/crash.rs`): appends grants to the ledger at
//! `CODARIS_CRASH_DIR`, numbered from `CODARIS_CRASH_START`, and prints `ACK <id> <n>` for each
//! only after `append_grant` returned, i.e. after the commit reached the device. It runs until
//! it is killed.
//!
//! A binary of its own rather than a `#[test]` that does nothing unless an environment
//! variable is set, so that the test count holds only real tests.

mod grant;

use std::io::Write;
use std::process::ExitCode;

use codaris_ledger::{Backing, Ledger};

fn main() -> ExitCode {
    let (Some(dir), Some(start)) = (
        std::env::var_os("CODARIS_CRASH_DIR"),
        std::env::var("CODARIS_CRASH_START")
            .ok()
            .and_then(|start| start.parse::<u64>().ok()),
    ) else {
        eprintln!("crash-writer: set CODARIS_CRASH_DIR and CODARIS_CRASH_START (a number)");
        return ExitCode::FAILURE;
    };
    let ledger = match Ledger::open(std::path::Path::new(&dir)) {
        Ok(ledger) => ledger,
        Err(err) => {
            eprintln!("crash-writer: {err}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    for n in start.. {
        let backing = Backing::Card {
            card_id: "c1".to_owned(),
        };
        let record = match ledger.append_grant("s1", grant::grant_for(n), backing, n) {
            Ok(record) => record,
            Err(err) => {
                eprintln!("crash-writer: {err}");
                return ExitCode::FAILURE;
            }
        };
        if writeln!(out, "ACK {} {n}", record.id)
            .and_then(|()| out.flush())
            .is_err()
        {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
