//! The crate's one integration test binary: the decision corpus, properties, adversarial
//! paths, the documentation's vocabulary, and a smoke run of the fuzz target's body.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]

mod adversarial;
mod catalogue;
mod corpus;
mod docs;
mod fuzz_smoke;
mod properties;
mod state_and_implied;
mod support;

// The fuzz target's body, compiled here too so CI exercises it without nightly or cargo-fuzz.
#[path = "../../../fuzz/fuzz_targets/body.rs"]
mod fuzz_body;
