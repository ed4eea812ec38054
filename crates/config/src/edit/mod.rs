//! Staged edits of the configuration file, as the configuration tools and `codaris config
//! set` make them: uci-like [`Command`]s (`set a.b=v`, `add_list a.b=v`, `del_list a.b=v`,
//! `delete a.b`) applied to the file's text with `toml_edit`, so the person's comments, order
//! and layout survive an edit; a value read back by a dotted path ([`get`]) with every secret
//! redacted; and the redacted diff a commit shows ([`diff`]).
//!
//! Pure: text in, text out. Staging, writing and reloading are the daemon's.

mod changed;
mod path;
mod redact;

use toml_edit::{DocumentMut, Item, Table, Value};

pub use changed::changed_keys;
pub use path::{ConfigPath, Names};
pub use redact::{is_secret, redact_command, redacted};

use crate::keys::Kind;

/// What an edit cannot do, one line each, naming the path or command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("`{path}` is not a configuration path: {why}")]
    Path { path: String, why: String },
    #[error("no key `{key}` in the configuration")]
    UnknownKey { key: String },
    #[error(
        "`{line}` is not a command: write `set PATH=VALUE`, `add_list PATH=VALUE`, `del_list PATH=VALUE` or `delete PATH`"
    )]
    Syntax { line: String },
    #[error("`{key}` is not a list; use `set`")]
    NotAList { key: String },
    #[error("`{key}` is a table; set the keys under it, or give a table such as `{{ a = 1 }}`")]
    NeedsTable { key: String },
    #[error("`{key}` is not set in the file")]
    NotSet { key: String },
    #[error("`{key}` has no `{value}` in its list")]
    NotInList { key: String, value: String },
    #[error("`{key}` has {count} entries; entry [{index}] does not exist")]
    NoEntry {
        key: String,
        index: usize,
        count: usize,
    },
    #[error("`{key}`: {why}")]
    Shape { key: String, why: String },
    #[error("the file does not parse as TOML: {why}")]
    File { why: String },
}

/// What a command does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Set,
    AddList,
    DelList,
    Delete,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Set => "set",
            Op::AddList => "add_list",
            Op::DelList => "del_list",
            Op::Delete => "delete",
        }
    }
}

/// One staged command, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub op: Op,
    pub path: ConfigPath,
    /// The value as written after `=`; `None` for `delete`.
    pub value: Option<String>,
}

impl Command {
    /// Parses one line: `set PATH=VALUE`, `add_list PATH=VALUE`, `del_list PATH=VALUE`,
    /// `delete PATH`. The path must name a key of the configuration.
    pub fn parse(line: &str) -> Result<Self, EditError> {
        let line = line.trim();
        let syntax = || EditError::Syntax {
            line: line.to_owned(),
        };
        let (word, rest) = line.split_once(char::is_whitespace).ok_or_else(syntax)?;
        let op = match word {
            "set" => Op::Set,
            "add_list" => Op::AddList,
            "del_list" => Op::DelList,
            "delete" => Op::Delete,
            _ => return Err(syntax()),
        };
        let rest = rest.trim();
        let (path, value) = match op {
            Op::Delete => (rest, None),
            _ => {
                let (path, value) = rest.split_once('=').ok_or_else(syntax)?;
                (path.trim(), Some(value.trim().to_owned()))
            }
        };
        let path = ConfigPath::parse(path)?;
        if path.steps.is_empty() {
            return Err(EditError::Path {
                path: ".".to_owned(),
                why: "a command changes one key or table, not the whole file".to_owned(),
            });
        }
        let names = path.names()?;
        match (op, names) {
            (Op::AddList | Op::DelList, Names::Key(key)) if !is_list(key.kind) => {
                return Err(EditError::NotAList { key: path.shown() });
            }
            (Op::AddList | Op::DelList, Names::Table | Names::TableArray { entry: true }) => {
                return Err(EditError::NotAList { key: path.shown() });
            }
            (Op::DelList, Names::TableArray { .. }) => {
                return Err(EditError::Shape {
                    key: path.shown(),
                    why: "remove an entry with `delete PATH[N]`".to_owned(),
                });
            }
            _ => {}
        }
        Ok(Self { op, path, value })
    }

    /// The command as written back, one line.
    pub fn line(&self) -> String {
        match &self.value {
            Some(value) => format!("{} {}={value}", self.op.as_str(), self.path.shown()),
            None => format!("{} {}", self.op.as_str(), self.path.shown()),
        }
    }
}

/// The table `parent` is, for a key to go in.
fn table_of<'a>(
    parent: &'a mut Item,
    shown: &str,
) -> Result<&'a mut dyn toml_edit::TableLike, EditError> {
    parent.as_table_like_mut().ok_or_else(|| EditError::Shape {
        key: shown.to_owned(),
        why: "the key above it holds a value, not a table".to_owned(),
    })
}

/// Whether a key of `kind` holds a list `add_list` and `del_list` work on.
fn is_list(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Texts | Kind::AbsolutePaths | Kind::VariableNames | Kind::Engines | Kind::Argv
    )
}

/// Parses the file's text for editing; an empty text is an empty file.
pub fn parse_document(text: &str) -> Result<DocumentMut, EditError> {
    text.parse::<DocumentMut>().map_err(|err| EditError::File {
        why: err
            .message()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    })
}

/// Applies `command` to `doc`. The value's kind is the key's: text where the key takes text
/// (`set provider.model=gpt-4o` needs no quotes), else the TOML value written; what it adds up
/// to is [`crate::check`]'s to judge afterwards.
pub fn apply(doc: &mut DocumentMut, command: &Command) -> Result<(), EditError> {
    let names = command.path.names()?;
    let (parent_steps, last) = match command.path.steps.split_last() {
        Some((last, parent)) => (parent, last),
        None => {
            return Err(EditError::Path {
                path: ".".to_owned(),
                why: "a command changes one key or table".to_owned(),
            });
        }
    };
    let shown = command.path.shown();
    let create = command.op != Op::Delete && command.op != Op::DelList;
    let parent = walk_mut(doc.as_item_mut(), parent_steps, create, &shown)?;
    let raw = command.value.as_deref().unwrap_or_default();
    match command.op {
        Op::Set => set(parent, last, names, raw, &shown),
        Op::AddList => add_list(parent, last, names, raw, &shown),
        Op::DelList => del_list(parent, last, raw, &shown),
        Op::Delete => delete(parent, last, &shown),
    }
}

/// The item `steps` lead to from `item`, tables made on the way when `create`.
fn walk_mut<'a>(
    mut item: &'a mut Item,
    steps: &[path::Step],
    create: bool,
    shown: &str,
) -> Result<&'a mut Item, EditError> {
    for step in steps {
        let table = item.as_table_like_mut().ok_or_else(|| EditError::Shape {
            key: shown.to_owned(),
            why: format!("`{}` holds a value, not a table", step.name),
        })?;
        if create && !table.contains_key(&step.name) {
            let mut new = Table::new();
            // `[mcp.servers.docs]` alone, not an empty `[mcp]` and `[mcp.servers]` above it.
            new.set_implicit(true);
            table.insert(&step.name, Item::Table(new));
        }
        item = table.get_mut(&step.name).ok_or_else(|| EditError::NotSet {
            key: shown.to_owned(),
        })?;
        if let Some(index) = step.index {
            let count = item.as_array_of_tables().map_or(0, |a| a.len());
            item = item.get_mut(index).ok_or(EditError::NoEntry {
                key: step.name.clone(),
                index,
                count,
            })?;
        }
    }
    Ok(item)
}

fn set(
    parent: &mut Item,
    last: &path::Step,
    names: Names,
    raw: &str,
    shown: &str,
) -> Result<(), EditError> {
    // Inside an inline table (`env = { A = "b" }`) every entry stays a value.
    let inline = parent.is_inline_table();
    let table = table_of(parent, shown)?;
    let new = match names {
        Names::Key(key) => Item::Value(value_of(key.kind, raw)),
        Names::Table | Names::TableArray { .. } | Names::File => {
            let Ok(Value::InlineTable(given)) = raw.parse::<Value>() else {
                return Err(EditError::NeedsTable {
                    key: shown.to_owned(),
                });
            };
            match (names, last.index) {
                (Names::TableArray { .. }, Some(index)) => {
                    let entries = table
                        .get_mut(&last.name)
                        .and_then(Item::as_array_of_tables_mut)
                        .ok_or_else(|| EditError::NotSet {
                            key: shown.to_owned(),
                        })?;
                    let count = entries.len();
                    let entry = entries.get_mut(index).ok_or(EditError::NoEntry {
                        key: last.name.clone(),
                        index,
                        count,
                    })?;
                    *entry = given.into_table();
                    return Ok(());
                }
                (Names::TableArray { .. }, None) => {
                    let mut entries = toml_edit::ArrayOfTables::new();
                    entries.push(given.into_table());
                    Item::ArrayOfTables(entries)
                }
                _ if inline => Item::Value(Value::InlineTable(given)),
                _ => Item::Table(given.into_table()),
            }
        }
    };
    table.insert(&last.name, new);
    Ok(())
}

fn add_list(
    parent: &mut Item,
    last: &path::Step,
    names: Names,
    raw: &str,
    shown: &str,
) -> Result<(), EditError> {
    let table = table_of(parent, shown)?;
    if let Names::TableArray { .. } = names {
        let Ok(Value::InlineTable(given)) = raw.parse::<Value>() else {
            return Err(EditError::NeedsTable {
                key: shown.to_owned(),
            });
        };
        let slot = table
            .entry(&last.name)
            .or_insert(Item::ArrayOfTables(toml_edit::ArrayOfTables::new()));
        let entries = slot
            .as_array_of_tables_mut()
            .ok_or_else(|| EditError::Shape {
                key: shown.to_owned(),
                why: "is written as a list of inline tables; add to it with `set`".to_owned(),
            })?;
        entries.push(given.into_table());
        return Ok(());
    }
    let slot = table
        .entry(&last.name)
        .or_insert(Item::Value(Value::Array(toml_edit::Array::new())));
    let list = slot.as_array_mut().ok_or_else(|| EditError::NotAList {
        key: shown.to_owned(),
    })?;
    list.push(element(raw));
    Ok(())
}

fn del_list(parent: &mut Item, last: &path::Step, raw: &str, shown: &str) -> Result<(), EditError> {
    let wanted = element(raw);
    let list = parent
        .get_mut(last.name.as_str())
        .and_then(Item::as_array_mut)
        .ok_or_else(|| EditError::NotSet {
            key: shown.to_owned(),
        })?;
    let before = list.len();
    list.retain(|value| !same(value, &wanted));
    if list.len() == before {
        return Err(EditError::NotInList {
            key: shown.to_owned(),
            value: raw.to_owned(),
        });
    }
    Ok(())
}

fn delete(parent: &mut Item, last: &path::Step, shown: &str) -> Result<(), EditError> {
    let table = parent
        .as_table_like_mut()
        .ok_or_else(|| EditError::NotSet {
            key: shown.to_owned(),
        })?;
    match last.index {
        None => table
            .remove(&last.name)
            .map(drop)
            .ok_or_else(|| EditError::NotSet {
                key: shown.to_owned(),
            }),
        Some(index) => {
            let entries = table
                .get_mut(&last.name)
                .and_then(Item::as_array_of_tables_mut)
                .ok_or_else(|| EditError::NotSet {
                    key: shown.to_owned(),
                })?;
            if index >= entries.len() {
                return Err(EditError::NoEntry {
                    key: last.name.clone(),
                    index,
                    count: entries.len(),
                });
            }
            entries.remove(index);
            if entries.is_empty() {
                table.remove(&last.name);
            }
            Ok(())
        }
    }
}

/// Two list entries are the same value: text by its text, others by how they are written.
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_str(), b.as_str()) {
        (Some(a), Some(b)) => a == b,
        _ => a.to_string().trim() == b.to_string().trim(),
    }
}

/// A list entry: a quoted TOML string as that string, else the text as written.
fn element(raw: &str) -> Value {
    match raw.parse::<Value>() {
        Ok(value @ Value::String(_)) => value,
        _ => Value::from(raw),
    }
}

/// The value `raw` gives a key of `kind`: text kinds take the text as written unless it is a
/// quoted TOML string; the others take the TOML value, else the text (which the check then
/// reports, `must be true or false, not the text "yes"`).
fn value_of(kind: Kind, raw: &str) -> Value {
    let parsed = raw.parse::<Value>().ok();
    let text_kind = matches!(
        kind,
        Kind::Text
            | Kind::OneOf(_)
            | Kind::AbsolutePath
            | Kind::Url
            | Kind::Loopback
            | Kind::Matcher
    );
    let value = match parsed {
        Some(value @ Value::String(_)) => value,
        Some(_) if text_kind => Value::from(raw),
        Some(value) => value,
        None if is_list(kind) => {
            let mut list = toml_edit::Array::new();
            list.push(raw);
            Value::Array(list)
        }
        None => Value::from(raw),
    };
    value.decorated(" ", "")
}

/// The value at `path` in the file's text, redacted, as TOML: `key = value` for a key, the
/// table with its header for a table, the whole file for `.`. `Ok(None)`: not set in the file.
pub fn get(text: &str, path: &ConfigPath) -> Result<Option<String>, EditError> {
    path.names()?;
    let doc = redacted(&parse_document(text)?, None);
    if path.steps.is_empty() {
        return Ok(Some(doc.to_string()));
    }
    let mut item = doc.as_item();
    for step in &path.steps {
        let Some(next) = item.get(step.name.as_str()) else {
            return Ok(None);
        };
        item = next;
        if let Some(index) = step.index {
            let Some(next) = item.get(index) else {
                return Ok(None);
            };
            item = next;
        }
    }
    let shown = path.shown();
    Ok(Some(match item {
        Item::Value(value) => format!("{shown} = {}", value.to_string().trim()),
        Item::Table(table) => {
            let mut one = DocumentMut::new();
            one.insert(&shown, Item::Table(table.clone()));
            one.to_string()
                .replacen(&format!("[\"{shown}\"]"), &format!("[{shown}]"), 1)
                .trim_start()
                .to_owned()
        }
        Item::ArrayOfTables(entries) => {
            let mut out = String::new();
            for entry in entries.iter() {
                out.push_str(&format!("[[{shown}]]\n{entry}"));
            }
            out
        }
        Item::None => return Ok(None),
    }))
}

/// The unified diff of the file from `before` to `after`, secrets redacted (a changed secret
/// shows as `<redacted, changed>`); empty when they are the same.
pub fn diff(before: &str, after: &str, file: &str) -> Result<String, EditError> {
    let old = parse_document(before)?;
    let new = parse_document(after)?;
    let old_shown = redacted(&old, None).to_string();
    let new_shown = redacted(&new, Some(&old)).to_string();
    if old_shown == new_shown {
        return Ok(String::new());
    }
    Ok(similar::TextDiff::from_lines(&old_shown, &new_shown)
        .unified_diff()
        .context_radius(2)
        .header(file, file)
        .to_string())
}

#[cfg(test)]
mod tests;
