//! What a called name means, read once where the model's call enters: a built-in, an MCP
//! server's tool, or a name nothing answers to.
//!
//! The MCP naming rule lives here and nowhere else. A tool of server `fs` called `read_file`
//! is offered as `fs__read_file`; other agents spell it `mcp__fs__read_file`, and both are
//! accepted. A server name is 1–32 of `[A-Za-z0-9_-]`, never contains `__`, never ends with
//! `_`, and is not `mcp` (in any case), so the first `__` of a called name ends the server's
//! name: `srv__do__thing` is tool `do__thing` of server `srv`. Built-in names never contain
//! `__`, so a server may be called like a built-in (`read_file__x` is server `read_file`'s).
//!
//! A [`ToolId`] keeps the name exactly as the model spelled it: the wire and the ledger record
//! that string, and a replay parses it back to the same id.

use std::fmt;
use std::sync::Arc;

use crate::id::BuiltinTool;

/// The longest server name.
pub const SERVER_NAME_MAX: usize = 32;
/// Between a server's name and its tool's.
pub const SEPARATOR: &str = "__";
/// How other agents spell `server__tool`: `mcp__server__tool`.
pub const FOREIGN_PREFIX: &str = "mcp__";

/// Why a server name breaks the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerNameError {
    Empty,
    /// A character outside `[A-Za-z0-9_-]`, the first one found.
    Character(char),
    TooLong,
    /// It holds `__`, which separates a server from its tool.
    Separator,
    /// It ends with `_`, which would run into the `__` after it.
    TrailingUnderscore,
    /// `mcp`, reserved for the `mcp__server__tool` spelling.
    Reserved,
}

/// Checks a server name against the rule (see the module's documentation).
pub fn check_server_name(name: &str) -> Result<(), ServerNameError> {
    if name.is_empty() {
        return Err(ServerNameError::Empty);
    }
    if let Some(found) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(ServerNameError::Character(found));
    }
    if name.len() > SERVER_NAME_MAX {
        return Err(ServerNameError::TooLong);
    }
    if name.contains(SEPARATOR) {
        return Err(ServerNameError::Separator);
    }
    if name.ends_with('_') {
        return Err(ServerNameError::TrailingUnderscore);
    }
    if name.eq_ignore_ascii_case("mcp") {
        return Err(ServerNameError::Reserved);
    }
    Ok(())
}

/// A called name that reads as an MCP server's tool: the name as spelled, and where its server
/// and its tool part lie in it. Made only by parsing, so its parts always agree with its name.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct McpTool {
    called: Arc<str>,
    /// Where `server__tool` starts: 0, or past `mcp__`.
    start: u8,
    /// The server name's length (at most [`SERVER_NAME_MAX`]).
    server_len: u8,
}

impl McpTool {
    fn parse(called: &str) -> Option<McpTool> {
        let start = if called.starts_with(FOREIGN_PREFIX) {
            FOREIGN_PREFIX.len()
        } else {
            0
        };
        let (server, tool) = called[start..].split_once(SEPARATOR)?;
        if tool.is_empty() || check_server_name(server).is_err() {
            return None;
        }
        Some(McpTool {
            called: Arc::from(called),
            start: u8::try_from(start).ok()?,
            server_len: u8::try_from(server.len()).ok()?,
        })
    }

    /// The tool of a server whose name is checked, offered as `server__tool`.
    pub fn new(server: &str, tool: &str) -> Option<McpTool> {
        if tool.is_empty() {
            return None;
        }
        check_server_name(server).ok()?;
        Some(McpTool {
            called: Arc::from(format!("{server}{SEPARATOR}{tool}")),
            start: 0,
            server_len: u8::try_from(server.len()).ok()?,
        })
    }

    /// The name exactly as called (`mcp__fs__read_file` stays so).
    pub fn called(&self) -> &str {
        &self.called
    }

    /// The name it is offered, decided and run under: `server__tool`.
    pub fn prefixed(&self) -> &str {
        &self.called[usize::from(self.start)..]
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.prefixed()[..usize::from(self.server_len)]
    }

    /// The tool part of the name, after the first `__` (`do__thing` of `srv__do__thing`).
    pub fn tool(&self) -> &str {
        &self.prefixed()[usize::from(self.server_len) + SEPARATOR.len()..]
    }

    /// True when it was called `mcp__server__tool`.
    pub fn is_foreign_spelling(&self) -> bool {
        self.start != 0
    }

    /// The same tool named `server__tool`: the spelling it is decided and recorded under.
    pub fn canonical(&self) -> McpTool {
        if self.start == 0 {
            return self.clone();
        }
        McpTool {
            called: Arc::from(self.prefixed()),
            start: 0,
            server_len: self.server_len,
        }
    }
}

impl fmt::Debug for McpTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpTool")
            .field("server", &self.server())
            .field("tool", &self.tool())
            .field("called", &self.called())
            .finish()
    }
}

/// What a called name means.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolId {
    /// A built-in: the loop's own tools ([`BuiltinTool::is_loop_tool`]) or the daemon's.
    Builtin(BuiltinTool),
    /// A tool of an MCP server, whether or not a server of that name is configured.
    Mcp(McpTool),
    /// A name nothing answers to; the policy refuses it as `unknown_tool`.
    Unknown(Arc<str>),
}

impl ToolId {
    /// Reads a called name. Total: every string is some id, and its [`as_str`](Self::as_str)
    /// is the string again.
    pub fn parse(name: &str) -> ToolId {
        #[cfg(feature = "count-parses")]
        parse_count::record(name);
        if let Some(tool) = BuiltinTool::parse(name) {
            return ToolId::Builtin(tool);
        }
        match McpTool::parse(name) {
            Some(tool) => ToolId::Mcp(tool),
            None => ToolId::Unknown(Arc::from(name)),
        }
    }

    /// The name as called: what the wire and the ledger carry.
    pub fn as_str(&self) -> &str {
        match self {
            ToolId::Builtin(tool) => tool.as_str(),
            ToolId::Mcp(tool) => tool.called(),
            ToolId::Unknown(name) => name,
        }
    }

    /// The built-in it names.
    pub fn builtin(&self) -> Option<BuiltinTool> {
        match self {
            ToolId::Builtin(tool) => Some(*tool),
            _ => None,
        }
    }

    /// The MCP tool it names.
    pub fn mcp(&self) -> Option<&McpTool> {
        match self {
            ToolId::Mcp(tool) => Some(tool),
            _ => None,
        }
    }
}

impl From<BuiltinTool> for ToolId {
    fn from(tool: BuiltinTool) -> ToolId {
        ToolId::Builtin(tool)
    }
}

impl From<McpTool> for ToolId {
    fn from(tool: McpTool) -> ToolId {
        ToolId::Mcp(tool)
    }
}

impl fmt::Display for ToolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for ToolId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ToolId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

// On the wire and in the ledger an id is the string it was called by, as before it was typed.
impl serde::Serialize for ToolId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for ToolId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<ToolId, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(ToolId::parse(&name))
    }
}

/// How many times each name was parsed, for the tests that a call's name is read once.
#[cfg(feature = "count-parses")]
pub mod parse_count {
    use std::collections::HashMap;
    use std::sync::{Mutex, PoisonError};

    static COUNTS: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);

    pub(crate) fn record(name: &str) {
        let mut counts = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
        *counts
            .get_or_insert_with(HashMap::new)
            .entry(name.to_owned())
            .or_default() += 1;
    }

    /// How many times `name` was parsed in this process so far.
    pub fn of(name: &str) -> usize {
        COUNTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(|counts| counts.get(name).copied())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mcp(name: &str) -> McpTool {
        match ToolId::parse(name) {
            ToolId::Mcp(tool) => tool,
            other => panic!("{name} parsed as {other:?}"),
        }
    }

    #[test]
    fn a_built_in_name_is_a_built_in() {
        assert_eq!(
            ToolId::parse("read_file"),
            ToolId::Builtin(BuiltinTool::ReadFile)
        );
        assert_eq!(
            ToolId::parse("search_tools")
                .builtin()
                .map(BuiltinTool::is_loop_tool),
            Some(true)
        );
    }

    #[test]
    fn the_first_separator_ends_the_server() {
        let tool = mcp("srv__do__thing");
        assert_eq!((tool.server(), tool.tool()), ("srv", "do__thing"));
        assert_eq!(tool.prefixed(), "srv__do__thing");
        let hidden = mcp("fs___hidden");
        assert_eq!((hidden.server(), hidden.tool()), ("fs", "_hidden"));
    }

    #[test]
    fn a_server_may_be_named_like_a_built_in() {
        let tool = mcp("read_file__x");
        assert_eq!((tool.server(), tool.tool()), ("read_file", "x"));
        let edit = mcp("mcp__edit__x");
        assert_eq!((edit.server(), edit.tool()), ("edit", "x"));
    }

    #[test]
    fn both_spellings_name_the_same_tool_and_keep_their_own_string() {
        let foreign = mcp("mcp__fs__read_file");
        assert!(foreign.is_foreign_spelling());
        assert_eq!(foreign.called(), "mcp__fs__read_file");
        assert_eq!((foreign.server(), foreign.tool()), ("fs", "read_file"));
        assert_eq!(foreign.canonical(), mcp("fs__read_file"));
        assert_eq!(foreign.canonical().called(), "fs__read_file");
    }

    #[test]
    fn names_that_break_the_rule_are_unknown() {
        for name in [
            "read",
            "fs__",
            "a.b__c",
            "mcp__x",
            "mcp__mcp__x",
            "MCP__x",
            "",
            &format!("{}__x", "s".repeat(33)),
        ] {
            assert_eq!(
                ToolId::parse(name),
                ToolId::Unknown(Arc::from(name)),
                "{name}"
            );
        }
    }

    #[test]
    fn every_id_is_its_string_again_and_round_trips_as_json() {
        for name in [
            "read_file",
            "fs__x",
            "mcp__fs__x",
            "no_such_tool",
            "srv__a__b",
        ] {
            let id = ToolId::parse(name);
            assert_eq!(id.as_str(), name);
            let json = serde_json::to_string(&id).unwrap_or_default();
            assert_eq!(json, format!("\"{name}\""));
            let back: Option<ToolId> = serde_json::from_str(&json).ok();
            assert_eq!(back, Some(id));
        }
    }

    #[test]
    fn server_names_follow_the_rule() {
        assert_eq!(check_server_name("fs"), Ok(()));
        assert_eq!(check_server_name(""), Err(ServerNameError::Empty));
        assert_eq!(
            check_server_name("a.b"),
            Err(ServerNameError::Character('.'))
        );
        assert_eq!(check_server_name("a__b"), Err(ServerNameError::Separator));
        assert_eq!(
            check_server_name("a_"),
            Err(ServerNameError::TrailingUnderscore)
        );
        assert_eq!(check_server_name("Mcp"), Err(ServerNameError::Reserved));
        assert_eq!(
            check_server_name(&"x".repeat(33)),
            Err(ServerNameError::TooLong)
        );
    }
}
