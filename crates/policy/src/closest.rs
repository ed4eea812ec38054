//! The tools closest to a name no tool has, for the `unknown_tool` refusal: the model guessed
//! or misspelt a name, or called a tool of the surface that is not built yet, and reads the
//! names it could call instead.
//!
//! The candidates are the names the model can reach in this task: the built-in tools that are
//! built (they have a catalogue entry) and that neither the task's withholding nor its mode
//! holds back, and the other tools the daemon names in `task.other_tools` (MCP tools). Pure and
//! deterministic: the same name and task always give the same names, in the same order, so a
//! replay of the decision says the same.

use codaris_catalogue::BuiltinTool;

use crate::evaluate::held_back;
use crate::task::Task;

/// How many names the refusal gives.
pub const CLOSEST: usize = 3;

/// The [`CLOSEST`] names nearest to `called`: most words in common first (`reed_file` and
/// `read_file` share `file`), then the fewest edits, then by name.
pub(crate) fn names(called: &str, task: &Task) -> Vec<String> {
    let mut built: Vec<&str> = Vec::new();
    for tool in BuiltinTool::ALL {
        let name = tool.as_str();
        if tool.entry().is_some() && held_back(name, None, task).is_none() {
            built.push(name);
        }
    }
    let others = task
        .other_tools
        .iter()
        .map(String::as_str)
        .filter(|name| !task.withheld.iter().any(|w| w == name));
    let called_lower = called.to_ascii_lowercase();
    let mut scored: Vec<(usize, usize, &str)> = built
        .into_iter()
        .chain(others)
        .filter(|name| *name != called)
        .map(|name| {
            let shared = shared_words(&called_lower, name);
            (usize::MAX - shared, edits(&called_lower, name), name)
        })
        .collect();
    scored.sort_unstable();
    scored.dedup_by(|a, b| a.2 == b.2);
    scored
        .into_iter()
        .take(CLOSEST)
        .map(|(_, _, name)| name.to_owned())
        .collect()
}

/// The words of a tool name: split at `_` (and so at an MCP name's `__`), `-` and `.`.
fn words(name: &str) -> impl Iterator<Item = &str> {
    name.split(['_', '-', '.']).filter(|w| !w.is_empty())
}

fn shared_words(called: &str, name: &str) -> usize {
    words(called)
        .filter(|w| words(name).any(|n| n.eq_ignore_ascii_case(w)))
        .count()
}

/// The Levenshtein distance between `a` and `b`, by character. A called name is at most what
/// the model sent; the cost is bounded by the product of the two lengths, and a name longer
/// than [`MAX_COMPARED`] characters is compared by its first ones only.
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(MAX_COMPARED).collect();
    let b: Vec<char> = b.chars().take(MAX_COMPARED).collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The longest part of a name compared: tool names are short, a longer "name" is noise.
const MAX_COMPARED: usize = 128;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Activity;
    use pretty_assertions::assert_eq;

    #[test]
    fn edits_count_insertions_deletions_and_substitutions() {
        assert_eq!(edits("reed_file", "read_file"), 1);
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(edits("grep", "grep"), 0);
        assert_eq!(edits("kitten", "sitting"), 3);
    }

    #[test]
    fn a_misspelt_name_comes_back_first() {
        let task = Task::new("/w");
        let closest = names("reed_file", &task);
        assert_eq!(closest.first().map(String::as_str), Some("read_file"));
        assert_eq!(closest.len(), CLOSEST);
        assert_eq!(names("wirte", &task)[0], "write");
    }

    #[test]
    fn only_reachable_names_are_given() {
        let mut task = Task::new("/w");
        task.activity = Activity::Plan;
        // Plan mode forbids `write`; a tool not built yet is never a suggestion.
        let closest = names("writ", &task);
        assert!(!closest.iter().any(|n| n == "write"), "{closest:?}");
        let unbuilt = names("codaris_memory_sav", &Task::new("/w"));
        assert!(
            !unbuilt.contains(&"codaris_memory_save".to_owned()),
            "{unbuilt:?}"
        );
        assert!(names("config_se", &Task::new("/w")).contains(&"config_set".to_owned()));
        task.withheld = vec!["read_file".into()];
        assert!(!names("reed_file", &task).contains(&"read_file".to_owned()));
    }

    #[test]
    fn the_daemons_other_tools_are_candidates() {
        let mut task = Task::new("/w");
        task.other_tools = vec!["github__create_issue".into()];
        assert_eq!(
            names("github__create_isue", &task)[0],
            "github__create_issue"
        );
    }

    #[test]
    fn the_same_input_gives_the_same_names() {
        let task = Task::new("/w");
        assert_eq!(names("question", &task), names("question", &task));
    }
}
