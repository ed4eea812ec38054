//! Server names and the names their tools are called by.
//!
//! A tool of server `fs` called `read_file` is offered as `fs__read_file`. Model APIs accept only
//! `^[A-Za-z0-9_-]{1,64}$`, and `__` separates the server from the tool. The rule for server
//! names and for reading a called name is `codaris-catalogue`'s ([`ToolId`]), written once:
//!
//! - a server name is 1–32 of `[A-Za-z0-9_-]`, never contains `__`, never ends with `_` (server
//!   `a_` with tool `b` and server `a` with tool `_b` would both give `a___b`), and is not `mcp`
//!   (reserved: `mcp__server__tool` is the spelling other agents use for `server__tool`);
//! - the first `__` of a prefixed name therefore ends the server's name, so two servers never
//!   share a prefixed name;
//! - a tool name that does not fit as is (over 64 characters with its prefix, or holding a
//!   character outside the set, such as the `.` and `/` newer servers may use) keeps its server
//!   prefix, has each outside character replaced by `_`, is cut to leave room, and ends in `-`
//!   and eight hex digits of the SHA-256 of the tool's own name. The same tool always gets the
//!   same name; two tools of one server that would still meet (a 32-bit clash) are caught where
//!   a tool set is taken in ([`prefixed_names`]), never silently merged.

use std::collections::BTreeMap;
use std::fmt;

use sha2::{Digest, Sha256};

pub use codaris_catalogue::{McpTool, SEPARATOR, SERVER_NAME_MAX, ToolId};
use codaris_catalogue::{ServerNameError, check_server_name};

/// The longest name a model API accepts for a tool.
pub const TOOL_NAME_MAX: usize = 64;
/// Hex digits of the tool name's digest a shortened name ends with.
const SUFFIX_HEX: usize = 8;

/// Why a server name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("a server name cannot be empty")]
    Empty,
    #[error("the server name `{0}` is longer than {SERVER_NAME_MAX} characters")]
    TooLong(String),
    #[error("the server name `{name}` holds `{found}`: use letters, digits, `-` and `_`")]
    Character { name: String, found: char },
    #[error("the server name `{0}` contains `__`, which separates a server from its tool")]
    Separator(String),
    #[error("the server name `{0}` ends with `_`, which would run into the `__` after it")]
    TrailingUnderscore(String),
    #[error("`mcp` is reserved: `mcp__server__tool` is read as `server__tool`")]
    Reserved,
}

/// A valid server name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct ServerName(String);

impl ServerName {
    /// Checks `name` against the rules above.
    pub fn parse(name: &str) -> Result<ServerName, NameError> {
        let owned = || name.to_owned();
        check_server_name(name).map_err(|err| match err {
            ServerNameError::Empty => NameError::Empty,
            ServerNameError::Character(found) => NameError::Character {
                name: owned(),
                found,
            },
            ServerNameError::TooLong => NameError::TooLong(owned()),
            ServerNameError::Separator => NameError::Separator(owned()),
            ServerNameError::TrailingUnderscore => NameError::TrailingUnderscore(owned()),
            ServerNameError::Reserved => NameError::Reserved,
        })?;
        Ok(ServerName(owned()))
    }

    /// The server a parsed tool name belongs to: already checked when the name was read.
    pub fn of(tool: &McpTool) -> ServerName {
        ServerName(tool.server().to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for ServerName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ServerName::parse(&text).map_err(serde::de::Error::custom)
    }
}

fn fits(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// The name `tool` of `server` is offered by (see the module's rules).
pub fn prefixed(server: &ServerName, tool: &str) -> String {
    let plain = format!("{server}{SEPARATOR}{tool}");
    if !tool.is_empty() && plain.len() <= TOOL_NAME_MAX && tool.chars().all(fits) {
        return plain;
    }
    let digest = crate::tool::hex(&Sha256::digest(tool.as_bytes()));
    let suffix = &digest[..SUFFIX_HEX];
    let room = TOOL_NAME_MAX - server.as_str().len() - SEPARATOR.len() - 1 - SUFFIX_HEX;
    let kept: String = tool
        .chars()
        .map(|c| if fits(c) { c } else { '_' })
        .take(room)
        .collect();
    format!("{server}{SEPARATOR}{kept}-{suffix}")
}

/// A tool set's prefixed names, each mapped to the tool's own name. A tool whose prefixed name
/// another tool of the set already took is left out and returned apart, with the one it met.
pub fn prefixed_names<'a>(
    server: &ServerName,
    tools: impl IntoIterator<Item = &'a str>,
) -> (BTreeMap<String, String>, Vec<(String, String)>) {
    let mut names = BTreeMap::new();
    let mut clashes = Vec::new();
    for tool in tools {
        let name = prefixed(server, tool);
        match names.get(&name) {
            Some(first) => clashes.push((tool.to_owned(), String::clone(first))),
            None => {
                names.insert(name, tool.to_owned());
            }
        }
    }
    (names, clashes)
}

/// The server a called name belongs to and the prefixed name it is offered by, if it reads as
/// an MCP tool's: `server__tool`, or `mcp__server__tool` as other agents spell it.
/// Reads the name: callers holding a parsed [`McpTool`] use [`ServerName::of`] instead.
pub fn split_call(name: &str) -> Option<(ServerName, String)> {
    match ToolId::parse(name) {
        ToolId::Mcp(tool) => Some((ServerName::of(&tool), tool.prefixed().to_owned())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn server(name: &str) -> ServerName {
        ServerName::parse(name).unwrap_or_else(|err| panic!("{name}: {err}"))
    }

    #[test]
    fn server_names_follow_the_rules() {
        for good in ["fs", "git-2", "a_b", "Everything", &"x".repeat(32)] {
            assert!(ServerName::parse(good).is_ok(), "{good}");
        }
        assert_eq!(ServerName::parse(""), Err(NameError::Empty));
        assert!(matches!(
            ServerName::parse(&"x".repeat(33)),
            Err(NameError::TooLong(_))
        ));
        assert!(matches!(
            ServerName::parse("a.b"),
            Err(NameError::Character { found: '.', .. })
        ));
        assert!(matches!(
            ServerName::parse("a__b"),
            Err(NameError::Separator(_))
        ));
        assert!(matches!(
            ServerName::parse("a_"),
            Err(NameError::TrailingUnderscore(_))
        ));
        assert_eq!(ServerName::parse("MCP"), Err(NameError::Reserved));
        assert!(matches!(
            ServerName::parse("fs é"),
            Err(NameError::Character { found: ' ', .. })
        ));
    }

    #[test]
    fn a_fitting_tool_name_is_prefixed_as_is() {
        assert_eq!(prefixed(&server("fs"), "read_file"), "fs__read_file");
        assert_eq!(
            prefixed(&server("everything"), "trigger-long-running-operation"),
            "everything__trigger-long-running-operation"
        );
    }

    #[test]
    fn a_long_or_odd_tool_name_is_shortened_with_its_digest() {
        let long = "a".repeat(80);
        let name = prefixed(&server("srv"), &long);
        assert_eq!(name.len(), TOOL_NAME_MAX);
        assert!(name.starts_with("srv__aaaa"));
        assert_eq!(name, prefixed(&server("srv"), &long), "deterministic");
        let dotted = prefixed(&server("srv"), "files.read");
        assert!(dotted.starts_with("srv__files_read-"), "{dotted}");
        assert_ne!(dotted, prefixed(&server("srv"), "files_read"));
        assert_ne!(dotted, prefixed(&server("srv"), "files/read"));
        assert!(prefixed(&server("srv"), "").starts_with("srv__-"));
    }

    #[test]
    fn calls_split_in_both_spellings() {
        assert_eq!(
            split_call("fs__read_file"),
            Some((server("fs"), "fs__read_file".to_owned()))
        );
        assert_eq!(
            split_call("mcp__fs__read_file"),
            Some((server("fs"), "fs__read_file".to_owned()))
        );
        assert_eq!(
            split_call("fs___hidden"),
            Some((server("fs"), "fs___hidden".to_owned()))
        );
        assert_eq!(split_call("read_file"), None);
        assert_eq!(split_call("fs__"), None);
        assert_eq!(split_call("a.b__c"), None);
    }

    #[test]
    fn a_clash_within_a_set_is_reported_not_merged() {
        let (names, clashes) = prefixed_names(&server("s"), ["echo", "echo", "add"]);
        assert_eq!(names.len(), 2);
        assert_eq!(clashes, [("echo".to_owned(), "echo".to_owned())]);
    }

    fn any_server() -> impl Strategy<Value = ServerName> {
        "[A-Za-z0-9-][A-Za-z0-9_-]{0,31}"
            .prop_filter_map("a valid name", |s| ServerName::parse(&s).ok())
    }

    proptest! {
        /// Every prefixed name fits the model APIs, splits back to its own server, and two
        /// servers never share one, whatever their tools are called.
        #[test]
        fn prefixed_names_fit_and_never_collide_across_servers(
            a in any_server(),
            b in any_server(),
            ta in "[ -~]{0,80}",
            tb in "[ -~]{0,80}",
        ) {
            let na = prefixed(&a, &ta);
            let nb = prefixed(&b, &tb);
            for name in [&na, &nb] {
                prop_assert!(!name.is_empty() && name.len() <= TOOL_NAME_MAX, "{}", name);
                prop_assert!(name.chars().all(fits), "{}", name);
            }
            prop_assert_eq!(split_call(&na).map(|s| s.0), Some(a.clone()));
            if a != b {
                prop_assert_ne!(&na, &nb);
            }
            if a == b && ta != tb {
                // Only a 32-bit digest clash could make them meet, and the set reports it.
                prop_assert_ne!(&na, &nb);
            }
        }
    }
}
