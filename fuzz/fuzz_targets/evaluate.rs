//! Fuzz `evaluate` through its JSON entry point: arbitrary bytes as a `codaris policy eval`
//! request. Run with `cargo +nightly fuzz run evaluate` from this directory.

#![no_main]

use libfuzzer_sys::fuzz_target;

mod body;

fuzz_target!(|data: &[u8]| body::run(data));
