//! End-to-end tests: the real `codarisd` and `codaris` binaries on private state directories.

#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod cards;
mod chat;
mod config;
mod demo;
mod fence;
mod full_disk;
mod hardening;
mod interrupt;
mod ledger;
mod lifecycle;
mod permission_mode;
mod python;
mod run;
mod sandbox;
mod tcp;
mod tools;
