//! The fuzz target's body over a few thousand inputs, on stable Rust: random bytes, and corpus
//! requests with random bytes overwritten, inserted or removed (which reach much deeper).

use proptest::prelude::*;

use crate::support::CORPUS;

fn requests() -> Vec<Vec<u8>> {
    CORPUS
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|case| serde_json::to_vec(&case["request"]).unwrap())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes(data in prop::collection::vec(any::<u8>(), 0..512)) {
        crate::fuzz_body::run(&data);
    }

    #[test]
    fn mutated_corpus_requests(
        pick in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let all = requests();
        let mut data = all[pick.index(all.len())].clone();
        for (at, byte, kind) in edits {
            let i = at.index(data.len().max(1)).min(data.len());
            match kind {
                0 if i < data.len() => data[i] = byte,
                1 => data.insert(i, byte),
                _ if i < data.len() => { data.remove(i); }
                _ => {}
            }
        }
        crate::fuzz_body::run(&data);
    }
}
