//! The model's own help through the real binaries: `load_skill` loads a catalogued skill by
//! name (an unknown name is answered with the closest, a name is never a path, a skill folder
//! linked out of the skills directory is refused), and the built-in documentation answers
//! "how do I add an MCP server" with the MCP page, found by search and read in parts.

use std::os::unix::fs::symlink;
use std::path::Path;

use codaris_test_support::sandbox::{Sandbox, events, json, ok, stderr};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The `tool_result` events of `tool`, in order: (output, failed).
fn results_of(events: &[Value], tool: &str) -> Vec<(String, bool)> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result" && e["tool"] == tool)
        .map(|e| {
            (
                e["output"].as_str().unwrap_or_default().to_owned(),
                e["failed"].as_bool().unwrap_or_default(),
            )
        })
        .collect()
}

fn call(name: &str, args: Value) -> Value {
    json!({"tool_calls": [{"name": name, "args": args}]})
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The names `codaris tools search --json QUERY` answers.
fn searched(sandbox: &Sandbox, query: &str) -> Vec<String> {
    let output = sandbox.cli(&["tools", "search", "--json", query]);
    assert!(output.status.success(), "{}", stderr(&output));
    json(&output)["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn load_skill_loads_a_skill_and_answers_an_unknown_name_with_the_closest() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    // The default skills directory: `skills` beside the configuration file.
    let skills = sandbox.root.path().join("skills");
    write(
        &skills.join("debugging-failed-runs/SKILL.md"),
        "---\nname: debugging-failed-runs\ndescription: How to debug a failed Nextflow run\n---\nLook in the task's work directory: .command.err first.\n",
    );
    write(
        &skills.join("debugging-failed-runs/references/exit-codes.md"),
        "# Exit codes\n137: out of memory\n",
    );
    // A skill folder that is a symlink out of the skills directory: the scan catalogues it,
    // load_skill does not read through it.
    write(
        &sandbox.root.path().join("elsewhere/leak/SKILL.md"),
        "---\nname: leak\ndescription: A skill kept outside\n---\nTOP SECRET\n",
    );
    symlink("../elsewhere/leak", skills.join("leak")).unwrap();
    let project = sandbox.root.path().join("proj");
    std::fs::create_dir(&project).unwrap();

    assert!(searched(&sandbox, "load a skill").contains(&"load_skill".to_owned()));

    let script = json!({"turns": [{"rounds": [
        call("search_tools", json!({"query": "load a skill"})),
        call("load_skill", json!({"name": "debugging-failed-runs"})),
        call("load_skill", json!({"name": "debuging-failed-run"})),
        call("load_skill", json!({"name": "../elsewhere/leak"})),
        call("load_skill", json!({"name": "leak"})),
        {"text": "Loaded."}
    ]}]});
    let run = sandbox.run_script(&project, &script, &[], "how do I debug my failed run?");
    ok(&run);
    let events = events(&run);
    let results = results_of(&events, "load_skill");
    assert_eq!(results.len(), 4, "{events:#?}");

    let real = skills.canonicalize().unwrap();
    let (loaded, failed) = &results[0];
    assert!(!failed, "{loaded}");
    let mut lines = loaded.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "skill `debugging-failed-runs` (`{}`), 5 lines; 1 file beside it, to read with read_file:",
            real.join("debugging-failed-runs/SKILL.md").display()
        )
    );
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "- {} (32 bytes)",
            real.join("debugging-failed-runs/references/exit-codes.md")
                .display()
        )
    );
    assert!(
        loaded.ends_with("Look in the task's work directory: .command.err first.\n"),
        "{loaded}"
    );

    // An unknown name: one line with the closest catalogued names.
    assert_eq!(
        results[1],
        (
            "load_skill: no catalogued skill `debuging-failed-run`; the closest: `debugging-failed-runs`"
                .to_owned(),
            true
        )
    );
    // A path is only a name no skill has.
    assert!(results[2].1, "{results:?}");
    assert!(
        results[2]
            .0
            .starts_with("load_skill: no catalogued skill `../elsewhere/leak`; the closest: "),
        "{results:?}"
    );
    // The linked folder is refused by the fence, and nothing of it reaches the model.
    assert!(results[3].1, "{results:?}");
    assert!(
        results[3]
            .0
            .starts_with("load_skill: the skill `leak` cannot be read: "),
        "{results:?}"
    );
    assert!(!run_text(&run).contains("TOP SECRET"));

    // Switched off by the person, a skill is no longer loaded either.
    ok(&sandbox.cli(&["tools", "disable", "debugging-failed-runs"]));
    let again = json!({"turns": [{"rounds": [
        call("search_tools", json!({"query": "load a skill"})),
        call("load_skill", json!({"name": "debugging-failed-runs"})),
        {"text": "Off."}
    ]}]});
    let run = sandbox.run_script(&project, &again, &[], "and now?");
    ok(&run);
    assert_eq!(
        results_of(&codaris_test_support::sandbox::events(&run), "load_skill"),
        [(
            "load_skill: the skill `debugging-failed-runs` is switched off; only the user can switch it on".to_owned(),
            true
        )]
    );
}

fn run_text(run: &std::process::Output) -> String {
    String::from_utf8_lossy(&run.stdout).into_owned()
}

#[test]
fn load_skill_is_not_offered_with_auto_discovery_off() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[skills]\nauto_discovery = false\n");
    assert!(!searched(&sandbox, "load a skill").contains(&"load_skill".to_owned()));
}

#[test]
fn the_docs_search_finds_the_mcp_page_for_adding_an_mcp_server() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let project = sandbox.root.path().join("proj");
    std::fs::create_dir(&project).unwrap();

    assert!(
        searched(&sandbox, "how do I add an MCP server to codaris")
            .contains(&"codaris_docs_search".to_owned())
    );

    let script = json!({"turns": [{"rounds": [
        // Not one of the always-on nine: unbound before a search finds it.
        call("codaris_docs_search", json!({"query": "add an MCP server"})),
        call("search_tools", json!({"query": "how do I add an MCP server to codaris"})),
        call("codaris_docs_search", json!({"query": "add an MCP server"})),
        call("search_tools", json!({"query": "read a page of codaris's documentation"})),
        call("codaris_docs_read", json!({"page": "mcp#adding-a-server"})),
        call("codaris_docs_read", json!({})),
        call("codaris_docs_read", json!({"page": "nextflow", "offset": 201})),
        call("codaris_docs_read", json!({"page": "../../etc/passwd"})),
        {"text": "Add it under [mcp.servers.NAME] or with codaris mcp add."}
    ]}]});
    let run = sandbox.run_script(
        &project,
        &script,
        &[],
        "how do I add an MCP server to Codaris?",
    );
    ok(&run);
    let events = events(&run);

    let searches = results_of(&events, "codaris_docs_search");
    assert_eq!(searches.len(), 2, "{events:#?}");
    assert_eq!(
        searches[0],
        (
            "tool `codaris_docs_search` is not bound on this turn; call `search_tools` to bind it, then call it again".to_owned(),
            true
        )
    );
    let (found, failed) = &searches[1];
    assert!(!failed, "{found}");
    let first_hit = found.lines().nth(1).unwrap();
    assert!(
        first_hit.starts_with("- mcp#adding-a-server — Adding a server (docs/mcp.md, lines "),
        "{found}"
    );

    let reads = results_of(&events, "codaris_docs_read");
    assert_eq!(reads.len(), 4, "{events:#?}");
    let (section, failed) = &reads[0];
    assert!(!failed, "{section}");
    assert!(
        section.starts_with("section `mcp#adding-a-server` of `docs/mcp.md`, lines "),
        "{section}"
    );
    assert!(section.contains("[mcp.servers.time]"), "{section}");
    // No page: the contents, every page and its sections.
    assert!(
        reads[1].0.starts_with("Codaris documentation, 22 pages;"),
        "{}",
        reads[1].0
    );
    assert!(
        reads[1].0.contains("- mcp (docs/mcp.md, "),
        "{}",
        reads[1].0
    );
    // A long page in parts, each saying how to get the next.
    assert!(
        reads[2]
            .0
            .lines()
            .next()
            .unwrap()
            .starts_with("page `nextflow` (`docs/nextflow.md`), lines 201-400 of 1-"),
        "{}",
        reads[2].0
    );
    assert!(
        reads[2].0.lines().next().unwrap().ends_with(
            "more follows: the next part is codaris_docs_read {\"page\": \"nextflow\", \"offset\": 401}"
        ),
        "{}",
        reads[2].0
    );
    // A page is a name from the built-in list, never a path.
    assert!(reads[3].1, "{reads:?}");
    assert!(
        reads[3].0.starts_with(
            "codaris_docs_read: no built-in page or section `../../etc/passwd`; the pages: readme, "
        ),
        "{reads:?}"
    );
}

/// Permission none, modes agent, plan and ask: each of the three runs in plan and in ask mode
/// with no card.
#[test]
fn the_help_tools_run_in_plan_and_ask_mode_with_no_card() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    write(
        &sandbox.root.path().join("skills/qc/SKILL.md"),
        "---\nname: qc\ndescription: Check the quality of reads\n---\nRun FastQC.\n",
    );
    let project = sandbox.root.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let script = json!({"turns": [{"rounds": [
        call("search_tools", json!({"query": "load a skill"})),
        call("load_skill", json!({"name": "qc"})),
        call("search_tools", json!({"query": "how do I add an MCP server to codaris"})),
        call("codaris_docs_search", json!({"query": "plan mode"})),
        call("search_tools", json!({"query": "read a page of codaris's documentation"})),
        call("codaris_docs_read", json!({"page": "mcp", "offset": 1})),
        {"text": "Done."}
    ]}]});
    for mode in ["plan", "ask"] {
        let run = sandbox.run_script(&project, &script, &["--mode", mode], "help me");
        ok(&run);
        let events = events(&run);
        assert!(
            !events.iter().any(|e| e["type"] == "card"),
            "{mode}: {events:#?}"
        );
        for tool in ["load_skill", "codaris_docs_search", "codaris_docs_read"] {
            let results = results_of(&events, tool);
            assert_eq!(results.len(), 1, "{mode} {tool}: {events:#?}");
            assert!(!results[0].1, "{mode} {tool}: {results:?}");
        }
    }
}
