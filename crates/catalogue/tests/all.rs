//! The crate's one integration test binary: the catalogue agrees with the policy's specs.

#![expect(clippy::panic, reason = "tests fail loudly")]

mod consistency;
