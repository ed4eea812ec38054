//! The crate's one integration test binary: modules share one link.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]

mod all {
    mod binding;
    pub mod common;
    mod context;
    mod conversation;
    mod docs;
    mod guard;
    mod lines;
    mod properties;
    mod research;
    mod script;
    mod slash;
    mod turn;
    mod turn_errors;
}
