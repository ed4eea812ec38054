//! The daemon's gRPC API, served in-process on a socket in a temp dir.

#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod api;
mod cards;
mod notices;
mod pictures;
mod seam;
mod shared;
mod support;
mod tools;
mod turns;
