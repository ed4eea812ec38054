//! The scripted provider's file format: parsing, errors that name the place, and the cursor.

use codaris_agent::{AgentError, ScriptCursor, ScriptPlace, ScriptStep, Usage, parse_script};
use pretty_assertions::assert_eq;
use serde_json::json;

const SCRIPT: &str = r#"{"turns": [
  {"rounds": [
    {"text": "Searching.", "tool_calls": [{"name": "search_tools", "args": {"query": "lint nextflow"}}],
     "usage": {"input_tokens": 1200, "cache_read_tokens": 5000, "cache_write_tokens": 300, "output_tokens": 40}},
    {"tool_calls": [{"name": "lint_pipeline"}]},
    {"text": "All clean."}
  ]},
  {"rounds": [
    {"text": "", "tool_calls": [{"name": "write", "args": "not an object"}]}
  ]},
  {"rounds": []}
]}"#;

#[test]
fn a_script_parses_with_defaults() {
    let script = parse_script(SCRIPT).unwrap();
    assert_eq!(script.turns.len(), 3);
    let first = &script.turns[0].rounds;
    assert_eq!(first[0].text, "Searching.");
    assert_eq!(
        first[0].usage,
        Some(Usage {
            input_tokens: 1200,
            cache_read_tokens: 5000,
            cache_write_tokens: 300,
            output_tokens: 40
        })
    );
    assert_eq!(first[1].tool_calls[0].args, json!({}));
    assert_eq!(first[1].text, "");
    assert_eq!(
        script.turns[1].rounds[0].tool_calls[0].args,
        json!("not an object")
    );
}

#[test]
fn the_cursor_plays_each_turn_and_reports_exhaustion() {
    let mut cursor = ScriptCursor::new(parse_script(SCRIPT).unwrap());
    let step = |c: &mut ScriptCursor, turn| match c.next_round(turn) {
        ScriptStep::Round {
            index, ends_turn, ..
        } => Some((index, ends_turn)),
        ScriptStep::Exhausted => None,
    };
    assert_eq!(step(&mut cursor, 0), Some((0, false)));
    assert_eq!(step(&mut cursor, 0), Some((1, false)));
    // Turn 1 is independent of where turn 0 is.
    assert_eq!(step(&mut cursor, 1), Some((0, false)));
    assert_eq!(step(&mut cursor, 0), Some((2, true)));
    assert_eq!(step(&mut cursor, 0), None);
    assert_eq!(
        step(&mut cursor, 1),
        None,
        "rounds ran out with a tool call pending"
    );
    assert_eq!(step(&mut cursor, 2), None, "a turn with no rounds");
    assert_eq!(
        step(&mut cursor, 3),
        None,
        "a turn the script does not have"
    );
}

#[test]
fn a_script_round_trips_through_serde() {
    let script = parse_script(SCRIPT).unwrap();
    let text = serde_json::to_string(&script).unwrap();
    assert_eq!(parse_script(&text).unwrap(), script);
}

#[test]
fn errors_name_the_turn_and_round() {
    let err = |text: &str| parse_script(text).unwrap_err();
    assert_eq!(
        err(r#"{"turns": [{"rounds": []}, {"rounds": [{"text": "a"}, {"tool_call": []}]}]}"#),
        AgentError::ScriptShape {
            place: ScriptPlace::Round { turn: 1, round: 1 },
            detail: "unknown field `tool_call`, expected one of `text`, `tool_calls`, `usage`"
                .into(),
        }
    );
    assert!(matches!(
        err(r#"{"turns": [{"round": []}]}"#),
        AgentError::ScriptShape {
            place: ScriptPlace::Turn { turn: 0 },
            ..
        }
    ));
    assert!(matches!(
        err(r#"{"turn": []}"#),
        AgentError::ScriptShape {
            place: ScriptPlace::File,
            ..
        }
    ));
    assert_eq!(
        err(r#"{"turns": [{"rounds": [{"tool_calls": [{"name": "a"}, {"name": " "}]}]}]}"#),
        AgentError::ScriptEmptyToolName {
            turn: 0,
            round: 0,
            call: 1
        }
    );
    assert!(matches!(
        err("{\"turns\": [\n  {\"rounds\": [}\n]}"),
        AgentError::ScriptSyntax { line: 2, .. }
    ));
}

#[test]
fn error_messages_read_well() {
    let texts = [
        r#"{"turns": [{"rounds": [{"text": 3}]}]}"#,
        r#"{"turns": [{"rounds": [{"usage": {"input_tokens": 1, "cached": 2}}]}]}"#,
        r#"{"turns": [{"rounds": [{"tool_calls": [{"args": {}}]}]}]}"#,
        r#"{"turns": [{}]}"#,
        r#"[]"#,
        r#"{"turns": [{"rounds": [3]}]}"#,
        "{\"turns\": [",
        r#"{"turns": [{"rounds": [{"tool_calls": [{"name": ""}]}]}]}"#,
    ];
    let all: Vec<String> = texts
        .iter()
        .map(|t| parse_script(t).unwrap_err().to_string())
        .collect();
    insta::assert_snapshot!("script_errors", all.join("\n"));
}

/// A script carries its subagents' scripts: the N-th child plays `children[N]`, a grandchild
/// its parent's `children`; an entry that is not there is `None`, and an error inside a child
/// names where it is.
#[test]
fn children_scripts_nest_and_their_errors_name_the_place() {
    let script = parse_script(
        r#"{"turns": [{"rounds": [{"text": "parent"}]}],
            "children": [
              {"turns": [{"rounds": [{"text": "first"}]}]},
              {"turns": [{"rounds": [{"text": "second"}]}],
               "children": [{"turns": [{"rounds": [{"text": "grandchild"}]}]}]}
            ]}"#,
    )
    .unwrap();
    let text = |path: &[usize]| {
        script
            .child(path)
            .map(|s| s.turns[0].rounds[0].text.clone())
    };
    assert_eq!(text(&[]).as_deref(), Some("parent"));
    assert_eq!(text(&[0]).as_deref(), Some("first"));
    assert_eq!(text(&[1, 0]).as_deref(), Some("grandchild"));
    assert_eq!(text(&[2]), None);
    assert_eq!(text(&[0, 0]), None);
    let wrong = parse_script(
        r#"{"turns": [], "children": [{"turns": []}, {"turns": [{"rounds": [{"txt": "x"}]}]}]}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        wrong.starts_with("script: children[1]: turns[0].rounds[0]: unknown field `txt`"),
        "{wrong}"
    );
}

/// A script carries its memory subagents' scripts: turn `k`'s plays `memory[k]`, and an error
/// inside one names where it is.
#[test]
fn memory_scripts_are_read_and_their_errors_name_the_place() {
    let script = parse_script(
        r#"{"turns": [{"rounds": [{"text": "main"}]}],
            "memory": [{"turns": [{"rounds": [{"text": "recalled"}]}]}]}"#,
    )
    .unwrap();
    assert_eq!(script.memory.len(), 1);
    assert_eq!(script.memory[0].turns[0].rounds[0].text, "recalled");
    let wrong =
        parse_script(r#"{"turns": [], "memory": [{"turns": [{"rounds": [{"txt": "x"}]}]}]}"#)
            .unwrap_err()
            .to_string();
    assert!(
        wrong.starts_with("script: memory[0]: turns[0].rounds[0]: unknown field `txt`"),
        "{wrong}"
    );
}
