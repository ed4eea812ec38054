//! [`check`]: a file's text against [`KEYS`], every problem with its line.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::de::{DeTable, DeValue};

use crate::keys::{KEYS, Kind, MAPS, REQUIRED, TABLE_ARRAYS, WITHHELD_VARIABLES, key_named};

/// One thing wrong with the file: the line it is on (1-based), the key it concerns when
/// there is one (dotted, as the documentation spells it), and why, one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub key: Option<String>,
    pub message: String,
}

/// Every problem of the file `text`, in line order: what does not parse as TOML, each key
/// Codaris does not know, each value of the wrong type or out of range. Empty: the keys and
/// values are right (what they add up to is the daemon's to judge).
pub fn check(text: &str) -> Vec<Problem> {
    let (document, errors) = DeTable::parse_recoverable(text);
    let mut problems: Vec<Problem> = errors
        .iter()
        .map(|err| Problem {
            line: err.span().map_or(1, |span| line_of(text, span.start)),
            key: None,
            message: one_line(err.message()),
        })
        .collect();
    let syntax_lines: Vec<usize> = problems.iter().map(|p| p.line).collect();
    let mut found = Vec::new();
    walk(text, "", "", document.get_ref(), &mut found);
    // What the parser could not read is said once, as what it is.
    found.retain(|p| !syntax_lines.contains(&p.line));
    problems.extend(found);
    problems.sort_by_key(|p| p.line);
    problems
}

/// The line each key of `text` is written on, by its dotted name as written (`daemon.listen`,
/// `mcp.servers.docs.url`; a table by its own name, an array of tables by its first entry's),
/// for `codaris config show` to say where a value came from. Empty when `text` does not parse.
pub fn key_lines(text: &str) -> BTreeMap<String, usize> {
    let mut lines = BTreeMap::new();
    if let Ok(document) = DeTable::parse(text) {
        record_lines(text, "", document.get_ref(), &mut lines);
    }
    lines
}

fn record_lines(text: &str, prefix: &str, table: &DeTable<'_>, out: &mut BTreeMap<String, usize>) {
    for (name, value) in table {
        let key = shown(prefix, name.get_ref());
        out.entry(key.clone())
            .or_insert_with(|| line_of(text, name.span().start));
        match value.get_ref() {
            DeValue::Table(inner) => record_lines(text, &key, inner, out),
            DeValue::Array(items) => {
                for item in items {
                    if let DeValue::Table(inner) = item.get_ref() {
                        record_lines(text, &key, inner, out);
                    }
                }
            }
            _ => {}
        }
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(0, |prefix| prefix.matches('\n').count())
        + 1
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The dotted pattern of `name` inside the table at `prefix`: `*` for a name in a map.
fn pattern(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else if MAPS.contains(&prefix) {
        format!("{prefix}.*")
    } else {
        format!("{prefix}.{name}")
    }
}

/// The shown form of a key: the pattern with each `*` as the name written.
fn shown(prefix_shown: &str, name: &str) -> String {
    if prefix_shown.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix_shown}.{name}")
    }
}

/// Whether some key lies under the table `pattern`.
fn is_table(pattern: &str) -> bool {
    let inner = format!("{pattern}.");
    KEYS.iter().any(|key| key.name.starts_with(&inner)) || MAPS.contains(&pattern)
}

/// Checks each entry of `table`, whose pattern is `prefix` and whose shown name is
/// `prefix_shown`.
fn walk(text: &str, prefix: &str, prefix_shown: &str, table: &DeTable<'_>, out: &mut Vec<Problem>) {
    for (name, value) in table {
        let name_text: &str = name.get_ref();
        let key = pattern(prefix, name_text);
        let key_shown = shown(prefix_shown, name_text);
        let at = |span: Range<usize>| line_of(text, span.start);
        if let Some(known) = key_named(&key) {
            let why =
                wrong(known.kind, value.get_ref()).or_else(|| withheld(&key, value.get_ref()));
            if let Some(why) = why {
                out.push(Problem {
                    line: at(value.span()),
                    message: format!("`{key_shown}` {why}"),
                    key: Some(key_shown),
                });
            }
            continue;
        }
        if !is_table(&key) {
            out.push(Problem {
                line: at(name.span()),
                message: unknown(prefix, prefix_shown, name_text),
                key: Some(key_shown),
            });
            continue;
        }
        match value.get_ref() {
            DeValue::Table(inner) => walk(text, &key, &key_shown, inner, out),
            DeValue::Array(items) if TABLE_ARRAYS.contains(&key.as_str()) => {
                for (index, item) in items.iter().enumerate() {
                    match item.get_ref() {
                        DeValue::Table(inner) => {
                            walk(text, &key, &key_shown, inner, out);
                            missing(&key, &key_shown, index, inner, at(item.span()), out);
                        }
                        _ => out.push(Problem {
                            line: at(item.span()),
                            message: format!(
                                "`{key_shown}` entry {} must be a table (`[[{key_shown}]]`)",
                                index + 1
                            ),
                            key: Some(key_shown.clone()),
                        }),
                    }
                }
            }
            _ => out.push(Problem {
                line: at(value.span()),
                message: if TABLE_ARRAYS.contains(&key.as_str()) {
                    format!("`{key_shown}` must be tables, each `[[{key_shown}]]`")
                } else {
                    format!("`{key_shown}` must be a table (`[{key_shown}]`)")
                },
                key: Some(key_shown),
            }),
        }
    }
}

/// A problem for each key [`REQUIRED`] of the array of tables `key` that its entry `index`
/// (from 0), written on `line`, leaves out.
fn missing(
    key: &str,
    key_shown: &str,
    index: usize,
    entry: &DeTable<'_>,
    line: usize,
    out: &mut Vec<Problem>,
) {
    let required = REQUIRED
        .iter()
        .filter(|(array, _)| *array == key)
        .flat_map(|(_, names)| names.iter());
    for name in required {
        if !entry.keys().any(|k| k.get_ref() == name) {
            out.push(Problem {
                line,
                message: format!(
                    "`{key_shown}` entry {} has no `{name}`; each `[[{key_shown}]]` sets one",
                    index + 1
                ),
                key: Some(format!("{key_shown}.{name}")),
            });
        }
    }
}

/// The sentence for a key Codaris does not know, naming the ones its table takes.
fn unknown(prefix: &str, prefix_shown: &str, name: &str) -> String {
    let key = shown(prefix_shown, name);
    let under = if prefix.is_empty() {
        String::new()
    } else if MAPS.contains(&prefix) {
        format!("{prefix}.*.")
    } else {
        format!("{prefix}.")
    };
    let mut names: Vec<&str> = KEYS
        .iter()
        .filter_map(|k| k.name.strip_prefix(under.as_str()))
        .map(|rest| rest.split('.').next().unwrap_or(rest))
        .collect();
    names.dedup();
    let place = if prefix_shown.is_empty() {
        "the file".to_owned()
    } else {
        format!("`[{prefix_shown}]`")
    };
    format!(
        "unknown key `{key}`; {place} takes {}",
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Why a list of variables a pipeline run gets names one that never passes. An error, not a
/// warning: the operator meant the run to have it and it never will, so the run would fail at
/// its first use of the variable, far from the cause; the daemon refuses the file the same way.
fn withheld(key: &str, value: &DeValue<'_>) -> Option<String> {
    if key != "nextflow.pass_env" {
        return None;
    }
    texts(value)?
        .into_iter()
        .find(|name| WITHHELD_VARIABLES.contains(name))
        .map(|name| {
            format!("lists `{name}`, a model provider's key or Codaris's own, which never passes to a run")
        })
}

/// What `value` is, for a sentence: `the text "yes"`, `the number 3`.
fn described(value: &DeValue<'_>) -> String {
    match value {
        DeValue::String(text) => format!("the text `{text:?}`"),
        DeValue::Integer(number) => format!("the number `{number}`"),
        DeValue::Float(number) => format!("the number `{number}`"),
        DeValue::Boolean(flag) => format!("`{flag}`"),
        DeValue::Datetime(when) => format!("the date `{when}`"),
        DeValue::Array(_) => "a list".to_owned(),
        DeValue::Table(_) => "a table".to_owned(),
    }
}

fn integer(value: &DeValue<'_>) -> Option<i128> {
    let DeValue::Integer(number) = value else {
        return None;
    };
    let digits = number.as_str().replace('_', "");
    let (negative, digits) = match digits.strip_prefix('-') {
        Some(rest) => (true, rest.to_owned()),
        None => (false, digits.trim_start_matches('+').to_owned()),
    };
    let digits = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0o"))
        .or_else(|| digits.strip_prefix("0b"))
        .unwrap_or(&digits);
    let magnitude = i128::from_str_radix(digits, number.radix()).ok()?;
    Some(if negative { -magnitude } else { magnitude })
}

fn texts<'a>(value: &'a DeValue<'_>) -> Option<Vec<&'a str>> {
    let DeValue::Array(items) = value else {
        return None;
    };
    items
        .iter()
        .map(|item| match item.get_ref() {
            DeValue::String(text) => Some(text.as_ref()),
            _ => None,
        })
        .collect()
}

fn is_url(text: &str) -> bool {
    let text = text.trim();
    text.strip_prefix("http://")
        .or_else(|| text.strip_prefix("https://"))
        .and_then(|rest| rest.split(['/', '?', '#']).next())
        .is_some_and(|host| !host.is_empty())
}

fn is_loopback(text: &str) -> bool {
    text.parse::<std::net::SocketAddr>()
        .is_ok_and(|addr| addr.ip().is_loopback())
}

fn is_engine(name: &str) -> bool {
    matches!(name.trim(), "brave" | "bing" | "duckduckgo")
        || name.trim().strip_prefix("searxng:").is_some_and(is_url)
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_size(text: &str) -> bool {
    let text = text.trim();
    let digits = text.trim_end_matches(['K', 'M', 'G', 'T', 'k', 'm', 'g', 't']);
    !digits.is_empty() && digits.len() + 1 >= text.len() && digits.parse::<u64>().is_ok()
}

/// Why `value` is not of `kind`, as the end of a sentence that starts with the key; `None`
/// when it is.
fn wrong(kind: Kind, value: &DeValue<'_>) -> Option<String> {
    let not = |what: &str| Some(format!("must be {what}, not {}", described(value)));
    let text = match value {
        DeValue::String(text) => Some(text.as_ref()),
        _ => None,
    };
    match kind {
        Kind::Bool => (!matches!(value, DeValue::Boolean(_))).then(|| not("true or false"))?,
        Kind::Integer { min, max } => match integer(value) {
            None => not("a whole number"),
            Some(n) if n < i128::from(min) || n > i128::from(max) => Some(if max == u64::MAX {
                format!("must be at least {min}, not {n}")
            } else {
                format!("must be from {min} to {max}, not {n}")
            }),
            Some(_) => None,
        },
        Kind::Seconds => {
            let seconds = match value {
                DeValue::Float(number) => number.as_str().replace('_', "").parse::<f64>().ok(),
                _ => integer(value).map(|n| n as f64),
            };
            match seconds {
                None => not("a number of seconds"),
                Some(s) if !(s > 0.0 && s <= 86_400.0) => Some(format!(
                    "must be above 0 and at most 86400 seconds, not {s}"
                )),
                Some(_) => None,
            }
        }
        Kind::Share => {
            let share = match value {
                DeValue::Float(number) => number.as_str().replace('_', "").parse::<f64>().ok(),
                _ => integer(value).map(|n| n as f64),
            };
            match share {
                None => not("a share such as 0.6"),
                Some(s) if !(0.05..=1.0).contains(&s) => {
                    Some(format!("must be a share from 0.05 to 1, not {s}"))
                }
                Some(_) => None,
            }
        }
        Kind::Text => text.is_none().then(|| not("text"))?,
        Kind::OneOf(words) => {
            let list = words
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(", ");
            match text {
                Some(word) if words.contains(&word) => None,
                Some(word) => Some(format!("must be one of {list}, not `{word}`")),
                None => not(&format!("one of {list}")),
            }
        }
        Kind::Texts => texts(value).is_none().then(|| not("a list of text"))?,
        Kind::TextMap => match value {
            DeValue::Table(entries)
                if entries
                    .values()
                    .all(|v| matches!(v.get_ref(), DeValue::String(_))) =>
            {
                None
            }
            _ => not("a table of names to text"),
        },
        Kind::AbsolutePath => match text {
            Some(path) if path.starts_with('/') => None,
            Some(path) => Some(format!("must be an absolute path, not `{path}`")),
            None => not("an absolute path"),
        },
        Kind::AbsolutePaths => match texts(value) {
            None => not("a list of absolute paths"),
            Some(paths) => paths
                .iter()
                .find(|p| !p.starts_with('/'))
                .map(|p| format!("must hold absolute paths, not `{p}`")),
        },
        Kind::Url => match text {
            Some(url) if is_url(url) => None,
            Some(url) => Some(format!("`{url}` is not an http:// or https:// URL")),
            None => not("an http:// or https:// URL"),
        },
        Kind::Loopback => match text {
            Some(addr) if is_loopback(addr) => None,
            Some(addr) => Some(format!(
                "must be a loopback address with a port such as 127.0.0.1:7457, not `{addr}`"
            )),
            None => not("a loopback address with a port such as 127.0.0.1:7457"),
        },
        Kind::Size => match (text, integer(value)) {
            (Some(size), _) if is_size(size) => None,
            (None, Some(n)) if n >= 0 => None,
            _ => not("a number of bytes or a size such as `8G` or `512M`"),
        },
        Kind::Engines => match texts(value) {
            None => not("a list of engines"),
            Some(names) if names.is_empty() => {
                Some("names no engine; leave it out for brave and bing".to_owned())
            }
            Some(names) => names.iter().find(|n| !is_engine(n)).map(|n| {
                format!(
                    "`{n}` is not an engine: use brave, bing, duckduckgo or searxng:<http(s) URL>"
                )
            }),
        },
        Kind::Matcher => match text {
            Some(matcher) => crate::hooks::hook_matcher(matcher).err().map(|err| {
                format!(
                    "`{matcher}` is not a regular expression: {}",
                    one_line(&err.to_string())
                )
            }),
            None => not("a regular expression over tool names"),
        },
        Kind::Argv => match texts(value) {
            None => not("a program and its arguments as a list of text (not a shell line)"),
            Some(argv) if argv.first().is_none_or(|program| program.trim().is_empty()) => {
                Some("names no program; give the program and its arguments, such as `[\"/usr/local/bin/check\", \"--strict\"]`".to_owned())
            }
            Some(_) => None,
        },
        Kind::VariableNames => match texts(value) {
            None => not("a list of variable names"),
            Some(names) => names
                .iter()
                .find(|n| !is_variable_name(n))
                .map(|n| format!("`{n}` is not a variable name")),
        },
    }
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
