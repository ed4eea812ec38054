//! The crate's one integration test binary: modules share one link.

#![expect(clippy::unwrap_used, reason = "a test fails loudly on a bad fixture")]

mod all {
    mod binding;
    pub mod common;
    mod docs;
    mod guard;
    mod lines;
    mod properties;
    mod research;
    mod script;
    mod slash;
    mod turn;
}
