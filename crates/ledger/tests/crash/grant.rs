//! The grant the crash test's writer appends as its `n`-th: the writer and the test that checks
//! what survived must agree on it, so both include this file.

use codaris_policy::{CapabilityName, Grant, Lifetime};

/// Deny grants for even `n`, session grants for odd, each on its own path.
pub fn grant_for(n: u64) -> Grant {
    let lifetime = if n.is_multiple_of(2) {
        Lifetime::Deny
    } else {
        Lifetime::Session
    };
    Grant::new(
        CapabilityName::MutateOutsideFence,
        Some(&format!("/data/{n}")),
        lifetime,
    )
}
