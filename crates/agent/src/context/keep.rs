//! Which results eviction leaves alone, read from the conversation itself: a `read_file` or
//! `grep` called with `keep: true`, and the `read_file` pages and `grep` results a successful
//! `keep_result` call names. The `keep_result` tool holds no state; its call is the mark.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::history::Event;
use crate::provider::ToolCall;

const READ_FILE: &str = "read_file";
const GREP: &str = "grep";
const KEEP_RESULT: &str = "keep_result";

/// The ids of the results marked to keep.
pub fn kept(events: &[Event]) -> HashSet<&str> {
    let mut calls: HashMap<&str, &ToolCall> = HashMap::new();
    // The marked results so far, with their calls, for a later `keep_result` to match.
    let mut markable: Vec<(&str, &ToolCall)> = Vec::new();
    let mut kept = HashSet::new();
    for event in events {
        match event {
            Event::Assistant { calls: made, .. } => {
                calls.extend(made.iter().map(|call| (call.id.as_str(), call)));
            }
            Event::ToolResult {
                id,
                is_error: false,
                ..
            } => {
                let Some(call) = calls.get(id.as_str()).copied() else {
                    continue;
                };
                match call.name.as_str() {
                    READ_FILE | GREP => {
                        if call.arguments.get("keep").and_then(Value::as_bool) == Some(true) {
                            kept.insert(id.as_str());
                        }
                        markable.push((id.as_str(), call));
                    }
                    KEEP_RESULT => {
                        kept.extend(
                            markable
                                .iter()
                                .filter(|(_, earlier)| names(&call.arguments, earlier))
                                .map(|(id, _)| *id),
                        );
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    kept
}

/// Whether `keep_result`'s arguments name the result of `earlier`: the same path (and, when
/// the mark gives them, the same page), or the same grep pattern (and path, when given).
fn names(mark: &Value, earlier: &ToolCall) -> bool {
    fn text<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
        args.get(key).and_then(Value::as_str).map(clean)
    }
    let number = |args: &Value, key: &str| args.get(key).and_then(Value::as_u64);
    let args = &earlier.arguments;
    match (text(mark, "pattern"), earlier.name.as_str()) {
        (Some(pattern), GREP) => {
            text(args, "pattern") == Some(pattern)
                && text(mark, "path").is_none_or(|path| text(args, "path") == Some(path))
        }
        (None, READ_FILE) => {
            let Some(path) = text(mark, "path") else {
                return false;
            };
            let page_given = mark.get("offset").is_some() || mark.get("limit").is_some();
            text(args, "path") == Some(path)
                && (!page_given
                    || (number(mark, "offset").unwrap_or(1) == number(args, "offset").unwrap_or(1)
                        && number(mark, "limit") == number(args, "limit")))
        }
        _ => false,
    }
}

/// A path as compared: without a leading `./` or a trailing `/`.
fn clean(path: &str) -> &str {
    let path = path.strip_prefix("./").unwrap_or(path);
    if path.len() > 1 {
        path.trim_end_matches('/')
    } else {
        path
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answer(id: &str, tool: &str, args: Value) -> [Event; 2] {
        [
            Event::Assistant {
                text: String::new(),
                calls: vec![ToolCall {
                    id: id.to_owned(),
                    name: tool.to_owned(),
                    arguments: args,
                }],
            },
            Event::tool_result(id, tool, "output", false),
        ]
    }

    #[test]
    fn keep_true_and_a_matching_keep_result_mark_and_nothing_else_does() {
        let events: Vec<Event> = [
            answer("a", "read_file", json!({"path": "src/x.rs", "keep": true})),
            answer(
                "b",
                "read_file",
                json!({"path": "./src/y.rs", "offset": 10, "limit": 5}),
            ),
            answer(
                "c",
                "read_file",
                json!({"path": "src/y.rs", "offset": 20, "limit": 5}),
            ),
            answer("d", "grep", json!({"pattern": "fn main", "path": "src"})),
            answer("e", "grep", json!({"pattern": "fn main"})),
            answer("f", "read_file", json!({"path": "z.md"})),
            answer(
                "g",
                "keep_result",
                json!({"path": "src/y.rs", "offset": 10, "limit": 5}),
            ),
            answer(
                "h",
                "keep_result",
                json!({"pattern": "fn main", "path": "src/"}),
            ),
            answer("i", "read_file", json!({"path": "z.md"})),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut kept: Vec<&str> = kept(&events).into_iter().collect();
        kept.sort_unstable();
        // `c` is another page, `e` another grep, `f` never marked, `i` read after the mark.
        assert_eq!(kept, ["a", "b", "d"]);
    }

    #[test]
    fn a_failed_keep_result_marks_nothing_and_a_bare_path_keeps_every_page() {
        let mut events: Vec<Event> = [
            answer(
                "a",
                "read_file",
                json!({"path": "x", "offset": 1, "limit": 9}),
            ),
            answer("b", "read_file", json!({"path": "x", "offset": 10})),
        ]
        .into_iter()
        .flatten()
        .collect();
        events.push(Event::Assistant {
            text: String::new(),
            calls: vec![ToolCall {
                id: "k".into(),
                name: "keep_result".into(),
                arguments: json!({"path": "x"}),
            }],
        });
        events.push(Event::tool_result("k", "keep_result", "no such file", true));
        assert!(kept(&events).is_empty());
        events.extend(answer("m", "keep_result", json!({"path": "x"})));
        assert_eq!(kept(&events).len(), 2);
    }
}
