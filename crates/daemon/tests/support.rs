//! `crate::support` as `turns.rs` names it: the in-process daemon and the fake model server
//! live in `codaris-test-support`; this only re-exports them. (The other modules import the
//! crate directly; drop this once `turns.rs` does too.)

pub use codaris_test_support::daemon::{Bodies, InProcess, fake_model, openai_stream};
