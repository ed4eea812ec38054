//! The tool index through the real binaries: skills from a configured directory, listed and
//! searched with `codaris tools`.

use std::time::Duration;

use codaris_test_support::sandbox::{Sandbox, json, stderr, stdout, wait_for};
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn configured_skills_are_listed_and_searched() {
    let sandbox = Sandbox::new();
    let skills = sandbox.root.path().join("my-skills");
    let skill = skills.join("debugging");
    std::fs::create_dir_all(skill.join("references")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: debugging-failed-runs\ndescription: How to debug a failed Nextflow run\nkeywords: [nextflow, failure]\n---\n# Debugging\n",
    )
    .unwrap();
    std::fs::write(
        skill.join("references/exit-codes.md"),
        "# Exit codes of Nextflow tasks\n",
    )
    .unwrap();
    // A skill beside the configuration file is not read when `skills_dirs` names others.
    let ignored = sandbox.root.path().join("skills/ignored");
    std::fs::create_dir_all(&ignored).unwrap();
    std::fs::write(
        ignored.join("SKILL.md"),
        "---\nname: ignored\ndescription: Not in skills_dirs\n---\n",
    )
    .unwrap();
    sandbox.write_config(&format!("skills_dirs = [\"{}\"]\n", skills.display()));
    let daemon = sandbox.start_daemon(&[]);
    // The built-in MCP server's tools join the index once it is ready (switched off).
    let seqera = |listed: &serde_json::Value| {
        listed["tools"].as_array().map_or(0, |tools| {
            tools.iter().filter(|t| t["server"] == "seqera").count()
        })
    };
    wait_for(Duration::from_secs(40), || {
        seqera(&json(&sandbox.cli(&["tools", "list", "--json"]))) > 0
    });

    let output = sandbox.cli(&["tools", "list", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let path = |p: &str| skill.join(p).display().to_string();
    let builtin_server = seqera(&json(&output));
    // The built-in tools are listed too; this test is about the skills.
    let mut listed = json(&output);
    let core = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "core")
        .count();
    assert!(core > 10, "the built-in tools that run here are indexed");
    listed["tools"]
        .as_array_mut()
        .unwrap()
        .retain(|t| t["kind"] != "core" && t["server"] != "seqera");
    assert_eq!(
        listed,
        json!({"tools": [
            {
                "name": "debugging-failed-runs",
                "kind": "skill",
                "server": null,
                "description": "How to debug a failed Nextflow run",
                "enabled": true,
                "slash": [],
                "permission": null,
                "path": path("SKILL.md"),
            },
            {
                "name": "debugging-failed-runs/exit-codes",
                "kind": "reference",
                "server": null,
                "description": "Exit codes of Nextflow tasks",
                "enabled": true,
                "slash": [],
                "permission": null,
                "path": path("references/exit-codes.md"),
            },
        ]})
    );

    let output = sandbox.cli(&["tools", "list"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    // Columns are as wide as their widest cell (the slash column holds `/remediate /autofix /fix`).
    let words = |line: &str| {
        line.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        words(text.lines().next().unwrap_or_default()),
        ["NAME", "KIND", "STATE", "SERVER", "SLASH", "PATH"],
        "{text}"
    );
    let skill = path("SKILL.md");
    assert!(
        text.lines().any(|line| words(line)
            == [
                "debugging-failed-runs",
                "skill",
                "on",
                "-",
                "-",
                skill.as_str()
            ]),
        "{text}"
    );
    assert!(
        text.ends_with(&format!(
            "{} entries indexed, {builtin_server} switched off\n",
            core + 2 + builtin_server
        )),
        "{text}"
    );

    let output = sandbox.cli(&["tools", "search", "my", "nextflow", "run", "failed"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output).lines().take(2).collect::<Vec<_>>(),
        [
            "Matches for \"my nextflow run failed\":".to_owned(),
            format!(
                "- debugging-failed-runs [skill] — How to debug a failed Nextflow run (read it with read_file: {})",
                path("SKILL.md")
            ),
        ]
    );

    let output = sandbox.cli(&[
        "tools",
        "search",
        "--kind",
        "reference",
        "--json",
        "exit codes",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let mut answer = json(&output);
    assert!(answer["hits"][0]["score"].as_f64().unwrap() > 0.0);
    answer["hits"][0]["score"] = json!(null);
    assert_eq!(
        answer["hits"],
        json!([{
            "name": "debugging-failed-runs/exit-codes",
            "kind": "reference",
            "score": null,
            "description": "Exit codes of Nextflow tasks",
            "bindable": false,
            "likely": true,
            "bound": false,
            "slash": [],
            "path": path("references/exit-codes.md"),
        }])
    );
    assert_eq!(answer["query"], "exit codes");
    assert_eq!(answer["kind"], "reference");
    assert!(
        answer["text"]
            .as_str()
            .unwrap()
            .starts_with("Matches for \"exit codes\":")
    );

    let status = json(&sandbox.cli(&["status", "--json"]));
    assert_eq!(status["tools_indexed"], core + 2 + builtin_server);

    // Switched off, a skill is never found; switched on, it is back.
    let output = sandbox.cli(&["tools", "disable", "debugging-failed-runs"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "debugging-failed-runs [skill] is switched off\n"
    );
    let search = |sandbox: &Sandbox| {
        let output = sandbox.cli(&["tools", "search", "--json", "debug", "failed", "run"]);
        assert!(output.status.success(), "{}", stderr(&output));
        json(&output)["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hit| hit["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert!(!search(&sandbox).contains(&"debugging-failed-runs".to_owned()));
    let output = sandbox.cli(&["tools", "enable", "--json", "debugging-failed-runs"]);
    assert_eq!(
        json(&output),
        json!({"name": "debugging-failed-runs", "kind": "skill", "enabled": true})
    );
    assert!(search(&sandbox).contains(&"debugging-failed-runs".to_owned()));
    let output = sandbox.cli(&["tools", "disable", "no-such-tool"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("no-such-tool"),
        "{}",
        stderr(&output)
    );

    let output = sandbox.cli(&["daemon", "stop"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(daemon.wait(Duration::from_secs(10)).success());
}

/// `--explain`, offline over a catalogue file and through a running daemon: the same reasons,
/// and the bound line of the model's answer agrees with what the explanation says is bound.
#[test]
fn search_explains_its_ranking_offline_and_through_the_daemon() {
    let sandbox = Sandbox::new();
    let catalog = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../crates/index/eval/catalog.jsonl"
    );
    let output = sandbox.cli(&[
        "tools",
        "search",
        "--catalog",
        catalog,
        "--explain",
        "lint",
        "nextflow",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.starts_with("Explaining \"lint nextflow\"\nQuery words:\n  lint → lint\n"),
        "{text}"
    );
    assert!(text.contains("1. seqera__lint_nextflow [mcp] "), "{text}");
    assert!(
        text.contains("— not bound: read it with read_file"),
        "{text}"
    );

    let _daemon = sandbox.start_daemon(&[]);
    let output = sandbox.cli(&["tools", "search", "--json", "--explain", "read a file"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let answer = json(&output);
    let explained = answer["explanation"]["hits"].as_array().unwrap();
    assert_eq!(explained.len(), answer["hits"].as_array().unwrap().len());
    let bound: Vec<&str> = explained
        .iter()
        .filter(|h| h["binding"] == "bound")
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert!(!bound.is_empty(), "{answer}");
    let line = format!("Bound for your next step: {}", bound.join(", "));
    assert!(
        answer["text"].as_str().unwrap().lines().any(|l| l == line),
        "{answer}"
    );
    for hit in answer["hits"].as_array().unwrap() {
        let name = hit["name"].as_str().unwrap();
        assert_eq!(hit["bound"], json!(bound.contains(&name)), "{name}");
    }
}
