//! `codaris-test-support`: what Codaris's tests share, so that no test crate keeps its own copy.
//!
//! - [`sandbox`]: the real `codarisd` and `codaris` binaries on a private state directory (the
//!   end-to-end tests), with every daemon a test started stopped when it ends.
//! - `daemon` (feature `daemon`): a daemon served inside the test process on a socket in a temp
//!   dir, and a fake model server speaking the OpenAI and Anthropic streaming formats.
//! - [`git`]: git repositories to run against (a bare `origin` and a clone of it).
//! - [`tmpfs`]: a small tmpfs to fill up, for the full-disk tests.
//! - [`nextflow`]: the nf-core template, the stand-in `nextflow`, nf-core's install.
//! - [`fake_http`]: an HTTP/1.1 server on loopback for the stand-ins of outside services.
//! - [`fake_wave`], [`fake_platform`]: stand-ins for Seqera Wave and Seqera Platform's API.
//! - `fake_otlp` (feature `otlp`): an OpenTelemetry collector's OTLP/HTTP trace receiver.
//! - [`fake_eutils`]: NCBI's E-utilities (PubMed, GEO, SRA records; its rate limit and 429).
//!
//! Non-goals: it is a dev-dependency only, never linked by a shipped binary; it holds no test of
//! its own, and no stand-in for a program or service it does not document (see DESIGN.md's
//! threat model on stand-ins).

// Test support is not a test crate, so clippy's `allow-*-in-tests` does not reach it: a broken
// fixture stops the test that uses it, loudly, as a failed assertion would.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "dev-only test support: a broken fixture fails the test using it"
)]

pub mod bench;
#[cfg(feature = "daemon")]
pub mod daemon;
pub mod fake_eutils;
pub mod fake_http;
#[cfg(feature = "otlp")]
pub mod fake_otlp;
pub mod fake_platform;
pub mod fake_wave;
pub mod git;
pub mod nextflow;
pub mod pty;
pub mod sandbox;
pub mod tmpfs;

/// The ledger journal's bytes up to the zeros it writes ahead of its last line (the journal's
/// lines always end with a newline, never with a zero; see `codaris-ledger`'s `journal.rs`).
pub fn journal_lines(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|b| *b != 0).map_or(0, |at| at + 1);
    &bytes[..end]
}
