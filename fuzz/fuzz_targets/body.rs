//! What the `evaluate` fuzz target does with one input, kept apart from the `fuzz_target!`
//! macro so the policy crate's tests can run the very same body on stable Rust.

use codaris_policy::{Code, Verdict, evaluate_json};

/// Feeds `data` to `evaluate_json` as a request. Reading may fail (most inputs are not a
/// request); deciding must not panic, and the decision must keep the vocabulary's promises.
pub fn run(data: &[u8]) {
    let Ok(decision) = evaluate_json(data) else {
        return;
    };
    assert_eq!(decision.verdict, decision.code.verdict(), "{decision:?}");
    let s = &decision.sentence;
    // Lowercase, or a tool name in backticks (the loop guard's sentences).
    assert!(
        s.starts_with(|c: char| c.is_ascii_lowercase() || c == '`'),
        "{s}"
    );
    assert!(!s.ends_with('.') && !s.contains(['\n', '\r']), "{s}");
    assert!(
        decision.used_grants.is_empty() || decision.verdict == Verdict::Allow,
        "{decision:?}"
    );
    let needs_capability = matches!(
        decision.code,
        Code::ReadOnlyActivity
            | Code::ReadOutsideFence
            | Code::MutateOutsideFence
            | Code::NeedsApproval
            | Code::DeniedByUser
            | Code::AllowedByGrant
            | Code::AllowedByHook
    );
    assert_eq!(
        decision.capability.is_some(),
        needs_capability,
        "{decision:?}"
    );
    // Pure: the same bytes decide the same way again.
    assert_eq!(evaluate_json(data).ok(), Some(decision));
}
