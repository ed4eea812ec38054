//! A dotted, uci-style path into the configuration file: `tools.http_allowlist`,
//! `mcp.servers.docs.url`, `hooks.pre_tool_use[0].matcher`; `.` is the whole file.

use crate::keys::{KEYS, MAPS, TABLE_ARRAYS, key_named};

use super::EditError;

/// One step of a path: a key, and for an array of tables the entry's index (from 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub name: String,
    pub index: Option<usize>,
}

/// A parsed path. Empty: the whole file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConfigPath {
    pub steps: Vec<Step>,
}

/// What a path names, by the keys of [`KEYS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Names {
    /// The whole file.
    File,
    /// A key that takes a value.
    Key(&'static crate::keys::Key),
    /// A table some keys lie under (`tools`, `mcp.servers.docs`).
    Table,
    /// An array of tables (`hooks.pre_tool_use`), or one entry of it with an index.
    TableArray { entry: bool },
}

impl ConfigPath {
    /// Parses `text`: `.` (or nothing) for the whole file, else dot-separated names of
    /// letters, digits, `_` and `-`, each perhaps followed by `[N]`.
    pub fn parse(text: &str) -> Result<Self, EditError> {
        let text = text.trim();
        if text.is_empty() || text == "." {
            return Ok(Self::default());
        }
        let bad = |why: &str| EditError::Path {
            path: text.to_owned(),
            why: why.to_owned(),
        };
        let mut steps = Vec::new();
        for part in text.split('.') {
            let (name, index) = match part.split_once('[') {
                None => (part, None),
                Some((name, rest)) => {
                    let digits = rest
                        .strip_suffix(']')
                        .ok_or_else(|| bad("an index is written `[N]`"))?;
                    let index = digits
                        .parse::<usize>()
                        .map_err(|_| bad("an index is a whole number from 0"))?;
                    (name, Some(index))
                }
            };
            if name.is_empty() {
                return Err(bad("it has an empty name"));
            }
            if !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(bad("names are letters, digits, `_` and `-`"));
            }
            steps.push(Step {
                name: name.to_owned(),
                index,
            });
        }
        Ok(Self { steps })
    }

    /// The path as written back: `hooks.pre_tool_use[0].matcher`, `.` for the whole file.
    pub fn shown(&self) -> String {
        if self.steps.is_empty() {
            return ".".to_owned();
        }
        self.steps
            .iter()
            .map(|step| match step.index {
                Some(index) => format!("{}[{index}]", step.name),
                None => step.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(".")
    }

    /// The key's pattern in [`KEYS`]: indices dropped, a map's names as `*`.
    pub fn pattern(&self) -> String {
        let mut pattern = String::new();
        for step in &self.steps {
            let name = if MAPS.contains(&pattern.as_str()) {
                "*"
            } else {
                step.name.as_str()
            };
            if !pattern.is_empty() {
                pattern.push('.');
            }
            pattern.push_str(name);
        }
        pattern
    }

    /// What the path names; an error naming the path when no key of the file lies there, or an
    /// index is used where there is no array of tables.
    pub fn names(&self) -> Result<Names, EditError> {
        if self.steps.is_empty() {
            return Ok(Names::File);
        }
        let mut prefix = String::new();
        for (at, step) in self.steps.iter().enumerate() {
            let name = if MAPS.contains(&prefix.as_str()) {
                "*"
            } else {
                step.name.as_str()
            };
            if !prefix.is_empty() {
                prefix.push('.');
            }
            prefix.push_str(name);
            let is_array = TABLE_ARRAYS.contains(&prefix.as_str());
            if step.index.is_some() && !is_array {
                return Err(EditError::Path {
                    path: self.shown(),
                    why: format!("`{prefix}` is not an array of tables; only those take `[N]`"),
                });
            }
            let last = at + 1 == self.steps.len();
            if last {
                if let Some(key) = key_named(&prefix) {
                    return Ok(Names::Key(key));
                }
                if is_array {
                    return Ok(Names::TableArray {
                        entry: step.index.is_some(),
                    });
                }
                if is_table(&prefix) {
                    return Ok(Names::Table);
                }
            } else if key_named(&prefix).is_some() {
                return Err(EditError::Path {
                    path: self.shown(),
                    why: format!("`{prefix}` takes a value, not keys under it"),
                });
            }
        }
        Err(EditError::UnknownKey { key: self.shown() })
    }

    /// Whether `self` is `other` or lies under it.
    pub fn is_within(&self, other: &ConfigPath) -> bool {
        other.steps.len() <= self.steps.len()
            && other.steps.iter().zip(&self.steps).all(|(outer, inner)| {
                outer.name == inner.name && (outer.index.is_none() || outer.index == inner.index)
            })
    }
}

/// Whether some key lies under the table `pattern`.
pub(crate) fn is_table(pattern: &str) -> bool {
    let inner = format!("{pattern}.");
    KEYS.iter().any(|key| key.name.starts_with(&inner)) || MAPS.contains(&pattern)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_and_name_their_keys() -> Result<(), EditError> {
        let path = ConfigPath::parse("mcp.servers.docs.url")?;
        assert_eq!(path.pattern(), "mcp.servers.*.url");
        assert!(matches!(path.names()?, Names::Key(key) if key.name == "mcp.servers.*.url"));
        let hook = ConfigPath::parse("hooks.pre_tool_use[1].matcher")?;
        assert_eq!(hook.shown(), "hooks.pre_tool_use[1].matcher");
        assert!(matches!(hook.names()?, Names::Key(_)));
        assert_eq!(
            ConfigPath::parse("hooks.pre_tool_use[0]")?.names()?,
            Names::TableArray { entry: true }
        );
        assert_eq!(ConfigPath::parse("tools")?.names()?, Names::Table);
        assert_eq!(ConfigPath::parse(".")?.names()?, Names::File);
        Ok(())
    }

    #[test]
    fn bad_paths_are_named() -> Result<(), EditError> {
        for bad in ["tools..x", "tools.x y", "hooks.pre_tool_use[x]", "a[1"] {
            assert!(ConfigPath::parse(bad).is_err(), "{bad}");
        }
        let unknown = ConfigPath::parse("tools.no_such_key")?.names();
        assert_eq!(
            unknown.map_err(|e| e.to_string()),
            Err("no key `tools.no_such_key` in the configuration".to_owned())
        );
        assert!(ConfigPath::parse("tools[0]")?.names().is_err());
        assert!(ConfigPath::parse("tools.background.x")?.names().is_err());
        Ok(())
    }

    #[test]
    fn within_is_by_whole_steps() -> Result<(), EditError> {
        let inner = ConfigPath::parse("tools.http_allowlist")?;
        assert!(inner.is_within(&ConfigPath::parse("tools")?));
        assert!(inner.is_within(&ConfigPath::parse(".")?));
        assert!(!ConfigPath::parse("toolsx.a")?.is_within(&ConfigPath::parse("tools")?));
        Ok(())
    }
}
