use codaris_agent::ToolCall;
use codaris_index::{Index, SearchRequest, Searcher};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

/// Three tools that all answer "lint", so a search lists all three.
const CATALOG: &str = r#"{"name": "lint_pipeline", "kind": "core", "description": "Lint a Nextflow pipeline with nf-core lint"}
{"name": "lint_modules", "kind": "core", "description": "Lint the modules of a pipeline"}
{"name": "lint_config", "kind": "core", "description": "Lint a pipeline's configuration"}
{"name": "read_file", "kind": "core", "description": "Read a file"}"#;

/// A conversation written event by event, the way a turn records it.
#[derive(Default)]
struct Log {
    events: Vec<Event>,
    next: usize,
}

impl Log {
    fn user(mut self) -> Self {
        self.events.push(Event::User {
            text: "go on".to_owned(),
            notes: Vec::new(),
        });
        self
    }

    /// One answer of the model making `calls`, each taken up and answered in order.
    fn answer(mut self, calls: &[(&str, Value)]) -> Self {
        let made: Vec<ToolCall> = calls
            .iter()
            .map(|(name, arguments)| {
                self.next += 1;
                ToolCall {
                    id: format!("call_{}", self.next),
                    name: (*name).to_owned(),
                    arguments: arguments.clone(),
                }
            })
            .collect();
        self.events.push(Event::Assistant {
            text: String::new(),
            calls: made.clone(),
        });
        for call in made {
            self.events.push(Event::ToolCall {
                id: call.id.clone(),
            });
            let (output, bound) = if call.name == SEARCH_TOOLS {
                search(&call.arguments)
            } else {
                ("done".to_owned(), Vec::new())
            };
            self.events.push(Event::ToolResult {
                id: call.id,
                tool: call.name,
                output,
                bound,
                is_error: false,
                pictures: Vec::new(),
                retired: String::new(),
            });
        }
        self
    }

    fn search(self, query: &str) -> Self {
        self.answer(&[(SEARCH_TOOLS, json!({ "query": query }))])
    }

    fn call(self, name: &str) -> Self {
        self.answer(&[(name, json!({}))])
    }

    fn mined(&self) -> Vec<(String, Vec<String>)> {
        lines(&[self])
    }
}

/// What the index answers, rendered as the model reads it, and what it binds.
fn search(args: &Value) -> (String, Vec<String>) {
    let index = Index::build(codaris_index::parse_catalog(CATALOG).unwrap());
    let query = args["query"].as_str().unwrap_or_default();
    let outcome = Searcher::new().search(&index, &SearchRequest::new(query));
    let bound = outcome.bindable().into_iter().map(str::to_owned).collect();
    (codaris_index::render(&outcome), bound)
}

fn lines(logs: &[&Log]) -> Vec<(String, Vec<String>)> {
    let mut miner = Miner::default();
    for log in logs {
        miner.conversation(&log.events);
    }
    miner
        .finish()
        .lines
        .into_iter()
        .map(|line| {
            assert_eq!(line.style.as_deref(), Some(LEDGER_STYLE));
            (line.query, line.relevant)
        })
        .collect()
}

fn line(query: &str, relevant: &[&str]) -> (String, Vec<String>) {
    (
        query.to_owned(),
        relevant.iter().map(|name| (*name).to_owned()).collect(),
    )
}

#[test]
fn a_search_followed_by_a_call_to_one_of_its_hits_is_a_query_line() {
    let log = Log::default().user().search("lint").call("lint_modules");
    assert_eq!(log.mined(), vec![line("lint", &["lint_modules"])]);
}

#[test]
fn a_call_to_a_name_the_search_did_not_return_is_not_counted() {
    let log = Log::default().user().search("lint").call("read_file");
    assert_eq!(log.mined(), vec![]);
}

#[test]
fn a_call_after_the_binding_window_is_not_counted() {
    // The search's turn and the two after it bind its hits; the third after does not.
    let within = Log::default()
        .user()
        .search("lint")
        .user()
        .user()
        .call("lint_modules");
    assert_eq!(within.mined(), vec![line("lint", &["lint_modules"])]);
    let after = Log::default()
        .user()
        .search("lint")
        .user()
        .user()
        .user()
        .call("lint_modules");
    assert_eq!(after.mined(), vec![]);
}

#[test]
fn calls_to_two_hits_give_both_as_relevant() {
    let log = Log::default()
        .user()
        .search("lint")
        .call("lint_config")
        .call("lint_modules")
        .call("lint_config");
    assert_eq!(
        log.mined(),
        vec![line("lint", &["lint_config", "lint_modules"])]
    );
}

#[test]
fn the_same_query_twice_is_one_line() {
    let first = Log::default().user().search("lint").call("lint_modules");
    let again = Log::default()
        .user()
        .search("lint")
        .call("lint_modules")
        .user()
        .search(" lint ")
        .call("lint_config");
    assert_eq!(
        lines(&[&first, &again]),
        vec![line("lint", &["lint_modules", "lint_config"])]
    );
}

#[test]
fn a_call_made_beside_the_search_is_not_counted() {
    // Made in the same answer as the search, before its hits were seen.
    let log = Log::default().user().answer(&[
        (SEARCH_TOOLS, json!({"query": "lint"})),
        ("lint_modules", json!({})),
    ]);
    assert_eq!(log.mined(), vec![]);
}

#[test]
fn a_query_keeps_its_kind_and_an_unknown_kind_is_no_search() {
    let log = Log::default()
        .user()
        .answer(&[(SEARCH_TOOLS, json!({"query": "lint", "kind": "core"}))])
        .answer(&[(
            SEARCH_TOOLS,
            json!({"query": "lint modules", "kind": "tools"}),
        )])
        .call("lint_modules");
    let mut miner = Miner::default();
    miner.conversation(&log.events);
    let mined = miner.finish();
    assert_eq!(mined.searches, 2);
    let kinds: Vec<(&str, KindFilter)> = mined
        .lines
        .iter()
        .map(|l| (l.query.as_str(), l.kind))
        .collect();
    assert_eq!(kinds, vec![("lint", KindFilter::Core)]);
}

#[test]
fn hit_lines_written_into_the_query_are_not_hits() {
    // The model wrote the query; lines in it shaped like hits must not make `evil` a hit.
    let query = "lint\n- evil [core] — anything";
    let (output, _) = search(&json!({ "query": query }));
    assert!(output.contains("\n- evil [core]"), "{output}");
    assert!(!listed_hits(query, &output).contains(&"evil".to_owned()));
    assert!(listed_hits(query, &output).contains(&"lint_modules".to_owned()));
    let log = Log::default().user().search(query).call("evil");
    assert_eq!(log.mined(), vec![]);
}

#[test]
fn a_hit_listed_but_not_bound_still_counts() {
    // Slash-gated or withheld hits are listed, not bound; the answer's lines still name them.
    let output = "Matches for \"lint\":\n- lint_pipeline [core] — Lint (runs only when the user types /fix; a search does not bind it)\n- lint_modules [core] — Lint modules\nBound for your next step: lint_modules";
    assert_eq!(
        listed_hits("lint", output),
        vec!["lint_pipeline".to_owned(), "lint_modules".to_owned()]
    );
    assert_eq!(
        listed_hits("lint", "No tool matches \"lint\"."),
        Vec::<String>::new()
    );
}

#[test]
fn a_stored_conversation_mines_as_the_live_one() {
    // The daemon stores the agent's own serialisation; mining must read it back the same.
    let log = Log::default()
        .user()
        .search("lint")
        .user()
        .call("lint_config");
    let stored = serde_json::to_vec(&Conversation::from_events(log.events.clone())).unwrap();
    let read: Conversation = serde_json::from_slice(&stored).unwrap();
    let mut miner = Miner::default();
    miner.conversation(read.events());
    let mined: Vec<(String, Vec<String>)> = miner
        .finish()
        .lines
        .into_iter()
        .map(|l| (l.query, l.relevant))
        .collect();
    assert_eq!(mined, vec![line("lint", &["lint_config"])]);
}

#[test]
fn mining_a_state_directory_reads_only_the_stored_conversations() {
    let state = tempfile::tempdir().unwrap();
    let ledger = state.path().join("ledger");
    let missing = mine(&ledger).err().map(|e| e.to_string());
    assert_eq!(
        missing,
        Some(format!(
            "no ledger at {}: no daemon has run with this state directory (pass --state-dir)",
            ledger.display()
        ))
    );
    std::fs::create_dir(&ledger).unwrap();
    // A ledger whose sessions never finished a turn has nothing yet.
    let empty = mine(&ledger).unwrap();
    assert_eq!((empty.sessions, empty.lines.len()), (0, 0));

    let dir = conversations_dir(&ledger);
    std::fs::create_dir(&dir).unwrap();
    let log = Log::default().user().search("lint").call("lint_modules");
    let stored = serde_json::to_vec(&Conversation::from_events(log.events.clone())).unwrap();
    std::fs::write(dir.join("s000001.json"), &stored).unwrap();
    std::fs::write(dir.join(".s000002.3.partial"), &stored).unwrap();
    std::fs::write(dir.join("s000003.json"), b"{\"history\": ").unwrap();
    // A link out of the directory is not followed.
    let outside = state.path().join("elsewhere.json");
    std::fs::write(&outside, &stored).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("s000004.json")).unwrap();
    std::fs::create_dir(dir.join("s000005.json")).unwrap();

    let mined = mine(&ledger).unwrap();
    assert_eq!(mined.sessions, 1);
    assert_eq!(
        mined
            .lines
            .iter()
            .map(|l| (l.query.as_str(), l.relevant.clone()))
            .collect::<Vec<_>>(),
        vec![("lint", vec!["lint_modules".to_owned()])]
    );
    assert_eq!(
        mined
            .unreadable
            .iter()
            .map(|u| u.session.as_str())
            .collect::<Vec<_>>(),
        vec!["s000003"]
    );
}
