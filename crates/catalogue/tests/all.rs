//! The crate's one integration test binary: the catalogue agrees with the policy's specs.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them panic as the tests do.
#![cfg(test)]

mod consistency;
