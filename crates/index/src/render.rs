//! The text `search_tools` returns to the model. The agent reads the binding back from this text
//! in the conversation, so its shape is a contract: one `Matches for` line, one `- ` line per
//! hit, one `Bound for your next step:` line (then, when weaker hits are listed, one `Not bound,
//! weaker matches:` line, and when some hits are withheld from the turn, one `Withheld from this
//! turn, so not bound:` line).

use std::fmt::Write as _;

use crate::entry::Kind;
use crate::request::{Hit, SearchOutcome};

/// The longest description shown on a hit's line, in characters; the rest is cut at a word.
const MAX_DESCRIPTION_CHARS: usize = 200;

/// Renders a search outcome as the model reads it.
pub fn render(outcome: &SearchOutcome) -> String {
    render_withheld(outcome, &[])
}

/// A hit the turn will not get, and why (switched off, withheld in an `/audit` turn, …): shown
/// with its reason, never bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    pub name: String,
    pub reason: String,
}

/// Renders a search outcome as the model reads it, `withheld` hits left out of the
/// `Bound for your next step:` line and named after it with their reasons, so the answer never
/// claims a tool the turn will not be sent.
pub fn render_withheld(outcome: &SearchOutcome, withheld: &[Withheld]) -> String {
    match outcome {
        SearchOutcome::Hits { query, hits } => {
            let mut out = format!("Matches for \"{query}\":\n");
            for hit in hits {
                out.push_str(&hit_line(hit));
                out.push('\n');
            }
            let bound: Vec<&str> = outcome
                .bindable()
                .into_iter()
                .filter(|name| !withheld.iter().any(|w| w.name == *name))
                .collect();
            if !bound.is_empty() {
                let _ = write!(out, "Bound for your next step: {}", bound.join(", "));
            } else if withheld.is_empty() {
                out.push_str(
                    "Bound for your next step: none (these hits are run by a slash command or read with read_file)",
                );
            } else {
                out.push_str("Bound for your next step: none");
            }
            let weak: Vec<&str> = outcome
                .weak()
                .into_iter()
                .filter(|name| !withheld.iter().any(|w| w.name == *name))
                .collect();
            if !weak.is_empty() {
                let _ = write!(
                    out,
                    "\nNot bound, weaker matches: {} (search with a name to bind it)",
                    weak.join(", ")
                );
            }
            if !withheld.is_empty() {
                let named: Vec<String> = withheld
                    .iter()
                    .map(|w| format!("{} ({})", w.name, w.reason))
                    .collect();
                let _ = write!(
                    out,
                    "\nWithheld from this turn, so not bound: {}",
                    named.join("; ")
                );
            }
            out
        }
        SearchOutcome::NoHit { query, closest } => {
            if closest.is_empty() {
                format!("No tool matches \"{query}\", and there is no tool to suggest.")
            } else {
                format!(
                    "No tool matches \"{query}\". Closest names: {}. Search again with other words, or with one of these names.",
                    closest.join(", ")
                )
            }
        }
        SearchOutcome::EmptyQuery => {
            "search_tools needs a query: say in a few plain words what the tool should do (for example \"lint nextflow\").".to_owned()
        }
        SearchOutcome::TooLong { chars, max } => format!(
            "The query is {chars} characters long; search_tools takes at most {max}. Describe the tool you need in a few words."
        ),
    }
}

fn hit_line(hit: &Hit) -> String {
    let mut line = format!(
        "- {} [{}] — {}",
        hit.name,
        hit.kind,
        short_description(&hit.description)
    );
    if !hit.slash.is_empty() {
        let _ = write!(
            line,
            " (runs only when the user types {}; a search does not bind it)",
            hit.slash.join(" or ")
        );
    }
    if matches!(hit.kind, Kind::Skill | Kind::Reference) {
        match &hit.path {
            Some(path) => {
                let _ = write!(line, " (read it with read_file: {path})");
            }
            None => line.push_str(" (read it with read_file)"),
        }
    }
    line
}

/// The description on one line, cut at a word boundary when it is long.
fn short_description(description: &str) -> String {
    let flat: String = description.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= MAX_DESCRIPTION_CHARS {
        return flat;
    }
    let cut: String = flat.chars().take(MAX_DESCRIPTION_CHARS).collect();
    let cut = match cut.rfind(' ') {
        Some(space) => &cut[..space],
        None => cut.as_str(),
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', '.']))
}

#[cfg(test)]
mod tests {
    use super::short_description;

    #[test]
    fn long_descriptions_are_cut_at_a_word() {
        let long = "word ".repeat(100);
        let short = short_description(&long);
        assert!(short.chars().count() <= 201);
        assert!(short.ends_with("word…"));
        assert_eq!(short_description("two\n lines"), "two lines");
    }
}
