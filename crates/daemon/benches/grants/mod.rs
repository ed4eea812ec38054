//! Setting up a ledger of many grants for the benches, as card answers record them.

use codaris_ledger::{CardAnswer, CardRecord, Ledger};
use codaris_policy::{Capability, CapabilityName, Grant, Lifetime};

/// Grants given per card: one `allow_programs` answer gives one `run_program` grant per
/// program, in one commit, so a ledger of thousands of grants is set up in seconds.
pub const PER_CARD: usize = 500;

/// Gives `session` `count` grants, as card answers record them.
pub fn give(ledger: &Ledger, session: &str, count: usize, next_card: &mut usize) {
    let mut left = count;
    while left > 0 {
        let n = left.min(PER_CARD);
        left -= n;
        *next_card += 1;
        let card_id = format!("c{next_card:06}");
        let programs: Vec<String> = (0..n).map(|i| format!("tool{}-{i}", *next_card)).collect();
        ledger
            .append_card(&CardRecord::asked(
                card_id.clone(),
                session.to_owned(),
                Some(Capability::new(
                    CapabilityName::RunProgram,
                    Some(programs[0].clone()),
                )),
                "run programs".to_owned(),
                programs.clone(),
                1,
            ))
            .unwrap();
        let grants = programs
            .iter()
            .map(|p| Grant::new(CapabilityName::RunProgram, Some(p), Lifetime::Session))
            .collect();
        ledger
            .answer_card(&card_id, CardAnswer::AllowPrograms, grants, 2)
            .unwrap()
            .unwrap();
    }
}
