//! The crate's one integration test binary: modules share one link.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]

mod all {
    pub mod common;
    mod determinism;
    mod eval;
    mod explain;
    mod search;
}
