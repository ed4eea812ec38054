//! End-to-end tests: the real `codarisd` and `codaris` binaries on private state directories.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]

mod acp;
mod acp_mcp;
mod acp_node;
mod acp_questions;
mod acp_raw;
mod acp_roots;
mod cards;
mod chat;
mod cli_contract;
mod config;
mod demo;
mod doctor;
mod escapes;
mod fence;
mod fence_readers;
mod filing;
mod first_hour_gates;
mod first_hour_output;
mod first_hour_provider;
mod first_hour_setup;
mod full_disk;
mod hardening;
mod help;
mod hooks;
mod interrupt;
mod ledger;
mod leftovers;
mod lifecycle;
mod limits;
mod long_sessions;
mod long_sessions_cache;
mod mcp;
mod mcp_names;
mod mcp_paths;
mod memory;
mod nextflow;
mod nextflow_runs;
mod nextflow_testdata;
mod permission_mode;
mod plans;
mod policy_candidate;
mod programs;
mod progress;
mod python;
mod question;
mod research;
mod run;
mod sandbox;
mod sandbox_git;
mod search_ledger;
mod search_withheld;
mod seqera;
mod services;
mod sessions;
mod setup;
mod subagents;
mod switch_model;
mod tcp;
mod telemetry;
mod tools;
mod undo;
