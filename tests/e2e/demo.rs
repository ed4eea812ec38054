//! `codaris demo`, the README's first command, through the real binaries.

use codaris_test_support::sandbox::{Sandbox, stderr, stdout};

#[test]
fn the_demo_walks_every_step_and_replays_clean() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .command("codaris")
        .env_remove("CODARIS_CONFIG")
        .arg("demo")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    let text = stdout(&output);
    for needle in [
        // A search binds tools from the next round.
        "Lean tools active: bound 12 tools to model (9 always-on, 0 forced, 3 found by search;",
        "→ print_tree",
        // The fence, a card, a grant, the same read allowed by it.
        "✗ read_file refused (read_outside_fence)",
        "? the model asks for `read_outside_fence`",
        "allow allowed_by_grant:      1\tcluster = demo",
        // A review turn refuses the write.
        "refused (read_only_activity): this `review` turn is read-only",
        // The binding expired after two more turns.
        "✗ print_tree refused (not_bound): tool `print_tree` is not bound",
        // The ledger and the audit.
        "grant g",
        "matched, 0 differ",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    assert!(
        !sandbox.state_dir().exists(),
        "the demo uses its own temporary state"
    );
}
