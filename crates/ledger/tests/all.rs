//! The ledger: durable grants, exactly-once consumption, corrupt records, export, replay, and
//! crash safety under SIGKILL.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]

mod attack;
mod chain;
mod crash;
mod full_disk;
mod grant_cache;
mod grant_sets;
mod job_approvals;
mod log_files;
mod map_order;
mod reads;
mod replay;
mod store;
mod stored_bytes;
mod subagents;
mod support;
