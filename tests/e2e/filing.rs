//! The session's own filing through the real binaries: the model finds `session_describe` by
//! search, reads and changes its session's title and tags in a `codaris run`, and a person finds
//! the session again with `codaris sessions --tag`, in the table and in `--json`.

use codaris_test_support::sandbox::{Sandbox, events, json, ok, stderr};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The `tool_result` events of `session_describe`, in order: (output, failed).
fn describe_results(events: &[Value]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result" && e["tool"] == "session_describe")
        .map(|e| {
            (
                e["output"].as_str().unwrap_or_default().to_owned(),
                e["failed"].as_bool().unwrap_or_default(),
            )
        })
        .collect()
}

fn describe(args: Value) -> Value {
    json!({"name": "session_describe", "args": args})
}

#[test]
fn session_describe_files_the_run_s_session_and_sessions_tag_finds_it() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let project = sandbox.root.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let script = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "search_tools", "args": {"query": "session title tags"}}]},
        {"tool_calls": [describe(json!({}))]},
        {"tool_calls": [describe(json!({"title": "RNA-seq QC, run 42", "tags": ["RNAseq", "qc"]}))]},
        {"tool_calls": [describe(json!({"add_tags": ["Review"], "remove_tags": ["qc"]}))]},
        {"tool_calls": [describe(json!({"tags": ["x"], "add_tags": ["y"]}))]},
        {"tool_calls": [describe(json!({"title": "two\nlines \u{1b}[2J"}))]},
        {"text": "Filed."}
    ]}]});
    let run = sandbox.run_script(&project, &script, &[], "check the QC of run 42");
    ok(&run);
    let events = events(&run);
    let id = events
        .iter()
        .find(|e| e["type"] == "session")
        .and_then(|e| e["id"].as_str())
        .unwrap()
        .to_owned();
    let results = describe_results(&events);
    assert_eq!(results.len(), 5, "{events:#?}");
    // No arguments: a report, the first prompt as the default title.
    assert_eq!(
        results[0],
        (
            format!("session `{id}`\ntitle: check the QC of run 42\ntags: none"),
            false
        )
    );
    assert_eq!(
        results[1],
        (
            format!("session `{id}`: changed\ntitle: RNA-seq QC, run 42\ntags: qc, rnaseq"),
            false
        )
    );
    assert_eq!(
        results[2],
        (
            format!("session `{id}`: changed\ntitle: RNA-seq QC, run 42\ntags: review, rnaseq"),
            false
        )
    );
    // Conflicting arguments and a title that would rewrite a terminal: one-line refusals.
    assert!(results[3].1, "{results:?}");
    assert!(
        results[3]
            .0
            .starts_with("session_describe: `tags` replaces every tag"),
        "{results:?}"
    );
    assert!(results[4].1, "{results:?}");
    assert!(results[4].0.contains("U+000A"), "{results:?}");
    assert!(!results[4].0.contains('\u{1b}'), "{results:?}");

    // Another session, filed under nothing: the filter leaves it out.
    let other = sandbox.run_script(
        &project,
        &json!({"turns": [{"rounds": [{"text": "ok"}]}]}),
        &[],
        "something else",
    );
    ok(&other);

    // `run` ended both sessions; `--tag` finds the filed one, however the tag is typed.
    let tagged = json(&sandbox.cli(&["sessions", "--tag", "RNAseq", "--json"]));
    let tagged = tagged.as_array().unwrap();
    assert_eq!(tagged.len(), 1, "{tagged:?}");
    assert_eq!(tagged[0]["id"], json!(id));
    assert_eq!(tagged[0]["title"], "RNA-seq QC, run 42");
    assert_eq!(tagged[0]["tags"], json!(["review", "rnaseq"]));
    assert_eq!(tagged[0]["state"], "ended");
    // Repeated tags narrow: every one must be there.
    let both = json(&sandbox.cli(&["sessions", "--tag", "rnaseq", "--tag", "review", "--json"]));
    assert_eq!(both.as_array().unwrap().len(), 1);
    let none = json(&sandbox.cli(&["sessions", "--tag", "rnaseq", "--tag", "qc", "--json"]));
    assert_eq!(none, json!([]));
    let empty = ok(&sandbox.cli(&["sessions", "--tag", "qc"]));
    assert_eq!(empty.trim(), "no sessions filed under `qc`");

    // The table shows the title and the tags.
    let table = ok(&sandbox.cli(&["sessions", "--tag", "review"]));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    assert!(lines[0].contains("TAGS"), "{table}");
    assert!(lines[1].contains("RNA-seq QC, run 42"), "{table}");
    assert!(lines[1].contains("review,rnaseq"), "{table}");

    // A filter tag that could never be filed is refused, naming it.
    let bad = sandbox.cli(&["sessions", "--tag", "a b"]);
    assert_eq!(bad.status.code(), Some(1), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("the tag `a b` holds ` `"),
        "{}",
        stderr(&bad)
    );

    // The unfiled session has no tags in the JSON, as an empty array.
    let all = json(&sandbox.cli(&["sessions", "--json"]));
    let unfiled = all
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] != json!(id))
        .unwrap();
    assert_eq!(unfiled["tags"], json!([]));
    assert_eq!(unfiled["title"], "something else");
    sandbox.stop_daemon();
}
