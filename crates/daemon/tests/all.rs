//! The daemon's gRPC API, served in-process on a socket in a temp dir.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]

mod api;
mod binary;
mod card_preview;
mod cards;
mod filing;
mod floor_plan;
mod mcp;
mod nextflow;
mod notices;
mod pictures;
mod resume;
mod seam;
mod shared;
mod support;
mod tools;
mod turns;
