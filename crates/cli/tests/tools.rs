//! `codaris tools search --catalog` and `codaris tools eval`: offline, no daemon, a contract
//! other tools read.

use std::path::Path;
use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const CATALOG: &str = r#"{"name": "read_file", "kind": "core", "server": "", "description": "Read a text file, whole or a range of lines.", "keywords": ["cat", "open file"]}
{"name": "seqera__lint_nextflow", "kind": "mcp", "server": "seqera", "description": "Lint a Nextflow pipeline with the Seqera language server and report problems.", "keywords": ["lint"]}
{"name": "lint_pipeline", "kind": "core", "server": "", "description": "Run `nf-core pipelines lint` and return the findings.", "keywords": ["nf-core"], "slash": ["/review"]}
{"name": "github__search_issues", "kind": "mcp", "server": "github", "description": "Search issues and pull requests across GitHub repositories.", "keywords": ["issues"]}

# Skills and references are read with read_file.
{"name": "nextflow-dsl2", "kind": "skill", "server": "", "description": "Writing Nextflow DSL2 processes, channels and operators.", "keywords": ["nextflow"], "path": "/skills/nextflow-dsl2/SKILL.md"}
{"name": "nextflow-dsl2/channels", "kind": "reference", "description": "Channel factories and operators", "keywords": [], "path": "/skills/nextflow-dsl2/references/channels.md"}
"#;

/// Runs `codaris` with a state directory that does not exist: an offline command must not need
/// (or create) one.
fn codaris(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codaris"))
        .env_clear()
        .env("CODARIS_STATE_DIR", dir.join("state"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("catalog.jsonl"), CATALOG).unwrap();
    dir
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The JSON lines of stdout, each hit's score checked (a positive number, best first) and then
/// blanked, so the rest of the line can be compared whole.
fn contract_lines(output: &Output) -> Vec<Value> {
    assert!(output.status.success(), "{}", stderr(output));
    stdout(output)
        .lines()
        .map(|line| {
            let mut value: Value = serde_json::from_str(line).unwrap();
            let mut previous = f64::INFINITY;
            for hit in value["hits"].as_array_mut().unwrap() {
                let score = hit["score"].as_f64().unwrap();
                assert!(score > 0.0 && score <= previous, "{line}");
                previous = score;
                hit["score"] = json!("<score>");
            }
            value
        })
        .collect()
}

fn hit(name: &str, kind: &str) -> Value {
    // Skills and references are never bound; tools are when they clear the relevance floor.
    let bound = matches!(kind, "core" | "mcp");
    json!({"name": name, "kind": kind, "score": "<score>", "bound": bound})
}

/// A tool a slash command gates: found, never bound.
fn gated(name: &str, kind: &str) -> Value {
    json!({"name": name, "kind": kind, "score": "<score>", "bound": false})
}

#[test]
fn one_query_as_json_is_one_contract_line() {
    let dir = setup();
    let output = codaris(
        dir.path(),
        &[
            "tools",
            "search",
            "--catalog",
            "catalog.jsonl",
            "--json",
            "lint",
            "nextflow",
        ],
    );
    assert_eq!(
        contract_lines(&output),
        vec![json!({
            "query": "lint nextflow",
            "kind": "any",
            "hits": [
                hit("seqera__lint_nextflow", "mcp"),
                gated("lint_pipeline", "core"),
                hit("nextflow-dsl2", "skill"),
                hit("nextflow-dsl2/channels", "reference"),
            ],
        })]
    );
    // The keys come in the documented order.
    assert!(
        stdout(&output).starts_with(
            "{\"query\":\"lint nextflow\",\"kind\":\"any\",\"hits\":[{\"name\":\"seqera__lint_nextflow\",\"kind\":\"mcp\",\"score\":"
        ),
        "{}",
        stdout(&output)
    );
    assert!(
        !dir.path().join("state").exists(),
        "offline search needs no daemon"
    );
}

#[test]
fn a_query_file_gives_one_line_per_query_with_its_kind() {
    let dir = setup();
    std::fs::write(
        dir.path().join("queries.jsonl"),
        concat!(
            "{\"query\": \"search github issues\", \"kind\": \"mcp\", \"style\": \"keyword\", \"relevant\": [\"github__search_issues\"]}\n",
            "\n",
            "{\"query\": \"nextflow channels\", \"kind\": \"reference\", \"note\": \"extra fields are ignored\"}\n",
            "{\"query\": \"lint_nextflw\"}\n",
        ),
    )
    .unwrap();
    let output = codaris(
        dir.path(),
        &[
            "tools",
            "search",
            "--catalog",
            "catalog.jsonl",
            "--queries",
            "queries.jsonl",
            "--limit",
            "1",
            "--json",
        ],
    );
    assert_eq!(
        contract_lines(&output),
        vec![
            json!({"query": "search github issues", "kind": "mcp", "hits": [hit("github__search_issues", "mcp")]}),
            json!({"query": "nextflow channels", "kind": "reference", "hits": [hit("nextflow-dsl2/channels", "reference")]}),
            json!({"query": "lint_nextflw", "kind": "any", "hits": [hit("seqera__lint_nextflow", "mcp")]}),
        ]
    );
}

#[test]
fn every_kind_filter_narrows_the_hits() {
    let dir = setup();
    let kinds_for = |kind: &str| -> Vec<String> {
        let output = codaris(
            dir.path(),
            &[
                "tools",
                "search",
                "--catalog",
                "catalog.jsonl",
                "--kind",
                kind,
                "--limit",
                "10",
                "--json",
                "nextflow lint read file issues",
            ],
        );
        let lines = contract_lines(&output);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["kind"], kind);
        let mut kinds: Vec<String> = lines[0]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["kind"].as_str().unwrap().to_owned())
            .collect();
        kinds.sort();
        kinds.dedup();
        kinds
    };
    assert_eq!(kinds_for("any"), ["core", "mcp", "reference", "skill"]);
    assert_eq!(kinds_for("tool"), ["core", "mcp"]);
    assert_eq!(kinds_for("core"), ["core"]);
    assert_eq!(kinds_for("mcp"), ["mcp"]);
    assert_eq!(kinds_for("skill"), ["skill"]);
    assert_eq!(kinds_for("reference"), ["reference"]);
}

#[test]
fn text_output_is_what_the_model_reads() {
    let dir = setup();
    let output = codaris(
        dir.path(),
        &[
            "tools",
            "search",
            "--catalog",
            "catalog.jsonl",
            "--kind",
            "skill",
            "nextflow",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "Matches for \"nextflow\":\n\
         - nextflow-dsl2 [skill] — Writing Nextflow DSL2 processes, channels and operators. (read it with read_file: /skills/nextflow-dsl2/SKILL.md)\n\
         Bound for your next step: none (these hits are run by a slash command or read with read_file)\n"
    );
}

#[test]
fn a_bad_catalogue_line_is_one_line_naming_the_file_and_the_line() {
    let dir = setup();
    std::fs::write(
        dir.path().join("bad.jsonl"),
        "{\"name\": \"a\", \"kind\": \"core\"}\n{\"name\": \"b\", \"kind\": \"tool\"}\n",
    )
    .unwrap();
    let output = codaris(
        dir.path(),
        &["tools", "search", "--catalog", "bad.jsonl", "x"],
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "codaris: invalid catalogue bad.jsonl line 2: unknown variant `tool`, expected one of `core`, `mcp`, `skill`, `reference` (column 28)\n"
    );

    std::fs::write(
        dir.path().join("dup.jsonl"),
        "{\"name\": \"a\", \"kind\": \"core\"}\n\n{\"name\": \"a\", \"kind\": \"mcp\"}\n",
    )
    .unwrap();
    let output = codaris(
        dir.path(),
        &["tools", "search", "--catalog", "dup.jsonl", "x"],
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "codaris: invalid catalogue dup.jsonl line 3: `a` is already defined on line 1\n"
    );

    let output = codaris(
        dir.path(),
        &["tools", "search", "--catalog", "missing.jsonl", "x"],
    );
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.starts_with("codaris: cannot read missing.jsonl:"),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
}

#[test]
fn a_bad_query_line_names_the_query_file() {
    let dir = setup();
    std::fs::write(
        dir.path().join("q.jsonl"),
        "{\"query\": \"x\", \"kind\": \"tools\"}\n",
    )
    .unwrap();
    let output = codaris(
        dir.path(),
        &[
            "tools",
            "search",
            "--catalog",
            "catalog.jsonl",
            "--queries",
            "q.jsonl",
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.starts_with("codaris: invalid query file q.jsonl line 1: unknown variant `tools`"),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
}

#[test]
fn an_unknown_kind_lists_the_valid_ones_without_a_daemon() {
    let dir = setup();
    for args in [
        &[
            "tools",
            "search",
            "--catalog",
            "catalog.jsonl",
            "--kind",
            "tools",
            "x",
        ][..],
        &["tools", "search", "--kind", "tools", "x"][..],
    ] {
        let output = codaris(dir.path(), args);
        assert_eq!(output.status.code(), Some(1));
        assert_eq!(
            stderr(&output),
            "codaris: invalid --kind: unknown kind `tools`; use one of any, tool, core, mcp, skill, reference\n"
        );
    }
    assert!(!dir.path().join("state").exists(), "no daemon was started");
}

#[test]
fn eval_prints_recall_and_mrr_for_both_built_in_sets() {
    let dir = setup();
    let output = codaris(dir.path(), &["tools", "eval"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    for needle in [
        "dev: 240 queries over 691 entries (built-in catalog.jsonl)",
        "holdout: ",
        "style          n  recall@1  recall@3  recall@5     MRR",
        "overall    ",
        "paraphrase ",
        "typo ",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    assert!(!text.contains("plain BM25"), "{text}");

    let output = codaris(dir.path(), &["tools", "eval", "--baseline"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("codaris-index"), "{text}");
    assert!(text.contains("plain BM25"), "{text}");
    let overall = text
        .lines()
        .find(|l| l.starts_with("overall"))
        .unwrap()
        .split_whitespace()
        .count();
    // Style, n, then four figures for each ranker.
    assert_eq!(overall, 10, "{text}");
}

#[test]
fn eval_json_measures_a_given_set_exactly() {
    let dir = setup();
    std::fs::write(
        dir.path().join("queries.jsonl"),
        concat!(
            "{\"query\": \"lint_nextflow\", \"kind\": \"any\", \"style\": \"exact\", \"relevant\": [\"seqera__lint_nextflow\"]}\n",
            "{\"query\": \"open a text file\", \"kind\": \"any\", \"style\": \"paraphrase\", \"relevant\": [\"read_file\"]}\n",
            "{\"query\": \"no answers given\", \"kind\": \"any\"}\n",
        ),
    )
    .unwrap();
    let output = codaris(
        dir.path(),
        &[
            "tools",
            "eval",
            "--catalog",
            "catalog.jsonl",
            "--queries",
            "queries.jsonl",
            "--baseline",
            "--json",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    let perfect = |n: usize| json!({"queries": n, "recall_at_1": 1.0, "recall_at_3": 1.0, "recall_at_5": 1.0, "mrr": 1.0});
    assert_eq!(
        value["catalog"],
        json!({"source": "catalog.jsonl", "entries": 6})
    );
    let sets = value["sets"].as_array().unwrap();
    assert_eq!(sets.len(), 1);
    assert_eq!(sets[0]["name"], "queries.jsonl");
    assert_eq!(sets[0]["queries"], 2);
    assert_eq!(
        sets[0]["codaris_index"],
        json!({
            "overall": perfect(2),
            "by_style": {"exact": perfect(1), "paraphrase": perfect(1)},
        })
    );
    assert_eq!(sets[0]["baseline"]["overall"]["queries"], 2);
}

#[test]
fn eval_refuses_a_query_file_without_answers() {
    let dir = setup();
    std::fs::write(dir.path().join("plain.jsonl"), "{\"query\": \"lint\"}\n").unwrap();
    let output = codaris(dir.path(), &["tools", "eval", "--queries", "plain.jsonl"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "codaris: no query in plain.jsonl has acceptable answers (`relevant`), so there is nothing to measure\n"
    );
}

#[test]
fn the_always_on_surface_fits_its_token_budget() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_codaris"))
        .env_clear()
        .args(["tools", "surface", "--json"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let surface: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = surface["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, codaris_policy::ALWAYS_ON);
    let sum: u64 = surface["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(surface["total"].as_u64(), Some(sum));
    assert_eq!(surface["encoding"], "cl100k_base");
    assert!(sum <= 3_500, "the nine always-on tools cost {sum} tokens");
    assert!(sum > 500, "every tool is measured ({sum})");
}
