//! The ledger: durable grants, exactly-once consumption, corrupt records, export, replay, and
//! crash safety under SIGKILL.

#![expect(clippy::unwrap_used, clippy::panic, reason = "tests fail loudly")]

mod attack;
mod chain;
mod crash;
mod full_disk;
mod replay;
mod store;
mod support;
