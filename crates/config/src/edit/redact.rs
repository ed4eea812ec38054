//! Secrets never leave an edit: keys, tokens, MCP servers' headers and environments, and
//! request headers are shown as `"<redacted>"` by [`super::get`], in a diff, and in a staged
//! command read back.

use std::collections::BTreeMap;

use toml_edit::{DocumentMut, Item, Value};

use super::{Command, Op};

/// The shown form of a secret that is set.
pub const REDACTED: &str = "<redacted>";
/// The shown form of a secret an edit changes.
pub const REDACTED_CHANGED: &str = "<redacted, changed>";

/// Whether the value at dotted `key` is a secret: a provider's or NCBI's API key, a token, an
/// MCP server's headers or environment, a collector's headers, the headers every request
/// carries (an `Authorization` among them).
pub fn is_secret(key: &str) -> bool {
    let last = key.rsplit('.').next().unwrap_or(key);
    last == "api_key"
        || last == "token"
        || (key.starts_with("mcp.") && (key.contains(".headers.") || key.contains(".env.")))
        || key.starts_with("telemetry.headers.")
        || key.starts_with("tools.http_default_headers.")
}

/// `command` as it may be shown: a value set under a secret key (or a table given whole that
/// holds one) is `<redacted>`.
pub fn redact_command(command: &Command) -> String {
    match command.op {
        Op::Set | Op::AddList | Op::DelList if command.value_has_secret() => {
            format!(
                "{} {}={REDACTED}",
                command.op.as_str(),
                command.path.shown()
            )
        }
        _ => command.line(),
    }
}

impl Command {
    /// Whether this command's value could carry a secret: a value of a secret key, or a table
    /// given whole under which one lies.
    fn value_has_secret(&self) -> bool {
        let key = self.path.pattern();
        if is_secret(&key) || is_secret(&format!("{key}.x")) {
            return true;
        }
        // A table given whole: look at what it sets.
        let Some(raw) = &self.value else {
            return false;
        };
        let Ok(Value::InlineTable(table)) = raw.parse::<Value>() else {
            return false;
        };
        let mut found = false;
        for (name, value) in table.iter() {
            let inner = format!("{key}.{name}");
            found |= is_secret(&inner) || holds_secret_value(&inner, value);
        }
        found
    }
}

fn holds_secret_value(key: &str, value: &Value) -> bool {
    match value {
        Value::InlineTable(table) => table.iter().any(|(name, inner)| {
            let inner_key = format!("{key}.{name}");
            is_secret(&inner_key) || holds_secret_value(&inner_key, inner)
        }),
        _ => false,
    }
}

/// A copy of `doc` with every secret's value replaced by [`REDACTED`]; with `before`, a secret
/// whose value differs from (or is absent in) `before` shows as [`REDACTED_CHANGED`].
pub fn redacted(doc: &DocumentMut, before: Option<&DocumentMut>) -> DocumentMut {
    let mut old = BTreeMap::new();
    if let Some(before) = before {
        collect(before.as_item(), "", &mut old);
    }
    let mut copy = doc.clone();
    hide(copy.as_item_mut(), "", before.map(|_| &old));
    copy
}

/// The secrets' values written in `item`, by dotted path with indices.
fn collect(item: &Item, key: &str, out: &mut BTreeMap<String, String>) {
    match item {
        Item::Value(Value::InlineTable(table)) => {
            for (name, value) in table.iter() {
                collect_value(value, &join(key, name), out);
            }
        }
        Item::Value(value) if is_secret(key) => {
            out.insert(key.to_owned(), value.to_string().trim().to_owned());
        }
        Item::Table(table) => {
            for (name, inner) in table.iter() {
                collect(inner, &join(key, name), out);
            }
        }
        Item::ArrayOfTables(entries) => {
            for (index, entry) in entries.iter().enumerate() {
                for (name, inner) in entry.iter() {
                    collect(inner, &join(&format!("{key}[{index}]"), name), out);
                }
            }
        }
        _ => {}
    }
}

fn collect_value(value: &Value, key: &str, out: &mut BTreeMap<String, String>) {
    match value {
        Value::InlineTable(table) => {
            for (name, inner) in table.iter() {
                collect_value(inner, &join(key, name), out);
            }
        }
        value if is_secret(key) => {
            out.insert(key.to_owned(), value.to_string().trim().to_owned());
        }
        _ => {}
    }
}

fn hide(item: &mut Item, key: &str, old: Option<&BTreeMap<String, String>>) {
    match item {
        Item::Value(value) => hide_value(value, key, old),
        Item::Table(table) => {
            for (name, inner) in table.iter_mut() {
                let inner_key = join(key, name.get());
                hide(inner, &inner_key, old);
            }
        }
        Item::ArrayOfTables(entries) => {
            for (index, entry) in entries.iter_mut().enumerate() {
                for (name, inner) in entry.iter_mut() {
                    let inner_key = join(&format!("{key}[{index}]"), name.get());
                    hide(inner, &inner_key, old);
                }
            }
        }
        Item::None => {}
    }
}

fn hide_value(value: &mut Value, key: &str, old: Option<&BTreeMap<String, String>>) {
    if let Value::InlineTable(table) = value {
        for (name, inner) in table.iter_mut() {
            let inner_key = join(key, name.get());
            hide_value(inner, &inner_key, old);
        }
        return;
    }
    if !is_secret(&unindexed(key)) {
        return;
    }
    let changed =
        old.is_some_and(|old| old.get(key).map(String::as_str) != Some(value.to_string().trim()));
    let shown = if changed { REDACTED_CHANGED } else { REDACTED };
    let decor = value.decor().clone();
    *value = Value::from(shown);
    *value.decor_mut() = decor;
}

fn join(key: &str, name: &str) -> String {
    if key.is_empty() {
        name.to_owned()
    } else {
        format!("{key}.{name}")
    }
}

/// `hooks.pre_tool_use[0].x` as `hooks.pre_tool_use.x`, for [`is_secret`].
fn unindexed(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut skipping = false;
    for c in key.chars() {
        match c {
            '[' => skipping = true,
            ']' => skipping = false,
            c if !skipping => out.push(c),
            _ => {}
        }
    }
    out
}
