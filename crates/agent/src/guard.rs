//! The loop guard: a per-turn state machine that notices a model going round in circles.
//!
//! Two things count as a repeat: a `search_tools` call with the same words (and kind) as an
//! earlier search this turn, which is refused before it runs with the code `repeated_search`;
//! and a call with the same tool and arguments as an earlier one this turn that returned the
//! same result, which counts as no progress. The [`MAX_REPEATS`]th repeat of either kind ends
//! the turn with the reason `loop_guard`.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use codaris_policy::RepeatedSearch;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use codaris_policy::{BuiltinTool, ToolId};

/// The repeat that ends the turn.
pub const MAX_REPEATS: u32 = 4;

/// Why the guard stepped in. Snake case on the wire, next to the policy's decision codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardCode {
    /// The same search words again this turn.
    RepeatedSearch,
    /// The same call returned the same result again this turn.
    NoProgress,
}

impl GuardCode {
    /// The snake-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            GuardCode::RepeatedSearch => "repeated_search",
            GuardCode::NoProgress => "no_progress",
        }
    }
}

/// What the guard says about a repeat: the code, the one-line sentence (lowercase start, no
/// final period, values in backticks) and the repeat count so far this turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// Which kind of repeat.
    pub code: GuardCode,
    /// The sentence the model reads.
    pub sentence: String,
    /// Repeats this turn, this one included.
    pub repeats: u32,
    /// For a repeated search: the finding the policy decides it on (the sentence is its).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<RepeatedSearch>,
}

/// The guard's answer before a call is dispatched. A refusal still goes to the host to be
/// decided and recorded, with its finding in the task, so an audit sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Dispatch it.
    Proceed,
    /// Do not dispatch it; send the refusal back as its result.
    Refuse(Refusal),
    /// Do not dispatch it; send the refusal back and end the turn (`loop_guard`).
    EndTurn(Refusal),
}

/// The guard's answer after a call's result is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// A new call or a new result.
    Made,
    /// The same call gave the same result as before; the sentence may be appended for the
    /// model.
    None(Refusal),
    /// The same, and it was the last repeat allowed: end the turn (`loop_guard`).
    EndTurn(Refusal),
}

#[derive(Debug, Clone)]
struct PastSearch {
    key: String,
    /// The first search's query as the model wrote it, trimmed.
    query: String,
    bound: Vec<String>,
}

/// The guard of one turn. Make a new one when a turn starts.
#[derive(Debug, Clone, Default)]
pub struct LoopGuard {
    searches: Vec<PastSearch>,
    results: HashMap<(String, String), Vec<u64>>,
    repeats: u32,
}

impl LoopGuard {
    /// A guard for a new turn.
    pub fn new() -> LoopGuard {
        LoopGuard::default()
    }

    /// Repeats so far this turn.
    pub fn repeats(&self) -> u32 {
        self.repeats
    }

    /// Before dispatching `tool(args)`: refuses a repeated search. A search with no words is
    /// let through (the index answers it), and so is every other tool.
    pub fn check(&mut self, tool: &ToolId, args: &Value) -> Check {
        if tool.builtin() != Some(BuiltinTool::SearchTools) {
            return Check::Proceed;
        }
        let Some((key, query)) = search_key(args) else {
            return Check::Proceed;
        };
        let Some(past) = self.searches.iter().find(|s| s.key == key) else {
            self.searches.push(PastSearch {
                key,
                query,
                bound: Vec::new(),
            });
            return Check::Proceed;
        };
        self.repeats += 1;
        let finding = RepeatedSearch {
            query: past.query.clone(),
            bound: past.bound.clone(),
            repeat: self.repeats,
            max_repeats: MAX_REPEATS,
        };
        let mut refusal = self.refusal(GuardCode::RepeatedSearch, finding.sentence());
        let ends = finding.ends_turn();
        refusal.search = Some(finding);
        if ends {
            Check::EndTurn(refusal)
        } else {
            Check::Refuse(refusal)
        }
    }

    /// After `tool(args)` ran and answered `output` (binding `bound`, for a search): notes the
    /// search's bound tools for a later refusal, and counts a same-call-same-result repeat.
    pub fn record(
        &mut self,
        tool: &ToolId,
        args: &Value,
        output: &str,
        bound: &[String],
    ) -> Progress {
        if tool.builtin() == Some(BuiltinTool::SearchTools)
            && let Some((key, _)) = search_key(args)
            && let Some(past) = self.searches.iter_mut().find(|s| s.key == key)
        {
            past.bound = bound.to_vec();
        }
        let mut hasher = DefaultHasher::new();
        output.hash(&mut hasher);
        let digest = hasher.finish();
        let seen = self
            .results
            .entry((tool.as_str().to_owned(), canonical(args)))
            .or_default();
        if !seen.contains(&digest) {
            seen.push(digest);
            return Progress::Made;
        }
        self.repeats += 1;
        let sentence =
            format!("`{tool}` returned the same result for the same arguments earlier this turn");
        if self.repeats >= MAX_REPEATS {
            Progress::EndTurn(self.refusal(GuardCode::NoProgress, ending(sentence)))
        } else {
            let sentence = format!(
                "{sentence}; this is repeat {} of {MAX_REPEATS} before the turn ends, so try something else",
                self.repeats
            );
            Progress::None(self.refusal(GuardCode::NoProgress, sentence))
        }
    }

    fn refusal(&self, code: GuardCode, sentence: String) -> Refusal {
        Refusal {
            code,
            sentence,
            repeats: self.repeats,
            search: None,
        }
    }
}

fn ending(sentence: String) -> String {
    codaris_policy::ending(&sentence, MAX_REPEATS)
}

/// The words of a search, normalised: lowercased, split on anything not a letter or digit,
/// sorted, repeats dropped, joined by single spaces. `"Lint  NEXTFLOW, lint"` → `"lint nextflow"`.
pub fn search_words(query: &str) -> String {
    let lower = query.to_lowercase();
    let mut words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.sort_unstable();
    words.dedup();
    words.join(" ")
}

/// The key of a search call (normalised words and kind) and its query as written, trimmed;
/// `None` without words.
fn search_key(args: &Value) -> Option<(String, String)> {
    let query = args.get("query").and_then(Value::as_str).unwrap_or("");
    let words = search_words(query);
    if words.is_empty() {
        return None;
    }
    let kind = args.get("kind").and_then(Value::as_str).unwrap_or("any");
    let key = format!("{words}\u{0}{}", kind.to_ascii_lowercase());
    Some((key, query.trim().to_owned()))
}

/// JSON with object keys sorted, so the same arguments written in another order compare equal.
pub(crate) fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn words_are_normalised() {
        assert_eq!(search_words("Lint  NEXTFLOW, lint"), "lint nextflow");
        assert_eq!(search_words("nextflow-lint"), "lint nextflow");
        assert_eq!(search_words(" ,; "), "");
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let a = json!({"b": 1, "a": {"y": [1, {"q": 2, "p": 1}], "x": "s"}});
        assert_eq!(
            canonical(&a),
            r#"{"a":{"x":"s","y":[1,{"p":1,"q":2}]},"b":1}"#
        );
    }
}
