//! Model- and log-facing lines, as snapshots: the binding line, the usage line and the loop
//! guard's sentences.

use codaris_agent::{Check, Event, LoopGuard, Progress, Surface, ToolId, Usage};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{search, surface_of};

#[test]
fn the_binding_line_has_the_spec_shape() {
    let history = vec![
        Event::user("/review main.nf"),
        search("s", &["validate_pipeline", "seqera__lint_nextflow"]),
    ];
    let s = surface_of(&history, "/review main.nf");
    insta::assert_snapshot!("binding_line", s.line());
    assert_eq!((s.always_on, s.forced, s.found), (9, 3, 2));
    let empty = Surface::default();
    assert_eq!(
        empty.line(),
        "Lean tools active: bound 0 tools to model (0 always-on, 0 forced, 0 found by search; filtered from 0)."
    );
}

#[test]
fn the_usage_line_adds_rounds_and_shows_the_cache_share() {
    let mut turn = Usage::default();
    turn.add(&Usage {
        input_tokens: 1200,
        cache_read_tokens: 0,
        cache_write_tokens: 5800,
        output_tokens: 40,
    });
    turn.add(&Usage {
        input_tokens: 300,
        cache_read_tokens: 5800,
        cache_write_tokens: 0,
        output_tokens: 120,
    });
    insta::assert_snapshot!("usage_line", turn.line());
    assert_eq!(
        Usage::default().line(),
        "Usage: input 0 tokens, output 0 tokens, cache read 0 (0%), cache written 0."
    );
}

#[test]
fn the_guard_sentences() {
    let mut guard = LoopGuard::new();
    let mut sentences = Vec::new();
    let nothing = json!({"query": "fetch the moon"});
    let lint = json!({"query": "lint nextflow"});
    for args in [&nothing, &lint] {
        assert_eq!(
            guard.check(&ToolId::parse("search_tools"), args),
            Check::Proceed
        );
    }
    guard.record(
        &ToolId::parse("search_tools"),
        &nothing,
        "No tool matches",
        &[],
    );
    let bound = [
        "seqera__lint_nextflow".to_owned(),
        "lint_pipeline".to_owned(),
    ];
    guard.record(&ToolId::parse("search_tools"), &lint, "Matches", &bound);
    for args in [
        json!({"query": "moon the FETCH"}),
        json!({"query": "Nextflow lint"}),
    ] {
        if let Check::Refuse(r) = guard.check(&ToolId::parse("search_tools"), &args) {
            sentences.push(r.sentence);
        }
    }
    guard.record(
        &ToolId::parse("grep"),
        &json!({"pattern": "x"}),
        "none",
        &[],
    );
    if let Progress::None(r) = guard.record(
        &ToolId::parse("grep"),
        &json!({"pattern": "x"}),
        "none",
        &[],
    ) {
        sentences.push(r.sentence);
    }
    if let Check::EndTurn(r) = guard.check(&ToolId::parse("search_tools"), &lint) {
        sentences.push(r.sentence);
    }
    insta::assert_snapshot!("guard_sentences", sentences.join("\n"));
}
