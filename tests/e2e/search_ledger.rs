//! `codaris tools eval --from-ledger` on a ledger written by a scripted session (issue 41, item
//! 2): the searches the model followed with a call to one of their hits become the person's own
//! evaluation set, ranked by the daemon's index as `codaris tools search` ranks.

use codaris_test_support::sandbox::{Sandbox, json, ok, stderr, stdout};
use serde_json::{Value, json};

/// The 1-based rank of `name` in the daemon's answer to `query`, as `codaris tools search`
/// gives it.
fn rank_in_search(sandbox: &Sandbox, query: &str, name: &str) -> Option<u64> {
    let output = sandbox.cli(&["tools", "search", "--json", "--limit", "10", query]);
    let answer = json(&output);
    answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .position(|hit| hit["name"] == name)
        .map(|at| at as u64 + 1)
}

#[test]
fn eval_from_ledger_measures_the_searches_of_a_scripted_session() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let project = sandbox.root.path().join("project");
    std::fs::create_dir(&project).unwrap();

    // Before any daemon ran there is no ledger: one line saying so.
    let output = sandbox.cli(&["tools", "eval", "--from-ledger"]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let said = stderr(&output);
    assert!(said.starts_with("codaris: no ledger at "), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");

    // Turn 1: a search, calls to two of its hits, a call to a tool it did not return.
    // Turn 2: another search, followed by a call to its hit in turn 3 (still bound).
    let plan = "write a plan document";
    let time = "what time is it\n- background_wait [core] — \u{1b}]0;owned\u{7}";
    let script = json!({"turns": [
        {"rounds": [
            {"tool_calls": [{"name": "search_tools", "args": {"query": plan}}]},
            {"tool_calls": [{"name": "plan_write", "args": {"slug": "notes", "content": "# Notes\n"}}]},
            {"tool_calls": [{"name": "plan_list", "args": {}}]},
            {"tool_calls": [{"name": "touch", "args": {"path": "notes.txt"}}]},
            {"text": "listed"}
        ]},
        {"rounds": [
            {"tool_calls": [{"name": "search_tools", "args": {"query": time}}]},
            {"text": "searched"}
        ]},
        {"rounds": [
            {"tool_calls": [{"name": "background_list", "args": {}}]},
            {"text": "done"}
        ]}
    ]});
    let mut args = sandbox.run_args(&project, &script, &["--approve", "once"], "plan it");
    args.extend(["what now".to_owned(), "and now".to_owned()]);
    let output = sandbox.command("codaris").args(&args).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));

    let written = sandbox.root.path().join("mine.jsonl");
    let written_arg = written.display().to_string();
    let output = sandbox.cli(&[
        "tools",
        "eval",
        "--from-ledger",
        "--json",
        "--write",
        &written_arg,
    ]);
    let report = json(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(report["ledger"]["sessions"], 1, "{report:#}");
    assert_eq!(report["ledger"]["searches"], 2, "{report:#}");
    assert_eq!(report["catalog"]["source"], "codarisd's index");
    let ledger = sandbox.state_dir().join("ledger");
    assert_eq!(report["ledger"]["source"], ledger.display().to_string());
    let set = &report["sets"][0];
    assert_eq!(set["name"], "ledger");
    assert_eq!(set["queries"], 2, "{report:#}");

    // Each mined query, its called hit (never `touch`, which the search did not return), and
    // the rank the daemon's index gives it now: the same as `codaris tools search`.
    let results: Vec<(Value, Value, Value)> = set["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["query"].clone(), r["relevant"].clone(), r["rank"].clone()))
        .collect();
    // A query answered by two names ranks at the better of the two.
    let plan_rank = [
        rank_in_search(&sandbox, plan, "plan_write"),
        rank_in_search(&sandbox, plan, "plan_list"),
    ]
    .into_iter()
    .flatten()
    .min();
    let time_rank = rank_in_search(&sandbox, time, "background_list");
    assert!(plan_rank.is_some() && time_rank.is_some());
    assert_eq!(
        results,
        vec![
            (
                json!(plan),
                json!(["plan_write", "plan_list"]),
                json!(plan_rank)
            ),
            (json!(time), json!(["background_list"]), json!(time_rank)),
        ]
    );
    let ranks = [plan_rank, time_rank].map(Option::unwrap);
    let at1 = ranks.iter().filter(|&&r| r == 1).count() as f64 / 2.0;
    let overall = &set["codaris_index"]["overall"];
    assert_eq!(overall["recall_at_1"].as_f64(), Some(at1));
    assert!(set["codaris_index"]["by_style"]["ledger"].is_object());

    // The written file is a query file `tools eval --queries` measures again.
    let lines: Vec<Value> = std::fs::read_to_string(&written)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        lines,
        vec![
            json!({"query": plan, "kind": "any", "style": "ledger", "relevant": ["plan_write", "plan_list"]}),
            json!({"query": time, "kind": "any", "style": "ledger", "relevant": ["background_list"]}),
        ]
    );
    let catalog = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../crates/index/eval/catalog.jsonl"
    );
    let again = ok(&sandbox.cli(&[
        "tools",
        "eval",
        "--json",
        "--catalog",
        catalog,
        "--queries",
        &written_arg,
    ]));
    assert!(again.contains("\"queries\":2"), "{again}");

    // Offline over a catalogue file, with the plain BM25 ranking beside it: each rank is the
    // one `codaris tools search --catalog` gives.
    let offline = json(&sandbox.cli(&[
        "tools",
        "eval",
        "--from-ledger",
        "--json",
        "--catalog",
        catalog,
        "--baseline",
    ]));
    assert_eq!(offline["catalog"]["source"], catalog, "{offline:#}");
    assert!(offline["sets"][0]["baseline"]["overall"].is_object());
    let offline_rank = |query: &str, name: &str| {
        let output = sandbox.cli(&[
            "tools",
            "search",
            "--json",
            "--limit",
            "10",
            "--catalog",
            catalog,
            query,
        ]);
        json(&output)["hits"]
            .as_array()
            .unwrap()
            .iter()
            .position(|hit| hit["name"] == name)
            .map(|at| at as u64 + 1)
    };
    assert_eq!(
        offline["sets"][0]["results"][1]["rank"],
        json!(offline_rank(time, "background_list"))
    );
    // The daemon ranks with its own index only.
    let output = sandbox.cli(&["tools", "eval", "--from-ledger", "--baseline"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "codaris: invalid --baseline: with --from-ledger it needs --catalog: the daemon ranks with its own index only\n"
    );

    // For people: the model-written query stays on one line, its escapes shown as text.
    let text = ok(&sandbox.cli(&["tools", "eval", "--from-ledger"]));
    assert!(
        text.starts_with("mined 2 queries from 2 searches in 1 session of "),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "{text}");
    if time_rank != Some(1) {
        assert!(
            text.contains("\"what time is it\\u{a}- background_wait [core] — \\u{1b}]0;owned\\u{7}\" wants background_list"),
            "{text}"
        );
    }
}

#[test]
fn a_ledger_with_no_followed_search_has_nothing_to_measure() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let project = sandbox.root.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let script = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "search_tools", "args": {"query": "write a plan document"}}]},
        {"text": "found it"}
    ]}]});
    let output = sandbox.run_script(&project, &script, &[], "look");
    assert!(output.status.success(), "{}", stderr(&output));
    let text = ok(&sandbox.cli(&["tools", "eval", "--from-ledger"]));
    assert!(
        text.starts_with("no search in ")
            && text.contains("was followed by a call to one of its hits (1 search in 1 session read), so there is nothing to measure yet"),
        "{text}"
    );
    let report = json(&sandbox.cli(&["tools", "eval", "--from-ledger", "--json"]));
    assert_eq!(report["sets"], json!([]));
    assert_eq!(report["ledger"]["queries"], 0);
}
