//! Reading a call's arguments: one object, each field checked for its type, and a one-line
//! sentence for the model when something is wrong (never a panic, never a silent default for a
//! value of the wrong type).

use serde_json::{Map, Value};

use crate::ToolFailure;

/// The longest string argument taken (a name, a path, a search); longer is refused.
pub const MAX_STRING: usize = 4096;

/// A call's arguments, known to be a JSON object.
#[derive(Debug)]
pub struct Args<'a> {
    tool: &'static str,
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// The arguments of a call of `tool`; anything but an object (or nothing) is refused.
    pub fn of(tool: &'static str, value: &'a Value) -> Result<Args<'a>, ToolFailure> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        match value {
            Value::Object(map) => Ok(Args { tool, map }),
            Value::Null => Ok(Args {
                tool,
                map: EMPTY.get_or_init(Map::new),
            }),
            _ => Err(ToolFailure::new(format!(
                "{tool}: the arguments must be a JSON object"
            ))),
        }
    }

    fn wrong(&self, key: &str, what: &str) -> ToolFailure {
        ToolFailure::new(format!("{}: `{key}` must be {what}", self.tool))
    }

    /// A string that must be there and not be blank.
    pub fn required_str(&self, key: &str) -> Result<&'a str, ToolFailure> {
        self.optional_str(key)?
            .ok_or_else(|| self.wrong(key, "a non-empty string (it is required)"))
    }

    /// A string that may be missing (or null); blank counts as missing.
    pub fn optional_str(&self, key: &str) -> Result<Option<&'a str>, ToolFailure> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) if text.len() > MAX_STRING => {
                Err(self.wrong(key, &format!("a string of at most {MAX_STRING} bytes")))
            }
            Some(Value::String(text)) => {
                let text = text.trim();
                Ok((!text.is_empty()).then_some(text))
            }
            Some(_) => Err(self.wrong(key, "a string")),
        }
    }

    /// A list of non-empty strings, at most `max` of them.
    pub fn optional_strings(
        &self,
        key: &str,
        max: usize,
    ) -> Result<Option<Vec<&'a str>>, ToolFailure> {
        let what = format!("a list of at most {max} non-empty strings");
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) if items.len() <= max => items
                .iter()
                .map(|item| match item {
                    Value::String(text) if !text.trim().is_empty() && text.len() <= MAX_STRING => {
                        Ok(text.trim())
                    }
                    _ => Err(self.wrong(key, &what)),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(self.wrong(key, &what)),
        }
    }

    pub fn optional_bool(&self, key: &str) -> Result<Option<bool>, ToolFailure> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(_) => Err(self.wrong(key, "true or false")),
        }
    }

    /// A whole number from `min` to `max`.
    pub fn optional_u64(&self, key: &str, min: u64, max: u64) -> Result<Option<u64>, ToolFailure> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_u64()
                .filter(|n| (min..=max).contains(n))
                .map(Some)
                .ok_or_else(|| self.wrong(key, &format!("a whole number from {min} to {max}"))),
        }
    }

    /// A Seqera id: digits for a workspace, letters and digits for a run. It goes into a URL
    /// path, so nothing else is let through.
    pub fn required_id(&self, key: &str) -> Result<&'a str, ToolFailure> {
        let id = self.required_str(key)?;
        if id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric()) {
            Ok(id)
        } else {
            Err(self.wrong(key, "an id of letters and digits"))
        }
    }

    /// A workspace id, given as a number or as a string of digits.
    pub fn optional_workspace(&self, key: &str) -> Result<Option<u64>, ToolFailure> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a workspace id (a whole number)")),
            Some(Value::String(text)) => text
                .trim()
                .parse::<u64>()
                .map(Some)
                .map_err(|_| self.wrong(key, "a workspace id (a whole number)")),
            Some(_) => Err(self.wrong(key, "a workspace id (a whole number)")),
        }
    }
}

/// `1 run`, `2 runs`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The first `max` characters of `text`, on a character boundary, on one line, with an
/// ellipsis when cut (for quoting an answer body in an error).
pub fn cut(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let one_line = one_line.trim();
    match one_line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn non_objects_are_refused_and_null_is_empty() {
        for bad in [json!([1]), json!("x"), json!(3), json!(true)] {
            let err = Args::of("t", &bad).unwrap_err();
            assert_eq!(err.0, "t: the arguments must be a JSON object");
        }
        let null = Value::Null;
        let args = Args::of("t", &null).unwrap();
        assert_eq!(args.optional_str("x").unwrap(), None);
    }

    #[test]
    fn wrong_types_and_sizes_are_sentences() {
        let value = json!({"n": "3", "s": 3, "l": ["a", 2], "b": "yes", "huge": "x".repeat(MAX_STRING + 1), "id": "../etc"});
        let args = Args::of("t", &value).unwrap();
        assert_eq!(
            args.optional_u64("n", 1, 5).unwrap_err().0,
            "t: `n` must be a whole number from 1 to 5"
        );
        assert_eq!(
            args.optional_str("s").unwrap_err().0,
            "t: `s` must be a string"
        );
        assert!(args.optional_strings("l", 3).is_err());
        assert!(args.optional_bool("b").is_err());
        assert!(args.optional_str("huge").is_err());
        assert!(args.required_id("id").is_err());
        assert!(
            args.required_str("missing")
                .unwrap_err()
                .0
                .contains("required")
        );
    }

    #[test]
    fn cut_keeps_one_line_on_a_char_boundary() {
        assert_eq!(cut("ab\ncdé", 4), "ab c…");
        assert_eq!(cut("short", 10), "short");
    }
}
