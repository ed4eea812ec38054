use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn env() -> BTreeMap<String, String> {
    ArgumentMarks::new(
        false,
        Value::Null,
        [
            ("HOME", "/home/u"),
            ("TMPDIR", "/tmp"),
            ("OPENAI_API_KEY", "sk-secret"),
        ],
    )
    .env
}

fn paths(text: &str, marked: bool) -> Vec<Named> {
    read(text, marked, &env())
}

fn path(p: &str) -> Named {
    Named::Path(p.to_owned())
}

fn uri(p: &str) -> Named {
    Named::Uri(p.to_owned())
}

#[test]
fn absolute_tilde_and_variables_are_paths_as_written_and_expanded() {
    assert_eq!(paths("/etc/passwd", false), vec![path("/etc/passwd")]);
    assert_eq!(paths("~", false), vec![path("~"), path("/home/u")]);
    assert_eq!(
        paths("~/.ssh/id_ed25519", false),
        vec![path("~/.ssh/id_ed25519"), path("/home/u/.ssh/id_ed25519")]
    );
    assert_eq!(
        paths("$HOME/.ssh", false),
        vec![path("$HOME/.ssh"), path("/home/u/.ssh")]
    );
    assert_eq!(
        paths("${HOME}/.ssh", false),
        vec![path("${HOME}/.ssh"), path("/home/u/.ssh")]
    );
    assert_eq!(
        paths("/w/proj/$TMPDIR/../../x", false),
        vec![
            path("/w/proj/$TMPDIR/../../x"),
            path("/w/proj//tmp/../../x")
        ]
    );
    assert_eq!(paths("../../etc", false), vec![path("../../etc")]);
    // `$5` is no variable; a marked relative value is a path, an unmarked one is not.
    assert_eq!(paths("/price/$5", false), vec![path("/price/$5")]);
    assert_eq!(paths("src/main.rs", true), vec![path("src/main.rs")]);
    assert_eq!(paths("src/main.rs", false), vec![]);
    assert_eq!(paths("hello world", false), vec![]);
    assert_eq!(paths("~~ notes", false), vec![]);
    assert_eq!(paths("$ ls", false), vec![]);
    // A marked value with a scheme is still judged, as the path a server could take it for.
    assert_eq!(paths("x:/../../etc", true), vec![path("x:/../../etc")]);
}

#[test]
fn what_the_fence_cannot_expand_is_unjudged() {
    let unknown = vec![Named::Unjudged(BadPath::UnknownVariable)];
    // Set in the daemon but never expanded: its value would land in the ledger and a card.
    assert_eq!(paths("$OPENAI_API_KEY/x", false), unknown);
    assert_eq!(paths("$NOPE", false), unknown);
    assert_eq!(paths("${HOME:-/x}", false), unknown);
    assert_eq!(paths("${HOME", false), unknown);
    assert_eq!(paths("/a/$NOPE/../../b", false), unknown);
    let other = vec![Named::Unjudged(BadPath::OtherUsersHome)];
    assert_eq!(paths("~root/.ssh", false), other);
    assert_eq!(paths("~root", false), other);
    assert_eq!(paths("~+/x", false), other);
    // No HOME in the server's environment: `~` cannot be expanded.
    assert_eq!(
        read("~/x", false, &BTreeMap::new()),
        vec![Named::Unjudged(BadPath::UnknownVariable)]
    );
}

#[test]
fn file_uris_in_every_rfc_8089_form_name_their_paths() {
    for text in [
        "file:/etc/passwd",
        "file:///etc/passwd",
        "file://localhost/etc/passwd",
        "FILE://LOCALHOST/etc/passwd",
        "File:///etc/%70asswd",
    ] {
        assert_eq!(paths(text, false), vec![uri("/etc/passwd")], "{text}");
    }
    assert_eq!(
        paths("file:///w/proj/%2e%2e/%2E%2E/etc", false),
        vec![uri("/w/proj/../../etc")]
    );
    // A query or fragment: judged with and without it.
    assert_eq!(
        paths("file:///w/ok?/../../../etc/passwd", false),
        vec![uri("/w/ok"), uri("/w/ok?/../../../etc/passwd")]
    );
    assert_eq!(
        paths("file:~/.ssh", false),
        vec![uri("~/.ssh"), uri("/home/u/.ssh")]
    );
    assert_eq!(
        paths("file://evil.example/etc/passwd", false),
        vec![Named::Unjudged(BadPath::ForeignHost)]
    );
    assert_eq!(
        paths("file:///$NOPE/x", false),
        vec![Named::Unjudged(BadPath::UnknownVariable)]
    );
    assert_eq!(paths("https://example.com/x", false), vec![]);
    assert_eq!(file_uri_path("file://host"), Some("/".to_owned()));
    assert_eq!(file_uri_path("/plain"), None);
}

fn marks(trusted: bool, schema: Value) -> ArgumentMarks {
    ArgumentMarks::new(trusted, schema, [("HOME", "/home/u")])
}

fn found(marks: &ArgumentMarks, args: &Value) -> Vec<(String, Named)> {
    let mut found: Vec<(String, Named)> = argument_paths(marks, args)
        .into_iter()
        .map(|f| (f.pointer, f.named))
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

#[test]
fn strings_at_any_depth_are_found_whatever_their_key() {
    let args = json!({
        "q": "/etc/shadow",
        "target": "~/.ssh/id_ed25519",
        "items": [{"name": "x", "where": {"deep": "file:/root/x"}}],
        "note": "no path here",
        "count": 3
    });
    assert_eq!(
        found(&marks(false, json!({})), &args),
        vec![
            ("/items/0/where/deep".to_owned(), uri("/root/x")),
            ("/q".to_owned(), path("/etc/shadow")),
            ("/target".to_owned(), path("~/.ssh/id_ed25519")),
            ("/target".to_owned(), path("/home/u/.ssh/id_ed25519")),
        ]
    );
}

#[test]
fn the_schema_marks_relative_paths_and_values_that_are_no_string() {
    // As mcp-server-git lists `git_status`.
    let schema = json!({
        "type": "object",
        "properties": {
            "repo_path": {"title": "Repo Path", "type": "string"},
            "workingDir": {"type": "string"},
            "where": {"type": "string", "description": "The folder to look in"},
            "link": {"type": "string", "format": "uri"},
            "max_files": {"type": "integer", "description": "How many files"},
            "query": {"type": "string"}
        }
    });
    let args = json!({
        "repo_path": "../outside",
        "workingDir": "sub",
        "where": "docs",
        "link": "https://example.com",
        "max_files": 10,
        "query": "README"
    });
    assert_eq!(
        found(&marks(false, schema.clone()), &args),
        vec![
            ("/link".to_owned(), path("https://example.com")),
            ("/repo_path".to_owned(), path("../outside")),
            ("/where".to_owned(), path("docs")),
            ("/workingDir".to_owned(), path("sub")),
        ]
    );
    // A value the schema says is a path string and is not cannot be judged; from a trusted
    // server it is passed.
    let odd = json!({"repo_path": 7, "max_files": 10});
    assert_eq!(
        found(&marks(false, schema.clone()), &odd),
        vec![("/repo_path".to_owned(), Named::Unjudged(BadPath::NotString))]
    );
    assert_eq!(found(&marks(true, schema), &odd), vec![]);
    // Nested keys are marked by name, arrays of objects walked, schema items followed.
    let nested = json!({"edits": [{"file": "a.txt", "text": "x"}]});
    let schema = json!({"properties": {"edits": {"type": "array",
        "items": {"type": "object", "properties": {"file": {"type": "string"}}}}}});
    assert_eq!(
        found(&marks(false, schema), &nested),
        vec![("/edits/0/file".to_owned(), path("a.txt"))]
    );
}

#[test]
fn deep_and_wide_arguments_neither_overflow_nor_go_unjudged() {
    let mut deep = json!("/etc/passwd");
    for _ in 0..20_000 {
        deep = Value::Array(vec![deep]);
    }
    let args = Value::Object([("a".to_owned(), deep)].into_iter().collect());
    let got = argument_paths(&marks(false, json!({})), &args);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].named, path("/etc/passwd"));
    assert!(
        got[0].pointer.len() <= MAX_POINTER + 8,
        "{}",
        got[0].pointer.len()
    );
    // Dropping a value this deep recurses in serde_json itself; the model's JSON never nests
    // past its parser's limit of 128.
    std::mem::forget(args);

    let wide: Vec<String> = (0..=MAX_PATHS).map(|i| format!("/p/{i}")).collect();
    let got = argument_paths(&marks(true, json!({})), &json!({"many": wide}));
    assert_eq!(
        got.iter().map(|f| f.named.clone()).collect::<Vec<_>>(),
        vec![Named::Unjudged(BadPath::TooManyPaths)]
    );
}

#[test]
fn only_the_usual_variables_are_expanded() {
    let env = env();
    assert_eq!(env.get("HOME").map(String::as_str), Some("/home/u"));
    assert!(!env.contains_key("OPENAI_API_KEY"));
    assert_eq!(
        words("repoPath max_files HTTPServer x-dir"),
        vec!["repo", "path", "max", "files", "httpserver", "x", "dir"]
    );
}

#[test]
fn only_the_listed_top_level_arguments_are_read_for_paths() {
    let mut marked = marks(true, json!({"type": "object"}));
    let args = json!({"work_dir": "/efs/work", "params": {"outdir": "/efs/out"}, "params_file": "/w/p.yml"});
    assert_eq!(argument_paths(&marked, &args).len(), 3);
    marked.only = Some(&["params_file"]);
    let found = argument_paths(&marked, &args);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].pointer, "/params_file");
    marked.only = Some(&[]);
    assert!(argument_paths(&marked, &args).is_empty());
}
