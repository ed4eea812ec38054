//! Helpers shared by the test modules.

use codaris_policy::{Decision, Request};
use serde_json::Value;

/// The corpus, one case per line.
pub const CORPUS: &str = include_str!("../corpus/decisions.jsonl");

/// A request from JSON written in a test.
pub fn request(value: Value) -> Request {
    Request::from_value(value).expect("test request has the contract shape")
}

/// The decision for a request written in a test.
pub fn decide(value: Value) -> Decision {
    request(value).evaluate()
}

/// A lexical normaliser written independently of the crate's, to cross-check it: absolute
/// against `cwd`, `.` and empty components dropped, `..` popping.
pub fn normalise(path: &str, cwd: &str) -> String {
    let joined = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{cwd}/{path}")
    };
    let mut stack: Vec<&str> = Vec::new();
    for comp in joined.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                stack.pop();
            }
            c => stack.push(c),
        }
    }
    format!("/{}", stack.join("/"))
}

/// True when `path` is `root` or below it, by whole components.
pub fn within(path: &str, root: &str) -> bool {
    let p: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let r: Vec<&str> = root.split('/').filter(|c| !c.is_empty()).collect();
    p.len() >= r.len() && p[..r.len()] == r[..]
}
