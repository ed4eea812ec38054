//! The crate's one error type. Only parsing can fail: building and searching are total.

/// Why a catalogue or query file, or a kind word, could not be read.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A line of a catalogue file is not a valid catalogue entry.
    #[error("catalogue line {line}: {source}")]
    CatalogLine {
        /// 1-based line number.
        line: usize,
        /// What serde found wrong.
        #[source]
        source: serde_json::Error,
    },
    /// A line of a query file is not a valid query.
    #[error("query line {line}: {source}")]
    QueryLine {
        /// 1-based line number.
        line: usize,
        /// What serde found wrong.
        #[source]
        source: serde_json::Error,
    },
    /// A catalogue line names an entry with an empty name.
    #[error("catalogue line {line}: the name is empty")]
    EmptyName {
        /// 1-based line number.
        line: usize,
    },
    /// Two catalogue lines name the same entry.
    #[error("catalogue line {line}: `{name}` is already defined on line {first_line}")]
    DuplicateName {
        /// 1-based line number of the second definition.
        line: usize,
        /// The repeated name.
        name: String,
        /// 1-based line number of the first definition.
        first_line: usize,
    },
    /// An MCP server name contains `__`, the separator between server and tool.
    #[error("catalogue line {line}: server `{server}` may not contain `__`")]
    ServerName {
        /// 1-based line number.
        line: usize,
        /// The offending server name.
        server: String,
    },
    /// A kind word is not one of the known kinds.
    #[error("unknown kind `{kind}` (expected any, tool, core, mcp, skill or reference)")]
    UnknownKind {
        /// The word that was given.
        kind: String,
    },
}
