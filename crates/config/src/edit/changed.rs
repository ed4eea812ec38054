//! Which keys an edit changes, by their pattern in [`crate::KEYS`]: what the daemon puts in
//! force at once and what waits for its next start is decided key by key.

use std::collections::{BTreeMap, BTreeSet};

use crate::keys::MAPS;

/// The keys whose values differ between the two files' texts (a value added, removed or
/// changed), as patterns (`mcp.servers.*.url`, `hooks.pre_tool_use.matcher`), sorted; a table
/// or list written whole counts as each key under it. Texts that do not parse compare whole:
/// every key of both.
pub fn changed_keys(before: &str, after: &str) -> Vec<String> {
    let old = leaves(before);
    let new = leaves(after);
    let mut changed = BTreeSet::new();
    for (key, value) in &old {
        if new.get(key) != Some(value) {
            changed.insert(key.0.clone());
        }
    }
    for key in new.keys() {
        if !old.contains_key(key) {
            changed.insert(key.0.clone());
        }
    }
    changed.into_iter().collect()
}

/// A leaf: its pattern, and where it is (the path as written), so two servers' `url`s differ.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Leaf(String, String);

fn leaves(text: &str) -> BTreeMap<Leaf, String> {
    let mut out = BTreeMap::new();
    if let Ok(table) = text.parse::<toml::Table>() {
        walk("", "", &toml::Value::Table(table), &mut out);
    }
    out
}

fn walk(pattern: &str, place: &str, value: &toml::Value, out: &mut BTreeMap<Leaf, String>) {
    let join = |a: &str, b: &str| {
        if a.is_empty() {
            b.to_owned()
        } else {
            format!("{a}.{b}")
        }
    };
    match value {
        toml::Value::Table(table) => {
            for (name, inner) in table {
                let inner_pattern = if MAPS.contains(&pattern) {
                    join(pattern, "*")
                } else {
                    join(pattern, name)
                };
                walk(&inner_pattern, &join(place, name), inner, out);
            }
        }
        toml::Value::Array(items)
            if items.iter().all(toml::Value::is_table) && !items.is_empty() =>
        {
            for (index, item) in items.iter().enumerate() {
                walk(pattern, &format!("{place}[{index}]"), item, out);
            }
        }
        leaf => {
            out.insert(Leaf(pattern.to_owned(), place.to_owned()), leaf.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_named_by_pattern() {
        let before = "allowed_dirs = [\"/a\"]\n[mcp.servers.docs]\ncommand = \"d\"\n";
        let after = "allowed_dirs = [\"/a\", \"/b\"]\n[daemon]\nlisten = \"127.0.0.1:7457\"\n[mcp.servers.docs]\ncommand = \"d\"\n[[hooks.pre_tool_use]]\ncommand = [\"/h\"]\n";
        assert_eq!(
            changed_keys(before, after),
            [
                "allowed_dirs",
                "daemon.listen",
                "hooks.pre_tool_use.command"
            ]
        );
        assert!(changed_keys(after, after).is_empty());
        assert_eq!(
            changed_keys("[mcp.servers.a]\ncommand = \"x\"\n", ""),
            ["mcp.servers.*.command"]
        );
    }
}
