//! The daemon's files import each other in layers, never in a ring: a ring means no file of it
//! can be read, changed or moved without the others, which is how the flat folder of thirty
//! modules grew a twenty-three-file circle. This reads the source as text, the way a person
//! would follow the `use` lines, and fails naming the files of any ring.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

/// A file's module path (`calls::dispatch`; `config` for `config/mod.rs`; empty for `lib.rs`).
fn module_of(rel: &Path) -> String {
    let text = rel.with_extension("").to_string_lossy().replace('/', "::");
    let text = text.strip_suffix("::mod").unwrap_or(&text).to_owned();
    if text == "lib" { String::new() } else { text }
}

/// The product part of a file: comments dropped, and an inline `#[cfg(test)] mod tests` left
/// out (tests may import across layers; the product may not).
fn product_text(text: &str) -> String {
    let cut = [
        "#[cfg(test)]\nmod tests {",
        "#[cfg(test)]\npub(crate) mod tests {",
    ]
    .iter()
    .filter_map(|start| text.find(start))
    .min()
    .unwrap_or(text.len());
    text[..cut]
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn sources(src: &Path) -> BTreeMap<String, String> {
    walkdir::WalkDir::new(src)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .filter_map(|e| {
            let rel = e.path().strip_prefix(src).ok()?.to_path_buf();
            let name = rel.file_name()?.to_string_lossy().into_owned();
            // The binary is its own crate, and test files are test code.
            if name == "main.rs" || name == "tests.rs" || name.ends_with("_tests.rs") {
                return None;
            }
            let text = std::fs::read_to_string(e.path()).ok()?;
            Some((module_of(&rel), product_text(&text)))
        })
        .collect()
}

/// Which files each file imports: `crate::a::b` (braces too), `super::x`, and in a folder's
/// `mod.rs` its own children by name.
fn imports(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let crate_path = Regex::new(r"crate::([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)").unwrap();
    let crate_group = Regex::new(r"crate::\{([^}]*)\}").unwrap();
    // Item names count after `super::` (`super::Session` is the folder's file).
    let super_path =
        Regex::new(r"super::(\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)").unwrap();
    let child_path = Regex::new(r"(?:^|[\s{(,&<])(?:self::)?([a-z_][a-z0-9_]*)::").unwrap();
    let parent = |module: &str| module.rsplit_once("::").map_or("", |(p, _)| p).to_owned();
    // The longest prefix of `path` that is a file, unless it is `me`.
    let target = |me: &str, path: &str| -> Option<String> {
        let parts: Vec<&str> = path.split("::").collect();
        (1..=parts.len())
            .rev()
            .find_map(|k| {
                let candidate = parts[..k].join("::");
                files.contains_key(&candidate).then_some(candidate)
            })
            .filter(|t| t != me)
    };
    files
        .iter()
        .map(|(me, text)| {
            let mut paths: Vec<String> = crate_path
                .captures_iter(text)
                .map(|c| c[1].to_owned())
                .collect();
            for group in crate_group.captures_iter(text) {
                paths.extend(group[1].split(',').map(|p| p.trim().to_owned()));
            }
            // `super::` in a folder's child is the folder; `mod.rs` files are the folder itself,
            // so their children name themselves `super` only from one level down.
            let up = parent(me);
            for c in super_path.captures_iter(text) {
                let named = c[1].trim_start_matches('{').trim_end_matches('}');
                for path in named.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    paths.push(if up.is_empty() {
                        path.to_owned()
                    } else {
                        format!("{up}::{path}")
                    });
                }
            }
            for c in child_path.captures_iter(text) {
                let child = if me.is_empty() {
                    c[1].to_owned()
                } else {
                    format!("{me}::{}", &c[1])
                };
                if files.contains_key(&child) {
                    paths.push(child);
                }
            }
            let out = paths.iter().filter_map(|p| target(me, p)).collect();
            (me.clone(), out)
        })
        .collect()
}

/// The rings: strongly connected components of more than one file (Tarjan).
fn rings(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        rings: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            if !s.index.contains_key(w.as_str()) {
                visit(s, w);
                let low = s.low[v].min(s.low[w.as_str()]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w.as_str()) {
                let low = s.low[v].min(s.index[w.as_str()]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut ring = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                ring.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if ring.len() > 1 {
                ring.sort();
                s.rings.push(ring);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        rings: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.rings
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_two_files_of_the_daemon_import_each_other_in_a_ring() {
    let files = sources(&src());
    assert!(
        files.len() > 30,
        "the daemon's source was not found under {}",
        src().display()
    );
    let rings = rings(&imports(&files));
    assert!(
        rings.is_empty(),
        "files that import each other in a ring (break it by moving what both need into a file of its own): {rings:?}"
    );
}

#[test]
fn the_ring_finder_finds_a_ring_and_the_layers_it_allows() {
    let files: BTreeMap<String, String> = [
        ("", "mod a; mod b; mod c;"),
        ("a", "use crate::b::B;"),
        ("b", "use crate::{c::C, a};"),
        ("c", "pub struct C;"),
        ("d", "use x::Y;"),
        ("d::x", "use super::Z;"),
    ]
    .into_iter()
    .map(|(m, t)| (m.to_owned(), t.to_owned()))
    .collect();
    let rings = rings(&imports(&files));
    assert_eq!(
        rings,
        vec![
            vec!["a".to_owned(), "b".to_owned()],
            vec!["d".to_owned(), "d::x".to_owned()]
        ]
    );
}

/// The crates a decision is made in (the pure policy and catalogue, the index, the loop, the
/// ledger that replays) never link the tools: what a tool does cannot change what is decided
/// about it, and an auditor's replay builds without them.
#[test]
fn no_crate_on_the_decision_path_links_the_tools() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for name in ["policy", "catalogue", "index", "agent", "ledger"] {
        let manifest = std::fs::read_to_string(crates.join(name).join("Cargo.toml")).unwrap();
        let table: toml::Table = manifest.parse().unwrap();
        let deps = table.get("dependencies").and_then(toml::Value::as_table);
        assert!(
            deps.is_none_or(|deps| !deps.contains_key("codaris-tools")),
            "crates/{name} links codaris-tools"
        );
    }
}
