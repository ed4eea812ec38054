//! The crate's one integration test binary: modules share one link.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod all {
    pub mod common;
    mod determinism;
    mod eval;
    mod search;
}
