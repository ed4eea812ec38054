//! The loop guard: repeated searches, calls without progress, and the repeat that ends a turn.

use codaris_agent::{Check, GuardCode, LoopGuard, MAX_REPEATS, Progress, ToolId};
use pretty_assertions::assert_eq;
use serde_json::json;

fn refused(check: &Check) -> Option<GuardCode> {
    match check {
        Check::Refuse(r) | Check::EndTurn(r) => Some(r.code),
        Check::Proceed => None,
    }
}

#[test]
fn the_same_words_in_any_order_or_case_are_refused() {
    let mut guard = LoopGuard::new();
    let first = json!({"query": "lint nextflow"});
    assert_eq!(
        guard.check(&ToolId::parse("search_tools"), &first),
        Check::Proceed
    );
    let bound = [
        "seqera__lint_nextflow".to_owned(),
        "lint_pipeline".to_owned(),
    ];
    assert_eq!(
        guard.record(&ToolId::parse("search_tools"), &first, "hits", &bound),
        Progress::Made
    );
    for again in ["Nextflow LINT", "lint, nextflow!", "nextflow lint lint"] {
        let check = guard.check(&ToolId::parse("search_tools"), &json!({"query": again}));
        assert_eq!(refused(&check), Some(GuardCode::RepeatedSearch), "{again}");
    }
    assert_eq!(guard.repeats(), 3);
}

#[test]
fn other_words_or_another_kind_are_new_searches() {
    let mut guard = LoopGuard::new();
    assert_eq!(
        guard.check(
            &ToolId::parse("search_tools"),
            &json!({"query": "lint nextflow"})
        ),
        Check::Proceed
    );
    let cases = [
        json!({"query": "lint nextflow pipeline"}),
        json!({"query": "lint nextflow", "kind": "skill"}),
        json!({"query": ""}),
        json!({"query": ""}),
        json!({}),
    ];
    for args in cases {
        assert_eq!(
            guard.check(&ToolId::parse("search_tools"), &args),
            Check::Proceed,
            "{args}"
        );
    }
    assert_eq!(guard.repeats(), 0);
}

#[test]
fn the_fourth_repeat_ends_the_turn() {
    let mut guard = LoopGuard::new();
    let args = json!({"query": "run pipeline"});
    assert_eq!(
        guard.check(&ToolId::parse("search_tools"), &args),
        Check::Proceed
    );
    for n in 1..MAX_REPEATS {
        assert!(
            matches!(guard.check(&ToolId::parse("search_tools"), &args), Check::Refuse(ref r) if r.repeats == n)
        );
    }
    match guard.check(&ToolId::parse("search_tools"), &args) {
        Check::EndTurn(r) => assert_eq!((r.code, r.repeats), (GuardCode::RepeatedSearch, 4)),
        other => unreachable!("expected the turn to end, got {other:?}"),
    }
}

#[test]
fn identical_calls_with_identical_results_make_no_progress() {
    let mut guard = LoopGuard::new();
    let args = json!({"path": "main.nf", "limit": 10});
    let same_args_reordered = json!({"limit": 10, "path": "main.nf"});
    assert_eq!(
        guard.check(&ToolId::parse("read_file"), &args),
        Check::Proceed
    );
    assert_eq!(
        guard.record(&ToolId::parse("read_file"), &args, "text", &[]),
        Progress::Made
    );
    // Another result for the same call is progress (the file changed).
    assert_eq!(
        guard.record(&ToolId::parse("read_file"), &args, "text 2", &[]),
        Progress::Made
    );
    // Other arguments are another call.
    assert_eq!(
        guard.record(
            &ToolId::parse("read_file"),
            &json!({"path": "x"}),
            "text",
            &[]
        ),
        Progress::Made
    );
    // Another tool with the same arguments and output is another call.
    assert_eq!(
        guard.record(&ToolId::parse("grep"), &args, "text", &[]),
        Progress::Made
    );
    for n in 1..MAX_REPEATS {
        match guard.record(
            &ToolId::parse("read_file"),
            &same_args_reordered,
            "text",
            &[],
        ) {
            Progress::None(r) => assert_eq!((r.code, r.repeats), (GuardCode::NoProgress, n)),
            other => unreachable!("repeat {n}: {other:?}"),
        }
    }
    assert!(matches!(
        guard.record(&ToolId::parse("read_file"), &args, "text 2", &[]),
        Progress::EndTurn(ref r) if r.repeats == MAX_REPEATS
    ));
}

#[test]
fn both_kinds_of_repeat_share_one_count() {
    let mut guard = LoopGuard::new();
    let search = json!({"query": "fetch url"});
    let call = json!({"action": "read"});
    assert_eq!(
        guard.check(&ToolId::parse("search_tools"), &search),
        Check::Proceed
    );
    assert_eq!(
        guard.record(&ToolId::parse("planner"), &call, "[]", &[]),
        Progress::Made
    );
    assert!(matches!(
        guard.check(&ToolId::parse("search_tools"), &search),
        Check::Refuse(_)
    ));
    assert!(matches!(
        guard.record(&ToolId::parse("planner"), &call, "[]", &[]),
        Progress::None(_)
    ));
    assert!(matches!(
        guard.check(&ToolId::parse("search_tools"), &search),
        Check::Refuse(_)
    ));
    assert!(matches!(
        guard.record(&ToolId::parse("planner"), &call, "[]", &[]),
        Progress::EndTurn(_)
    ));
}

#[test]
fn a_new_turn_starts_a_new_guard() {
    let mut guard = LoopGuard::new();
    let args = json!({"query": "lint"});
    assert_eq!(
        guard.check(&ToolId::parse("search_tools"), &args),
        Check::Proceed
    );
    let mut next = LoopGuard::new();
    assert_eq!(
        next.check(&ToolId::parse("search_tools"), &args),
        Check::Proceed
    );
}
